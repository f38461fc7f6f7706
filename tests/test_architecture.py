"""The layering rules of DEVELOPERS.md, checked on the imports themselves.

- ``calculator`` and ``knowledge`` never import ``bot`` or ``adapters``;
- only ``adapters`` imports platform SDKs (discord.py, slack_bolt, slack_sdk);
- ``bot`` never imports ``adapters``.
"""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
SDKS = ("discord", "slack_bolt", "slack_sdk")
FORBIDDEN = {
    "calculator": ("bot", "adapters", *SDKS),
    "knowledge": ("bot", "adapters", *SDKS),
    "bot": ("adapters", *SDKS),
}


def _imports(path: Path) -> set[str]:
    tree = ast.parse(path.read_text(encoding="utf-8"))
    names: set[str] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            names.update(alias.name.split(".")[0] for alias in node.names)
        elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            names.add(node.module.split(".")[0])
    return names


@pytest.mark.parametrize("package", sorted(FORBIDDEN))
def test_layering(package):
    offenders = []
    for path in sorted((ROOT / package).rglob("*.py")):
        bad = _imports(path) & set(FORBIDDEN[package])
        if bad:
            offenders.append(f"{path.relative_to(ROOT)} imports {sorted(bad)}")
    assert not offenders, offenders
