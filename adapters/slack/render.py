"""Reply → Slack Block Kit, within Slack's limits, with every piece of text escaped.

Everything that comes out of a Reply may carry user-derived text (model names, evidence quoted from
the paste, commands built from it), so *all* of it goes through :func:`escape` before our own mrkdwn
markup is added around it: ``&``, ``<`` and ``>`` become entities, which is also what keeps a pasted
``<!channel>``, ``<!here>``, ``<@U123>`` or ``<!subteam^S1>`` inert.  We never set ``link_names`` or
``parse=full``.

Budgets: a section's text ≤ 3000 characters, ≤ 50 blocks, and ≤ ~11,000 characters of block text per
message (Slack rejects somewhat above 12k with ``msg_blocks_too_long``).  A reply that does not fit is
rendered brief and the full Markdown goes along as a file (:attr:`Rendered.overflow`).
"""

from __future__ import annotations

from dataclasses import dataclass

import re2

from adapters.slack.feedback import FeedbackRef, feedback_block
from bot.formatter import ENGINE_LABEL, SOURCE_LABEL, memory_bar, to_markdown
from bot.reply import Fix, Reply

SECTION_MAX = 3000
BLOCKS_MAX = 50
TOTAL_MAX = 11_000
FALLBACK_MAX = 2_900  # top-level text: the notification and the screen-reader fallback
FEEDBACK_KINDS = {"diagnosis", "vram", "match", "no_finding"}

_FENCE = "```"


_BROADCAST = re2.compile(r"(?i)\B@(channel|here|everyone)\b")


def escape(text: object) -> str:
    """Slack's three control characters as entities, and a pasted ``@channel`` / ``@here`` /
    ``@everyone`` broken by a zero-width space (inert even where a client would link names)."""
    text = str(text).replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;")
    return _BROADCAST.sub(lambda m: "@\u200b" + m.group(1), text)


def cut(text: str, limit: int, marker: str = "…") -> str:
    """``text`` shortened to ``limit`` characters, never splitting an entity like ``&amp;``."""
    if len(text) <= limit:
        return text
    keep = max(0, limit - len(marker))
    head = text[:keep]
    amp = head.rfind("&", max(0, keep - 5))
    if amp != -1 and ";" not in head[amp:]:
        head = head[:amp]
    return head + marker


def code_block(text: str) -> str:
    """A mrkdwn code block of escaped text; a ``` inside cannot close it early."""
    inner = escape(text.strip("\n")).replace(_FENCE, "`\u200b``")
    return f"{_FENCE}\n{inner}\n{_FENCE}"


def _lines_into(lines: list[str], limit: int) -> list[str]:
    """Lines (each cut to ``limit``) joined into as few chunks of at most ``limit`` as keep their order."""
    chunks: list[str] = []
    current = ""
    for line in lines:
        line = cut(line, limit)
        if current and len(current) + 1 + len(line) > limit:
            chunks.append(current)
            current = line
        else:
            current = f"{current}\n{line}" if current else line
    chunks.append(current)
    return chunks


def _split_code(block: str, limit: int) -> list[str]:
    """A too-long code block (already escaped and fenced) as several fenced blocks by lines."""
    inner = block[len(_FENCE) + 1 : -(len(_FENCE) + 1)]
    room = limit - 2 * (len(_FENCE) + 1)
    return [f"{_FENCE}\n{c}\n{_FENCE}" for c in _lines_into(inner.split("\n"), room)]


def _fit(piece: str, limit: int) -> list[str]:
    if len(piece) <= limit:
        return [piece]
    if piece.startswith(_FENCE) and piece.endswith(_FENCE):
        return _split_code(piece, limit)
    return _lines_into(piece.split("\n"), limit)


def pack(pieces: list[str], limit: int = SECTION_MAX) -> list[str]:
    """Join mrkdwn pieces (lines, paragraphs, code blocks) into section texts of at most ``limit``."""
    out: list[str] = []
    current = ""
    for piece in pieces:
        for part in _fit(piece, limit):
            if current and len(current) + 1 + len(part) > limit:
                out.append(current)
                current = part
            else:
                current = f"{current}\n{part}" if current else part
    if current:
        out.append(current)
    return out


def section(text: str) -> dict:
    return {"type": "section", "text": {"type": "mrkdwn", "text": text}}


def context(text: str) -> dict:
    return {"type": "context", "elements": [{"type": "mrkdwn", "text": cut(text, SECTION_MAX)}]}


def short_line(reply: Reply) -> str:
    if reply.short:
        return reply.short
    if not reply.summary:
        return ""
    first = reply.summary.split(". ")[0].rstrip(".")
    return first + "."


def fallback_text(reply: Reply) -> str:
    """The top-level ``text``: title and the cause in one line, escaped (Slack renders it too)."""
    line = short_line(reply)
    text = f"{reply.title}: {line}" if line else reply.title
    return cut(escape(text), FALLBACK_MAX)


def _fix_pieces(fix: Fix) -> list[str]:
    cost = f" Cost: {escape(fix.cost)}." if fix.cost else ""
    head = f"• {escape(fix.change)}: {escape(fix.effect)}.{cost}"
    return [head, code_block(fix.command)] if fix.command else [head]


def _chat_blocks(reply: Reply, brief: bool) -> list[dict]:
    """A diagnosis as chat: the key point, the fix, at most two alternatives, other engines a line each."""
    blocks: list[dict] = [section(cut(f"*{escape(reply.title)}*", SECTION_MAX))]
    if reply.summary:
        blocks += [section(t) for t in pack([escape(short_line(reply) if brief else reply.summary)])]
    own, others = reply.chat_fixes()
    for i, fix in enumerate(own[: 1 if brief else 3]):
        lead = "*Fix:*" if i == 0 else "*Or:*"
        pieces = _fix_pieces(fix)
        blocks += [section(t) for t in pack([f"{lead} {pieces[0].removeprefix('• ')}", *pieces[1:]])]
    if others and not brief:
        lines = ["*Same model elsewhere*"]
        lines += [
            f"• on {escape(ENGINE_LABEL.get(f.engine, f.engine))}: {code_block(f.command)}" for f in others
        ]
        blocks += [section(t) for t in pack(lines)]
    if not own and not brief:
        for sec in reply.sections:
            if sec.heading.startswith("Hardware") or sec.heading == "What to do":
                blocks += [section(t) for t in pack([f"*{escape(sec.heading)}*", escape(sec.body)])]
    if reply.notes and not brief:
        blocks += [section(t) for t in pack([f"_{escape(n)}_" for n in reply.notes[-3:]])]
    return blocks


def _content_blocks(reply: Reply, brief: bool) -> list[dict]:
    if reply.kind == "diagnosis":
        return _chat_blocks(reply, brief)
    blocks: list[dict] = [section(cut(f"*{escape(reply.title)}*", SECTION_MAX))]
    if reply.summary:
        summary = short_line(reply) if brief else reply.summary
        blocks += [section(t) for t in pack([escape(summary)])]
    if not brief:
        for sec in reply.sections:
            pieces = [f"*{escape(sec.heading)}*"]
            if sec.body:
                multi = "\n" in sec.body or sec.heading == "What I matched"
                pieces.append(code_block(sec.body) if multi else escape(sec.body))
            for fact in sec.facts:
                source = SOURCE_LABEL.get(fact.source, fact.source)
                pieces.append(f"• {escape(fact.label)}: *{escape(fact.value)}* _({escape(source)})_")
            blocks += [section(t) for t in pack(pieces)]
        if reply.memory is not None:
            blocks += [section(t) for t in pack([code_block(memory_bar(reply.memory))])]
    grouped = reply.fixes_by_engine()
    if grouped:
        blocks.append(section("*Fixes*" if not brief else "*Top fix per engine*"))
        for engine, fixes in grouped.items():
            pieces = [f"_{escape(ENGINE_LABEL.get(engine, engine))}_"]
            for fix in fixes[:1] if brief else fixes:
                pieces += _fix_pieces(fix)
            blocks += [section(t) for t in pack(pieces)]
    if reply.notes and not brief:
        pieces = ["*Assumptions*", *(f"• {escape(note)}" for note in reply.notes)]
        blocks += [section(t) for t in pack(pieces)]
    return blocks


def block_text_size(blocks: list[dict]) -> int:
    """Characters of text in the blocks, the way Slack's aggregate limit counts them (roughly)."""
    total = 0
    for block in blocks:
        text = block.get("text")
        if isinstance(text, dict):
            total += len(text.get("text", ""))
        for element in block.get("elements", ()):
            if element.get("type") == "mrkdwn":
                total += len(element.get("text", ""))
            elif isinstance(element.get("text"), dict):
                total += len(element["text"].get("text", ""))
    return total


def fits(blocks: list[dict]) -> bool:
    return len(blocks) <= BLOCKS_MAX and block_text_size(blocks) <= TOTAL_MAX


@dataclass
class Rendered:
    text: str  # top-level text: always set
    blocks: list[dict]
    overflow: str | None = None  # the full reply as Markdown when the blocks could not hold it

    def payload(self) -> dict:
        return {"text": self.text, "blocks": self.blocks}


def render_reply(
    reply: Reply,
    *,
    brief: bool = False,
    feedback: FeedbackRef | None = None,
    can_attach: bool = True,
    details: bool = False,
) -> Rendered:
    """Block Kit for a reply; brief plus the full Markdown as a file when the full one is too big.

    ``can_attach`` is False where no file can go along (ephemeral answers): the reply is only shortened.
    ``details``: the full answer is stored, so the buttons include "Details".
    """
    tail: list[dict] = []
    if reply.signature:
        tail.append(context(f"GPU Garden · `{escape(reply.signature)}`"))
    if feedback is not None and reply.kind in FEEDBACK_KINDS:
        tail.append(feedback_block(feedback, details))
    text = fallback_text(reply)
    blocks = _content_blocks(reply, brief) + tail
    if fits(blocks):
        return Rendered(text, blocks)
    note = context(
        "The full answer did not fit in one message; it is in the attached file."
        if can_attach
        else "Shortened to fit in one message."
    )
    blocks = [*_content_blocks(reply, True), note, *tail]
    if not fits(blocks):
        # pathological sizes: the title, the cause in one line, and the file
        blocks = [
            section(cut(f"*{escape(reply.title)}*", SECTION_MAX)),
            section(cut(escape(short_line(reply)) or "(see the file)", SECTION_MAX)),
            note,
            *tail,
        ]
    return Rendered(text, blocks, overflow=to_markdown(reply, full=True) if can_attach else None)


def render_notice(text: str) -> Rendered:
    """A short plain notice (throttling, errors of our own) as text and one section."""
    safe = cut(escape(text), SECTION_MAX)
    return Rendered(safe, [section(safe)])
