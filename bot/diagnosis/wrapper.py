"""Wrapper: a launcher reports that the engine underneath died (Ollama's runner, LocalAI, ...).  The
quoted inner error is detected again and diagnosed in its own right; otherwise the signature's own
sentences and levers answer."""

from __future__ import annotations

from collections.abc import Callable

from bot.diagnosis.advice import steps_section
from bot.diagnosis.parts import advice_fixes, cause, reply
from bot.reply import Reply
from bot.situation import Situation

MAX_DEPTH = 2


def wrapper(situation: Situation, inner: Callable[[str, int], Reply | None], depth: int = 0) -> Reply:
    quoted = situation.params.get("runner_error")
    if quoted and depth < MAX_DEPTH:
        found = inner(str(quoted), depth + 1)
        if found is not None:
            found.notes.append(
                "The launcher only reported that the engine stopped; this is the error it quoted."
            )
            return found
    fixes = advice_fixes(situation, situation.root.remedies)
    return reply(situation, situation.root.title, cause(situation), fixes, extra=steps_section(situation))
