"""Long pastes: past ``SET_MIN_BYTES`` the rules to run are narrowed by one RE2 Set pass of their regexes;
the same secrets must come out as when every keyword candidate runs on its own."""

from __future__ import annotations

import pytest

from bot import redact as redact_module
from bot import secret_rules
from bot.redact import find_spans, redact
from tests.hardening.planted import planted

FILLER = "INFO 04-12 08:21:19 [gpu_model_runner.py:1067] Model loading took 14.99 GiB and 5.1 seconds"


def long_paste(items) -> str:
    """Each planted text between runs of engine log lines, the whole past the Set's threshold."""
    gap = "\n".join([FILLER] * 40)
    body = "\n".join(f"{gap}\n{p.text}" for p in items)
    repeat = secret_rules.SET_MIN_BYTES // len(body) + 1
    return "\n".join([body] * repeat)


@pytest.fixture(scope="module")
def items():
    return planted(per_rule=1)


@pytest.fixture(scope="module")
def few(items):
    """The planted texts of a few rules: a paste whose candidates a Set of regexes takes."""
    wanted = ("huggingface", "github-pat", "private-key")
    rules = {p.rule for p in items if p.rule.startswith(wanted)} | set(sorted({p.rule for p in items})[:4])
    return [p for p in items if p.rule in rules]


def test_the_set_pass_finds_the_spans_each_rule_finds(few, monkeypatch):
    data = long_paste(few).encode("utf-8")
    assert len(secret_rules.default_rules().candidates(data)) <= secret_rules.SET_MAX_RULES  # the Set runs
    assert len(data) >= secret_rules.SET_MIN_BYTES
    narrowed = find_spans(data)
    monkeypatch.setattr(secret_rules, "SET_MIN_BYTES", len(data) + 1)
    assert find_spans(data) == narrowed
    assert {s.kind for s in narrowed} >= {"Hugging Face token", "GitHub token", "private key"}


def test_a_long_paste_is_redacted_as_without_the_set(few, monkeypatch):
    text = long_paste(few)
    fast = redact(text)
    monkeypatch.setattr(secret_rules, "SET_MIN_BYTES", len(text.encode()) * 2)
    assert redact(text) == fast


def test_sparse_secrets_in_a_long_log_are_removed():
    secret = "hf_" + "AbCdEfGh12" * 4
    text = "\n".join(f"{FILLER} HF_TOKEN={secret}" if i % 200 == 199 else FILLER for i in range(24000))
    assert len(text) >= secret_rules.SET_MIN_BYTES
    r = redact(text)
    assert secret not in r.text and r.kinds == ("Hugging Face token",)
    assert r.text.count("[Hugging Face token removed]") == 120


def test_a_set_re2_cannot_build_runs_every_candidate(monkeypatch):
    specs = secret_rules._build(secret_rules.OWN_FILE.read_bytes(), secret_rules.GITLEAKS_FILE.read_bytes())
    data = ("token=hf_" + "a1B2c3D4e5F6g7H8i9J0k1L2m3N4o5P6q7 " + FILLER + "\n").encode() * 12000
    assert len(data) >= secret_rules.SET_MIN_BYTES
    rules = secret_rules.RuleSet(specs)
    keyed = rules.candidates(data)
    monkeypatch.setattr(secret_rules, "SET_MAX_MEM", 1 << 10)  # too little for a Set of regexes
    assert rules.matching(data) == keyed
    monkeypatch.undo()
    narrowed = secret_rules.RuleSet(specs).matching(data)
    assert set(narrowed) < set(keyed) and "huggingface-token" in {specs[i].id for i in narrowed}


def test_many_candidates_are_searched_one_by_one(items):
    # a Set of 200+ rules' regexes made RE2's DFA thrash before it failed: past SET_MAX_RULES no Set
    specs = secret_rules._build(secret_rules.OWN_FILE.read_bytes(), secret_rules.GITLEAKS_FILE.read_bytes())
    rules = secret_rules.RuleSet(specs)
    data = long_paste(items).encode("utf-8")
    assert len(rules.candidates(data)) > secret_rules.SET_MAX_RULES
    assert rules.matching(data) == rules.candidates(data) and not rules._regex_sets


def test_wrapped_secrets_come_out_the_same_whatever_the_batch(monkeypatch):
    """The runs' windows are read a batch at a time: a secret wrapped across lines is removed in the
    first batch, the last one and where one batch ends and the next begins, as when all are read at once."""
    token = "hf_" + "AbCdEfGh12" * 4
    secret = f"INFO 04-12 08:21:19 [api_server.py:1] --hf-token {token} --port 8000 and some more words here"
    wrapped = "\n".join(secret[i : i + 80] for i in range(0, len(secret), 80))
    parts = ["\n".join([FILLER] * n) for n in (37, 101, 64)]  # every pair of lines may be a wrap
    text = "\n".join([wrapped, parts[0], wrapped, parts[1], wrapped, parts[2], wrapped])
    whole = redact(text)  # one batch
    assert len(text) < redact_module.WINDOW_BATCH
    monkeypatch.setattr(redact_module, "WINDOW_BATCH", 2048)  # a batch of a few runs
    batched = redact(text)
    assert batched.text == whole.text and batched.kinds == whole.kinds
    assert "hf_AbCd" not in batched.text and "12AbCdEfGh12" not in batched.text  # both halves, all four
    assert batched.text.count(" removed]\n --port 8000") == 4
