"""Operators' stats from the bot's database: what people ask about most, and which answers they rate worst.

``report(storage, since_seconds)`` returns a plain-text table (for a terminal, or a code block in chat);
``parse_period("7d")`` turns the usual shorthand into seconds.  The feedback counted is that of the period."""

from __future__ import annotations

import re
from collections.abc import Sequence

from bot.storage import SignatureStats, Storage

_UNITS = {"s": 1, "m": 60, "h": 3600, "d": 86400, "w": 7 * 86400}
_PERIOD = re.compile(r"^\s*(\d+(?:\.\d+)?)\s*([smhdw])\s*$", re.IGNORECASE)


def parse_period(text: str) -> float:
    """``"30m"``, ``"24h"``, ``"7d"``, ``"2w"``, ``"90s"`` -> seconds; ValueError on anything else."""
    match = _PERIOD.match(text or "")
    if not match:
        raise ValueError(f"period {text!r}: use a number and a unit, like 30m, 24h, 7d or 2w")
    seconds = float(match.group(1)) * _UNITS[match.group(2).lower()]
    if seconds <= 0:
        raise ValueError(f"period {text!r} must be longer than zero")
    return seconds


def format_period(seconds: float) -> str:
    """The largest whole unit: 604800 -> "7d", 5400 -> "90m"."""
    for unit in ("w", "d", "h", "m"):
        size = _UNITS[unit]
        if seconds >= size and seconds % size == 0:
            return f"{int(seconds // size)}{unit}"
    return f"{seconds:g}s"


def helpful_ratio(row: SignatureStats) -> float | None:
    votes = row.helpful + row.not_helpful
    return None if votes == 0 else row.helpful / votes


def _ratio_text(row: SignatureStats) -> str:
    ratio = helpful_ratio(row)
    return "-" if ratio is None else f"{ratio:.0%}"


def _table(rows: Sequence[SignatureStats]) -> list[str]:
    header = ("signature", "answers", "helpful", "not helpful", "helpful %")
    body = [(r.signature, str(r.answers), str(r.helpful), str(r.not_helpful), _ratio_text(r)) for r in rows]
    widths = [max(len(line[i]) for line in [header, *body]) for i in range(len(header))]

    def fmt(cells: Sequence[str]) -> str:
        first = cells[0].ljust(widths[0])
        rest = [cell.rjust(width) for cell, width in zip(cells[1:], widths[1:], strict=True)]
        return "  ".join([first, *rest]).rstrip()

    return [fmt(header), fmt(["-" * w for w in widths]), *(fmt(line) for line in body)]


def worst_rated(rows: Sequence[SignatureStats], min_votes: int = 1) -> list[SignatureStats]:
    """Rated answers, lowest helpful ratio first (more "not helpful" votes break ties)."""
    rated = [r for r in rows if r.helpful + r.not_helpful >= min_votes and r.not_helpful > 0]
    return sorted(rated, key=lambda r: (helpful_ratio(r) or 0.0, -r.not_helpful, -r.answers, r.signature))


def _n(count: int, word: str) -> str:
    return f"{count} {word}" if count == 1 else f"{count} {word}s"


def report(storage: Storage, since_seconds: float, top: int = 10, min_votes: int = 1) -> str:
    rows = sorted(storage.stats(since_seconds), key=lambda r: (-r.answers, r.signature))
    period = format_period(since_seconds)
    if not rows:
        return f"GPU Garden stats, last {period}: no answers with a finding in this period.\n"
    answers = sum(r.answers for r in rows)
    helpful = sum(r.helpful for r in rows)
    not_helpful = sum(r.not_helpful for r in rows)
    votes = helpful + not_helpful
    overall = f"{helpful / votes:.0%} helpful" if votes else "no votes"
    lines = [
        f"GPU Garden stats, last {period}: {_n(answers, 'answer')} across {_n(len(rows), 'signature')}; "
        f"{_n(votes, 'vote')} ({overall}).",
        "",
        f"Most frequent (top {min(top, len(rows))}):",
        *_table(rows[:top]),
    ]
    worst = worst_rated(rows, min_votes)[:top]
    lines.append("")
    if worst:
        lines.append(f"Worst rated (at least one 'not helpful' vote, {len(worst)} shown):")
        lines.extend(_table(worst))
    else:
        lines.append("Worst rated: no 'not helpful' votes in this period.")
    return "\n".join(lines) + "\n"
