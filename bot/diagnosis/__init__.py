"""Turn a detection into the reply a senior inference engineer would write.

One small module per family of errors (thefuck-style rules).  Each module in this package exposes
``RULES: dict[str, Rule]`` whose keys are a category (``"gpu_oom"``) or a category for one engine
(``"kv_cache_too_small@tgi"``).  Lookup order for a finding: ``category@engine``, ``category``, then the
generic fallback (the signature's own cause).  A rule gets :class:`bot.facts.PasteFacts` — the root
finding, every number the paste printed, the context (model, GPU, flags, command line, version) and the
catalog entries they resolve to — and returns a :class:`bot.reply.Reply`.
"""

from __future__ import annotations

import importlib
import pkgutil
from collections.abc import Callable
from functools import cache

from bot.detector import Detection
from bot.diagnosis.common import generic
from bot.facts import PasteFacts, gather
from bot.reply import Reply

Rule = Callable[[PasteFacts], Reply]


@cache
def rules() -> dict[str, Rule]:
    """Every rule of every module in this package; a key claimed twice is a programming error."""
    found: dict[str, Rule] = {}
    owners: dict[str, str] = {}
    for info in sorted(pkgutil.iter_modules(__path__), key=lambda i: i.name):
        module = importlib.import_module(f"{__name__}.{info.name}")
        for key, rule in getattr(module, "RULES", {}).items():
            if key in found:
                raise RuntimeError(f"diagnosis rule {key!r} defined in both {owners[key]} and {info.name}")
            found[key] = rule
            owners[key] = info.name
    return found


def rule_for(category: str, engine: str) -> Rule:
    table = rules()
    return table.get(f"{category}@{engine}") or table.get(category) or generic


def diagnose(detection: Detection) -> Reply | None:
    root = detection.root
    if root is None:
        return None
    facts = gather(detection, root)
    reply = rule_for(root.category, root.engine)(facts)
    reply.signature = root.signature
    reply.category = root.category
    reply.notes.extend(n for n in facts.notes if n not in reply.notes)
    others = [f for f in detection.findings[1:] if f.severity != "info"]
    if others:
        reply.notes.append("Also in the paste: " + "; ".join(f.title for f in others[:3]))
    return reply
