"""RE2 patterns compiled on first use.

A module that reads one kind of paste (a llama.cpp load log, a model name) keeps its patterns at module
level; compiled there, each costs a fraction of a millisecond at import whether or not a paste ever
reaches the code that searches with it (22 patterns in :mod:`calculator.from_log` are about 7 ms of a
one-line ``triage``).  A :class:`LazyPattern` compiles when a method is first asked for and then keeps
the compiled methods as its own attributes, so later calls cost what calls on the compiled pattern do.
"""

from __future__ import annotations

from typing import Any

import re2

_METHODS = ("search", "match", "fullmatch", "finditer", "findall", "split", "sub", "subn")


class LazyPattern:
    """``re2.compile(pattern)``, done on first use; then it answers as the compiled pattern."""

    def __init__(self, pattern: str) -> None:
        self.pattern = pattern

    def __getattr__(self, name: str) -> Any:  # only for attributes not set: the first use, then the rest
        compiled = self.__dict__.get("_compiled")
        if compiled is None:
            compiled = self._compiled = re2.compile(self.pattern)
            for method in _METHODS:
                setattr(self, method, getattr(compiled, method))
        return getattr(compiled, name)
