"""Pasted errors through the real discord.py client against the fake Discord: threads, replies,
attachments, mentions, bots, duplicates, edits, throttling, malformed payloads."""

from __future__ import annotations

import json

from bot.settings import Limits
from tests.adapters.discord.conftest import KV_PASTE, db_rows, eventually, running_garden
from tests.adapters.discord.fake_discord import (
    BOT_ID,
    CHANNEL_ID,
    DM_CHANNEL_ID,
    OTHER_BOT_ID,
    QUIET_CHANNEL_ID,
    _user,
)

MESSAGES = r"/channels/\d+/messages"
THREADS = r"/channels/\d+/messages/\d+/threads"
MESSAGE_CONTENT = 1 << 15


def embed_text(call) -> str:
    """Everything a user reads in the embeds of one recorded message call."""
    out = []
    for embed in call.json.get("embeds") or []:
        out += [embed.get("title") or "", embed.get("description") or ""]
        for f in embed.get("fields", []):
            out += [f["name"], f["value"]]
        out.append((embed.get("footer") or {}).get("text", ""))
    return "\n".join(out)


async def test_paste_in_enabled_channel_gets_a_threaded_reply(garden):
    fake = garden.fake
    assert garden.health.snapshot() == {"discord": True}
    assert fake.identify["intents"] & MESSAGE_CONTENT  # passive channels configured
    source = fake.message(KV_PASTE)
    await fake.dispatch("MESSAGE_CREATE", source)

    (thread_call,) = await fake.wait_for("POST", THREADS)
    assert thread_call.path == f"/channels/{CHANNEL_ID}/messages/{source['id']}/threads"
    assert "5,728" in thread_call.json["name"] and len(thread_call.json["name"]) <= 100
    (reply,) = await fake.wait_for("POST", MESSAGES)
    assert reply.path == f"/channels/{source['id']}/messages"  # the thread has the message's id
    body = reply.json
    assert body["allowed_mentions"] == {"parse": []}
    assert not body.get("content")
    embed = body["embeds"][0]
    assert "5,728" in embed["title"] and "131,072" in embed["title"]
    assert "5,728 tokens" in embed["description"]  # the key point
    fixes = [f for f in embed["fields"] if f["name"] == "Fix"]
    # no command pasted: the flag to add
    assert fixes and "(add `--max-model-len 5120` to your vLLM command)" in fixes[0]["value"]
    assert "--max-model-len" in embed_text(reply)
    buttons = body["components"][0]["components"]
    assert [b["label"] for b in buttons] == ["Helpful", "Not helpful", "Details"]
    assert buttons[0]["custom_id"] == f"gg:fb:y:{source['id']}:vllm.kv_cache_too_small.v0"
    expected = (f"{source['id']}/{reply.response['id']}", "vllm.kv_cache_too_small.v0")
    assert await eventually(
        lambda: db_rows(garden.db, "SELECT reply_id, signature FROM replies") == [expected]
    )


async def test_reply_mode_reply_uses_a_reply_that_pings_nobody(fake_discord, tmp_path):
    async with running_garden(fake_discord, tmp_path / "db", reply_mode="reply") as garden:
        fake = garden.fake
        source = fake.message(KV_PASTE)
        await fake.dispatch("MESSAGE_CREATE", source)
        (reply,) = await fake.wait_for("POST", MESSAGES)
        assert reply.path == f"/channels/{CHANNEL_ID}/messages"
        assert str(reply.json["message_reference"]["message_id"]) == source["id"]
        assert reply.json["allowed_mentions"] == {"parse": [], "replied_user": False}
        assert not fake.find("POST", THREADS)


async def test_no_thread_permission_falls_back_to_a_reply(garden):
    fake = garden.fake
    source = fake.message(KV_PASTE)
    fake.fail[f"POST /channels/{CHANNEL_ID}/messages/{source['id']}/threads"] = (
        403,
        {"message": "Missing Permissions", "code": 50013},
    )
    await fake.dispatch("MESSAGE_CREATE", source)
    (reply,) = await fake.wait_for("POST", MESSAGES)
    assert reply.path == f"/channels/{CHANNEL_ID}/messages"
    assert str(reply.json["message_reference"]["message_id"]) == source["id"]


async def test_message_txt_without_content_type_is_read(garden):
    fake = garden.fake
    log = ("INFO starting engine\n" * 200 + KV_PASTE + "\n").encode()
    att = fake.attachment("message.txt", log)  # no content_type, as Discord sometimes sends it
    await fake.dispatch("MESSAGE_CREATE", fake.message("", attachments=[att]))
    (reply,) = await fake.wait_for("POST", MESSAGES)
    assert "5,728" in reply.json["embeds"][0]["title"]
    assert len(fake.file_requests) == 1 and "Range" not in fake.file_requests[0]


async def test_oversized_attachment_reads_only_the_capped_tail(fake_discord, tmp_path):
    limits = Limits(user_per_minute=100, channel_per_minute=100, attachment_max_bytes=1024)
    async with running_garden(fake_discord, tmp_path / "db", limits=limits) as garden:
        fake = garden.fake
        log = ("x" * 79 + "\n").encode() * 200 + KV_PASTE.encode()
        att = fake.attachment("server.log", log, "text/plain; charset=utf-8")
        await fake.dispatch("MESSAGE_CREATE", fake.message("my server died", attachments=[att]))
        (reply,) = await fake.wait_for("POST", MESSAGES)
        assert fake.file_requests[0]["Range"] == "bytes=-1024"
        assert "5,728" in reply.json["embeds"][0]["title"]


async def test_binary_attachments_are_not_downloaded(garden):
    fake = garden.fake
    png = fake.attachment("screenshot.png", b"\x89PNG\r\n\x1a\n" + b"\0" * 100, "image/png")
    await fake.dispatch("MESSAGE_CREATE", fake.message(KV_PASTE, attachments=[png]))
    (reply,) = await fake.wait_for("POST", MESSAGES)
    assert fake.file_requests == []
    assert "screenshot.png" in embed_text(reply)  # the reply says it skipped it


async def test_bots_and_itself_are_ignored(garden):
    fake = garden.fake
    other_bot = _user(OTHER_BOT_ID, "ci-bot", bot=True)
    await fake.dispatch("MESSAGE_CREATE", fake.message(KV_PASTE, author=other_bot))
    await fake.dispatch("MESSAGE_CREATE", fake.message(KV_PASTE, author=fake.bot_user))
    await fake.settle()
    assert not fake.find("POST", MESSAGES) and not fake.find("POST", THREADS)


async def test_pasted_mentions_stay_inert(garden):
    fake = garden.fake
    paste = f"@everyone @here <@&{CHANNEL_ID}> <@123456789012345678> look:\n{KV_PASTE}"
    await fake.dispatch("MESSAGE_CREATE", fake.message(paste))
    (reply,) = await fake.wait_for("POST", MESSAGES)
    assert reply.json["allowed_mentions"] == {"parse": []}
    assert not reply.json.get("content")
    sent = json.dumps(reply.json)
    assert "@everyone" not in sent and "<@123456789012345678>" not in sent


async def test_the_same_message_twice_gets_one_reply(garden):
    fake = garden.fake
    source = fake.message(KV_PASTE)
    await fake.dispatch("MESSAGE_CREATE", source)
    await fake.dispatch("MESSAGE_CREATE", source)
    await fake.wait_for("POST", MESSAGES)
    await fake.settle()
    assert len(fake.find("POST", MESSAGES)) == 1
    assert len(fake.find("POST", THREADS)) == 1


async def test_an_edit_updates_the_reply_in_place(garden):
    fake = garden.fake
    source = fake.message(KV_PASTE)
    await fake.dispatch("MESSAGE_CREATE", source)
    (reply,) = await fake.wait_for("POST", MESSAGES)
    edited_text = KV_PASTE.replace("131072", "32768").replace("5728", "3664")
    edited = {**source, "content": edited_text, "edited_timestamp": "2026-08-01T00:00:00+00:00"}
    await fake.dispatch("MESSAGE_UPDATE", edited)
    (patch,) = await fake.wait_for("PATCH", r"/channels/\d+/messages/\d+")
    assert patch.path == f"/channels/{source['id']}/messages/{reply.response['id']}"
    title = patch.json["embeds"][0]["title"]
    assert "3,664" in title and "32,768" in title
    assert patch.json["allowed_mentions"] == {"parse": []}
    await fake.settle()
    assert len(fake.find("POST", MESSAGES)) == 1  # no second reply


async def test_an_embed_only_update_is_not_a_retriage(garden):
    fake = garden.fake
    source = fake.message(KV_PASTE)
    await fake.dispatch("MESSAGE_CREATE", source)
    await fake.wait_for("POST", MESSAGES)
    await fake.dispatch("MESSAGE_UPDATE", {**source, "embeds": [{"type": "link", "url": "https://x.y"}]})
    await fake.settle()
    assert not fake.find("PATCH", r"/channels/\d+/messages/\d+")


async def test_an_uncached_message_is_retriaged_only_when_really_edited(garden):
    fake = garden.fake
    preview_only = fake.message(KV_PASTE)  # never seen by this process, not edited
    await fake.dispatch("MESSAGE_UPDATE", preview_only)
    await fake.settle()
    assert not fake.find("POST", MESSAGES)
    await fake.dispatch("MESSAGE_UPDATE", fake.message(KV_PASTE, edited=True))
    (reply,) = await fake.wait_for("POST", MESSAGES)
    assert "5,728" in reply.json["embeds"][0]["title"]


async def test_quiet_channel_needs_a_mention_and_the_mention_is_stripped(garden):
    fake = garden.fake
    await fake.dispatch("MESSAGE_CREATE", fake.message(KV_PASTE, channel_id=QUIET_CHANNEL_ID))
    await fake.settle()
    assert not fake.find("POST", MESSAGES)
    asked = fake.message(
        f"<@{BOT_ID}> {KV_PASTE}", channel_id=QUIET_CHANNEL_ID, mentions=[fake.mention_of_bot()]
    )
    await fake.dispatch("MESSAGE_CREATE", asked)
    (reply,) = await fake.wait_for("POST", MESSAGES)
    assert "5,728" in reply.json["embeds"][0]["title"]


async def test_unknown_error_is_silent_passively_but_answered_when_asked(garden):
    fake = garden.fake
    unknown = "ImportError: cannot import name 'foo' from 'bar'"
    await fake.dispatch("MESSAGE_CREATE", fake.message(unknown))
    await fake.settle()
    assert not fake.find("POST", MESSAGES)
    await fake.dispatch(
        "MESSAGE_CREATE", fake.message(f"<@{BOT_ID}> {unknown}", mentions=[fake.mention_of_bot()])
    )
    (reply,) = await fake.wait_for("POST", MESSAGES)
    assert reply.json["embeds"][0]["title"].startswith("No known")


async def test_mentions_and_dms_work_without_the_privileged_intent(fake_discord, tmp_path):
    async with running_garden(fake_discord, tmp_path / "db", channels=[]) as garden:
        fake = garden.fake
        assert not fake.identify["intents"] & MESSAGE_CONTENT
        await fake.dispatch("MESSAGE_CREATE", fake.message(KV_PASTE))  # no passive channels now
        await fake.settle()
        assert not fake.find("POST", MESSAGES)
        await fake.dispatch("MESSAGE_CREATE", fake.message(KV_PASTE, channel_id=DM_CHANNEL_ID, guild=False))
        (reply,) = await fake.wait_for("POST", MESSAGES)
        assert reply.path == f"/channels/{DM_CHANNEL_ID}/messages"  # no threads in DMs
        assert "5,728" in reply.json["embeds"][0]["title"]


async def test_throttled_user_gets_one_notice(fake_discord, tmp_path):
    limits = Limits(user_per_minute=1, channel_per_minute=100)
    async with running_garden(fake_discord, tmp_path / "db", limits=limits, channels=[]) as garden:
        fake = garden.fake
        for _ in range(3):
            await fake.dispatch(
                "MESSAGE_CREATE",
                fake.message(
                    f"<@{BOT_ID}> {KV_PASTE}", channel_id=QUIET_CHANNEL_ID, mentions=[fake.mention_of_bot()]
                ),
            )
        await fake.wait_for("POST", MESSAGES, count=2)
        await fake.settle()
        posts = fake.find("POST", MESSAGES)
        assert len(posts) == 2
        notices = [p for p in posts if p.json.get("content")]
        assert len(notices) == 1 and "try again" in notices[0].json["content"]
        assert notices[0].json["allowed_mentions"] == {"parse": [], "replied_user": False}


async def test_a_malformed_payload_is_logged_not_fatal(garden, caplog):
    fake = garden.fake
    broken = fake.message(KV_PASTE)
    del broken["author"]
    await fake.dispatch("MESSAGE_CREATE", broken)
    await fake.dispatch("INTERACTION_CREATE", {"id": "not-a-number"})
    await fake.dispatch("MESSAGE_CREATE", fake.message(KV_PASTE))
    (reply,) = await fake.wait_for("POST", MESSAGES)
    assert "5,728" in reply.json["embeds"][0]["title"]
    assert garden.health.snapshot() == {"discord": True}
    assert "malformed MESSAGE_CREATE" in caplog.text


async def test_a_utf16_powershell_log_is_read(garden):
    """PowerShell 5.1's ``>`` writes UTF-16 LE with a BOM; piped tools drop the BOM: both are read."""
    fake = garden.fake
    log = "INFO starting engine\r\n" * 20 + KV_PASTE + "\r\n"
    for n, data in enumerate([log.encode("utf-16"), log.encode("utf-16-le")]):
        att = fake.attachment(f"server{n}.log", data)
        source = fake.message("", attachments=[att])
        await fake.dispatch("MESSAGE_CREATE", source)
        (reply,) = await fake.wait_for("POST", rf"/channels/{source['id']}/messages")
        assert "5,728" in reply.json["embeds"][0]["title"]


def test_mention_and_command_markup_stays_inside_code():
    """Reply text outside code (a title, a note quoting the paste) never renders Discord markup; the
    same text inside a fix's code block is shown as typed."""
    from adapters.discord.render import render
    from bot.reply import Fix, Reply

    markup = "</vram:1> <@123456789012345678> <@&5> <#7> <a:x:9> @here @everyone"
    reply = Reply(kind="diagnosis", title=markup, summary=markup, notes=[markup])
    reply.fixes.append(Fix("vllm", "change", f"vllm serve m {markup}", "effect"))
    embed = render(reply, chart=False).embeds[0].to_dict()
    texts = [embed["title"], embed.get("description", "")] + [f["value"] for f in embed.get("fields", [])]
    joined = "\n".join(texts)
    outside = "".join(joined.split("```")[::2])
    for mark in ("</vram:", "<@1", "<@&", "<#7", "<a:", "@here", "@everyone"):
        assert mark not in outside, mark
    assert f"vllm serve m {markup}" in joined  # inside the code block, as typed
