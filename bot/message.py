"""The one neutral event model every adapter produces: what came in, from whom, where."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Literal

Platform = Literal["terminal", "discord", "slack", "test"]


@dataclass(frozen=True)
class Attachment:
    """A file attached to a message, as much of it as was downloaded."""

    filename: str
    content: bytes
    content_type: str | None = None
    size: int | None = None  # as announced by the platform (content may be capped)
    truncated: bool = False


@dataclass(frozen=True)
class SlashCommand:
    name: str  # "vram", "triage", "help"
    args: dict[str, str] = field(default_factory=dict)  # named options (Discord) or parsed key:value
    raw: str = ""  # the free text after the command (Slack, terminal)


@dataclass(frozen=True)
class IncomingMessage:
    platform: Platform
    text: str = ""
    attachments: tuple[Attachment, ...] = ()
    command: SlashCommand | None = None
    user_id: str = "local"
    channel_id: str = "local"
    message_id: str = ""
    thread_id: str | None = None
    is_bot: bool = False
    is_dm: bool = False
    mentioned: bool = False  # the bot was addressed directly (mention, DM, command, context menu)

    @property
    def addressed(self) -> bool:
        """Whether the sender asked the bot directly (so an unknown error gets a polite answer)."""
        return self.mentioned or self.is_dm or self.command is not None
