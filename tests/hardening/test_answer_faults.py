"""Answers never lost or doubled: quick edits, deletes and a stop (SIGTERM) while an answer is being
posted, through the real discord.py and Bolt clients against the fakes with REST latency.  Every
message is answered exactly once; edited and deleted originals take their answer along."""

from __future__ import annotations

import asyncio
import time

from bot.service import GardenService
from bot.storage import Storage
from tests.adapters.discord.conftest import db_rows, eventually, running_garden
from tests.adapters.discord.fake_discord import CHANNEL_ID, GUILD_ID
from tests.adapters.slack.fake_slack import event_callback, message_event
from tests.hardening.conftest import OPEN
from tests.hardening.hostile import KV_PASTE

LATENCY = 0.3  # seconds the fakes take to answer a post: long enough for an edit to arrive meanwhile
EDITED = KV_PASTE.replace("131072", "32768").replace("5728", "3664")


# --- Discord --------------------------------------------------------------------------------------


def _discord_answers(fake, source_id: str):
    """Answers delivered in the thread of one source message (the thread has the message's id)."""
    return fake.delivered("POST", rf"/channels/{source_id}/messages")


def _edited(source: dict, content: str) -> dict:
    return {**source, "content": content, "edited_timestamp": "2026-08-01T00:00:00+00:00"}


def _deleted(source: dict) -> dict:
    return {"id": source["id"], "channel_id": str(CHANNEL_ID), "guild_id": str(GUILD_ID)}


async def test_discord_quick_edit_while_posting_updates_the_one_answer(fake_discord, tmp_path):
    async with running_garden(fake_discord, tmp_path / "db.sqlite3", limits=OPEN) as garden:
        fake = garden.fake
        source = fake.message(KV_PASTE)
        fake.slow("POST", rf"/channels/{source['id']}/messages", LATENCY)
        await fake.dispatch("MESSAGE_CREATE", source)
        await fake.arrival("POST", rf"/channels/{source['id']}/messages")
        await fake.dispatch("MESSAGE_UPDATE", _edited(source, EDITED))  # while the answer is in flight
        (patch,) = await fake.wait_for("PATCH", rf"/channels/{source['id']}/messages/\d+", timeout=10)
        (answer,) = _discord_answers(fake, source["id"])
        assert patch.path == f"/channels/{source['id']}/messages/{answer.response['id']}"
        assert "3,664" in patch.json["embeds"][0]["title"]
        await fake.settle(LATENCY)
        assert len(_discord_answers(fake, source["id"])) == 1


async def test_discord_edit_that_removes_the_error_removes_the_answer(fake_discord, tmp_path):
    async with running_garden(fake_discord, tmp_path / "db.sqlite3", limits=OPEN) as garden:
        fake = garden.fake
        source = fake.message(KV_PASTE)
        await fake.dispatch("MESSAGE_CREATE", source)
        (answer,) = await fake.wait_for("POST", rf"/channels/{source['id']}/messages")
        await fake.dispatch("MESSAGE_UPDATE", _edited(source, "never mind, found it"))
        (gone,) = await fake.wait_for("DELETE", r"/channels/\d+/messages/\d+")
        assert gone.path == f"/channels/{source['id']}/messages/{answer.response['id']}"
        assert await eventually(lambda: db_rows(garden.db, "SELECT reply_id FROM replies") == [(None,)])
        await fake.dispatch("MESSAGE_UPDATE", _edited(source, EDITED))  # the error is back: a new answer
        await fake.wait_for("POST", rf"/channels/{source['id']}/messages", count=2)
        assert not fake.find("PATCH", r"/channels/\d+/messages/\d+")


async def test_discord_deleted_original_deletes_the_answer_even_mid_post(fake_discord, tmp_path):
    async with running_garden(fake_discord, tmp_path / "db.sqlite3", limits=OPEN) as garden:
        fake = garden.fake
        first, second = fake.message(KV_PASTE), fake.message(KV_PASTE)
        await fake.dispatch("MESSAGE_CREATE", first)
        (answer,) = await fake.wait_for("POST", rf"/channels/{first['id']}/messages")
        await fake.dispatch("MESSAGE_DELETE", _deleted(first))
        (gone,) = await fake.wait_for("DELETE", r"/channels/\d+/messages/\d+")
        assert gone.path == f"/channels/{first['id']}/messages/{answer.response['id']}"
        fake.slow("POST", rf"/channels/{second['id']}/messages", LATENCY)
        await fake.dispatch("MESSAGE_CREATE", second)
        await fake.arrival("POST", rf"/channels/{second['id']}/messages")
        await fake.dispatch("MESSAGE_DELETE", _deleted(second))  # deleted while we post
        deletes = await fake.wait_for("DELETE", r"/channels/\d+/messages/\d+", count=2, timeout=10)
        (late,) = _discord_answers(fake, second["id"])
        assert deletes[1].path == f"/channels/{second['id']}/messages/{late.response['id']}"


async def test_discord_stop_mid_post_drains_the_answer(fake_discord, tmp_path):
    db = tmp_path / "db.sqlite3"
    async with running_garden(fake_discord, db, limits=OPEN) as garden:
        fake = garden.fake
        source = fake.message(KV_PASTE)
        fake.slow("POST", rf"/channels/{source['id']}/messages", 1.0)
        await fake.dispatch("MESSAGE_CREATE", source)
        await fake.arrival("POST", rf"/channels/{source['id']}/messages")
        await garden.client.close()  # what SIGTERM does: the runner cancels, the client closes
        assert len(_discord_answers(fake, source["id"])) == 1
        (row,) = db_rows(db, "SELECT reply_id, settled FROM replies")
        assert row[0] is not None and row[1] == 1


async def test_discord_stop_beyond_the_drain_bound_leaves_the_message_to_the_next_start(
    fake_discord, tmp_path
):
    db = tmp_path / "db.sqlite3"
    source = fake_discord.message(KV_PASTE)
    fake_discord.slow("POST", rf"/channels/{source['id']}/messages", 3.0)
    async with running_garden(fake_discord, db, limits=OPEN) as garden:
        garden.client.drain_seconds = 0.3
        await fake_discord.dispatch("MESSAGE_CREATE", source)
        await fake_discord.arrival("POST", rf"/channels/{source['id']}/messages")
        started = time.monotonic()
        await garden.client.close()
        assert time.monotonic() - started < 2.0  # bounded: the drain gave up after 0.3 s
    assert db_rows(db, "SELECT * FROM replies") == []  # taken, not answered: released
    fake_discord.latency.clear()
    async with running_garden(fake_discord, db, limits=OPEN) as garden:  # the restart
        await fake_discord.dispatch("MESSAGE_CREATE", source)  # replayed to the new session
        assert await eventually(lambda: len(_discord_answers(fake_discord, source["id"])) == 1, timeout=10)
        await fake_discord.settle(3.5)  # the abandoned first post is never delivered
        assert len(_discord_answers(fake_discord, source["id"])) == 1


# --- Slack ----------------------------------------------------------------------------------------


def slack_escaped(text: str) -> str:
    return text.replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;")


def _slack_answers(fake, ts: str):
    return [c for c in fake.called("chat.postMessage") if str(c.body.get("thread_ts")) == ts]


def _changed(ts: str, text: str) -> dict:
    return {
        "type": "message",
        "subtype": "message_changed",
        "channel": "CGARDEN",
        "channel_type": "channel",
        "hidden": True,
        "ts": "1700000100.000700",
        "message": {"type": "message", "user": "U100", "ts": ts, "text": text, "edited": {"ts": "x"}},
    }


def _slack_deleted(ts: str, tombstone: bool) -> dict:
    if tombstone:  # a deleted message with thread replies (ours) stays as a tombstone
        return {
            **_changed(ts, "This message was deleted."),
            "message": {"type": "message", "subtype": "tombstone", "user": "USLACKBOT", "ts": ts},
        }
    return {
        "type": "message",
        "subtype": "message_deleted",
        "channel": "CGARDEN",
        "channel_type": "channel",
        "hidden": True,
        "deleted_ts": ts,
        "ts": "1700000200.000100",
    }


async def test_slack_quick_edit_while_posting_updates_the_one_answer(slack_factory, fake_slack):
    h = await slack_factory()
    fake_slack.slow("chat.postMessage", LATENCY)
    first = message_event(slack_escaped(KV_PASTE))
    await h.event(first)
    await fake_slack.wait_until(lambda: "chat.postMessage" in fake_slack.arrived)
    await h.event(_changed(first["ts"], slack_escaped(EDITED)))
    (update,) = await fake_slack.wait_for("chat.update", timeout=10)
    await h.settled(2)
    (answer,) = _slack_answers(fake_slack, first["ts"])
    assert update.body["ts"] == "1700000000.000001"  # the ts the fake gave that answer
    assert "3,664" in update.body["text"]
    assert answer.body.get("blocks")


async def test_slack_deleted_original_deletes_the_answer(slack_factory, fake_slack):
    h = await slack_factory()
    for i, tombstone in enumerate((False, True)):
        source = message_event(slack_escaped(KV_PASTE))
        await h.event(source)
        await fake_slack.wait_until(lambda s=source: _slack_answers(fake_slack, s["ts"]))
        await h.settled(2 * i + 1)
        await h.event(_slack_deleted(source["ts"], tombstone))
        deletes = await fake_slack.wait_for("chat.delete", count=i + 1)
        await h.settled(2 * i + 2)
        assert deletes[i].body["ts"] == f"1700000000.{i + 1:06d}"
    assert len(fake_slack.called("chat.postMessage")) == 2


async def test_slack_delete_while_posting_deletes_the_late_answer(slack_factory, fake_slack):
    h = await slack_factory()
    fake_slack.slow("chat.postMessage", LATENCY)
    source = message_event(slack_escaped(KV_PASTE))
    await h.event(source)
    await fake_slack.wait_until(lambda: "chat.postMessage" in fake_slack.arrived)
    await h.event(_slack_deleted(source["ts"], tombstone=False))
    (gone,) = await fake_slack.wait_for("chat.delete", timeout=10)
    await h.settled(2)
    assert gone.body["ts"] == "1700000000.000001"


async def test_slack_stop_mid_post_drains_the_answer(slack_factory, fake_slack, tmp_path):
    storage = Storage(tmp_path / "drain.sqlite3")
    h = await slack_factory(service=GardenService(storage=storage, limits=OPEN))
    fake_slack.slow("chat.postMessage", 1.0)
    source = message_event(slack_escaped(KV_PASTE))
    await h.event(source)
    await fake_slack.wait_until(lambda: "chat.postMessage" in fake_slack.arrived)
    await h.bridge.drain()  # what SIGTERM does before the connection closes
    assert len(_slack_answers(fake_slack, source["ts"])) == 1 and not fake_slack.abandoned
    assert storage.reply_for("slack", f"slack:CGARDEN:{source['ts']}") == "1700000000.000001"


async def test_slack_post_cut_by_the_drain_bound_is_answered_when_redelivered(slack_factory, fake_slack):
    h = await slack_factory()
    fake_slack.slow("chat.postMessage", 3.0)
    source = message_event(slack_escaped(KV_PASTE))
    callback = event_callback(source, "Ev0STOP")
    await h.send("events_api", callback)
    await fake_slack.wait_until(lambda: "chat.postMessage" in fake_slack.arrived)
    started = time.monotonic()
    await h.bridge.drain(timeout=0.3)  # the bound is reached: the post is cancelled
    assert time.monotonic() - started < 2.0
    fake_slack.latency.clear()
    await h.send("events_api", callback, retry_attempt=1, retry_reason="timeout")  # Slack redelivers
    await fake_slack.wait_until(lambda: _slack_answers(fake_slack, source["ts"]), timeout=10)
    await asyncio.sleep(3.2)  # the cancelled post never completes
    assert len(_slack_answers(fake_slack, source["ts"])) == 1
    assert len(fake_slack.abandoned) == 1
