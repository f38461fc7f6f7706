"""The "Details" button: the full answer as an ephemeral message to whoever clicks, after a restart too.

The full Markdown was stored when the reply was posted (``GardenService.store_details``); the button's
value names the reply, so a click needs only the database.  The answer goes to the clicker alone
(through the action's ``response_url``, else ``chat.postEphemeral``) as blocks within Slack's limits;
when it is too long for one message it goes into the reply's thread as a Markdown file (an answer that
was itself ephemeral is shortened instead, so nothing private becomes public).  The memory chart is
already in the thread: it was uploaded with the reply.
"""

from __future__ import annotations

import logging
from typing import TYPE_CHECKING, Any

import re2

from adapters.slack.feedback import FeedbackRef
from adapters.slack.render import (
    SECTION_MAX,
    Rendered,
    code_block,
    context,
    cut,
    escape,
    fits,
    pack,
    section,
)
from bot.details import Piece, pieces
from bot.reply import Reply

if TYPE_CHECKING:
    from adapters.slack.app import SlackBridge

log = logging.getLogger("gpu_garden.slack")

PLATFORM = "slack"
GONE = "Sorry, the details are no longer available (I keep them for recent answers only)."
IN_THREAD = "The full answer is too long for one message; I put it in the thread as a file."
SHORTENED = "Shortened to fit in one message."
FILENAME = "gpu-garden-answer.md"
FILE_TITLE = "GPU Garden: the full answer"
_BOLD = re2.compile(r"\*\*([^*\n]+)\*\*")
_HEADING = re2.compile(r"(?m)^#{1,6} +(.+)$")
_BULLET = re2.compile(r"(?m)^(\s*)- ")
_TICKS = re2.compile(r"```")


def _mrkdwn(text: str) -> str:
    """A paragraph of the stored Markdown as Slack mrkdwn: escaped, ``**bold**`` -> ``*bold*``,
    headings bold, ``- `` bullets as ``•``, and no ``` that could open a code block."""
    out = _TICKS.sub(lambda _m: "`\u200b``", escape(text))
    out = _HEADING.sub(lambda m: f"**{m.group(1)}**", out)
    out = _BOLD.sub(lambda m: f"*{m.group(1)}*", out)
    return _BULLET.sub(lambda m: f"{m.group(1)}• ", out)


def _unit(piece: Piece) -> str:
    return code_block(piece.text) if piece.kind == "code" else _mrkdwn(piece.text)


def detail_blocks(markdown: str) -> list[dict]:
    parts = pieces(markdown)
    title = next((p.text for p in parts if p.kind == "title"), "") or "GPU Garden"
    blocks = [section(cut(f"*{escape(title)}*", SECTION_MAX))]
    blocks += [section(t) for t in pack([_unit(p) for p in parts if p.kind != "title"])]
    blocks.append(context("GPU Garden · the full answer, only you can see this"))
    return blocks


def fallback(markdown: str) -> str:
    title = next((p.text for p in pieces(markdown) if p.kind == "title"), "") or "GPU Garden"
    return cut(escape(f"{title} (the full answer)"), 2900)


def shortened(markdown: str) -> Rendered:
    """The first blocks that fit in one message, and a note saying it was cut."""
    blocks = detail_blocks(markdown)[:-1]
    note = context(SHORTENED)
    while blocks and not fits([*blocks, note]):
        blocks.pop()
    return Rendered(fallback(markdown), [*blocks, note])


async def keep(service: Any, key: str, reply: Reply) -> bool:
    """Store a diagnosis' full answer before it is posted; True when the Details button can be shown."""
    if reply.kind != "diagnosis":
        return False
    try:
        return await service.store_details(PLATFORM, key, reply)
    except Exception:  # the button is a nicety: never lose the answer over it
        log.exception("details could not be stored")
        return False


def _where(body: dict[str, Any]) -> tuple[str, str, bool]:
    """(channel, thread ts, whether the clicked message was ephemeral) of a block_actions payload."""
    container = body.get("container") or {}
    message = body.get("message") or {}
    channel = str((body.get("channel") or {}).get("id") or container.get("channel_id") or "")
    thread = message.get("thread_ts") or container.get("thread_ts") or message.get("ts") or ""
    ephemeral = bool(container.get("is_ephemeral")) or not message
    return channel, str(thread or container.get("message_ts") or ""), ephemeral


async def answer_click(bridge: SlackBridge, body: dict[str, Any], action: dict[str, Any], respond) -> None:
    """The full answer to the clicker (or a polite note that it is gone)."""
    ref = FeedbackRef.parse(action.get("value"))
    user = str((body.get("user") or {}).get("id") or "")
    if ref is None or not user:
        log.warning("details click without a usable value or user; ignored")
        return
    channel, thread, ephemeral = _where(body)

    async def tell(rendered: Rendered) -> None:
        if respond is not None and body.get("response_url"):
            await respond(**rendered.payload(), response_type="ephemeral", replace_original=False)
        elif channel:
            await bridge.client.chat_postEphemeral(
                channel=channel, user=user, thread_ts=thread or None, **rendered.payload()
            )

    stored = await bridge.service.details(PLATFORM, ref.reply_key)
    if stored is None:
        await tell(Rendered(GONE, [section(escape(GONE))]))
        return
    blocks = detail_blocks(stored.markdown)
    if fits(blocks):
        await tell(Rendered(fallback(stored.markdown), blocks))
    elif (
        ephemeral
        or not channel
        or not thread
        or not await bridge._upload(
            channel, thread, content=stored.markdown.encode("utf-8"), filename=FILENAME, title=FILE_TITLE
        )
    ):
        await tell(shortened(stored.markdown))  # no file into the thread: the start of it, said so
    else:
        await tell(Rendered(IN_THREAD, [section(escape(IN_THREAD))]))
