"""A cold ``gpu-garden vram`` and a one-line ``triage`` never import pydantic: it is for the boundaries
(settings read from a source, YAML schemas, JSON), and importing it costs more than the whole answer.

Each command runs (after a run that fills the validated-data cache) in a child process that notes which project file first asks for pydantic.  While the
data layer (catalogs, constants, knowledge schemas) still imports it, only that layer may ask; once it does
not, pydantic must be absent from ``sys.modules`` when the command ends."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
DATA_LAYER = ("calculator/catalog.py", "calculator/constants.py", "knowledge/")
ONE_LINE = "torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 2.00 GiB.\n"

_CHILD = """
import io, json, os, sys, traceback
from contextlib import redirect_stdout
root = sys.argv[1]
askers = []

class Watch:
    def find_spec(self, name, path=None, target=None):
        if name == "pydantic":
            stack = [f.filename for f in traceback.extract_stack()]
            files = [f for f in stack if f.startswith(root) and "site-packages" not in f]
            askers.append(os.path.relpath(files[-1], root) if files else "?")
        return None

sys.meta_path.insert(0, Watch())
{body}
print(json.dumps({{"pydantic": "pydantic" in sys.modules, "askers": askers}}))
"""
_RUN = """
from adapters.cli import main
with redirect_stdout(io.StringIO()):
    code = main(sys.argv[2:], stdin=io.StringIO(sys.stdin.read()))
assert code == 0, code
"""
_DATA = (
    "import calculator.catalog, calculator.constants, knowledge.loader, knowledge.features, knowledge.levers"
)


def _child(body: str, argv: list[str], stdin: str = "") -> dict:
    env = {k: v for k, v in __import__("os").environ.items() if not k.startswith("GPU_GARDEN_")}
    env["GPU_GARDEN_CACHE_DIR"] = __import__("os").environ.get("GPU_GARDEN_CACHE_DIR", "")
    proc = subprocess.run(
        [sys.executable, "-c", _CHILD.format(body=body), str(ROOT), *argv],
        input=stdin,
        capture_output=True,
        text=True,
        timeout=120,
        cwd=ROOT,
        env={k: v for k, v in env.items() if v},
    )
    assert proc.returncode == 0, proc.stderr
    return json.loads(proc.stdout.splitlines()[-1])


@pytest.mark.parametrize(
    ("argv", "stdin"),
    [(["vram", "--gpu", "4090", "--model", "qwen2.5-coder-32b-awq"], ""), (["triage", "-"], ONE_LINE)],
    ids=["vram", "triage"],
)
def test_a_cold_command_imports_no_pydantic(argv: list[str], stdin: str):
    _child(_RUN, argv, stdin)  # fills the validated-data cache (built with pydantic), as an install does
    seen = _child(_RUN, argv, stdin)
    assert [f for f in seen["askers"] if not f.startswith(DATA_LAYER)] == []
    if not _child(_DATA, [])["pydantic"]:  # the data layer is free of it: so must the whole command be
        # knowledge/cache.py only looks pydantic up (find_spec, to key the cache by its version file)
        assert seen["pydantic"] is False


def test_the_watch_sees_who_asks_for_pydantic():
    seen = _child("import bot.secret_rules\nfrom bot.settings import settings_class\nsettings_class()", [])
    assert seen["pydantic"] is True and seen["askers"] == ["bot/settings.py"]


def _refused(value: str) -> str | None:
    import argparse

    from adapters.cli import CliError, _refuse_secrets

    try:
        _refuse_secrets(argparse.Namespace(model=value, gpu=None))
    except CliError as exc:
        return str(exc)
    return None


def test_the_cheap_secret_refusal_decides_as_the_whole_redaction():
    """--model/--gpu are checked by the secret rules alone when the value is plain ASCII; every rule's
    own example, its secret alone and in a flag or header, and names people type, decide the same as
    redact() and get its message."""
    from bot.redact import redact
    from tests.hardening.planted import examples, placements, secrets_in

    values = [
        "qwen2.5-coder-32b-awq",
        "Qwen/Qwen2.5-7B-Instruct",
        "rtx 4090",
        "gemma3:27b",
        "[34mx",
        "ｑｗｅｎ",
    ]
    for rule, text in examples():
        for secret in secrets_in(rule, text)[:1]:
            values += [text.split("\n")[0], secret, *list(placements(secret).values())[1:3]]
    refused = 0
    for value in dict.fromkeys(values):
        found = redact(value)
        assert _refused(value) == (f"--model: {found.warning()}" if found.found else None), value
        refused += found.found
    assert refused > 200  # the rules' examples are refused, not only waved through
