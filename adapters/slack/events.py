"""Slack payloads → the neutral :class:`~bot.message.IncomingMessage` (pure functions, no I/O).

Decides which message events are for us (enabled channels when passive, DMs, mentions), which
subtypes count (plain, ``file_share``, ``thread_broadcast``, edits), turns Slack's escaped mrkdwn back
into the text the user pasted, and picks the attached files worth downloading.
"""

from __future__ import annotations

import html
import re
from dataclasses import dataclass, field
from typing import Any

from bot.message import IncomingMessage
from bot.settings import SlackSettings

# subtypes that carry something a person wrote; everything else (joins, topic changes, deletions,
# bot messages, ...) is ignored
READ_SUBTYPES = {None, "", "file_share", "thread_broadcast"}
EDIT_SUBTYPE = "message_changed"
DELETE_SUBTYPE = "message_deleted"
# a deleted message that has thread replies (ours) stays as a "tombstone": Slack sends message_changed
# whose message has subtype "tombstone" (https://github.com/openclaw/openclaw/pull/22035), or
# message_deleted with a tombstone as previous_message (https://github.com/slack-edge/slack-edge/pull/10)
TOMBSTONE_SUBTYPE = "tombstone"
BOT_SUBTYPES = {"bot_message", "bot_add", "bot_remove"}

TEXT_FILETYPES = {
    "text",
    "plain",
    "log",
    "markdown",
    "md",
    "python",
    "shell",
    "bash",
    "json",
    "yaml",
    "toml",
    "ini",
    "diff",
    "csv",
    "tsv",
    "dockerfile",
    "docker",
    "javascript",
    "typescript",
    "go",
    "rust",
    "c",
    "cpp",
    "sql",
    "xml",
    "html",
}
TEXT_EXTENSIONS = {
    "txt",
    "log",
    "md",
    "out",
    "err",
    "json",
    "jsonl",
    "yaml",
    "yml",
    "toml",
    "ini",
    "cfg",
    "conf",
    "py",
    "sh",
    "csv",
    "tsv",
    "diff",
    "patch",
}
SKIP_MODES = {"external", "tombstone", "hidden_by_limit", "email"}
MAX_FILES = 5

_LINK = re.compile(r"<([^<>|]*)(?:\|([^<>]*))?>")


def slack_to_text(text: str | None) -> str:
    """Slack's message text back to what was typed: ``<@U1>`` → ``@U1``, ``<url|label>`` → ``label``,
    ``<!here>`` → ``@here``, then ``&amp;`` ``&lt;`` ``&gt;`` decoded."""
    if not text:
        return ""

    def plain(m: re.Match[str]) -> str:
        target, label = m.group(1), m.group(2)
        if target.startswith(("@", "#")):
            return f"{target[0]}{label}" if label else target
        if target.startswith("!"):
            name = target[1:].split("^", 1)[0]
            return "@" + (label.lstrip("@") if label else name)
        return label or target

    return html.unescape(_LINK.sub(plain, text)) if "<" in text or "&" in text else text


def strip_mention(text: str, bot_user_id: str | None) -> str:
    if not bot_user_id:
        return text
    return re.sub(rf"<@{re.escape(bot_user_id)}(?:\|[^>]*)?>", "", text).strip()


def mentions(text: str | None, bot_user_id: str | None) -> bool:
    return bool(text and bot_user_id and re.search(rf"<@{re.escape(bot_user_id)}[|>]", text))


def is_text_file(f: dict[str, Any]) -> bool:
    if f.get("mode") in SKIP_MODES or f.get("is_external"):
        return False
    if not (f.get("url_private_download") or f.get("url_private")):
        return False
    if f.get("mode") == "snippet":
        return True
    mimetype = str(f.get("mimetype") or "")
    if mimetype.startswith("text/"):
        return True
    if mimetype.startswith(("image/", "video/", "audio/")):
        return False
    if str(f.get("filetype") or "").lower() in TEXT_FILETYPES:
        return True
    name = str(f.get("name") or f.get("title") or "").lower()
    return "." in name and name.rsplit(".", 1)[1] in TEXT_EXTENSIONS


@dataclass
class Incoming:
    """A message event we mean to answer: the neutral message (without files yet) and where to reply."""

    msg: IncomingMessage
    thread_ts: str
    files: list[dict[str, Any]] = field(default_factory=list)
    skipped: list[str] = field(default_factory=list)  # attached files that are not text
    edited: bool = False


def _files(message: dict[str, Any]) -> tuple[list[dict[str, Any]], list[str]]:
    keep: list[dict[str, Any]] = []
    skipped: list[str] = []
    for f in message.get("files") or []:
        if not isinstance(f, dict):
            continue
        if is_text_file(f) and len(keep) < MAX_FILES:
            keep.append(f)
        else:
            skipped.append(str(f.get("name") or f.get("title") or f.get("id") or "file"))
    return keep, skipped


def _from_bot(message: dict[str, Any]) -> bool:
    return bool(message.get("bot_id") or message.get("bot_profile")) or message.get("subtype") in BOT_SUBTYPES


def from_message_event(
    event: dict[str, Any], settings: SlackSettings, bot_user_id: str | None
) -> Incoming | None:
    """A ``message`` event → what to answer, or None when it is not for us."""
    subtype = event.get("subtype")
    edited = False
    message = event
    if subtype == EDIT_SUBTYPE:
        message = event.get("message") or {}
        if not isinstance(message, dict) or "edited" not in message:
            return None  # unfurls and other non-edits also arrive as message_changed
        if message.get("subtype") not in READ_SUBTYPES:
            return None
        edited = True
    elif subtype not in READ_SUBTYPES:
        return None
    if _from_bot(message) or _from_bot(event):
        return None
    user = message.get("user")
    channel = event.get("channel")
    ts = message.get("ts")
    if not user or not channel or not ts:
        return None
    channel_type = event.get("channel_type") or ""
    is_dm = channel_type == "im" or str(channel).startswith("D")
    raw = message.get("text") or ""
    if not is_dm:
        if mentions(raw, bot_user_id):
            return None  # the app_mention event for this message answers it
        if not settings.passive or channel not in settings.channels:
            return None
    files, skipped = _files(message)
    if not raw.strip() and not files and not (is_dm and skipped):
        return None
    thread_ts = message.get("thread_ts") or ts
    msg = IncomingMessage(
        platform="slack",
        text=slack_to_text(raw),
        user_id=str(user),
        channel_id=str(channel),
        message_id=str(ts),
        thread_id=str(thread_ts),
        is_dm=is_dm,
        mentioned=is_dm,
    )
    return Incoming(msg, str(thread_ts), files, skipped, edited)


def deleted_message(event: dict[str, Any]) -> IncomingMessage | None:
    """A ``message`` event saying a message was deleted → that message (channel and ts), else None."""
    channel = event.get("channel")
    subtype = event.get("subtype")
    ts = None
    if subtype == DELETE_SUBTYPE:
        ts = event.get("deleted_ts")
    elif subtype == EDIT_SUBTYPE:
        message = event.get("message")
        if isinstance(message, dict) and message.get("subtype") == TOMBSTONE_SUBTYPE:
            ts = message.get("ts")
    if not channel or not ts:
        return None
    return IncomingMessage(platform="slack", channel_id=str(channel), message_id=str(ts))


def from_app_mention(event: dict[str, Any], bot_user_id: str | None) -> Incoming | None:
    """An ``app_mention`` event → a message addressed to the bot (answered even if unknown)."""
    if _from_bot(event) or event.get("subtype") in BOT_SUBTYPES:
        return None
    user, channel, ts = event.get("user"), event.get("channel"), event.get("ts")
    if not user or not channel or not ts:
        return None
    files, skipped = _files(event)
    thread_ts = event.get("thread_ts") or ts
    msg = IncomingMessage(
        platform="slack",
        text=slack_to_text(strip_mention(event.get("text") or "", bot_user_id)),
        user_id=str(user),
        channel_id=str(channel),
        message_id=str(ts),
        thread_id=str(thread_ts),
        mentioned=True,
    )
    return Incoming(msg, str(thread_ts), files, skipped)


def from_message_shortcut(payload: dict[str, Any]) -> Incoming | None:
    """The "Triage this error" message shortcut: triage the chosen message for the user who asked.

    No ``message_id``: the user asks explicitly, so a message already answered (or passed over in
    silence) is triaged again for them.
    """
    message = payload.get("message") or {}
    channel = (payload.get("channel") or {}).get("id")
    user = (payload.get("user") or {}).get("id")
    if not isinstance(message, dict) or not channel or not user:
        return None
    files, skipped = _files(message)
    ts = str(message.get("ts") or "")
    thread_ts = str(message.get("thread_ts") or ts)
    msg = IncomingMessage(
        platform="slack",
        text=slack_to_text(message.get("text") or ""),
        user_id=str(user),
        channel_id=str(channel),
        thread_id=thread_ts or None,
        mentioned=True,
    )
    return Incoming(msg, thread_ts, files, skipped)
