"""Advice: a failure that is not about memory (NCCL in a container, a gated repo, a full disk, a port in
use...).  The reply names what it really is and lists the signature's own steps; never a memory fix."""

from __future__ import annotations

from bot.diagnosis.parts import cause, fill, log_facts, reply
from bot.reply import Reply, Section
from bot.situation import Situation


def steps_section(situation: Situation, heading: str = "What to do") -> list[Section]:
    """The signature's own steps, filled with the paste's values, as one section (if any)."""
    steps = [t for a in situation.root.advice if (t := fill(a, {**situation.context, **situation.params}))]
    return [Section(heading, body="\n".join(f"- {s}" for s in steps))] if steps else []


def advice(situation: Situation) -> Reply:
    return reply(
        situation,
        situation.root.title,
        cause(situation),
        [],
        log_facts(situation),
        extra=steps_section(situation),
    )
