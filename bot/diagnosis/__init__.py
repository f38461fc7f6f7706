"""Turn a detection into the reply a senior inference engineer would write.

One small module per error category (thefuck-style rules); :data:`RULES` maps a category to its
function, and any category without one gets the signature's own cause and remedies.
"""

from __future__ import annotations

from collections.abc import Callable

from bot.detector import Detection
from bot.diagnosis.common import generic
from bot.diagnosis.kv import kv_cache_too_small
from bot.facts import PasteFacts, gather
from bot.reply import Reply

Rule = Callable[[PasteFacts], Reply]

RULES: dict[str, Rule] = {
    "kv_cache_too_small": kv_cache_too_small,
}


def diagnose(detection: Detection) -> Reply | None:
    root = detection.root
    if root is None:
        return None
    facts = gather(detection, root)
    rule = RULES.get(root.category, generic)
    reply = rule(facts)
    reply.signature = root.signature
    reply.category = root.category
    reply.notes.extend(n for n in facts.notes if n not in reply.notes)
    others = [f for f in detection.findings[1:] if f.severity != "info"]
    if others:
        reply.notes.append("Also in the paste: " + "; ".join(f.title for f in others[:3]))
    return reply
