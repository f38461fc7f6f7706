"""Platform faults on the loopback fakes: 429 with Retry-After, 5xx, a gateway / Socket Mode connection
dropped mid-reply, slow and broken attachment downloads.  The bot retries, resumes, and every message
is answered exactly once: no reply lost, none duplicated."""

from __future__ import annotations

import asyncio
import logging

from tests.adapters.discord.conftest import eventually, running_garden
from tests.adapters.slack.fake_slack import event_callback, message_event
from tests.hardening.conftest import OPEN
from tests.hardening.faulty import Trickle
from tests.hardening.hostile import KV_PASTE

THREAD_MESSAGES = r"/channels/\d+/messages"
THREADS = r"/channels/\d+/messages/\d+/threads"


def _answers(fake, source_id: str):
    """Replies delivered for one source message (the thread has the message's id), plus fallbacks."""
    in_thread = fake.delivered("POST", rf"/channels/{source_id}/messages")
    as_reply = [
        c
        for c in fake.delivered("POST", THREAD_MESSAGES)
        if str((c.json or {}).get("message_reference", {}).get("message_id")) == source_id
    ]
    return in_thread + as_reply


# --- Discord --------------------------------------------------------------------------------------


async def test_discord_429_is_waited_out_and_the_reply_sent_once(fake_discord, tmp_path, caplog):
    async with running_garden(fake_discord, tmp_path / "db.sqlite3", limits=OPEN) as garden:
        fake = garden.fake
        source = fake.message(KV_PASTE)
        fake.rate_limit_next("POST", rf"/channels/{source['id']}/messages", retry_after=0.3)
        await fake.dispatch("MESSAGE_CREATE", source)
        assert await eventually(lambda: len(_answers(fake, source["id"])) == 1, timeout=10)
        await fake.settle(0.3)
        attempts = fake.find("POST", rf"/channels/{source['id']}/messages")
        assert len(attempts) == 2  # the refused one, then the delivered one
        assert attempts[1].at - attempts[0].at >= 0.25  # it waited for retry_after
        assert len(_answers(fake, source["id"])) == 1


async def test_discord_502_is_retried_with_backoff_and_sent_once(fake_discord, tmp_path):
    async with running_garden(fake_discord, tmp_path / "db.sqlite3", limits=OPEN) as garden:
        fake = garden.fake
        source = fake.message(KV_PASTE)
        fake.fail_next("POST", rf"/channels/{source['id']}/messages", 502)
        await fake.dispatch("MESSAGE_CREATE", source)
        assert await eventually(lambda: len(_answers(fake, source["id"])) == 1, timeout=10)
        await fake.settle(0.3)
        assert len(_answers(fake, source["id"])) == 1


async def test_discord_503_on_the_thread_falls_back_to_one_reply(fake_discord, tmp_path):
    """discord.py does not retry a 503: the thread send fails, and the answer goes out as a reply."""
    async with running_garden(fake_discord, tmp_path / "db.sqlite3", limits=OPEN) as garden:
        fake = garden.fake
        source = fake.message(KV_PASTE)
        fake.fail_next("POST", rf"/channels/{source['id']}/messages", 503)
        await fake.dispatch("MESSAGE_CREATE", source)
        assert await eventually(lambda: len(_answers(fake, source["id"])) == 1, timeout=10)
        await fake.settle(0.3)
        assert len(_answers(fake, source["id"])) == 1


async def test_discord_gateway_dropped_mid_reply_resumes_and_replayed_event_is_not_answered_twice(
    fake_discord, tmp_path
):
    async with running_garden(fake_discord, tmp_path / "db.sqlite3", limits=OPEN) as garden:
        fake = garden.fake
        sources = [fake.message(KV_PASTE) for _ in range(3)]
        for s in sources:
            await fake.dispatch("MESSAGE_CREATE", s)
        await fake.drop_connection()  # while the replies are being worked out and sent
        assert await eventually(lambda: fake.resumes >= 1, timeout=10)
        assert await eventually(lambda: garden.health.snapshot() == {"discord": True})
        # a resumed session replays what the client may have missed: the same messages again
        for s in sources:
            await fake.dispatch("MESSAGE_CREATE", s)
        after = fake.message(KV_PASTE)
        await fake.dispatch("MESSAGE_CREATE", after)
        assert await eventually(lambda: len(_answers(fake, after["id"])) == 1, timeout=10)
        await fake.settle(0.3)
        for s in [*sources, after]:
            assert len(_answers(fake, s["id"])) == 1


async def test_discord_slow_attachment_does_not_hold_up_other_messages(fake_discord, tmp_path):
    async with running_garden(fake_discord, tmp_path / "db.sqlite3", limits=OPEN) as garden:
        fake = garden.fake
        log = (("INFO noise line\n" * 40_000) + KV_PASTE).encode()  # ~640 KiB, ten 64 KiB chunks
        slow = fake.message(
            "see log", attachments=[fake.attachment("server.log", log, trickle=Trickle(delay=0.15))]
        )
        await fake.dispatch("MESSAGE_CREATE", slow)
        quick = fake.message(KV_PASTE)
        await fake.dispatch("MESSAGE_CREATE", quick)
        assert await eventually(lambda: len(_answers(fake, quick["id"])) == 1, timeout=10)
        assert not _answers(fake, slow["id"])  # still downloading
        assert await eventually(lambda: len(_answers(fake, slow["id"])) == 1, timeout=15)
        (reply,) = _answers(fake, slow["id"])
        assert "5,728" in reply.json["embeds"][0]["title"]


async def test_discord_attachment_cut_off_midway_is_downloaded_again(fake_discord, tmp_path, caplog):
    caplog.set_level(logging.INFO)
    async with running_garden(fake_discord, tmp_path / "db.sqlite3", limits=OPEN) as garden:
        fake = garden.fake
        log = (("INFO noise line\n" * 20_000) + KV_PASTE).encode()
        att = fake.attachment("message.txt", log, trickle=Trickle(cut_after=100_000))
        source = fake.message("", attachments=[att])
        await fake.dispatch("MESSAGE_CREATE", source)
        assert await eventually(lambda: len(_answers(fake, source["id"])) == 1, timeout=15)
        (reply,) = _answers(fake, source["id"])
        assert "5,728" in reply.json["embeds"][0]["title"]
        assert len(fake.file_requests) == 2  # the broken download and the retry


# --- Slack ----------------------------------------------------------------------------------------


def slack_escaped(text: str) -> str:
    return text.replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;")


def _posts_for(fake, ts: str):
    return [
        c
        for c in fake.called("chat.postMessage")
        if str(c.body.get("thread_ts")) == ts and c.body.get("blocks")
    ]


async def test_slack_429_then_5xx_are_retried_and_the_reply_posted_once(slack_factory, fake_slack):
    h = await slack_factory()
    fake_slack.fail("chat.postMessage", status=429, headers={"Retry-After": "1"})
    fake_slack.fail("chat.postMessage", status=503, body={"ok": False, "error": "service_unavailable"})
    event = message_event(slack_escaped(KV_PASTE))
    await h.event(event)
    await fake_slack.wait_until(lambda: len(fake_slack.called("chat.postMessage")) == 3, timeout=15)
    await h.settled(1)
    calls = fake_slack.called("chat.postMessage")
    assert len(calls) == 3  # 429, 503, delivered
    assert calls[1].at - calls[0].at >= 1.0  # Retry-After was honoured
    assert calls[0].body == calls[2].body


async def test_slack_socket_dropped_mid_reply_reconnects_and_retry_is_answered_once(
    slack_factory, fake_slack
):
    h = await slack_factory()
    first = message_event(slack_escaped(KV_PASTE))
    callback = event_callback(first, "Ev0DROP")
    await h.send("events_api", callback)
    await fake_slack.drop_socket()  # the answer is on its way while the link goes down
    await fake_slack.wait_until(lambda: fake_slack.connections >= 2, timeout=20)
    await fake_slack.wait_connected(timeout=20)
    # Slack redelivers an event it is not sure was acknowledged: same event_id, retry_attempt 1
    await h.send("events_api", callback, retry_attempt=1, retry_reason="timeout")
    after = message_event(slack_escaped(KV_PASTE))
    await h.event(after)
    await fake_slack.wait_until(lambda: len(_posts_for(fake_slack, after["ts"])) == 1, timeout=10)
    await h.settled(3)
    assert len(_posts_for(fake_slack, first["ts"])) == 1
    assert len(_posts_for(fake_slack, after["ts"])) == 1


async def test_slack_slow_and_broken_file_downloads(slack_factory, fake_slack):
    h = await slack_factory()
    log = (("INFO noise line\n" * 20_000) + KV_PASTE).encode()
    fake_slack.files["slow.log"] = log
    fake_slack.trickle["slow.log"] = Trickle(delay=0.1)
    fake_slack.files["cut.log"] = log
    fake_slack.trickle["cut.log"] = Trickle(cut_after=100_000)
    events = []
    for name in ("slow.log", "cut.log"):
        f = {
            "id": f"F{name}",
            "name": name,
            "mimetype": "text/plain",
            "filetype": "text",
            "size": len(log),
            "url_private_download": fake_slack.file_url(name),
        }
        ev = message_event("see log", subtype="file_share", files=[f])
        events.append(ev)
        await h.event(ev)
    quick = message_event(slack_escaped(KV_PASTE))
    await h.event(quick)
    await fake_slack.wait_until(lambda: len(_posts_for(fake_slack, quick["ts"])) == 1, timeout=10)
    for ev in events:
        await fake_slack.wait_until(lambda ev=ev: len(_posts_for(fake_slack, ev["ts"])) == 1, timeout=15)
    await h.settled(3)
    for ev in events:
        (post,) = _posts_for(fake_slack, ev["ts"])
        assert "5,728" in json_text(post.body)
    assert fake_slack.served["cut.log"] == 2  # the broken download and the retry


def json_text(body: dict) -> str:
    import json

    return json.dumps(body)


async def test_concurrent_faults_lose_nothing(fake_discord, tmp_path):
    """Faults on several routes at once, under a small burst: each message answered exactly once."""
    async with running_garden(fake_discord, tmp_path / "db.sqlite3", limits=OPEN) as garden:
        fake = garden.fake
        sources = [fake.message(KV_PASTE) for _ in range(12)]
        for i, s in enumerate(sources):
            if i % 4 == 0:
                fake.rate_limit_next("POST", rf"/channels/{s['id']}/messages", retry_after=0.2)
            elif i % 4 == 1:
                fake.fail_next("POST", rf"/channels/{s['id']}/messages", 502)
            elif i % 4 == 2:
                fake.fail_next("POST", rf"/channels/\d+/messages/{s['id']}/threads", 500)
        await asyncio.gather(*(fake.dispatch("MESSAGE_CREATE", s) for s in sources))
        assert await eventually(lambda: all(len(_answers(fake, s["id"])) >= 1 for s in sources), timeout=20)
        await fake.settle(0.5)
        assert [len(_answers(fake, s["id"])) for s in sources] == [1] * len(sources)
