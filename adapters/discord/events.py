"""discord.py objects -> the neutral IncomingMessage.

Decides whether a message is for us at all (a DM, an @mention, or a passive channel from the
settings), strips our own mention from the text, and reads text attachments (``message.txt`` from long
pastes, ``.log`` files) with a size cap, asynchronously.  Bytes are decoded later by the service, in
its worker thread.
"""

from __future__ import annotations

import asyncio
import logging
import re
from collections.abc import Awaitable, Callable, Collection
from typing import Literal

import aiohttp
import discord

from bot.core import TEXT_EXTENSIONS
from bot.message import Attachment, IncomingMessage, SlashCommand

log = logging.getLogger("gpu_garden.discord")

Trigger = Literal["dm", "mention", "passive"]
MAX_ATTACHMENTS = 5  # text files read from one message
TEXT_TYPES = ("text/", "application/json", "application/x-yaml", "application/yaml", "application/x-sh")
BINARY_TYPES = ("image/", "video/", "audio/", "application/zip", "application/gzip", "application/pdf")

# fetch(url, announced_size, cap) -> (bytes, truncated)
Fetcher = Callable[[str, int, int], Awaitable[tuple[bytes, bool]]]
DOWNLOAD_RETRIES = 2  # a download cut off midway (connection reset, 5xx) is tried again...
RETRY_BACKOFF = 0.5  # ...after 0.5 s, then 1 s
_TRANSIENT = (aiohttp.ClientPayloadError, aiohttp.ClientConnectionError, ConnectionError)


def trigger(
    message: discord.Message, me: discord.abc.User, passive_channels: Collection[int], passive: bool
) -> Trigger | None:
    """Why we would read this message, or None when it is not for us."""
    if message.author.bot or message.author.id == me.id:
        return None
    if message.type not in (discord.MessageType.default, discord.MessageType.reply):
        return None
    if message.guild is None:
        return "dm"
    if mentions_me(message, me):
        return "mention"
    channel = message.channel
    parent_id = getattr(channel, "parent_id", None)
    if passive and (
        channel.id in passive_channels or (parent_id is not None and parent_id in passive_channels)
    ):
        return "passive"
    return None


def mentions_me(message: discord.Message, me: discord.abc.User) -> bool:
    """An explicit @mention of the bot user or of its managed role (never @everyone/@here)."""
    if any(u.id == me.id for u in message.mentions):
        return True
    role = message.guild.self_role if message.guild is not None else None
    return role is not None and any(r.id == role.id for r in message.role_mentions)


def strip_mentions(text: str, me_id: int, role_id: int | None = None) -> str:
    """Remove ``<@me>`` / ``<@!me>`` (and our role's ``<@&id>``) from the text."""
    text = re.sub(rf"<@!?{me_id}>", "", text)
    if role_id is not None:
        text = text.replace(f"<@&{role_id}>", "")
    return text.strip()


def is_text_attachment(att: discord.Attachment) -> bool:
    """Text by content type or by name; ``message.txt`` may come without a content type."""
    ctype = (att.content_type or "").split(";")[0].strip().lower()
    if ctype.startswith(BINARY_TYPES):
        return False
    if ctype.startswith(TEXT_TYPES):
        return True
    name = att.filename.lower()
    ext = "." + name.rsplit(".", 1)[1] if "." in name else ""
    return name == "message.txt" or ext in TEXT_EXTENSIONS


async def http_fetch(session: aiohttp.ClientSession, url: str, size: int, cap: int) -> tuple[bytes, bool]:
    """Download at most ``cap`` bytes.  Over the cap, ask for the tail (errors are at the end of logs)."""
    headers = {"Range": f"bytes=-{cap}"} if size > cap else {}
    async with session.get(url, headers=headers) as resp:
        resp.raise_for_status()
        chunks: list[bytes] = []
        got = 0
        async for chunk in resp.content.iter_chunked(64 * 1024):
            chunks.append(chunk)
            got += len(chunk)
            if got >= cap:
                break
        data = b"".join(chunks)
    truncated = size > cap or len(data) > cap
    return data[:cap], truncated


async def fetch_with_retry(fetch: Fetcher, url: str, size: int, cap: int) -> tuple[bytes, bool]:
    """``fetch``, tried again with backoff when the connection breaks or the CDN answers 5xx / 429."""
    for attempt in range(DOWNLOAD_RETRIES + 1):
        try:
            return await fetch(url, size, cap)
        except aiohttp.ClientResponseError as exc:
            if (exc.status < 500 and exc.status != 429) or attempt == DOWNLOAD_RETRIES:
                raise
            why = f"HTTP {exc.status}"
        except _TRANSIENT as exc:
            if attempt == DOWNLOAD_RETRIES:
                raise
            why = exc.__class__.__name__
        log.info("attachment download failed (%s); retrying", why)
        await asyncio.sleep(RETRY_BACKOFF * 2**attempt)
    raise AssertionError("unreachable")


async def read_attachments(
    attachments: list[discord.Attachment], fetch: Fetcher, cap: int, timeout: float = 20.0
) -> tuple[Attachment, ...]:
    """The text attachments' bytes (binary files are listed with no content, so the reply says so).
    ``timeout`` bounds each file's download, retries included."""

    async def one(att: discord.Attachment) -> Attachment:
        if not is_text_attachment(att):
            return Attachment(att.filename, b"", att.content_type, att.size)
        try:
            data, truncated = await asyncio.wait_for(fetch_with_retry(fetch, att.url, att.size, cap), timeout)
        except (TimeoutError, aiohttp.ClientError, OSError) as exc:
            log.warning("could not download attachment %s: %s", att.id, exc.__class__.__name__)
            return Attachment(att.filename, b"", att.content_type, att.size)
        return Attachment(att.filename, data, att.content_type or "text/plain", att.size, truncated)

    chosen = attachments[:MAX_ATTACHMENTS]
    return tuple(await asyncio.gather(*(one(a) for a in chosen)))


async def to_incoming(
    message: discord.Message,
    me: discord.abc.User,
    fetch: Fetcher | None,
    cap: int,
    *,
    mentioned: bool,
    command: SlashCommand | None = None,
    keep_ids: bool = True,
) -> IncomingMessage:
    role = message.guild.self_role if message.guild is not None else None
    text = strip_mentions(message.content or "", me.id, role.id if role else None)
    files = await read_attachments(list(message.attachments), fetch, cap) if fetch else ()
    channel = message.channel
    return IncomingMessage(
        platform="discord",
        text=text,
        attachments=files,
        command=command,
        user_id=str(message.author.id),
        channel_id=str(channel.id),
        message_id=str(message.id) if keep_ids else "",
        thread_id=str(channel.id) if isinstance(channel, discord.Thread) else None,
        is_bot=bool(message.author.bot),
        is_dm=message.guild is None,
        mentioned=mentioned,
    )
