"""Size: a 50 MiB attachment, a 1 MB line without a newline, 100,000 short lines.  The caps apply (the
download cap per file, then the paste cap), the reply says it read only part, memory stays bounded, and
the error at the end of a long log is still found (the tail is what is kept)."""

from __future__ import annotations

import tracemalloc

import pytest

from bot.core import collect_paste
from bot.message import Attachment, IncomingMessage
from bot.service import GardenService
from bot.settings import Limits
from tests.adapters.discord.conftest import eventually, running_garden
from tests.adapters.slack.fake_slack import message_event
from tests.hardening.conftest import OPEN
from tests.hardening.faulty import Trickle
from tests.hardening.hostile import KV_PASTE

MIB = 1024 * 1024
CAP_NOTE = "larger than I read"


def big_log(size: int, error: str = KV_PASTE) -> bytes:
    line = b"INFO 04-12 08:21:19 [worker.py:267] Avg prompt throughput: 12.3 tokens/s, running: 3 reqs\n"
    body = line * (size // len(line))
    return body[: size - len(error) - 1] + b"\n" + error.encode()


def shapes() -> dict[str, IncomingMessage]:
    return {
        "50 MiB attachment": IncomingMessage(
            platform="test", attachments=(Attachment("server.log", big_log(50 * MIB)),), mentioned=True
        ),
        "1 MB without a newline": IncomingMessage(
            platform="test", text="x" * 1_000_000 + " " + KV_PASTE, mentioned=True
        ),
        "100,000 short lines": IncomingMessage(
            platform="test", text="ok\n" * 100_000 + KV_PASTE, mentioned=True
        ),
        "3 MiB message text": IncomingMessage(
            platform="test", text=KV_PASTE + "\n" + "y" * (3 * MIB), mentioned=True
        ),
    }


@pytest.mark.parametrize("name", list(shapes()))
async def test_size_caps_apply_with_a_note_and_bounded_memory(name):
    limits = Limits(user_per_minute=1000, channel_per_minute=1000)
    msg = shapes()[name]
    svc = GardenService(limits=limits)
    await svc.handle(IncomingMessage(platform="test", text=KV_PASTE, message_id="warm", mentioned=True))
    tracemalloc.start()
    try:
        out = await svc.handle(msg)
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert out.reply is not None
    size = len(msg.text.encode()) + sum(len(a.content) for a in msg.attachments)
    over = size > limits.paste_max_bytes
    assert (CAP_NOTE in " ".join(out.reply.notes)) == over
    if name != "3 MiB message text":  # the cap keeps the head of a message's own text
        assert out.reply.category == "kv_cache_too_small"
    # what the bot allocates while answering is a small multiple of what it reads, not of what was sent
    assert peak < 40 * limits.paste_max_bytes, peak


def test_collect_paste_keeps_the_tail_of_an_attachment_within_the_cap():
    att = Attachment("server.log", big_log(50 * MIB))
    paste = collect_paste(IncomingMessage(platform="test", text="see log", attachments=(att,)), 2 * MIB)
    assert paste.truncated
    assert len(paste.text.encode()) <= 2 * MIB
    assert paste.text.endswith(KV_PASTE)


async def test_discord_50_mib_attachment_is_fetched_by_its_tail(fake_discord, tmp_path):
    async with running_garden(fake_discord, tmp_path / "db.sqlite3", limits=OPEN) as garden:
        fake = garden.fake
        cap = garden.client.settings.limits.attachment_max_bytes
        source = fake.message("", attachments=[fake.attachment("server.log", big_log(50 * MIB))])
        await fake.dispatch("MESSAGE_CREATE", source)
        assert await eventually(lambda: fake.find("POST", rf"/channels/{source['id']}/messages"), timeout=15)
        (reply,) = fake.find("POST", rf"/channels/{source['id']}/messages")
        assert fake.file_requests[0].get("Range") == f"bytes=-{cap}"  # only the tail crossed the wire
        text = str(reply.json["embeds"])
        assert "5,728" in reply.json["embeds"][0]["title"] and CAP_NOTE in text


@pytest.mark.parametrize(
    "server", ["answers Range", "ignores Range, size announced", "ignores Range, no size"]
)
async def test_slack_50_mib_file_is_read_from_its_tail(server, slack_factory, fake_slack):
    h = await slack_factory()
    data = big_log(50 * MIB)
    fake_slack.files["server.log"] = data
    if server == "answers Range":
        fake_slack.trickle["server.log"] = Trickle()
    f = {
        "id": "F50",
        "name": "server.log",
        "mimetype": "text/plain",
        "filetype": "text",
        "url_private_download": fake_slack.file_url("server.log"),
    }
    if server != "ignores Range, no size":
        f["size"] = len(data)
    ev = message_event("", subtype="file_share", files=[f])
    await h.event(ev)
    await h.settled(1)
    (post,) = [c for c in fake_slack.called("chat.postMessage") if c.body.get("thread_ts") == ev["ts"]]
    text = str(post.body["blocks"])
    assert "5,728" in text, "the error at the end of the log was not read"
    assert CAP_NOTE in text


def test_broken_bytes_that_grow_when_decoded_do_not_push_out_the_error():
    """Each invalid byte decodes to a 3-byte U+FFFD: a cp1252 log over the cap grows past it once more,
    and that second cut must also keep the end, where the error is."""
    att = Attachment("windows.log", b"caf\xe9 cr\xe8me " * 300_000 + KV_PASTE.encode())
    paste = collect_paste(IncomingMessage(platform="test", text="see log", attachments=(att,)), 2 * MIB)
    assert paste.truncated and len(paste.text.encode()) <= 2 * MIB
    assert paste.text.startswith("see log\n") and paste.text.endswith(KV_PASTE)
