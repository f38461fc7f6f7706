"""Shared fixtures: the development corpus of real pasted errors (../shared/corpus/dev.jsonl)."""

from __future__ import annotations

import json
import os
import tempfile
from functools import cache
from pathlib import Path
from typing import TYPE_CHECKING

import pytest

if TYPE_CHECKING:
    from bot.situation import Situation

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
# the held-out real engine logs (bench/wild_accuracy.py): fix, budget and engine-mode tests replay them
WILD_LOGS = [
    json.loads(line)
    for line in (ROOT / "tests" / "data" / "wild_logs.jsonl").read_text(encoding="utf-8").splitlines()
    if line.strip()
]


def wild_log(record_id: str) -> dict:
    return next(r for r in WILD_LOGS if r["id"] == record_id)


@cache
def held_out_texts() -> dict[str, str]:
    """Every held-out paste of tests/data/wild_*.jsonl, by record id."""
    out: dict[str, str] = {}
    for path in sorted((ROOT / "tests" / "data").glob("wild_*.jsonl")):
        for line in path.read_text(encoding="utf-8").splitlines():
            if line.strip():
                record = json.loads(line)
                out[record["id"]] = record["text"]
    return out


def wild_text(file_name: str, record_id: str) -> str:
    """The text of one held-out paste of tests/data/<file_name>."""
    for line in (ROOT / "tests" / "data" / file_name).read_text(encoding="utf-8").splitlines():
        if line.strip() and (record := json.loads(line))["id"] == record_id:
            return str(record["text"])
    raise KeyError(record_id)


def situation_of(text: str) -> Situation:
    """The situation the bot reads from a paste with a finding (detect, then bot/situation.py)."""
    from bot.detector import detect
    from bot.situation import read

    detection = detect(text)
    assert detection.root is not None
    return read(detection, detection.root)


def corpus_record(record_id: str) -> dict:
    for record in CORPUS:
        if record["id"] == record_id:
            return record
    pytest.skip(f"corpus record {record_id} not available")
    raise AssertionError  # unreachable


# the validated-data cache of this run lives in its own folder (never the user's, shared with other checkouts)
if "GPU_GARDEN_CACHE_DIR" not in os.environ:
    os.environ["GPU_GARDEN_CACHE_DIR"] = tempfile.mkdtemp(prefix="gpu-garden-test-cache-")

# The Hub lookup is on by default; tests never leave the machine.  huggingface_hub reads HF_HUB_OFFLINE
# once, at import: importing it here, before any test sets the variable, keeps the fake-Hub tests able
# to switch offline mode off again (the bot reads the variable itself at each lookup).
import huggingface_hub  # noqa: E402, F401


@pytest.fixture(autouse=True)
def _hub_offline(monkeypatch, tmp_path):
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    monkeypatch.setenv("GPU_GARDEN_HUB_CACHE_DIR", str(tmp_path / "hub-cache"))


# CI runs the property tests with a fixed seed, so a rare case found once is reproduced, not a coin flip;
# local runs keep exploring new cases.
if os.environ.get("CI"):
    from hypothesis import settings as _hypothesis_settings

    _hypothesis_settings.register_profile("ci", derandomize=True)
    _hypothesis_settings.load_profile("ci")
