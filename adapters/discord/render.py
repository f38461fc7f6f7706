"""Reply -> Discord embeds, within Discord's limits; the full reply as ``reply.md`` when it cannot fit.

Pure and synchronous (the memory chart is drawn with Pillow), so the client calls it through
``asyncio.to_thread``.  Text is cleaned first: ANSI colour codes and control characters are removed, and
backtick runs are broken up so a pasted ``` cannot close our code blocks (Discord's parser closes a
block at the first ``` whatever the opening fence was, so ``fence`` alone is not enough here).
"""

from __future__ import annotations

import io
import logging
import re
from dataclasses import dataclass, field

import discord
import re2

from bot.formatter import ENGINE_LABEL, SOURCE_LABEL, fence, memory_bar, to_markdown
from bot.reply import Fix, Reply

log = logging.getLogger("gpu_garden.discord")

# Discord's limits (platforms.md §1.3)
CONTENT_MAX = 2000
TITLE_MAX = 256
DESCRIPTION_MAX = 4096
FIELDS_MAX = 25
FIELD_NAME_MAX = 256
FIELD_VALUE_MAX = 1024
FOOTER_MAX = 2048
EMBED_TOTAL_MAX = 6000
EMBEDS_MAX = 10
THREAD_NAME_MAX = 100
FULL_FILE_MAX = 4 * 1024 * 1024  # reply.md is cut beyond this (Discord's floor is 10 MiB per file)

CHART_NAME = "memory.png"
FULL_NAME = "reply.md"

COLOURS = {
    "diagnosis": 0xE67E22,
    "vram": 0x2ECC71,
    "match": 0x2ECC71,
    "no_finding": 0x95A5A6,
    "error": 0xE74C3C,
    "help": 0x3498DB,
    "notice": 0xF1C40F,
}

_ANSI = re.compile(r"\x1b\[[0-?]*[ -/]*[@-~]|\x1b\][^\x07\x1b]*(?:\x07|\x1b\\)|\x1b[@-Z\\-_]")
_CONTROL = re.compile(r"[\x00-\x08\x0b-\x1f\x7f]")
_TICKS = re.compile(r"`{3,}")
ZWSP = "\u200b"


class DoesNotFit(Exception):
    """The reply is over one of Discord's limits in this layout."""


def clean(text: str) -> str:
    """No ANSI escapes, no control characters (tabs and newlines stay), CRLF -> LF."""
    text = _ANSI.sub("", text.replace("\r\n", "\n").replace("\r", "\n"))
    return _CONTROL.sub("", text)


def defuse(text: str) -> str:
    """Break every run of three or more backticks with zero-width spaces (renders the same)."""
    return _TICKS.sub(lambda m: ZWSP.join(m.group(0)), clean(text))


def code_block(text: str, lang: str = "") -> str:
    """An ANSI-free code block that the text inside cannot end early."""
    return fence(defuse(text).strip("\n"), lang)


# Discord markup that renders outside code: user, role and channel mentions (<@1>, <@&1>, <#1>),
# slash-command mentions (</vram:1>), custom emoji (<:x:1>, <a:x:1>), timestamps (<t:1>), @everyone/@here
_MARKUP = re2.compile(r"<(?:[@#/:]|a:|t:)|@(?:everyone|here)")


def inline(text: str) -> str:
    """Text outside code blocks; a pasted ``[free GPUs](https://evil.example)`` (a model name, a note
    quoting the paste) must not become a masked link in an embed, so ``](`` is broken up, and mention or
    command markup is broken by a zero-width space (inside code blocks it renders as typed)."""
    text = defuse(text).replace("](", "]" + ZWSP + "(")
    return _MARKUP.sub(lambda m: m.group(0)[0] + ZWSP + m.group(0)[1:], text).strip()


def cut(text: str, limit: int) -> str:
    return text if len(text) <= limit else text[: max(0, limit - 1)].rstrip() + "…"


@dataclass
class Rendered:
    embeds: list[discord.Embed]
    files: list[tuple[str, bytes]] = field(default_factory=list)  # (filename, data)
    overflow: bool = False  # the short layout plus reply.md

    def discord_files(self) -> list[discord.File]:
        """Fresh File objects (a File can be sent once)."""
        return [discord.File(io.BytesIO(data), filename=name) for name, data in self.files]

    @property
    def total_chars(self) -> int:
        return sum(len(e) for e in self.embeds)


def _fix_block(fix: Fix) -> str:
    cost = f" _Cost: {inline(fix.cost)}._" if fix.cost else ""
    head = f"**{inline(fix.change)}**: {inline(fix.effect)}.{cost}"
    return f"{head}\n{code_block(fix.command, 'bash')}" if fix.command else head


def _pack(name: str, units: list[str]) -> list[tuple[str, str]]:
    """Fields named ``name`` (then ``name (cont.)``), each value at most 1024 characters."""
    fields: list[tuple[str, str]] = []
    current = ""
    for unit in units:
        if len(unit) > FIELD_VALUE_MAX:
            raise DoesNotFit(f"one item of {name!r} is {len(unit)} characters")
        joined = f"{current}\n{unit}" if current else unit
        if len(joined) > FIELD_VALUE_MAX:
            fields.append((name, current))
            current = unit
        else:
            current = joined
    if current:
        fields.append((name, current))
    return [(cut(n if i == 0 else f"{n} (cont.)", FIELD_NAME_MAX), v) for i, (n, v) in enumerate(fields)]


def _short_cause(reply: Reply) -> str:
    if reply.short:
        return reply.short
    first = reply.summary.split(". ")[0].rstrip(".")
    return first + "." if first else ""


def _chat_fields(reply: Reply, brief: bool) -> list[tuple[str, str]]:
    """A diagnosis as chat: the fix, at most two alternatives, other engines in a line each."""
    own, others = reply.chat_fixes()
    fields: list[tuple[str, str]] = []
    for i, fix in enumerate(own[: 1 if brief else 3]):
        fields += _pack("Fix" if i == 0 else "Or", [_fix_block(fix)])
    if others and not brief:
        lines = [
            f"on {ENGINE_LABEL.get(f.engine, f.engine)}: {code_block(f.command, 'bash')}" for f in others
        ]
        fields += _pack("Same model elsewhere", lines)
    if not own and not brief:
        for section in reply.sections:
            if section.heading.startswith("Hardware") or section.heading == "What to do":
                fields += _pack(inline(section.heading), [inline(section.body)])
    if reply.notes and not brief:
        fields += _pack("Note", [f"- {inline(n)}" for n in reply.notes[-3:]])
    return fields


def _fields(reply: Reply, brief: bool) -> list[tuple[str, str]]:
    if reply.kind == "diagnosis":
        return _chat_fields(reply, brief)
    fields: list[tuple[str, str]] = []
    if not brief:
        for section in reply.sections:
            units: list[str] = []
            if section.body:
                multiline = "\n" in section.body or section.heading == "What I matched"
                units.append(code_block(section.body) if multiline else inline(section.body))
            for fact in section.facts:
                units.append(
                    f"{inline(fact.label)}: **{inline(fact.value)}** "
                    f"_({SOURCE_LABEL.get(fact.source, fact.source)})_"
                )
            fields += _pack(inline(section.heading) or "Details", units)
    for engine, fixes in reply.fixes_by_engine().items():
        shown = fixes[:1] if brief else fixes
        label = ENGINE_LABEL.get(engine, engine)
        fields += _pack(f"Fix: {label}" if brief else f"Fixes: {label}", [_fix_block(f) for f in shown])
    if reply.notes and not brief:
        fields += _pack("Assumptions", [f"- {inline(n)}" for n in reply.notes])
    return fields


def _footer(reply: Reply) -> str:
    return f"GPU Garden · {reply.signature}" if reply.signature else "GPU Garden"


def _embeds(title: str, description: str, fields: list[tuple[str, str]], colour: int, footer: str):
    if len(description) > DESCRIPTION_MAX:
        raise DoesNotFit("description")
    first = discord.Embed(title=cut(title, TITLE_MAX), description=description or None, colour=colour)
    embeds = [first]
    for name, value in fields:
        if len(embeds[-1].fields) >= FIELDS_MAX:
            embeds.append(discord.Embed(colour=colour))
        embeds[-1].add_field(name=name, value=value, inline=False)
    embeds[-1].set_footer(text=cut(footer, FOOTER_MAX))
    if len(embeds) > EMBEDS_MAX or sum(len(e) for e in embeds) > EMBED_TOTAL_MAX:
        raise DoesNotFit("total")
    return embeds


def _description(reply: Reply, brief: bool) -> str:
    parts = []
    summary = _short_cause(reply) if brief else reply.summary
    if summary:
        parts.append(inline(summary))
    if reply.memory is not None and not brief and reply.kind != "diagnosis":
        parts.append(code_block(memory_bar(reply.memory)))
    return "\n".join(parts)


def layout(reply: Reply, brief: bool = False) -> list[discord.Embed]:
    """The embeds for a reply; raises DoesNotFit when any limit would be exceeded."""
    return _embeds(
        inline(reply.title) or "GPU Garden",
        _description(reply, brief),
        _fields(reply, brief),
        COLOURS.get(reply.kind, 0x5865F2),
        _footer(reply),
    )


def short_layout(reply: Reply) -> list[discord.Embed]:
    """The layout beside reply.md: the cause and the top fix per engine, or only the cause."""
    pointer = f"The full answer (numbers, every fix, assumptions) is attached as **{FULL_NAME}**."
    colour = COLOURS.get(reply.kind, 0x5865F2)
    title = inline(reply.title) or "GPU Garden"
    cause = cut(inline(_short_cause(reply)), 1500)
    try:
        return _embeds(title, f"{cause}\n\n{pointer}", _fields(reply, brief=True), colour, _footer(reply))
    except DoesNotFit:
        return _embeds(title, f"{cause}\n\n{pointer}", [], colour, _footer(reply))


def full_markdown(reply: Reply) -> bytes:
    data = clean(to_markdown(reply, full=True)).encode("utf-8")
    if len(data) > FULL_FILE_MAX:
        data = (
            data[:FULL_FILE_MAX].decode("utf-8", "ignore").encode() + b"\n\n[cut: the reply was too long]\n"
        )
    return data


def render(reply: Reply, brief: bool = False, chart: bool = True) -> Rendered:
    """Embeds (and files) for one reply: the full layout if it fits, else a short one plus reply.md."""
    try:
        rendered = Rendered(layout(reply, brief))
    except DoesNotFit as exc:
        log.debug("reply over Discord's limits (%s); sending %s", exc, FULL_NAME)
        rendered = Rendered(short_layout(reply), [(FULL_NAME, full_markdown(reply))], overflow=True)
    if chart and reply.memory is not None:
        try:
            from bot.chart import memory_png

            png = memory_png(reply.memory)
        except Exception:  # the chart is a nicety: never lose the answer over it
            log.warning("memory chart failed", exc_info=True)
        else:
            rendered.files.append((CHART_NAME, png))
            rendered.embeds[-1].set_image(url=f"attachment://{CHART_NAME}")
    return rendered


def notice_text(text: str) -> str:
    """Plain message content (throttle notices): clean and within 2000 characters."""
    return cut(inline(text), CONTENT_MAX)


def thread_name(reply: Reply) -> str:
    name = " ".join(inline(reply.title).split()) or "GPU Garden"
    return cut(name, THREAD_NAME_MAX)
