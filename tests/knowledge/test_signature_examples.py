"""Every example in every signature file is a test: adding an error family is adding YAML."""

from __future__ import annotations

import pytest

from bot.detector import detect
from knowledge import load_builtin

KB = load_builtin()
CASES = [
    pytest.param(loaded, i, example, id=f"{loaded.signature.id}#{i}")
    for loaded in KB.signatures
    for i, example in enumerate(loaded.signature.examples)
]


@pytest.mark.parametrize(("loaded", "index", "example"), CASES)
def test_example(loaded, index, example):
    detection = detect(example.text)
    ids = [f.signature for f in detection.findings]
    if example.expect == "no_match":
        assert loaded.signature.id not in ids
        return
    assert loaded.signature.id in ids, f"not detected; found {ids}"
    finding = next(f for f in detection.findings if f.signature == loaded.signature.id)
    for name, expected in example.params.items():
        assert name in finding.params, f"{name} not extracted (invalid: {finding.invalid})"
        got = finding.params[name]
        if isinstance(expected, float):
            assert got == pytest.approx(expected, rel=1e-3), name
        else:
            assert got == expected, name
