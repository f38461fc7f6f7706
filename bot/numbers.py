"""Parse numbers as engines and people print them: ``42,656``, ``1900,00``, ``0.90``, ``32k``."""

from __future__ import annotations

import math

import re2

_THOUSANDS = re2.compile(r"^[0-9]{1,3}(?:,[0-9]{3})+(?:\.[0-9]+)?$")
_DECIMAL_COMMA = re2.compile(r"^[0-9]+,[0-9]{1,2}$")
_PLAIN = re2.compile(r"^[0-9]+(?:\.[0-9]+)?$")
MAX_DIGITS = 15


def parse_number(raw: str) -> float | None:
    """A finite, non-negative number, or None when the text is not a sane number."""
    s = raw.strip().rstrip(".")
    if not s or len(s) > 32:
        return None
    if _THOUSANDS.search(s):
        s = s.replace(",", "")
    elif _DECIMAL_COMMA.search(s):
        s = s.replace(",", ".")
    if not _PLAIN.search(s):
        return None
    if len(s.split(".")[0]) > MAX_DIGITS:
        return None
    value = float(s)
    return value if math.isfinite(value) else None


def parse_int(raw: str) -> int | None:
    value = parse_number(raw)
    if value is None or value != int(value):
        return None
    return int(value)


def parse_token_count(raw: str) -> int | None:
    """Token counts as typed on command lines: ``32768``, ``32k`` (=32,000), ``32K`` (=32,768), ``1M``."""
    s = raw.strip()
    mult = 1
    if s and s[-1] in "kKmM":
        mult = {"k": 1000, "K": 1024, "m": 1_000_000, "M": 1 << 20}[s[-1]]
        s = s[:-1]
    value = parse_number(s)
    if value is None:
        return None
    return int(value * mult)
