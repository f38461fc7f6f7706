"""The Details button through the real Bolt app against the fake Slack: the full answer ephemeral to
the clicker, after a restart too, the Markdown file in the thread when it is too long, a polite answer
when the details are gone."""

from __future__ import annotations

from adapters.slack.details import FILE_TITLE, GONE, IN_THREAD, SHORTENED
from adapters.slack.feedback import ACTION_DETAILS, FeedbackRef
from adapters.slack.render import BLOCKS_MAX, SECTION_MAX, TOTAL_MAX, block_text_size
from bot.service import GardenService
from bot.storage import Storage
from tests.adapters.slack.conftest import CHANNEL, _close_socket, _socket
from tests.adapters.slack.fake_slack import button_click, message_event
from tests.adapters.slack.test_slack_app import PASTE, blocks_text, feedback_value, slack_escaped

CHECKED = "_checked on the budget: starts True, fit_tokens 5728, serves 5120_"  # an unknown value is left out
COMMAND = "(add `--max-model-len 5120` to your vLLM command)"  # the paste has no command
TITLE = "*vLLM: the KV cache holds 5,728 tokens, the context asks for 131,072*"


def click_on_thread_reply(value: str, response_url: str, thread_ts: str) -> dict:
    """A click on our reply in a thread: Slack sends the message it was on."""
    payload = button_click(value, ACTION_DETAILS, response_url, user="U300")
    payload["message"] = {"type": "message", "ts": "1700000000.000009", "thread_ts": thread_ts}
    return payload


def action_ids(body: dict) -> list[str]:
    return [e["action_id"] for b in body["blocks"] if b["type"] == "actions" for e in b["elements"]]


async def test_details_give_the_full_answer_and_survive_a_restart(fake, service, tmp_path):
    first = await _socket(fake, service)
    try:
        await first.event(message_event(slack_escaped(PASTE), ts="1700000300.000100"))
        (post,) = await fake.wait_for("chat.postMessage")
        await first.settled(1)
        assert action_ids(post.body)[-1] == ACTION_DETAILS
        assert "*Why*" not in blocks_text(post.body)  # the first post stays chat-sized
        value = feedback_value(post.body, ACTION_DETAILS)
        assert FeedbackRef.parse(value) == FeedbackRef(f"{CHANNEL}:1700000300.000100")
        await first.send(
            "interactive", click_on_thread_reply(value, fake.response_url("d1"), "1700000300.000100")
        )
        await fake.wait_until(lambda: len(fake.responses) == 1)
        await first.settled(2)
    finally:
        await _close_socket(first)

    # a new process: a new service on the same database, nothing in memory
    again = GardenService(storage=Storage(tmp_path / "garden.sqlite3"))
    second = await _socket(fake, again)
    try:
        await second.send(
            "interactive", click_on_thread_reply(value, fake.response_url("d2"), "1700000300.000100")
        )
        await fake.wait_until(lambda: len(fake.responses) == 2)
        await second.settled(1)
    finally:
        await _close_socket(second)
        again.storage.close()

    for response in fake.responses:
        body = response.body
        assert body["response_type"] == "ephemeral" and body.get("replace_original") is False
        assert body["blocks"][0]["text"]["text"] == TITLE
        text = blocks_text(body)
        assert "*Why*\nvLLM sizes the KV cache" in text
        assert CHECKED in text and COMMAND in text
        assert "• kv tokens: *5,728* _(from your log)_" in text
        assert len(body["blocks"]) <= BLOCKS_MAX and block_text_size(body["blocks"]) <= TOTAL_MAX
        assert all(len(b["text"]["text"]) <= SECTION_MAX for b in body["blocks"] if b["type"] == "section")
    assert fake.responses[0].body["blocks"] == fake.responses[1].body["blocks"]
    assert not fake.called("files.completeUploadExternal")  # it fitted: nothing went into the thread


async def test_details_of_an_unknown_reply_are_politely_gone(socket, fake):
    value = FeedbackRef(f"{CHANNEL}:1.0").value()
    await socket.send("interactive", click_on_thread_reply(value, fake.response_url("g1"), "1.0"))
    (response,) = await fake.wait_until(lambda: fake.responses)
    await socket.settled(1)
    assert response.body["text"] == GONE and response.body["response_type"] == "ephemeral"
    assert "details are no longer available" in GONE


async def test_details_too_long_for_a_message_go_into_the_thread_as_a_file(socket, fake, service):
    fixes = "\n".join(f"- fix {i}\n```bash\nvllm serve m --max-model-len {1024 + i}\n```" for i in range(400))
    markdown = f"## Many fixes\n\n**Why**\nbecause\n\n{fixes}\n"
    assert service.storage.record_details("slack", f"{CHANNEL}:2.0", markdown, None)
    value = FeedbackRef(f"{CHANNEL}:2.0").value()
    await socket.send("interactive", click_on_thread_reply(value, fake.response_url("f1"), "2.0"))
    (complete,) = await fake.wait_for("files.completeUploadExternal")
    await fake.wait_until(lambda: fake.responses)
    await socket.settled(1)
    assert complete.body["channel_id"] == CHANNEL and complete.body["thread_ts"] == "2.0"
    assert [f["title"] for f in complete.body["files"]] == [FILE_TITLE]
    assert fake.uploads[0].body["size"] == len(markdown.encode())
    assert fake.responses[0].body["text"] == IN_THREAD


async def test_details_too_long_on_an_ephemeral_answer_are_shortened_not_made_public(socket, fake, service):
    markdown = "## Long\n\n" + "\n\n".join(f"paragraph {i} " + "words " * 300 for i in range(60))
    assert service.storage.record_details("slack", "triage:trig.9", markdown, None)
    payload = button_click(FeedbackRef("triage:trig.9").value(), ACTION_DETAILS, fake.response_url("e1"))
    payload["container"]["is_ephemeral"] = True
    await socket.send("interactive", payload)
    (response,) = await fake.wait_until(lambda: fake.responses)
    await socket.settled(1)
    blocks = response.body["blocks"]
    assert blocks[0]["text"]["text"] == "*Long*"
    assert blocks[-1]["elements"][0]["text"] == SHORTENED
    assert block_text_size(blocks) <= TOTAL_MAX
    assert not fake.called("files.getUploadURLExternal")


async def test_details_too_long_and_the_upload_refused_are_shortened(socket, fake, service):
    fake.fail("files.getUploadURLExternal", status=200, body={"ok": False, "error": "missing_scope"})
    markdown = "## Long\n\n" + "\n\n".join(f"paragraph {i} " + "words " * 300 for i in range(60))
    assert service.storage.record_details("slack", f"{CHANNEL}:3.0", markdown, None)
    value = FeedbackRef(f"{CHANNEL}:3.0").value()
    await socket.send("interactive", click_on_thread_reply(value, fake.response_url("u1"), "3.0"))
    (response,) = await fake.wait_until(lambda: fake.responses)
    await socket.settled(1)
    assert response.body["blocks"][-1]["elements"][0]["text"] == SHORTENED
    assert not fake.called("files.completeUploadExternal")
