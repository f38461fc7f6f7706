"""The validated-data cache: hits on unchanged content, rebuilds on changed content, and never fails
when its folder cannot be used."""

from __future__ import annotations

import os

import pytest

from knowledge import cache as C
from knowledge.loader import KnowledgeBase, load_with_extra

PACK = """engine: custom
signatures:
  - id: cache-test-pack
    category: gpu_oom
    title: "A pack signature"
    patterns: ["gpu garden cache probe (?P<n>[0-9]+)"]
    captures: {n: count}
    cause: "probe {n}"
    examples:
      - text: "gpu garden cache probe 7"
        params: {n: 7}
"""


def _builder(calls: list[int], value: object):
    def build():
        calls.append(1)
        return value

    return build


def test_second_load_of_same_content_is_a_hit(tmp_path, monkeypatch):
    monkeypatch.setenv(C.ENV, str(tmp_path / "c"))
    calls: list[int] = []
    key = C.content_key("t", [("a.yaml", b"x: 1")])
    assert C.cached(key, _builder(calls, ("one",)), tuple) == ("one",)
    assert C.cached(key, _builder(calls, ("two",)), tuple) == ("one",)
    assert calls == [1]


def test_changed_content_rebuilds_and_keeps_only_the_newest_entries(tmp_path, monkeypatch):
    folder = tmp_path / "c"
    monkeypatch.setenv(C.ENV, str(folder))
    keys = [C.content_key("t", [("a.yaml", f"x: {i}".encode())]) for i in range(C.KEPT_PER_KIND + 2)]
    assert len(set(keys)) == len(keys)
    for i, key in enumerate(keys):
        assert C.cached(key, lambda i=i: (i,), tuple) == (i,)
        os.utime(folder / key, (1000 + i, 1000 + i))  # written one after the other
    assert sorted(p.name for p in folder.iterdir()) == sorted(keys[-C.KEPT_PER_KIND :])
    # a checkout of the previous content, sharing the folder, still reads its entry
    assert C.cached(keys[-2], lambda: ("rebuilt",), tuple) == (len(keys) - 2,)


def test_read_only_folder_builds_without_cache(tmp_path, monkeypatch):
    if hasattr(os, "geteuid") and os.geteuid() == 0:
        target = tmp_path / "file-not-folder"  # root can write anywhere: a file where the folder would be
        target.write_text("")
        folder = target / "sub"
    else:
        ro = tmp_path / "ro"
        ro.mkdir(mode=0o500)
        folder = ro / "c"
    monkeypatch.setenv(C.ENV, str(folder))
    calls: list[int] = []
    key = C.content_key("t", [("a.yaml", b"x")])
    assert C.cached(key, _builder(calls, ("v",)), tuple) == ("v",)
    assert C.cached(key, _builder(calls, ("v",)), tuple) == ("v",)
    assert calls == [1, 1]


def test_switched_off_and_corrupt_entries(tmp_path, monkeypatch):
    monkeypatch.setenv(C.ENV, "off")
    assert C.cache_dir() is None
    folder = tmp_path / "c"
    monkeypatch.setenv(C.ENV, str(folder))
    key = C.content_key("t", [("a.yaml", b"x")])
    folder.mkdir(mode=0o700)
    (folder / key).write_bytes(b"\x80\x05garbage")
    assert C.cached(key, lambda: ("rebuilt",), tuple) == ("rebuilt",)


def test_world_writable_folder_is_not_read(tmp_path, monkeypatch):
    folder = tmp_path / "c"
    monkeypatch.setenv(C.ENV, str(folder))
    key = C.content_key("t", [("a.yaml", b"x")])
    C.cached(key, lambda: ("first",), tuple)
    folder.chmod(0o777)
    assert C.cached(key, lambda: ("second",), tuple) == ("second",)


@pytest.mark.parametrize("cache_on", [True, False])
def test_pack_edit_is_seen(tmp_path, monkeypatch, cache_on):
    monkeypatch.setenv(C.ENV, str(tmp_path / "c") if cache_on else "off")
    packs = tmp_path / "packs"
    packs.mkdir()
    (packs / "p.yaml").write_text(PACK)
    first = load_with_extra(packs)
    assert isinstance(first, KnowledgeBase) and first.by_id("cache-test-pack") is not None
    (packs / "p.yaml").write_text(PACK.replace("cache-test-pack", "cache-test-renamed"))
    second = load_with_extra(packs)
    assert second.by_id("cache-test-pack") is None
    assert second.by_id("cache-test-renamed") is not None


def test_levers_and_features_read_back_equal_a_fresh_parse(tmp_path, monkeypatch):
    from knowledge import features, levers

    monkeypatch.setenv(C.ENV, str(tmp_path / "c"))
    fresh_features = features._parse(features._FILE.read_bytes())
    fresh_levers = levers._parse(levers._FILE.read_bytes())
    for loader in (features.feature_table, levers.levers):
        loader.cache_clear()
    try:
        assert features.feature_table() == fresh_features  # built and stored
        assert levers.levers() == fresh_levers
        features.feature_table.cache_clear()
        levers.levers.cache_clear()
        assert features.feature_table() == fresh_features  # read back
        assert levers.levers() == fresh_levers
    finally:
        features.feature_table.cache_clear()
        levers.levers.cache_clear()
    names = sorted(p.name.partition(".")[0] for p in (tmp_path / "c").iterdir())
    assert names == ["features", "levers"]


def test_a_fresh_triage_process_parses_no_yaml():
    import subprocess
    import sys

    code = (
        "import sys\n"
        "from bot.core import GardenBot, Paste\n"
        "GardenBot().triage(Paste('torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 2.00 GiB.', False, []))\n"
        "print('yaml' in sys.modules)\n"
    )
    for _ in range(2):  # the first run may fill the cache
        out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    assert out.strip() == "False"


WARM_LOAD = """
import sys
from pathlib import Path
from calculator.catalog import gpus, models, quant_formats
from calculator.constants import engine_constants
from knowledge.features import feature_table
from knowledge.levers import levers
from knowledge.loader import load_builtin, load_with_extra
from bot.secret_rules import default_rules
models(); gpus(); quant_formats(); engine_constants(); feature_table(); levers(); load_builtin()
kb = load_with_extra(Path(sys.argv[1]))
default_rules()
assert kb.by_id("cache-test-pack") is not None and len(models()) > 100
print(sorted(m for m in sys.modules if m.split(".")[0] in ("pydantic", "pydantic_core", "yaml")))
"""


def test_a_warm_start_loads_every_catalog_and_the_knowledge_without_pydantic(tmp_path):
    import subprocess
    import sys

    packs = tmp_path / "packs"
    packs.mkdir()
    (packs / "p.yaml").write_text(PACK)
    env = {**os.environ, C.ENV: str(tmp_path / "c")}
    runs = [
        subprocess.run(
            [sys.executable, "-c", WARM_LOAD, str(packs)], capture_output=True, text=True, check=True, env=env
        ).stdout.strip()
        for _ in range(2)
    ]
    assert runs[0] != "[]"  # the first start built the entries: it validated with pydantic
    assert runs[1] == "[]"


def test_a_new_pydantic_version_file_changes_every_key(monkeypatch, tmp_path):
    import sys

    # a stand-in pydantic found first on the path (find_spec answers from sys.modules otherwise)
    monkeypatch.delitem(sys.modules, "pydantic", raising=False)
    version = tmp_path / "pydantic" / "version.py"
    version.parent.mkdir()
    (version.parent / "__init__.py").write_text("")
    monkeypatch.syspath_prepend(str(tmp_path))
    keys = []
    for text in ("VERSION = '2.0.0'\n", "VERSION = '2.0.1'\n"):
        version.write_text(text)
        C.validator_digest.cache_clear()
        keys.append(C.content_key("t", [("a.yaml", b"x")]))
    version.write_text("VERSION = '2.0.0'\n")
    C.validator_digest.cache_clear()
    assert keys[0] != keys[1]
    assert C.content_key("t", [("a.yaml", b"x")]) == keys[0]
    C.validator_digest.cache_clear()


def test_keying_loads_no_openssl():
    """Keys are BLAKE2 from CPython's own module (what hashlib.blake2b is): importing hashlib would load
    OpenSSL's library at every start."""
    import subprocess
    import sys

    code = "import sys, knowledge.cache as c; c.content_key('t', [('a', b'x')]); print('_hashlib' in sys.modules)"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True, timeout=60)
    assert out.stdout.split() == ["False"]
