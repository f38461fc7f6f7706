"""Pieces every diagnosis uses: filling a cause template, the generic fallback, building a reply, fact helpers."""

from __future__ import annotations

import re
import string
from typing import Any

from bot.facts import PasteFacts
from bot.reply import Fact, Fix, MemoryPicture, Reply, Section


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
        reply.sections.append(Section("What I matched", body="\n".join(root.evidence[:2]), code=True))
    return reply


def known_cause(facts: PasteFacts) -> str:
    """The signature's own cause, filled with the paste's numbers; sentences with a missing number dropped."""
    text = fill(facts.root.cause_template, facts.params)
    sentences = [t for t in re.split(r"(?<=[.!])\s+", text) if t]
    kept = [t for t in sentences if not re.search(r"(?:^|[\s(])\?(?:[\s,.):]|$)", t)]
    return " ".join(kept) or facts.root.title + "."


def diagnosis_reply(
    title: str,
    summary: str,
    numbers: list[Fact],
    fixes: list[Fix],
    notes: list[str],
    short: str = "",
    sections: list[Section | None] | None = None,
    memory: MemoryPicture | None = None,
    data: dict | None = None,
    *,
    ranked: bool = False,
    numbers_always: bool = False,
) -> Reply:
    """A diagnosis reply: "Your numbers" first (only when there are any, unless ``numbers_always``), then
    ``sections`` (None entries skipped); ``ranked`` puts the fixes in rank order."""
    all_sections = [Section("Your numbers", facts=numbers)] if numbers or numbers_always else []
    all_sections += [s for s in sections or [] if s is not None]
    return Reply(
        kind="diagnosis",
        title=title,
        summary=summary,
        short=short,
        sections=all_sections,
        fixes=sorted(fixes, key=lambda f: f.rank) if ranked else fixes,
        memory=memory,
        notes=notes,
        data=data or {},
    )


def to_fix(remedy) -> Fix:
    """A calculator Remedy as a reply Fix."""
    return Fix(remedy.engine, remedy.change, remedy.command, remedy.effect, remedy.cost, remedy.rank)


def bigger_hardware(facts: PasteFacts, context: int | None, engine: str = "vllm") -> Section | None:
    """When software cannot bridge it: the smallest GPU (or multi-GPU) setup from the catalog that
    serves the paste's model at ``context`` tokens.  None when the model is unknown."""
    if facts.model is None:
        return None
    from calculator.matchmaker import gpus_for_model

    options = gpus_for_model(facts.model.model, facts.model.variant, context=context, engine=engine, limit=3)  # type: ignore[arg-type]
    if not options:
        return Section(
            "When software cannot bridge it",
            body=f"No single GPU or setup of up to 8 cards in my catalog serves {facts.model.label} at that context.",
        )
    lines = []
    for o in options:
        setup = f"{o.count}x {o.gpu.name}" if o.count > 1 else o.gpu.name
        price = ""
        if o.gpu.price is not None and o.price_usd is not None:
            unit = "/h" if o.gpu.price.kind == "cloud_hourly" else ""
            price = f" (about ${o.price_usd:,.0f}{unit}, {o.gpu.price.kind} {o.gpu.price.date})"
        lines.append(f"- {setup}: {o.total_gib:.0f} GiB in total{price}")
    return Section(
        "When software cannot bridge it", body="Smallest setups that serve it:\n" + "\n".join(lines)
    )
