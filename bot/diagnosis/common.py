"""Pieces every diagnosis uses: filling a cause template, the generic fallback, fact helpers."""

from __future__ import annotations

import string
from typing import Any

from bot.facts import PasteFacts
from bot.reply import Fact, Reply, Section


class _SafeDict(dict):
    def __missing__(self, key: str) -> str:
        return "?"


def _fmt_value(v: Any) -> str:
    if isinstance(v, bool):
        return str(v).lower()
    if isinstance(v, int):
        return f"{v:,}"
    if isinstance(v, float):
        return f"{v:,.2f}".rstrip("0").rstrip(".") if abs(v) < 1e6 else f"{v:,.0f}"
    return str(v)


def fill(template: str, params: dict[str, Any]) -> str:
    """Fill ``{name}`` placeholders; a missing value reads ``?``; stray braces are left alone."""
    values = _SafeDict({k: _fmt_value(v) for k, v in params.items()})
    try:
        return string.Formatter().vformat(template, (), values).strip()
    except (ValueError, IndexError, KeyError):
        return template.strip()


def log_facts(facts: PasteFacts, names: dict[str, str]) -> list[Fact]:
    """Facts for the numbers the paste printed, in the order given (label by param name)."""
    out = []
    for name, label in names.items():
        if name in facts.params:
            out.append(Fact(label, _fmt_value(facts.params[name]), "log"))
    return out


def generic(facts: PasteFacts) -> Reply:
    """Fallback for a category without its own rule: the signature's cause and remedy names."""
    root = facts.root
    cause = fill(root.cause_template, facts.params)
    reply = Reply(kind="diagnosis", title=root.title, summary=cause)
    numbers = [Fact(k.replace("_", " "), _fmt_value(v), "log") for k, v in root.params.items()]
    if numbers:
        reply.sections.append(Section("Your numbers", facts=numbers))
    if root.evidence:
        reply.sections.append(Section("What I matched", body="\n".join(root.evidence[:2])))
    return reply
