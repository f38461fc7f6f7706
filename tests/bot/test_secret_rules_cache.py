"""The secret rules read back from the validated-data cache are the rules the files define, their
regexes compile on first use only, and a rule RE2 cannot compile still fails when the rules load."""

from __future__ import annotations

import subprocess
import sys

import pytest
import re2

from bot import secret_rules as S
from bot.redact import find_spans, redact


def test_cached_rules_equal_a_fresh_parse(tmp_path, monkeypatch):
    monkeypatch.setenv("GPU_GARDEN_CACHE_DIR", str(tmp_path))
    fresh = S._build(S.OWN_FILE.read_bytes(), S.GITLEAKS_FILE.read_bytes())
    S.default_rules.cache_clear()
    try:
        built = S.default_rules()  # fills the cache
        S.default_rules.cache_clear()
        read_back = S.default_rules()
    finally:
        S.default_rules.cache_clear()
    assert len(list(tmp_path.glob("secret-rules.*"))) == 1
    assert [r.regex for r in read_back.rules] == [s.regex for s in fresh] == [r.regex for r in built.rules]
    assert [(r.id, r.kind, r.keywords, r.entropy) for r in read_back.rules] == [
        (r.id, r.kind, r.keywords, r.entropy) for r in built.rules
    ]
    assert read_back.rules[0].id == "private-key"


def test_regexes_compile_on_first_use():
    rules = S.RuleSet(S._build(S.OWN_FILE.read_bytes(), S.GITLEAKS_FILE.read_bytes()))
    assert not any("pattern" in vars(r) for r in rules.rules)
    data = b"token hf_" + b"a1B2c3D4e5F6g7H8i9J0k1L2m3N4o5P6q7"
    hit = {rules.rules[i].id for i in rules.candidates(data)}
    assert "huggingface-token" in hit and "private-key" not in hit
    assert [s.kind for s in find_spans(data, rules)] == ["Hugging Face token"]
    assert {r.id for r in rules.rules if "pattern" in vars(r)} == hit  # only the candidates compiled
    assert all(isinstance(rules.rules[i].pattern, re2._Regexp) for i in range(3))


def test_a_rule_re2_cannot_compile_fails_at_load():
    bad = b'rules:\n  - id: bad\n    kind: bad thing\n    regex: "(?<=x)y"\n    keywords: ["x"]\n'
    with pytest.raises(re2.error):
        S._build(bad, b"rules: []\n")


def test_a_fresh_process_redacts_without_yaml_or_pydantic():
    code = (
        "import sys\n"
        "from bot.redact import find_spans, redact\n"
        "r = redact('key hf_' + 'a1B2c3D4e5F6g7H8i9J0k1L2m3N4o5P6q7')\n"
        "print(r.kinds, 'yaml' in sys.modules, 'pydantic' in sys.modules)\n"
    )
    redact("warm the cache hf_" + "a1B2c3D4e5F6g7H8i9J0k1L2m3N4o5P6q7")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    assert out.strip() == "('Hugging Face token',) False False"
