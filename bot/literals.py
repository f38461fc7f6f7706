"""The literals a pattern cannot match without, so a paste compiles and runs only the patterns whose
literal it holds.  Read from Python's parse of the pattern (RE2's ``\\z`` and ``\\x{...}`` respelled);
a construct the engines read differently (POSIX classes) or Python cannot parse gives none (always a
candidate).  Lower-case ASCII, for a case-insensitive search of NFKC-folded text (bot/normalize.py),
where only ASCII letters case-fold to ASCII."""

from __future__ import annotations

import re
import re._constants as sre  # type: ignore[import-not-found]
import re._parser as sre_parse  # type: ignore[import-not-found]
from pathlib import Path

from knowledge.cache import cached, code_digest, content_key

_CODE = code_digest(Path(__file__))
_ESCAPE = re.compile(r"\\(x\{[0-9a-fA-F]{1,6}\}|.)", re.S)
_POSIX_CLASS = re.compile(r"\[:\^?[a-z]+:\]")  # RE2's "[[:alpha:]]"; Python: "[[:alph" then "a]"
_REPEATS = (sre.MAX_REPEAT, sre.MIN_REPEAT, sre.POSSESSIVE_REPEAT)


def _python_syntax(m: re.Match[str]) -> str:
    escaped = m.group(1)
    if escaped == "z":
        return r"\Z"
    return f"\\U{int(escaped[2:-1], 16):08x}" if escaped.startswith("x{") else m.group(0)


def _best(a: frozenset[str] | None, b: frozenset[str] | None) -> frozenset[str] | None:
    """Of two requirements, the one whose shortest literal is longer (it lets fewer texts through)."""
    return a or b if not a or not b else b if min(map(len, b)) > min(map(len, a)) else a


def _need(items) -> frozenset[str] | None:
    """Strings of which every match of the parsed items holds one; None: no requirement known."""
    best: frozenset[str] | None = None
    run: list[str] = []
    for op, arg in [*items, (None, None)]:
        if op is sre.LITERAL and arg < 128:
            run.append(chr(arg).lower())
            continue
        best, run = (_best(best, frozenset(["".join(run)])) if run else best), []
        if op is sre.SUBPATTERN or op is sre.ATOMIC_GROUP:
            best = _best(best, _need(arg[3] if op is sre.SUBPATTERN else arg))
        elif op in _REPEATS and arg[0] >= 1:
            best = _best(best, _need(arg[2]))
        elif op is sre.BRANCH and all(branches := [_need(b) for b in arg[1]]):
            best = _best(best, frozenset().union(*branches))  # type: ignore[arg-type]
    return best


def required(pattern: str) -> tuple[str, ...]:
    if _POSIX_CLASS.search(pattern):
        return ()
    try:
        return tuple(sorted(_need(sre_parse.parse(_ESCAPE.sub(_python_syntax, pattern))) or ()))
    except (re.error, ValueError, OverflowError, RecursionError):
        return ()


def required_all(patterns: list[str]) -> list[tuple[str, ...]]:
    """``required`` of each pattern, kept in the validated-data cache (parsing them all takes ~0.1 s)."""
    key = content_key("literals", [("patterns", "\0".join(patterns).encode())], _CODE)
    return cached(key, lambda: list(map(required, patterns)), list)
