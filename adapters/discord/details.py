"""The "Details" button: the full answer, ephemeral to whoever clicks, also after a restart.

The state is the reply key in the custom_id (``gg:dt:<reply key>``), parsed by a ``DynamicItem``
registered in ``setup_hook``, like the feedback buttons.  The full Markdown was stored when the reply
was posted (``GardenService.store_details``); a click reads it back and renders it as embeds within
Discord's limits, or as ``reply.md`` when it does not fit, with the memory chart where there is one.
"""

from __future__ import annotations

import logging
import re

import discord
import re2

from bot.details import Piece, pieces
from bot.reply import Reply
from bot.storage import StoredDetails

from .render import (
    CHART_NAME,
    DESCRIPTION_MAX,
    EMBED_TOTAL_MAX,
    EMBEDS_MAX,
    FULL_NAME,
    TITLE_MAX,
    Rendered,
    clean,
    code_block,
    cut,
    inline,
)

log = logging.getLogger("gpu_garden.discord")

PLATFORM = "discord"
PREFIX = "gg:dt"
TEMPLATE = rf"{PREFIX}:(?P<key>[0-9A-Za-z_-]{{1,24}})"
COLOUR = 0xE67E22  # the diagnosis colour of render.COLOURS
GONE = "Sorry, the details are no longer available (I keep them for recent answers only)."
FAILED = "Sorry, I could not fetch the details just now. Try again in a moment."
NO_MENTIONS = discord.AllowedMentions.none()
_HEADING = re2.compile(r"(?m)^#{1,6} +(.+)$")
_LANG = re2.compile(r"[A-Za-z0-9_+-]{1,20}")


def custom_id(key: str) -> str:
    return f"{PREFIX}:{key}"


class DetailsButton(discord.ui.DynamicItem[discord.ui.Button], template=TEMPLATE):
    def __init__(self, key: str) -> None:
        super().__init__(
            discord.ui.Button(
                label="Details", emoji="📋", style=discord.ButtonStyle.primary, custom_id=custom_id(key)
            )
        )
        self.key = key

    @classmethod
    async def from_custom_id(
        cls, interaction: discord.Interaction, item: discord.ui.Button, match: re.Match[str], /
    ) -> DetailsButton:
        return cls(match["key"])

    async def callback(self, interaction: discord.Interaction) -> None:
        service = getattr(interaction.client, "service", None)
        try:
            stored = await service.details(PLATFORM, self.key) if service is not None else None
            rendered = render_details(stored) if stored is not None else None
        except Exception:
            log.exception("details could not be read")
            await _say(interaction, FAILED)
            return
        if rendered is None:
            await _say(interaction, GONE)
            return
        await interaction.response.send_message(
            embeds=rendered.embeds,
            files=rendered.discord_files(),
            ephemeral=True,
            allowed_mentions=NO_MENTIONS,
        )


async def _say(interaction: discord.Interaction, text: str) -> None:
    await interaction.response.send_message(text, ephemeral=True, allowed_mentions=NO_MENTIONS)


def _text(text: str) -> str:
    """A paragraph of the stored Markdown, safe in an embed (no masked links, no stray fences);
    other headings become bold lines, which embeds render everywhere."""
    return _HEADING.sub(lambda m: f"**{m.group(1).strip()}**", inline(text))


def _unit(piece: Piece) -> str:
    if piece.kind != "code":
        return _text(piece.text)
    return code_block(piece.text, piece.lang if _LANG.fullmatch(piece.lang) else "")


def _descriptions(units: list[str]) -> list[str] | None:
    """Paragraphs joined into embed descriptions of at most 4096 characters (None: one is longer)."""
    out: list[str] = []
    current = ""
    for unit in units:
        if len(unit) > DESCRIPTION_MAX:
            return None
        joined = f"{current}\n\n{unit}" if current else unit
        if len(joined) > DESCRIPTION_MAX:
            out.append(current)
            current = unit
        else:
            current = joined
    if current:
        out.append(current)
    return out


def _embeds(markdown: str) -> list[discord.Embed] | None:
    """The stored answer as embeds, or None when it is over Discord's limits for one message."""
    parts = pieces(clean(markdown))
    title = next((p.text for p in parts if p.kind == "title"), "") or "GPU Garden"
    units = [_unit(p) for p in parts if p.kind != "title"]
    descriptions = _descriptions(units or ["(no details)"])
    if descriptions is None or len(descriptions) > EMBEDS_MAX:
        return None
    embeds = [discord.Embed(colour=COLOUR, description=d) for d in descriptions]
    embeds[0].title = cut(inline(title), TITLE_MAX)
    embeds[-1].set_footer(text="GPU Garden · the full answer")
    if sum(len(e) for e in embeds) > EMBED_TOTAL_MAX:
        return None
    return embeds


def _as_file(markdown: str) -> tuple[list[discord.Embed], list[tuple[str, bytes]]]:
    title = next((p.text for p in pieces(markdown) if p.kind == "title"), "") or "GPU Garden"
    embed = discord.Embed(
        colour=COLOUR,
        title=cut(inline(title), TITLE_MAX),
        description=f"The full answer is too long for a message; it is attached as **{FULL_NAME}**.",
    )
    return [embed], [(FULL_NAME, clean(markdown).encode("utf-8"))]  # bounded when it was stored


def render_details(stored: StoredDetails) -> Rendered:
    """Embeds (and files) for the Details response: the memory chart under the last embed."""
    embeds = _embeds(stored.markdown)
    if embeds is not None:
        rendered = Rendered(embeds)
    else:
        embeds, files = _as_file(stored.markdown)
        rendered = Rendered(embeds, files, overflow=True)
    if stored.chart:
        rendered.files.append((CHART_NAME, stored.chart))
        rendered.embeds[-1].set_image(url=f"attachment://{CHART_NAME}")
    return rendered


async def keep(service, key: str, reply: Reply, rendered: Rendered) -> bool:
    """Store the full answer of a diagnosis before it is posted (with the chart the post carries);
    True when it is stored, so the Details button can be shown."""
    if reply.kind != "diagnosis" or service is None:
        return False
    chart = next((data for name, data in rendered.files if name == CHART_NAME), None)
    try:
        return await service.store_details(PLATFORM, key, reply, chart)
    except Exception:  # the button is a nicety: never lose the answer over it
        log.exception("details could not be stored")
        return False
