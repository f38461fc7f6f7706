"""The table of compiled dataclass methods (knowledge/code_cache.py): a second start compiles none, a
class is built exactly as without it, and a folder that cannot be trusted or a broken file is ignored.

No ``from __future__ import annotations`` here: the classes below must carry real annotation objects.
"""

import dataclasses
import os
import subprocess
import sys
from pathlib import Path

import pytest

from knowledge import code_cache

ROOT = Path(__file__).resolve().parents[2]
# a process that builds the catalog's and the reply's dataclasses, then says how many methods it compiled
PROBE = (
    "import calculator.catalog, bot.reply\n"
    "from knowledge.code_cache import compiled_here\n"
    "print(compiled_here())\n"
)


def _compiled(cache: str) -> int:
    env = {**os.environ, "GPU_GARDEN_CACHE_DIR": cache, "PYTHONDONTWRITEBYTECODE": "1"}
    done = subprocess.run(
        [sys.executable, "-c", PROBE], cwd=ROOT, env=env, capture_output=True, text=True, check=True
    )
    assert done.stderr == ""
    return int(done.stdout)


def test_a_second_start_compiles_no_dataclass_method(tmp_path):
    folder = tmp_path / "cache"
    assert _compiled(str(folder)) > 20
    assert (folder / code_cache.FILE).is_file()
    assert _compiled(str(folder)) == 0


def test_switched_off_it_writes_nothing(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    assert _compiled("off") > 20
    assert not list(tmp_path.rglob(code_cache.FILE))


def test_a_broken_table_is_replaced(tmp_path):
    folder = tmp_path / "cache"
    folder.mkdir(mode=0o700)
    (folder / code_cache.FILE).write_bytes(b"\xe3not marshal data")
    assert _compiled(str(folder)) > 20
    assert _compiled(str(folder)) == 0


@pytest.mark.skipif(not hasattr(os, "getuid"), reason="folder ownership is a POSIX notion")
def test_a_table_in_a_folder_others_can_write_is_never_read(tmp_path):
    trusted = tmp_path / "trusted"
    _compiled(str(trusted))
    shared = tmp_path / "shared"
    shared.mkdir()
    (shared / code_cache.FILE).write_bytes((trusted / code_cache.FILE).read_bytes())
    shared.chmod(0o777)
    assert _compiled(str(shared)) > 20
    assert _compiled(str(shared)) > 20  # and nothing was written there either


@dataclasses.dataclass(frozen=True, kw_only=True)
class _Probe:
    size: int
    name: str = "x"


def test_a_class_built_through_the_table_behaves_as_a_plain_dataclass():
    assert dataclasses.exec is code_cache._exec  # type: ignore[attr-defined]
    # annotations are objects, not strings: the compile inherits no flag from code_cache's own module
    assert _Probe.__init__.__annotations__ == {"size": int, "name": str, "return": None}
    probe = _Probe(size=3)
    assert repr(probe) == "_Probe(size=3, name='x')"
    assert probe == _Probe(size=3, name="x") and hash(probe) == hash(_Probe(size=3))
    with pytest.raises(dataclasses.FrozenInstanceError):
        probe.size = 4  # type: ignore[misc]
    with pytest.raises(TypeError):
        _Probe(3)  # type: ignore[misc]


def test_the_table_returns_the_code_exec_would_compile():
    text = "def __create_fn__(a):\n def f(x:a)->None:\n  return x\n return f"
    mine = code_cache.code_for(text)
    plain = compile(text, "<string>", "exec", dont_inherit=True)
    assert (mine.co_code, mine.co_flags, mine.co_consts[0].co_flags) == (
        plain.co_code,
        plain.co_flags,
        plain.co_consts[0].co_flags,
    )
    assert code_cache.code_for(text) is mine


def test_an_entry_no_process_used_for_weeks_is_dropped_when_the_table_is_written(tmp_path):
    import marshal
    import time

    folder = tmp_path / "cache"
    folder.mkdir(mode=0o700)
    today = int(time.time() // 86400)
    stale, recent = "x = 1", "x = 2"  # texts no dataclass generates: never used by the probe
    table = {  # each code object marshalled on its own, as the table stores it
        stale: (marshal.dumps(compile(stale, "<string>", "exec")), today - code_cache.KEEP_DAYS - 1),
        recent: (marshal.dumps(compile(recent, "<string>", "exec")), today - 1),
    }
    (folder / code_cache.FILE).write_bytes(marshal.dumps(table))
    assert _compiled(str(folder)) > 20  # the probe's classes are new: the table is written back
    kept = marshal.loads((folder / code_cache.FILE).read_bytes())
    assert stale not in kept and kept[recent][1] == today - 1
    assert all(day == today for text, (_code, day) in kept.items() if text != recent)


def test_a_broken_entry_is_compiled_again_and_replaced(tmp_path):
    import marshal

    folder = tmp_path / "cache"
    _compiled(str(folder))
    table = marshal.loads((folder / code_cache.FILE).read_bytes())
    first = next(iter(table))
    table[first] = (b"\xe3not a code object", table[first][1])
    (folder / code_cache.FILE).write_bytes(marshal.dumps(table))
    assert _compiled(str(folder)) == 1  # that one method only: the others are read from the table
    assert _compiled(str(folder)) == 0
