"""Reply size: how long the first message is that each platform posts for a real paste.

Every paste of the development corpus (tests/data/dev.jsonl, the same file as the shared corpus) and of the
held-out files (tests/data/wild_*.jsonl) goes through ``GardenBot().triage``; then the first message is
rendered the way each platform posts it:

- terminal: ``bot.formatter.to_markdown(reply)`` (the CLI's default output), characters;
- Discord: ``adapters.discord.render.render(reply)``, the embeds' text (title + description + every
  field's name and value), characters;
- Slack: ``adapters.slack.render.render_reply(reply)``, the text in its blocks as Slack's aggregate limit
  counts it (``block_text_size``), characters.

Per platform it reports the median, p90 and max, how many are over 2,500 characters, and how many first
messages print one command twice (a code block, or an inline code span with a space in it), and how many
carry no command at all.  For comparison it also sizes the whole reply (``to_markdown(reply, full=True)``,
what ``--full`` prints), which no platform posts first.  Pastes the bot gives no reply to are not counted.

Run: .venv/bin/python bench/reply_size.py [--worst N] [--json]
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
from dataclasses import dataclass, field
from pathlib import Path

import re2

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from adapters.discord.render import render as discord_render  # noqa: E402
from adapters.slack.render import block_text_size, render_reply  # noqa: E402
from bench._machine import percentile  # noqa: E402
from bot.core import GardenBot, Paste  # noqa: E402
from bot.formatter import to_markdown  # noqa: E402
from bot.reply import Reply  # noqa: E402

DATA = ROOT / "tests" / "data"
LIMIT = 2500  # issue 17: no first message over 2,500 characters
PLATFORMS = ("terminal", "discord", "slack")
FULL = "terminal --full"  # the whole reply (Details, --full), for comparison: not a first message
# an inline code span with a space in it: a command on one line ("on llama.cpp: `-c 16384 ...`")
_SPAN = re2.compile(r"`([^`\n]* [^`\n]*)`")


_OPEN = re2.compile(r"^(.*?)(`{3,})([A-Za-z0-9]*)$")


def split_blocks(text: str) -> tuple[list[str], str]:
    """(the text of every fenced code block, the text outside them).  A block opens with three or more
    backticks and an optional language word at the end of a line (Discord's "on SGLang: ```bash" too)
    and closes at a line of the same backticks."""
    blocks: list[str] = []
    outside: list[str] = []
    fence: str | None = None
    body: list[str] = []
    for line in text.split("\n"):
        if fence is not None:
            if line.strip() == fence:
                blocks.append("\n".join(body))
                fence = None
            else:
                body.append(line)
            continue
        opening = _OPEN.match(line)
        if opening is None:
            outside.append(line)
        else:
            outside.append(opening.group(1))
            fence, body = opening.group(2), []
    return blocks, "\n".join(outside)


@dataclass
class Message:
    record: str  # the record's id
    platform: str
    text: str  # what the platform shows (embed text, block text, Markdown)
    size: int  # characters, counted the platform's way

    def commands(self) -> list[str]:
        """Every code block's text and every inline span with a space in it, stripped, blocks first
        (zero-width spaces of defused ticks removed)."""
        blocks, outside = split_blocks(self.text)
        spans = _SPAN.findall(outside)
        return [c.replace("\u200b", "").strip() for c in blocks + spans]

    def repeated(self) -> list[str]:
        seen: set[str] = set()
        twice: list[str] = []
        for command in self.commands():
            if command in seen and command not in twice:
                twice.append(command)
            seen.add(command)
        return twice


@dataclass
class Summary:
    platform: str
    sizes: list[int] = field(default_factory=list)
    over: list[Message] = field(default_factory=list)
    repeats: list[Message] = field(default_factory=list)
    bare: int = 0  # first messages with no command at all

    def stats(self) -> dict:
        s = sorted(self.sizes)
        return {
            "platform": self.platform,
            "replies": len(s),
            "median": statistics.median(s) if s else 0,
            "p90": int(percentile(s, 90)) if s else 0,
            "max": max(s, default=0),
            "over_2500": len(self.over),
            "repeated_command": len(self.repeats),
            "without_a_command": self.bare,
        }


def files() -> list[Path]:
    return [DATA / "dev.jsonl", *sorted(DATA.glob("wild_*.jsonl"))]


def records(paths: list[Path] | None = None) -> list[dict]:
    paths = files() if paths is None else paths
    return [json.loads(line) for f in paths for line in f.read_text().splitlines() if line.strip()]


def discord_text(reply: Reply) -> tuple[str, int]:
    parts: list[str] = []
    for embed in discord_render(reply, chart=False).embeds:
        parts += [embed.title or "", embed.description or ""]
        for f in embed.fields:
            parts += [f.name or "", f.value or ""]
    return "\n".join(p for p in parts if p), sum(len(p) for p in parts)


def slack_text(reply: Reply) -> tuple[str, int]:
    blocks = render_reply(reply).blocks
    texts: list[str] = []
    for block in blocks:
        text = block.get("text")
        if isinstance(text, dict):
            texts.append(text.get("text", ""))
        for element in block.get("elements", ()):
            if element.get("type") == "mrkdwn":
                texts.append(element.get("text", ""))
    return "\n".join(texts), block_text_size(blocks)


def first_messages(record_id: str, reply: Reply) -> list[Message]:
    markdown = to_markdown(reply)
    discord, discord_size = discord_text(reply)
    slack, slack_size = slack_text(reply)
    return [
        Message(record_id, "terminal", markdown, len(markdown)),
        Message(record_id, "discord", discord, discord_size),
        Message(record_id, "slack", slack, slack_size),
    ]


def measure(paths: list[Path] | None = None) -> tuple[dict[str, Summary], list[Message]]:
    bot = GardenBot()
    summaries = {p: Summary(p) for p in (*PLATFORMS, FULL)}
    messages: list[Message] = []
    for rec in records(paths):
        reply = bot.triage(Paste(rec["text"], False, []))
        if reply is None:
            continue
        full = to_markdown(reply, full=True)
        for msg in [*first_messages(rec["id"], reply), Message(rec["id"], FULL, full, len(full))]:
            messages.append(msg)
            s = summaries[msg.platform]
            s.sizes.append(msg.size)
            if msg.size > LIMIT:
                s.over.append(msg)
            if msg.repeated():
                s.repeats.append(msg)
            s.bare += not msg.commands()
    return summaries, messages


def table(summaries: dict[str, Summary]) -> str:
    rows = [
        "| platform | replies | median | p90 | max | over 2,500 | a command twice | no command |",
        "|---|---:|---:|---:|---:|---:|---:|---:|",
    ]
    for s in summaries.values():
        st = s.stats()
        rows.append(
            f"| {st['platform']} | {st['replies']} | {st['median']:,.0f} | {st['p90']:,} | {st['max']:,} "
            f"| {st['over_2500']} | {st['repeated_command']} | {st['without_a_command']} |"
        )
    return "\n".join(rows)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--worst", type=int, default=5, help="list the N longest first messages")
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args()
    summaries, messages = measure()
    if args.json:
        print(json.dumps([s.stats() for s in summaries.values()], indent=2))
        return
    print(f"all {len(files())} files:\n{table(summaries)}")
    for path in files():
        print(f"\n{path.name}:\n{table(measure([path])[0])}")
    worst = sorted((m for m in messages if m.platform in PLATFORMS), key=lambda m: -m.size)[: args.worst]
    if worst:
        print("\nlongest first messages:")
        for m in worst:
            print(f"  {m.size:>6,}  {m.platform:<8} {m.record}")
    for s in summaries.values():
        for m in s.repeats:
            print(f"  repeated command on {m.platform} in {m.record}: {m.repeated()[0][:80]!r}")


if __name__ == "__main__":
    main()
