"""The neutral reply model: what the bot says, before any platform formats it.

Adapters render it (terminal Markdown, Discord embeds, Slack Block Kit)."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Literal

Source = Literal["log", "estimated", "given", "catalog", "computed"]
ReplyKind = Literal["diagnosis", "vram", "match", "no_finding", "error", "help", "notice"]


@dataclass
class Fact:
    label: str
    value: str
    source: Source = "computed"


@dataclass
class Fix:
    engine: str  # vllm | llama.cpp | ollama | sglang | any
    change: str  # what changes, in a few words
    command: str  # the full copy-paste text; "" for an action with no command (a value only the user has)
    effect: str  # what it buys
    cost: str = ""  # its price (latency, quality, money)
    rank: int = 0  # lower = try first
    verification: dict = field(default_factory=dict)  # what the budget predicts for this command
    adds: str | None = None  # no command to print: the environment and flags to add to the user's own


@dataclass
class MemorySegment:
    label: str  # weights | activations | graphs | kv | other | free
    gib: float
    source: Source = "estimated"


@dataclass
class MemoryPicture:
    """How a GPU's memory is shared out, for the reply's bar."""

    total_gib: float
    segments: list[MemorySegment]
    title: str = "GPU memory"
    target_gib: float | None = None  # what the engine asks for (utilization x total), when it has one


@dataclass
class Section:
    heading: str
    body: str = ""  # Markdown-light text: paragraphs and "- " bullets
    facts: list[Fact] = field(default_factory=list)


@dataclass
class Reply:
    kind: ReplyKind
    title: str
    summary: str = ""  # the root cause in two or three sentences
    short: str = ""  # the cause in one line (brief replies); defaults to the summary's first sentence
    sections: list[Section] = field(default_factory=list)
    fixes: list[Fix] = field(default_factory=list)
    memory: MemoryPicture | None = None
    notes: list[str] = field(default_factory=list)  # assumptions, confidence, warnings
    signature: str | None = None
    category: str | None = None
    data: dict = field(default_factory=dict)  # machine-readable payload for --json
    engine: str | None = None  # the paste's engine: its fixes come first
    secrets: tuple[str, ...] = ()  # the kinds its rotate notice (notes[0]) names

    def chat_fixes(self) -> tuple[list[Fix], list[Fix]]:
        """(the fix and at most two alternatives for the paste's engine, one fix per other engine).
        Another engine's fix is shown as one command line, so one with no command (flags to add to a
        command the paste does not have) is left to the full reply rather than printed as an empty one."""
        ranked = sorted(self.fixes, key=lambda f: f.rank)
        own = [f for f in ranked if f.engine in (self.engine, "any", None) or self.engine is None]
        others: dict[str, Fix] = {}
        for f in ranked:
            if f not in own and f.command:
                others.setdefault(f.engine, f)
        return own[:3], list(others.values())

    def fixes_by_engine(self) -> dict[str, list[Fix]]:
        grouped: dict[str, list[Fix]] = {}
        for fix in sorted(self.fixes, key=lambda f: f.rank):
            grouped.setdefault(fix.engine, []).append(fix)
        return grouped
