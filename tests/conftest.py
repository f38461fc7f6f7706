"""Shared fixtures: the development corpus of real pasted errors (../shared/corpus/dev.jsonl)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
CORPUS_CANDIDATES = [ROOT.parent / "shared" / "corpus" / "dev.jsonl", ROOT / "tests" / "data" / "dev.jsonl"]


def load_corpus() -> list[dict]:
    for path in CORPUS_CANDIDATES:
        if path.is_file():
            return [
                json.loads(line) for line in path.read_text(encoding="utf-8").splitlines() if line.strip()
            ]
    return []


CORPUS = load_corpus()


def corpus_record(record_id: str) -> dict:
    for record in CORPUS:
        if record["id"] == record_id:
            return record
    pytest.skip(f"corpus record {record_id} not available")
    raise AssertionError  # unreachable
