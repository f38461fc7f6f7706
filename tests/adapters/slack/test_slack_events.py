"""Slack payload → IncomingMessage: who is answered where, text unescaping, files, downloads."""

from __future__ import annotations

from adapters.slack.commands import from_vram_command, is_help
from adapters.slack.events import (
    from_app_mention,
    from_message_event,
    from_message_shortcut,
    is_text_file,
    slack_to_text,
)
from adapters.slack.files import FileFetcher
from bot.settings import SlackSettings
from tests.adapters.slack.fake_slack import BOT_TOKEN, BOT_USER_ID, message_event

SETTINGS = SlackSettings(channels=["CGARDEN"])


def test_slack_text_back_to_what_was_typed():
    raw = (
        "a &lt;b&gt; &amp; <@U1> <!here> <!subteam^S1|@oncall> <#C1|general> <https://x.io|x> <https://y.io>"
    )
    assert slack_to_text(raw) == "a <b> & @U1 @here @oncall #general x https://y.io"
    assert slack_to_text(None) == ""


def test_enabled_channel_is_read_passively_and_threaded():
    incoming = from_message_event(message_event("boom", ts="1.5"), SETTINGS, BOT_USER_ID)
    assert incoming is not None
    assert incoming.thread_ts == "1.5" and incoming.msg.message_id == "1.5"
    assert not incoming.msg.addressed
    reply_in_thread = message_event("boom", ts="2.0", thread_ts="1.0")
    assert from_message_event(reply_in_thread, SETTINGS, BOT_USER_ID).thread_ts == "1.0"


def test_other_channels_bots_and_noise_are_not_for_us():
    assert from_message_event(message_event("x", channel="COTHER"), SETTINGS, BOT_USER_ID) is None
    passive_off = SlackSettings(channels=["CGARDEN"], passive=False)
    assert from_message_event(message_event("x"), passive_off, BOT_USER_ID) is None
    assert from_message_event(message_event("x", bot_id="B1"), SETTINGS, BOT_USER_ID) is None
    assert from_message_event(message_event("x", subtype="bot_message"), SETTINGS, BOT_USER_ID) is None
    assert from_message_event(message_event("x", subtype="channel_join"), SETTINGS, BOT_USER_ID) is None
    mention = message_event(f"<@{BOT_USER_ID}> x")
    assert from_message_event(mention, SETTINGS, BOT_USER_ID) is None  # app_mention answers it
    assert from_message_event({"type": "message"}, SETTINGS, BOT_USER_ID) is None
    unfurl = {"type": "message", "subtype": "message_changed", "channel": "CGARDEN", "message": {"ts": "1"}}
    assert from_message_event(unfurl, SETTINGS, BOT_USER_ID) is None


def test_dm_is_addressed_in_any_channel_list():
    incoming = from_message_event(
        message_event("x", channel="D123", channel_type="im"), SlackSettings(passive=False), BOT_USER_ID
    )
    assert incoming is not None and incoming.msg.is_dm and incoming.msg.addressed


def test_edit_is_read_from_the_inner_message():
    event = {
        "type": "message",
        "subtype": "message_changed",
        "channel": "CGARDEN",
        "channel_type": "channel",
        "message": {"type": "message", "user": "U1", "text": "new", "ts": "5.0", "edited": {"ts": "6.0"}},
        "previous_message": {"type": "message", "user": "U1", "text": "old", "ts": "5.0"},
    }
    incoming = from_message_event(event, SETTINGS, BOT_USER_ID)
    assert incoming.edited and incoming.msg.text == "new" and incoming.msg.message_id == "5.0"


def test_mention_strips_the_bot_and_is_addressed():
    event = {
        "type": "app_mention",
        "user": "U1",
        "channel": "CX",
        "ts": "1.0",
        "text": f"<@{BOT_USER_ID}> hi",
    }
    incoming = from_app_mention(event, BOT_USER_ID)
    assert incoming.msg.text == "hi" and incoming.msg.mentioned


def test_text_files_are_picked_and_others_skipped():
    files = [
        {"id": "F1", "name": "-", "mode": "snippet", "url_private_download": "https://files.slack.com/1"},
        {"id": "F2", "name": "vllm.log", "mimetype": "application/octet-stream", "url_private": "u"},
        {"id": "F3", "name": "shot.png", "mimetype": "image/png", "url_private": "u"},
        {"id": "F4", "name": "x.txt", "mode": "external", "url_private": "u"},
        {"id": "F5", "name": "conf", "filetype": "yaml", "mimetype": "", "url_private": "u"},
    ]
    assert [is_text_file(f) for f in files] == [True, True, False, False, True]
    event = message_event("", subtype="file_share", files=files)
    incoming = from_message_event(event, SETTINGS, BOT_USER_ID)
    assert [f["id"] for f in incoming.files] == ["F1", "F2", "F5"]
    assert incoming.skipped == ["shot.png", "x.txt"]


def test_shortcut_and_command_translation():
    shortcut = {
        "type": "message_action",
        "callback_id": "triage_message",
        "user": {"id": "U9"},
        "channel": {"id": "C9"},
        "message": {"text": "err &lt;x&gt;", "ts": "3.0"},
    }
    incoming = from_message_shortcut(shortcut)
    assert incoming.msg.text == "err <x>" and incoming.msg.addressed and incoming.msg.message_id == ""
    assert from_message_shortcut({"message": "junk"}) is None
    msg = from_vram_command({"text": "gpu:4090 model:qwen-32b-awq", "user_id": "U1", "channel_id": "C1"})
    assert msg.command.name == "vram" and msg.command.raw == "gpu:4090 model:qwen-32b-awq"
    assert is_help("help") and is_help("  ") and not is_help("4090")


def test_token_goes_only_to_slack_or_the_configured_api_host():
    fetcher = FileFetcher(BOT_TOKEN, 1024, "http://127.0.0.1:9999/api/")
    assert fetcher.trusted("https://files.slack.com/files-pri/T1-F1/download/x.log")
    assert fetcher.trusted("https://files.slack-gov.com/x")
    assert fetcher.trusted("http://127.0.0.1:9999/files/x")
    assert not fetcher.trusted("https://evil.example/files/x")
    assert not fetcher.trusted("http://files.slack.com/x")  # not over plain HTTP
    assert not fetcher.trusted("https://slack.com.evil.example/x")
    assert not fetcher.trusted("file:///etc/passwd")


async def test_download_is_capped_and_needs_the_bearer_token(fake):
    fake.files["big.log"] = b"A" * 5000
    fake.files["small.log"] = b"hello"
    fetcher = FileFetcher(BOT_TOKEN, 1024, fake.api_url)
    try:
        big = await fetcher.fetch(
            {"id": "F1", "name": "big.log", "url_private_download": fake.file_url("big.log")}
        )
        assert len(big.content) == 1024 and big.truncated
        announced = await fetcher.fetch(
            {"id": "F2", "name": "big.log", "size": 5000, "url_private_download": fake.file_url("big.log")}
        )
        assert len(announced.content) == 1024 and announced.truncated and announced.size == 5000
        small = await fetcher.fetch(
            {"id": "F3", "name": "small.log", "size": 5, "url_private_download": fake.file_url("small.log")}
        )
        assert small.content == b"hello" and not small.truncated
        assert all(d.headers["Authorization"] == f"Bearer {BOT_TOKEN}" for d in fake.downloads)
        wrong = FileFetcher("xoxb-wrong", 1024, fake.api_url)
        try:
            assert await wrong.fetch({"id": "F4", "url_private_download": fake.file_url("small.log")}) is None
        finally:
            await wrong.aclose()
        missing = await fetcher.fetch_all([{"id": "F5", "url_private_download": fake.file_url("nope")}])
        assert missing == []
    finally:
        await fetcher.aclose()
