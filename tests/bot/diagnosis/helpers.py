"""What the small per-family fix tests share: a paste's fixes in rank order."""

from __future__ import annotations

from bot.detector import detect
from bot.diagnosis import diagnose
from bot.reply import Fix


def ranked_fixes(text: str) -> list[Fix]:
    reply = diagnose(detect(text))
    assert reply is not None
    return sorted(reply.fixes, key=lambda f: f.rank)
