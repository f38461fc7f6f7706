"""The full answer behind a reply's "Details" button, as stored Markdown, and its pieces.

The bot keeps ``to_markdown(reply, full=True)`` (already redacted: it is the bot's own reply) and each
adapter renders it on a click, possibly after a restart when no Reply object exists any more.  So the
adapters need the Markdown back as pieces: the title, paragraphs, and code blocks with their verbatim
text (each platform re-fences code its own safe way).  ``pieces`` reads the fences ``bot.formatter.fence``
writes: a line of three or more backticks (plus an info string) opens a block that only a line of at
least as many backticks closes, so a pasted ``` inside a block stays inside it."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

MAX_BYTES = 60 * 1024  # our bound on one stored answer (a full reply is a few KB)
CUT_NOTE = "_[cut: the full answer was longer than 60 KB]_"


@dataclass(frozen=True)
class Piece:
    kind: Literal["title", "text", "code"]
    text: str
    lang: str = ""


def _ticks(line: str) -> int:
    """How many backticks open this line (0 when it does not start with a run of three or more)."""
    run = len(line) - len(line.lstrip("`"))
    return run if run >= 3 else 0


def _opens(line: str) -> int:
    run = _ticks(line)
    return run if run and "`" not in line[run:] else 0


def _closes(line: str, opened: int) -> bool:
    return _ticks(line) >= opened and not line.strip().strip("`")


def pieces(markdown: str) -> list[Piece]:
    """The Markdown as a title (a leading ``## `` line), paragraphs and code blocks, in order.
    An unclosed block runs to the end (a cut answer)."""
    out: list[Piece] = []
    text: list[str] = []
    code: list[str] | None = None
    opened, lang = 0, ""

    def flush_text() -> None:
        body = "\n".join(text).strip("\n")
        if body.strip():
            out.append(Piece("text", body))
        text.clear()

    for line in markdown.replace("\r\n", "\n").split("\n"):
        if code is not None:
            if _closes(line, opened):
                out.append(Piece("code", "\n".join(code), lang))
                code = None
            else:
                code.append(line)
        elif _opens(line):
            flush_text()
            opened, lang, code = _opens(line), line.lstrip("`").strip(), []
        elif line.startswith("## ") and not out and not "".join(text).strip():
            out.append(Piece("title", line[3:].strip()))
        elif not line.strip():
            flush_text()
        else:
            text.append(line)
    if code is not None:
        out.append(Piece("code", "\n".join(code), lang))
    flush_text()
    return out


def bounded(markdown: str, limit: int = MAX_BYTES) -> str:
    """``markdown`` within ``limit`` UTF-8 bytes: cut at a line end, an open code block closed, and a
    note saying that it was cut."""
    data = markdown.encode("utf-8")
    if len(data) <= limit:
        return markdown
    room = limit - len(CUT_NOTE) - 3
    while room > 0:
        head = data[:room].decode("utf-8", "ignore")
        head = head[: head.rindex("\n")].rstrip() if "\n" in head else ""
        fence = _open_fence(head)
        result = f"{head}\n{fence}\n\n{CUT_NOTE}\n" if fence else f"{head}\n\n{CUT_NOTE}\n"
        if len(result.encode("utf-8")) <= limit:
            return result.lstrip("\n")
        room -= len(fence) + 1
    return CUT_NOTE + "\n"


def _open_fence(markdown: str) -> str:
    """The backticks that would close the code block left open at the end, or ""."""
    opened = 0
    for line in markdown.split("\n"):
        if opened:
            if _closes(line, opened):
                opened = 0
        else:
            opened = _opens(line)
    return "`" * opened
