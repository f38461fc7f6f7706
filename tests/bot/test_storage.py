"""The SQLite database: claims, replies, feedback, stats; and a database that fails does not stop the bot."""

from __future__ import annotations

import sqlite3

from bot.storage import Storage


def test_claim_once_and_reply_lookup(tmp_path):
    db = Storage(tmp_path / "bot.sqlite3")
    assert db.claim("discord", "c:1")
    assert not db.claim("discord", "c:1")
    db.record_reply("discord", "c:1", "r9", "vllm.kv", "kv_cache_too_small")
    assert db.reply_for("discord", "c:1") == "r9"
    db.close()
    again = Storage(tmp_path / "bot.sqlite3")  # persistent across restarts
    assert again.reply_for("discord", "c:1") == "r9"


def test_unsettled_claim_of_an_earlier_process_is_taken_over(tmp_path):
    path = tmp_path / "bot.sqlite3"
    first = Storage(path)
    assert first.claim("discord", "c:1")
    first.close()
    second = Storage(path)  # a restart: the first process never posted
    assert second.claim("discord", "c:1")
    assert not second.claim("discord", "c:1")
    second.record_reply("discord", "c:1", "r1", None, None)
    second.close()
    third = Storage(path)
    assert not third.claim("discord", "c:1")  # answered: never again


def test_released_claim_can_be_claimed_again_and_settled_cannot(tmp_path):
    db = Storage(tmp_path / "bot.sqlite3")
    assert db.claim("slack", "c:2")
    db.release("slack", "c:2")
    assert db.claim("slack", "c:2")
    db.settle("slack", "c:2")
    db.release("slack", "c:2")  # settled: release leaves it
    assert db.reply_for("slack", "c:2") == ""
    assert not Storage(tmp_path / "bot.sqlite3").claim("slack", "c:2")


def test_database_from_before_settling_keeps_its_answers(tmp_path):
    path = tmp_path / "old.sqlite3"
    with sqlite3.connect(path) as conn:
        conn.execute(
            "CREATE TABLE replies (platform TEXT NOT NULL, source_id TEXT NOT NULL, channel_id TEXT, "
            "reply_id TEXT, signature TEXT, category TEXT, created_at REAL NOT NULL, "
            "PRIMARY KEY (platform, source_id))"
        )
        conn.execute("INSERT INTO replies (platform, source_id, created_at) VALUES ('discord', 'c:9', 1.0)")
    db = Storage(path)
    assert not db.claim("discord", "c:9")
    assert db.claim("discord", "c:10")


def test_feedback_one_vote_per_user_and_stats(tmp_path):
    db = Storage(tmp_path / "bot.sqlite3")
    for _i in range(3):
        db.record_event("slack", "reply", "sig.a", "gpu_oom", 5.0)
    db.record_event("slack", "reply", "sig.b", "host_memory", 5.0)
    assert db.record_feedback("slack", "r1", "U1", "sig.a", True)
    db.record_feedback("slack", "r1", "U1", "sig.a", False)  # changed their mind
    db.record_feedback("slack", "r1", "U2", "sig.a", False)
    assert db.feedback_counts("sig.a") == (0, 2)
    stats = db.stats(3600)
    assert [s.signature for s in stats] == ["sig.a", "sig.b"]
    assert stats[0].answers == 3 and stats[0].not_helpful == 2


def test_unwritable_database_is_survived(tmp_path, caplog):
    blocker = tmp_path / "file"
    blocker.write_text("x")
    db = Storage(blocker / "sub" / "bot.sqlite3")  # parent is a file: cannot be created
    assert db.claim("discord", "m1")  # falls back to "not seen"
    assert not db.record_feedback("discord", "r", "u", "s", True)
    assert db.failures >= 2
    assert "database unavailable" in caplog.text


def test_locked_database_is_survived(tmp_path):
    path = tmp_path / "bot.sqlite3"
    db = Storage(path)
    db.healthy()
    locker = sqlite3.connect(str(path), isolation_level=None)
    locker.execute("BEGIN EXCLUSIVE")
    try:
        db.record_event("discord", "reply", "s", "c", 1.0)  # waits busy_timeout, then gives up quietly
        assert db.failures == 1
    finally:
        locker.execute("ROLLBACK")
        locker.close()
    db.record_event("discord", "reply", "s", "c", 1.0)
    assert db.stats(60)[0].answers == 1
