"""What the small per-family fix tests share: a paste's fixes in rank order."""

from __future__ import annotations

from bot.detector import detect
from bot.diagnosis import diagnose
from bot.reply import Fix


def ranked_fixes(text: str) -> list[Fix]:
    reply = diagnose(detect(text))
    assert reply is not None
    return sorted(reply.fixes, key=lambda f: f.rank)


def runnable(fix: Fix) -> str:
    """The command a fix prints, or ``+ FLAGS`` for one that adds flags to the user's own command (the
    paste named no command and no model, so no full command line could start as printed)."""
    if fix.command:
        return fix.command
    assert fix.adds is not None, f"an action without flags: {fix.change}"
    return f"+ {fix.adds}"
