"""Report: an informational memory log (profiling lines, KV allocation, offload reports).  Not an
error: the reply says what the numbers mean, with no fix."""

from __future__ import annotations

from bot.diagnosis.parts import cause, reply
from bot.reply import Reply
from bot.situation import Situation


def report(situation: Situation) -> Reply:
    return reply(situation, situation.root.title, cause(situation), [])
