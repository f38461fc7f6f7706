"""The Details store: the full answer per reply, bounded in size and in rows, in old databases too; and
the Markdown read back as pieces (title, paragraphs, code blocks a pasted ``` cannot end)."""

from __future__ import annotations

import sqlite3
from itertools import count

from bot.details import CUT_NOTE, Piece, bounded, pieces
from bot.storage import CHART_MAX_BYTES, Storage, StoredDetails


def test_details_round_trip_and_an_edit_replaces_them(tmp_path):
    db = Storage(tmp_path / "garden.sqlite3")
    assert db.record_details("slack", "C1:1.0", "## T\n\nfirst\n", b"\x89PNG")
    assert db.details_for("slack", "C1:1.0") == StoredDetails("## T\n\nfirst\n", b"\x89PNG")
    assert db.record_details("slack", "C1:1.0", "## T\n\nedited\n", None)
    assert db.details_for("slack", "C1:1.0") == StoredDetails("## T\n\nedited\n", None)
    assert db.details_for("discord", "C1:1.0") is None  # keyed by platform too


def test_old_database_gains_the_details_table(tmp_path):
    path = tmp_path / "old.sqlite3"
    with sqlite3.connect(path) as conn:
        conn.execute(
            "CREATE TABLE replies (platform TEXT NOT NULL, source_id TEXT NOT NULL, channel_id TEXT, "
            "reply_id TEXT, signature TEXT, category TEXT, created_at REAL NOT NULL, "
            "PRIMARY KEY (platform, source_id))"
        )
    db = Storage(path)
    assert db.details_for("discord", "1") is None
    assert db.record_details("discord", "1", "## T\n", None)
    assert db.details_for("discord", "1") == StoredDetails("## T\n", None)


def test_each_platform_keeps_its_newest_rows(tmp_path):
    ticks = count()
    db = Storage(tmp_path / "garden.sqlite3", clock=lambda: float(next(ticks)), details_keep=2)
    db.record_details("slack", "s0", "s0", None)
    for key in ("d0", "d1", "d2"):
        db.record_details("discord", key, key, None)
    assert [db.details_for("discord", k) is not None for k in ("d0", "d1", "d2")] == [False, True, True]
    assert db.details_for("slack", "s0") == StoredDetails("s0", None)


def test_a_huge_answer_is_cut_with_a_note_and_a_huge_chart_is_not_kept(tmp_path):
    db = Storage(tmp_path / "garden.sqlite3")
    huge = "## T\n\n```\n" + "é line\n" * 20_000 + "```\n"
    db.record_details("discord", "1", huge, b"x" * (CHART_MAX_BYTES + 1))
    stored = db.details_for("discord", "1")
    assert stored is not None and stored.chart is None
    assert len(stored.markdown.encode("utf-8")) <= 60 * 1024
    assert stored.markdown.endswith(f"é line\n```\n\n{CUT_NOTE}\n")  # the open code block is closed
    assert pieces(stored.markdown)[-1] == Piece("text", CUT_NOTE)


def test_unwritable_database_stores_no_details(tmp_path):
    blocker = tmp_path / "file"
    blocker.write_text("x")
    db = Storage(blocker / "sub" / "bot.sqlite3")
    assert not db.record_details("discord", "1", "## T\n", None)
    assert db.details_for("discord", "1") is None


def test_bounded_leaves_a_small_answer_alone():
    assert bounded("## T\n\nshort\n") == "## T\n\nshort\n"


def test_pieces_keep_a_pasted_fence_inside_its_block():
    markdown = "## Title\n\n**Why**\nbecause\n\n````\nline with ``` inside\n````\n- a fact\n```bash\nvllm serve m\n```\n"
    assert pieces(markdown) == [
        Piece("title", "Title"),
        Piece("text", "**Why**\nbecause"),
        Piece("code", "line with ``` inside"),
        Piece("text", "- a fact"),
        Piece("code", "vllm serve m", "bash"),
    ]
