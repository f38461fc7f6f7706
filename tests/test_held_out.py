"""The held-out pastes (tests/data/wild_*.jsonl) stay held out: no signature example is one of them.
bench/recall.py measures what the knowledge base was not written against, so a record copied into a
signature's examples (or an example recorded again as a held-out paste) would count what it was written for.

A copy is an example from a record's own thread (its source names the thread) whose middle 150 characters
are in the record verbatim: an engine's fixed message is in many threads' pastes, and is no copy."""

from __future__ import annotations

import json
import re
from pathlib import Path

from knowledge.loader import load_builtin

ROOT = Path(__file__).resolve().parent.parent
WINDOW = 150
THREAD = re.compile(r"github\.com/([A-Za-z0-9_.-]+/[A-Za-z0-9_.-]+)/(?:issues|pull|discussions)/([0-9]+)")


def threads(text: str) -> set[tuple[str, str]]:
    return {(m.group(1).lower(), m.group(2)) for m in THREAD.finditer(text or "")}


def records() -> list[tuple[str, str, set[tuple[str, str]]]]:
    out = []
    for path in sorted((ROOT / "tests" / "data").glob("wild_*.jsonl")):
        for line in path.read_text(encoding="utf-8").splitlines():
            if line.strip() and "family" in (row := json.loads(line)):  # wild_logs.jsonl: calculator checks
                out.append(
                    (f"{path.name}:{row['id']}", row.get("text") or "", threads(row.get("source", "")))
                )
    return out


def test_no_signature_example_is_a_held_out_paste():
    held = records()
    copied = []
    for loaded in load_builtin().signatures:
        for example in loaded.signature.examples:
            text = example.text
            if len(text) < WINDOW:
                continue
            middle = text[(len(text) - WINDOW) // 2 :][:WINDOW]
            source = threads(example.source or "")
            copied += [
                f"{loaded.signature.id} = {name}"
                for name, record, t in held
                if t & source and middle in record
            ]
    assert not copied, "\n".join(copied)
