"""Operators' stats from a real SQLite file: periods, the most frequent signatures, the worst rated."""

from __future__ import annotations

import pytest

from bot.stats import format_period, parse_period, report, worst_rated
from bot.storage import SignatureStats, Storage


class Clock:
    def __init__(self, now: float):
        self.now = now

    def __call__(self) -> float:
        return self.now


@pytest.mark.parametrize(
    ("text", "seconds"),
    [("7d", 604800), ("24h", 86400), ("30m", 1800), ("90s", 90), ("2w", 1209600), (" 1.5H ", 5400)],
)
def test_parse_period(text, seconds):
    assert parse_period(text) == seconds


@pytest.mark.parametrize("text", ["", "7", "d", "7 days", "-1d", "0h", "1y", "1d2h"])
def test_parse_period_rejects(text):
    with pytest.raises(ValueError):
        parse_period(text)


def test_format_period():
    assert [format_period(s) for s in (604800, 86400 * 3, 5400, 3600, 45)] == ["1w", "3d", "90m", "1h", "45s"]


def populate(path) -> tuple[Storage, Clock]:
    clock = Clock(1_000_000.0)
    db = Storage(path, clock=clock)
    # old activity, outside a one-day window
    clock.now -= 3 * 86400
    for _ in range(9):
        db.record_event("discord", "reply", "old.sig", "gpu_oom", 3.0)
    db.record_feedback("discord", "r-old", "u1", "old.sig", False)
    clock.now += 3 * 86400
    for _ in range(5):
        db.record_event("discord", "reply", "vllm.kv_cache_too_small", "kv_cache", 4.0)
    for _ in range(3):
        db.record_event("slack", "reply", "llamacpp.cuda_oom", "gpu_oom", 4.0)
    db.record_event("slack", "reply", "ollama.model_not_found", "model_missing", 2.0)
    db.record_event("slack", "silent", None, None, 1.0)  # no finding: not in the report
    db.record_feedback("discord", "r1", "u1", "vllm.kv_cache_too_small", True)
    db.record_feedback("discord", "r1", "u2", "vllm.kv_cache_too_small", True)
    db.record_feedback("discord", "r2", "u3", "vllm.kv_cache_too_small", False)
    db.record_feedback("slack", "r3", "u1", "llamacpp.cuda_oom", False)
    db.record_feedback("slack", "r3", "u2", "llamacpp.cuda_oom", False)
    db.record_feedback("slack", "r3", "u3", "llamacpp.cuda_oom", True)
    return db, clock


def test_report_over_a_day(tmp_path):
    db, _ = populate(tmp_path / "bot.sqlite3")
    text = report(db, parse_period("24h"))
    lines = text.splitlines()
    assert lines[0] == "GPU Garden stats, last 1d: 9 answers across 3 signatures; 6 votes (50% helpful)."
    assert "old.sig" not in text
    frequent = lines[lines.index("Most frequent (top 3):") + 3 :][:3]
    assert [line.split()[0] for line in frequent] == [
        "vllm.kv_cache_too_small",
        "llamacpp.cuda_oom",
        "ollama.model_not_found",
    ]
    assert frequent[0].split()[1:] == ["5", "2", "1", "67%"]
    assert frequent[2].split()[1:] == ["1", "0", "0", "-"]
    worst_at = next(i for i, line in enumerate(lines) if line.startswith("Worst rated"))
    worst = lines[worst_at + 3 :]
    assert [line.split()[0] for line in worst] == ["llamacpp.cuda_oom", "vllm.kv_cache_too_small"]
    assert worst[0].split()[1:] == ["3", "1", "2", "33%"]
    # columns line up: every row of a table is as wide as its rule line or narrower
    header, rule = lines[worst_at + 1], lines[worst_at + 2]
    assert header.startswith("signature") and set(rule) <= {"-", " "}


def test_report_over_a_week_includes_old_activity(tmp_path):
    db, _ = populate(tmp_path / "bot.sqlite3")
    text = report(db, parse_period("7d"), top=2)
    assert text.startswith("GPU Garden stats, last 1w: 18 answers across 4 signatures")
    assert "Most frequent (top 2):" in text
    assert "old.sig" in text and "ollama.model_not_found" not in text.split("Worst rated")[0]


def test_report_on_an_empty_or_broken_database(tmp_path):
    assert "no answers" in report(Storage(tmp_path / "empty.sqlite3"), 3600)
    blocker = tmp_path / "file"
    blocker.write_text("x")
    assert "no answers" in report(Storage(blocker / "sub" / "db.sqlite3"), 3600)


def test_report_without_bad_votes(tmp_path):
    db = Storage(tmp_path / "bot.sqlite3")
    db.record_event("discord", "reply", "sig.a", "gpu_oom", 1.0)
    db.record_feedback("discord", "r", "u", "sig.a", True)
    text = report(db, 3600)
    assert "1 answer across 1 signature; 1 vote (100% helpful)" in text
    assert "Worst rated: no 'not helpful' votes in this period." in text


def test_worst_rated_order():
    rows = [
        SignatureStats("a", 10, 9, 1),
        SignatureStats("b", 4, 0, 2),
        SignatureStats("c", 5, 0, 4),
        SignatureStats("d", 5, 3, 0),
    ]
    assert [r.signature for r in worst_rated(rows)] == ["c", "b", "a"]
    assert [r.signature for r in worst_rated(rows, min_votes=3)] == ["c", "a"]
