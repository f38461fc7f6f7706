"""Helpful / not helpful buttons that keep working across restarts.

The state lives in the button's custom_id (``gg:fb:<y|n>:<reply key>:<signature>``), parsed by a
``DynamicItem`` registered in ``setup_hook``; no view is kept in memory per reply.  A click is stored
through ``GardenService.feedback`` and answered ephemerally.
"""

from __future__ import annotations

import logging
import re

import discord

from .details import DetailsButton

log = logging.getLogger("gpu_garden.discord")

PLATFORM = "discord"
PREFIX = "gg:fb"
_KEY = r"[0-9A-Za-z_-]{1,24}"
_SIG = r"[A-Za-z0-9_.\-]{0,64}"
TEMPLATE = rf"{PREFIX}:(?P<vote>[yn]):(?P<key>{_KEY}):(?P<sig>{_SIG})"
THANKS = "Thanks, noted. It helps decide which fixes to show first."
THANKS_UNSTORED = "Thanks! (I could not store it just now.)"


def _safe_signature(signature: str | None) -> str:
    return signature if signature and re.fullmatch(_SIG, signature) else ""


def custom_id(vote: str, key: str, signature: str | None) -> str:
    return f"{PREFIX}:{vote}:{key}:{_safe_signature(signature)}"


class FeedbackButton(discord.ui.DynamicItem[discord.ui.Button], template=TEMPLATE):
    def __init__(self, vote: str, key: str, signature: str | None) -> None:
        helpful = vote == "y"
        super().__init__(
            discord.ui.Button(
                label="Helpful" if helpful else "Not helpful",
                emoji="👍" if helpful else "👎",
                style=discord.ButtonStyle.secondary,
                custom_id=custom_id(vote, key, signature),
            )
        )
        self.helpful = helpful
        self.key = key
        self.signature = _safe_signature(signature) or None

    @classmethod
    async def from_custom_id(
        cls, interaction: discord.Interaction, item: discord.ui.Button, match: re.Match[str], /
    ) -> FeedbackButton:
        return cls(match["vote"], match["key"], match["sig"] or None)

    async def callback(self, interaction: discord.Interaction) -> None:
        service = getattr(interaction.client, "service", None)
        stored = False
        try:
            if service is not None:
                stored = await service.feedback(
                    PLATFORM, self.key, str(interaction.user.id), self.signature, self.helpful
                )
        except Exception:
            log.exception("feedback could not be stored")
        await interaction.response.send_message(
            THANKS if stored else THANKS_UNSTORED,
            ephemeral=True,
            allowed_mentions=discord.AllowedMentions.none(),
        )


def feedback_view(key: str, signature: str | None, details: bool = False) -> discord.ui.View:
    """The two buttons for one reply (``key`` identifies the reply: source message or interaction id),
    and the Details button when its full answer is stored."""
    view = discord.ui.View(timeout=None)
    view.add_item(FeedbackButton("y", key, signature))
    view.add_item(FeedbackButton("n", key, signature))
    if details:
        view.add_item(DetailsButton(key))
    return view
