"""The real Bolt app against the fake Slack: Socket Mode envelopes and signed HTTP requests in, Web API
calls and response_url posts out."""

from __future__ import annotations

import asyncio
import json
import urllib.parse

from slack_sdk.http_retry.builtin_async_handlers import AsyncRateLimitErrorRetryHandler

from adapters.slack import bridge_for, create_app
from adapters.slack.feedback import ACTION_HELPFUL, ACTION_NOT_HELPFUL
from adapters.slack.render import BLOCKS_MAX, SECTION_MAX, TOTAL_MAX, block_text_size
from bot.reply import Fix, MemoryPicture, MemorySegment, Reply, Section
from bot.service import GardenService
from bot.settings import Limits
from bot.vram import answer
from tests.adapters.slack.conftest import CHANNEL, make_settings
from tests.adapters.slack.fake_slack import (
    BOT_ID,
    BOT_TOKEN,
    BOT_USER_ID,
    button_click,
    event_callback,
    message_event,
    message_shortcut,
    slash_command,
)

PASTE = (
    "ValueError: The model's max seq len (131072) is larger than the maximum number of tokens that can be "
    "stored in KV cache (5728). Try increasing gpu_memory_utilization or decreasing max_model_len when "
    "initializing the engine."
)
# a paste whose reply carries a memory picture (vllm issue 10517, from the dev corpus)
PROFILED = (
    "Loading model weights took 14.9888 GB\nMemory profiling results: total_gpu_memory=23.58GiB "
    "initial_memory_usage=15.34GiB peak_torch_memory=17.98GiB memory_usage_post_profile=15.35GiB "
    "non_torch_memory=0.35GiB kv_cache_size=2.89GiB gpu_memory_utilization=0.90\n# GPU blocks: 1478, "
    "# CPU blocks: 2048\nMaximum concurrency for 29000 tokens per request: 0.82x\nThe model's max seq len "
    "(29000) is larger than the maximum number of tokens that can be stored in KV cache (23648). Try "
    "increasing `gpu_memory_utilization` or decreasing `max_model_len` when initializing the engine."
)


def slack_escaped(text: str) -> str:
    """What Slack puts in an event's text for what the user typed."""
    return text.replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;")


def blocks_text(body: dict) -> str:
    return "\n".join(
        b["text"]["text"] for b in body.get("blocks", []) if b.get("type") == "section" and "text" in b
    )


def feedback_value(body: dict, action_id: str = ACTION_HELPFUL) -> str:
    for block in body["blocks"]:
        if block["type"] == "actions":
            for element in block["elements"]:
                if element["action_id"] == action_id:
                    return element["value"]
    raise AssertionError("no feedback buttons")


# pasted errors ----------------------------------------------------------------------------------
async def test_pasted_error_in_enabled_channel_gets_a_threaded_block_kit_reply(socket, fake):
    event = message_event(slack_escaped(PASTE), ts="1700000100.000100")
    envelope_id = await socket.event(event)
    await socket.acked(envelope_id)
    (post,) = await fake.wait_for("chat.postMessage")
    await socket.settled(1)
    body = post.body
    assert post.headers["Authorization"] == f"Bearer {BOT_TOKEN}"
    assert body["channel"] == CHANNEL and body["thread_ts"] == "1700000100.000100"
    assert body["text"].startswith("vLLM: the KV cache holds 5,728 tokens")
    text = blocks_text(body)
    assert "131,072" in text and "5,728" in text
    assert "(add `--max-model-len 5120` to your vLLM command)" in text  # no command in the paste
    assert "llama-server" not in text  # no model in the paste: no other engine can be computed
    assert len(body["blocks"]) <= BLOCKS_MAX and block_text_size(body["blocks"]) <= TOTAL_MAX
    assert all(len(b["text"]["text"]) <= SECTION_MAX for b in body["blocks"] if b["type"] == "section")
    assert "link_names" not in body and "parse" not in body
    assert str(body.get("unfurl_links")).lower() == "false"
    assert len(fake.called("chat.postMessage")) == 1


async def test_reply_with_memory_picture_uploads_the_chart_into_the_thread(socket, fake):
    await socket.event(message_event(PROFILED, ts="1700000100.000200"))
    await fake.wait_for("files.completeUploadExternal")
    await socket.settled(1)
    (post,) = fake.called("chat.postMessage")
    assert "kv cache" in blocks_text(post.body).lower()
    (complete,) = fake.called("files.completeUploadExternal")
    assert complete.body["channel_id"] == CHANNEL and complete.body["thread_ts"] == "1700000100.000200"
    assert fake.uploads and fake.uploads[0].body["size"] > 1000  # the PNG bytes arrived


async def test_chart_upload_failure_does_not_lose_the_reply(socket, fake):
    fake.fail("files.getUploadURLExternal", status=200, body={"ok": False, "error": "missing_scope"})
    await socket.event(message_event(PROFILED))
    await fake.wait_for("files.getUploadURLExternal")
    await socket.settled(1)
    assert len(fake.called("chat.postMessage")) == 1
    assert not fake.called("files.completeUploadExternal")


async def test_unknown_error_is_silent_in_passive_channel_and_other_channels_are_ignored(socket, fake):
    await socket.event(message_event("lunch anyone? Traceback: my sandwich is missing"))
    await socket.event(message_event(slack_escaped(PASTE), channel="CRANDOM"))
    await socket.settled(2)
    assert not fake.called("chat.postMessage")


async def test_mention_with_unknown_error_gets_a_short_no_known_fix(socket, fake):
    event = {
        "type": "app_mention",
        "user": "U100",
        "channel": "CRANDOM",
        "ts": "1700000100.000300",
        "text": f"<@{BOT_USER_ID}> ImportError: libcudart.so.12 not found",
    }
    await socket.event(event)
    (post,) = await fake.wait_for("chat.postMessage")
    await socket.settled(1)
    assert post.body["thread_ts"] == "1700000100.000300"
    assert "No known memory or context issue" in post.body["text"]


async def test_mention_in_enabled_channel_is_answered_once(socket, fake):
    text = f"<@{BOT_USER_ID}> {slack_escaped(PASTE)}"
    ts = "1700000100.000400"
    await socket.event(message_event(text, ts=ts))  # the message event (we leave it to app_mention)
    await socket.event({"type": "app_mention", "user": "U100", "channel": CHANNEL, "ts": ts, "text": text})
    await socket.settled(2)
    assert len(fake.called("chat.postMessage")) == 1


async def test_dm_is_answered(socket, fake):
    await socket.event(message_event(slack_escaped(PASTE), channel="D0DM", channel_type="im"))
    (post,) = await fake.wait_for("chat.postMessage")
    await socket.settled(1)
    assert post.body["channel"] == "D0DM"


async def test_snippet_is_downloaded_with_the_bot_token_and_read(socket, fake):
    fake.files["vllm.log"] = ("INFO starting\n" * 50 + PASTE + "\n").encode()
    event = message_event(
        "my server will not start, log attached",
        subtype="file_share",
        ts="1700000100.000500",
        files=[
            {
                "id": "F0LOG",
                "name": "vllm.log",
                "title": "vllm.log",
                "mimetype": "text/plain",
                "filetype": "text",
                "mode": "snippet",
                "size": len(fake.files["vllm.log"]),
                "url_private": fake.file_url("vllm.log"),
                "url_private_download": fake.file_url("vllm.log"),
            },
            {"id": "F0PNG", "name": "screen.png", "mimetype": "image/png", "url_private": fake.file_url("x")},
        ],
    )
    await socket.event(event)
    (post,) = await fake.wait_for("chat.postMessage")
    await socket.settled(1)
    (download,) = fake.downloads
    assert download.method == "vllm.log" and download.headers["Authorization"] == f"Bearer {BOT_TOKEN}"
    assert "5,728" in blocks_text(post.body)
    assert "screen.png" in blocks_text(post.body)  # said it skipped the image


async def test_no_pings_from_a_paste(socket, fake):
    typed = f"<!channel> <!here> @here <@U123> <!subteam^S1> look:\n{PASTE}"
    # Slack delivers special mentions as markup and what the user typed literally as entities
    event_text = "<!channel> <!here> @here <@U123> <!subteam^S1|@team> look:\n" + slack_escaped(PASTE)
    await socket.event(message_event(event_text))
    await socket.event({"type": "app_mention", "user": "U1", "channel": "C2", "ts": "9.1", "text": typed})
    await fake.wait_for("chat.postMessage", 2)
    await socket.settled(2)
    for post in fake.called("chat.postMessage"):
        dumped = json.dumps(post.body)
        for markup in ("<!channel", "<!here", "<@U123", "<!subteam", "<!everyone"):
            assert markup not in dumped
        assert "link_names" not in post.body and "parse" not in post.body


async def test_vram_with_a_hostile_model_name_does_not_ping(socket, fake):
    # what Slack sends when someone types a literal <!channel> as the model name
    await socket.send("slash_commands", slash_command("gpu:4090 model:&lt;!channel&gt;", fake.response_url()))
    (response,) = await fake.wait_until(lambda: fake.responses)
    await socket.settled(1)
    dumped = json.dumps(response.body)
    assert "(that value)" in dumped  # not a model id: not said back at all
    assert "<!channel" not in dumped


# retries, bots, malformed payloads --------------------------------------------------------------
async def test_redelivered_event_is_answered_once(socket, fake):
    event = message_event(slack_escaped(PASTE))
    await socket.event(event, event_id="Ev0SAME")
    retry = event_callback(event, "Ev0SAME")
    await socket.send("events_api", retry, retry_attempt=1, retry_reason="timeout")
    await socket.settled(2)
    assert len(fake.called("chat.postMessage")) == 1


async def test_bot_messages_and_our_own_are_ignored(socket, fake):
    await socket.event(message_event(slack_escaped(PASTE), bot_id="B0OTHER", subtype="bot_message"))
    await socket.event(message_event(slack_escaped(PASTE), bot_id="B0OTHER"))
    own = await socket.event(message_event(slack_escaped(PASTE), user=BOT_USER_ID, bot_id=BOT_ID))
    await socket.acked(own)
    await socket.settled(2)
    marker = message_event(slack_escaped(PASTE), user="U777")
    await socket.event(marker)
    (post,) = await fake.wait_for("chat.postMessage")
    await socket.settled(3)
    assert post.body["thread_ts"] == marker["ts"]
    assert len(fake.called("chat.postMessage")) == 1


async def test_malformed_payloads_do_not_break_the_app(socket, fake):
    await socket.event({"type": "message", "channel": CHANNEL, "subtype": None, "files": "junk"})
    await socket.event({"type": "message", "channel": CHANNEL, "user": "U1", "ts": "1.0", "files": ["x", 3]})
    await socket.event({"type": "app_mention"})
    await socket.send("interactive", button_click("not json", ACTION_HELPFUL, fake.response_url()))
    await socket.settled(4)
    await socket.event(message_event(slack_escaped(PASTE)))
    await fake.wait_for("chat.postMessage")
    await socket.settled(5)


async def test_429_is_retried_after_retry_after_and_delivered_once(socket, fake):
    fake.fail("chat.postMessage", status=429, headers={"Retry-After": "0"})
    await socket.event(message_event(slack_escaped(PASTE)))
    calls = await fake.wait_for("chat.postMessage", 2)
    await socket.settled(1)
    assert len(fake.called("chat.postMessage")) == 2  # the refused one and the delivered one
    assert calls[0].body == calls[1].body


async def test_throttled_user_gets_one_ephemeral_notice_when_addressed(fake, socket_factory):
    h = await socket_factory(GardenService(limits=Limits(user_per_minute=1)))
    for i in range(3):
        await h.event(message_event(slack_escaped(PASTE), channel="D0DM", channel_type="im", ts=f"5.{i}"))
    await h.settled(3)
    assert len(fake.called("chat.postMessage")) == 1
    (notice,) = fake.called("chat.postEphemeral")
    assert notice.body["user"] == "U100" and "try again" in notice.body["text"]


async def test_edit_updates_our_reply_in_place(socket, fake):
    ts = "1700000100.000600"
    await socket.event(message_event(slack_escaped(PASTE), ts=ts))
    (_post,) = await fake.wait_for("chat.postMessage")
    await socket.settled(1)
    edited = {
        "type": "message",
        "subtype": "message_changed",
        "channel": CHANNEL,
        "channel_type": "channel",
        "hidden": True,
        "ts": "1700000100.000700",
        "message": {"type": "message", "user": "U100", "ts": ts, "text": PROFILED, "edited": {"ts": "x"}},
    }
    await socket.event(edited)
    (update,) = await fake.wait_for("chat.update")
    await socket.settled(2)
    assert update.body["ts"] == "1700000000.000001"  # the ts the fake gave our first reply
    assert "23,648" in update.body["text"]
    assert len(fake.called("chat.postMessage")) == 1


# /vram, the shortcut, feedback -------------------------------------------------------------------
async def test_vram_acks_first_then_responds_ephemerally(socket, fake, service, monkeypatch):
    real_handle = service.handle

    async def slow_handle(*args, **kwargs):  # a slow computation must not hold back the ack
        await asyncio.sleep(0.3)
        return await real_handle(*args, **kwargs)

    monkeypatch.setattr(service, "handle", slow_handle)
    command = slash_command("gpu:4090 model:qwen-32b-awq context:32k engine:vllm", fake.response_url("v1"))
    envelope_id = await socket.send("slash_commands", command)
    ack = await socket.acked(envelope_id)
    (response,) = await fake.wait_until(lambda: fake.responses)
    await socket.settled(1)
    assert ack["_at"] + 0.2 < response.at
    assert response.body["_id"] == "v1" and response.body["response_type"] == "ephemeral"
    expected = answer(None, "gpu:4090 model:qwen-32b-awq context:32k engine:vllm")  # the calculator's own
    assert response.body["text"].startswith(expected.title)
    assert f"{expected.data['max_model_len_fit']:,}" in blocks_text(response.body)
    assert "```\nNVIDIA GeForce RTX 4090 memory (vLLM)" in blocks_text(response.body)
    assert not fake.called("chat.postMessage") and not fake.called("files.completeUploadExternal")


async def test_vram_free_order(socket, fake):
    await socket.send("slash_commands", slash_command("4090 qwen-32b-awq", fake.response_url()))
    (response,) = await fake.wait_until(lambda: fake.responses)
    await socket.settled(1)
    assert "Qwen2.5-32B-Instruct-AWQ" in response.body["text"]


async def test_vram_help_shows_usage(socket, fake):
    await socket.send("slash_commands", slash_command("help", fake.response_url()))
    (response,) = await fake.wait_until(lambda: fake.responses)
    await socket.settled(1)
    assert "gpu:4090 model:qwen-32b-awq" in blocks_text(response.body)
    assert response.body["response_type"] == "ephemeral"


async def test_message_shortcut_triages_the_message_for_the_user(socket, fake):
    message = message_event(slack_escaped(PASTE), channel="CRANDOM")
    envelope_id = await socket.send("interactive", message_shortcut(message, fake.response_url("s1")))
    await socket.acked(envelope_id)
    (response,) = await fake.wait_until(lambda: fake.responses)
    await socket.settled(1)
    assert response.body["_id"] == "s1" and response.body["response_type"] == "ephemeral"
    assert "5,728" in blocks_text(response.body)


async def test_feedback_click_is_stored(socket, fake, service):
    await socket.event(message_event(slack_escaped(PASTE), ts="1700000100.000800"))
    (post,) = await fake.wait_for("chat.postMessage")
    await socket.settled(1)
    value = feedback_value(post.body)
    await socket.send("interactive", button_click(value, ACTION_HELPFUL, fake.response_url("b1"), user="U1"))
    await socket.send(
        "interactive", button_click(value, ACTION_NOT_HELPFUL, fake.response_url("b2"), user="U2")
    )
    await fake.wait_until(lambda: len(fake.responses) == 2)
    await socket.settled(3)
    assert service.storage.feedback_counts("vllm.kv_cache_too_small.v0") == (1, 1)
    assert {r.body["_id"] for r in fake.responses} == {"b1", "b2"}
    assert all(r.body.get("replace_original") is False for r in fake.responses)


# posting edge cases ------------------------------------------------------------------------------
async def test_reply_too_big_for_blocks_goes_with_the_full_markdown_file(socket, fake):
    from bot.message import IncomingMessage

    huge = Reply(
        kind="diagnosis",
        title="Huge <!here>",
        summary="Big. Really." + " More." * 2000,
        sections=[Section("What I matched", body="line\n" * 3000)],
        fixes=[Fix("vllm", f"fix {i}", "vllm serve m " + "--x " * 700, "e", rank=i) for i in range(30)],
        memory=MemoryPicture(24.0, [MemorySegment("weights", 20.0)]),
    )
    msg = IncomingMessage(platform="slack", text="x", channel_id=CHANNEL, message_id="7.0", user_id="U1")
    await socket.bridge.post_reply(msg, "7.0", huge)
    (post,) = fake.called("chat.postMessage")
    assert block_text_size(post.body["blocks"]) <= TOTAL_MAX
    completes = fake.called("files.completeUploadExternal")
    assert len(completes) == 2  # the Markdown file and the chart
    assert {f["title"] for c in completes for f in c.body["files"]} >= {"GPU Garden: the full answer"}
    assert all(c.body["thread_ts"] == "7.0" for c in completes)


async def test_blocks_refused_by_slack_fall_back_to_text_and_file(socket, fake):
    from bot.message import IncomingMessage

    fake.fail("chat.postMessage", status=200, body={"ok": False, "error": "msg_blocks_too_long"})
    msg = IncomingMessage(platform="slack", text="x", channel_id=CHANNEL, message_id="8.0", user_id="U1")
    await socket.bridge.post_reply(msg, "8.0", Reply(kind="diagnosis", title="T", summary="S."))
    first, second = fake.called("chat.postMessage")
    assert "blocks" in first.body and "blocks" not in second.body and second.body["text"].startswith("T: S.")
    assert fake.called("files.completeUploadExternal")


# HTTP mode ---------------------------------------------------------------------------------------
async def test_http_signed_event_is_accepted_and_answered(http, fake):
    status, _ = await http.event(event_callback(message_event(slack_escaped(PASTE), ts="1700000100.000900")))
    assert status == 200
    (post,) = await fake.wait_for("chat.postMessage")
    assert post.body["thread_ts"] == "1700000100.000900"


async def test_http_bad_signature_is_rejected(http, fake):
    body = json.dumps(event_callback(message_event(slack_escaped(PASTE)))).encode()
    status, _ = await http.post(body, "application/json", secret="not-the-secret")
    assert status == 401
    await http.bridge.drain()
    assert not fake.called("chat.postMessage")


async def test_http_retry_with_same_event_id_is_answered_once(http, fake):
    payload = event_callback(message_event(slack_escaped(PASTE)), "Ev0RETRY")
    assert (await http.event(payload))[0] == 200
    status, _ = await http.event(
        payload, **{"X-Slack-Retry-Num": "1", "X-Slack-Retry-Reason": "http_timeout"}
    )
    assert status == 200
    await fake.wait_for("chat.postMessage")
    await fake.wait_until(lambda: http.bridge.completed >= 2)
    await http.bridge.drain()
    assert len(fake.called("chat.postMessage")) == 1


async def test_http_slash_command_form_body(http, fake):
    form = urllib.parse.urlencode(slash_command("gpu:4090 model:qwen-32b-awq", fake.response_url("h1")))
    status, _ = await http.post(form.encode(), "application/x-www-form-urlencoded")
    assert status == 200
    (response,) = await fake.wait_until(lambda: fake.responses)
    assert response.body["_id"] == "h1" and "RTX 4090" in response.body["text"]


# the factory -------------------------------------------------------------------------------------
async def test_create_app_uses_the_configured_api_url_and_retry_handlers(fake, service):
    app = create_app(make_settings(fake), service)
    try:
        assert app.client.base_url == fake.api_url
        assert any(isinstance(h, AsyncRateLimitErrorRetryHandler) for h in app.client.retry_handlers)
    finally:
        await bridge_for(app).aclose()


async def test_a_failed_download_and_a_failed_post_are_counted_on_the_metrics(fake, socket_factory, tmp_path):
    from bot.metrics import Metrics
    from bot.service import GardenService
    from bot.storage import Storage

    metrics = Metrics()
    svc = GardenService(storage=Storage(tmp_path / "m.sqlite3"), metrics=metrics)
    h = await socket_factory(svc)
    missing = {
        "id": "FGONE",
        "name": "gone.log",
        "mimetype": "text/plain",
        "filetype": "text",
        "size": 10,
        "url_private_download": fake.file_url("gone.log"),  # the fake answers 404
    }
    await h.event(message_event("see log", subtype="file_share", files=[missing]))
    await h.settled(1)
    fake.fail("chat.postMessage", status=200, body={"ok": False, "error": "channel_not_found"})
    await h.event(message_event(PROFILED))
    await h.settled(2)
    errors = "gpu_garden_platform_errors_total"
    assert metrics.value(errors, {"platform": "slack", "kind": "download"}) == 1.0
    assert metrics.value(errors, {"platform": "slack", "kind": "send"}) == 1.0
    assert metrics.value("gpu_garden_messages_total", {"platform": "slack", "outcome": "reply"}) == 1.0


async def test_a_utf16_snippet_is_read(socket, fake):
    fake.files["ps.log"] = ("INFO starting\r\n" * 20 + PASTE + "\r\n").encode("utf-16")
    event = message_event(
        "log attached",
        subtype="file_share",
        ts="1700000100.000900",
        files=[
            {
                "id": "F0PS",
                "name": "ps.log",
                "mimetype": "text/plain",
                "filetype": "text",
                "size": len(fake.files["ps.log"]),
                "url_private": fake.file_url("ps.log"),
                "url_private_download": fake.file_url("ps.log"),
            }
        ],
    )
    await socket.event(event)
    (post,) = await fake.wait_for("chat.postMessage")
    await socket.settled(1)
    assert "5,728" in blocks_text(post.body)


def test_pasted_broadcasts_are_inert_in_our_text():
    from adapters.slack.render import render_reply

    reply = Reply(
        kind="diagnosis", title="@channel <!here> look", summary="@here @everyone", notes=["@channel"]
    )
    dumped = json.dumps(render_reply(reply).payload())
    for mark in ("@channel", "@here", "@everyone", "<!here"):
        assert mark not in dumped, mark
    assert "@\\u200bchannel" in dumped
