"""Logging: plain text for people, one JSON object per line for production; secrets never logged.

Every record the bot's handler writes goes through the redactor at every level: its message (after
%-formatting), its traceback and its stack.  Libraries log raw platform payloads at DEBUG (Bolt's Socket
Mode client logs each envelope), where JSON escapes ``/`` as ``\\/``: those are read unescaped, so a
``https://user:password@host`` inside a payload is found like one in a paste."""

from __future__ import annotations

import json
import logging
import sys
from typing import TextIO

from bot.redact import redact

ESCAPE_LAYERS = 4  # JSON inside JSON inside a log line: unescaped this many times at most


def scrub(text: str) -> str:
    """``text`` with every secret removed.  A raw payload is JSON or a Python repr: its escaped quotes and slashes (and
    those of JSON nested in it) are read unescaped, so ``"token": \\"hf_...\\"`` is found as in a paste;
    its ``\\n`` become line breaks, so a secret a terminal wrapped inside the payload is found too."""
    if not text:
        return text
    for _ in range(ESCAPE_LAYERS):
        if "\\" not in text:
            break
        text = (
            text.replace("\\\\", "\\")
            .replace('\\"', '"')
            .replace("\\'", "'")
            .replace("\\/", "/")
            .replace("\\n", "\n")
        )
    return redact(text).text


class RedactingFilter(logging.Filter):
    """Rewrites each record in place: message, traceback and stack redacted, nothing raw kept."""

    def filter(self, record: logging.LogRecord) -> bool:
        try:
            message = record.getMessage()
        except Exception:  # a bad format string: log what there is, still redacted
            message = f"{record.msg!r} {record.args!r}"
        record.msg, record.args = scrub(message), ()
        if record.exc_info and not record.exc_text:
            record.exc_text = logging.Formatter().formatException(record.exc_info)
        if record.exc_text:
            record.exc_text = scrub(record.exc_text)
        if record.stack_info:
            record.stack_info = scrub(record.stack_info)
        return True


class RedactingFormatter(logging.Formatter):
    """The final line redacted too (a formatter field a library added, say)."""

    def format(self, record: logging.LogRecord) -> str:
        return scrub(super().format(record))


class JsonFormatter(logging.Formatter):
    def format(self, record: logging.LogRecord) -> str:
        payload: dict[str, str | None] = {
            "time": self.formatTime(record, "%Y-%m-%dT%H:%M:%S"),
            "level": record.levelname,
            "logger": record.name,
            "message": scrub(record.getMessage()),
        }
        if record.exc_info:
            payload["exc_type"] = record.exc_info[0].__name__ if record.exc_info[0] else None
        return json.dumps(payload, ensure_ascii=False)


def configure(level: str = "INFO", fmt: str = "text", stream: TextIO | None = None) -> None:
    handler = logging.StreamHandler(stream or sys.stderr)
    if fmt == "json":
        handler.setFormatter(JsonFormatter())
    else:
        handler.setFormatter(RedactingFormatter("%(asctime)s %(levelname)s %(name)s: %(message)s"))
    handler.addFilter(RedactingFilter())
    root = logging.getLogger()
    root.handlers[:] = [handler]
    root.setLevel(level)
    # discord.py and slack_sdk log at INFO liberally; keep them a notch quieter
    for noisy in ("discord", "slack_sdk", "slack_bolt", "aiohttp.access"):
        logging.getLogger(noisy).setLevel(max(logging.getLevelName(level), logging.WARNING))
