"""The log prefixes the detector strips from every line (knowledge/log_prefixes.yaml), as data: what
each tool puts in front of an engine's own line (docker compose, journald, kubectl, CI runners, loggers).

Python ``re`` syntax, every quantifier possessive or bounded (tests/bot/test_normalize.py checks it), so
bot/normalize.py joins them into one pattern anchored on a newline that never backtracks.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from functools import cache
from pathlib import Path

from knowledge.cache import cached, code_digest, content_key, load_yaml
from knowledge.validate import STRICT, validate

_FILE = Path(__file__).with_name("log_prefixes.yaml")
_CODE = code_digest(Path(__file__).resolve())


@dataclass(frozen=True, kw_only=True)
class LogPrefix:
    """One tool's line prefix: the pattern and what prints it."""

    __pydantic_config__ = STRICT

    pattern: str
    what: str

    def __post_init__(self) -> None:
        try:
            re.compile(self.pattern)
        except re.error as exc:
            raise ValueError(f"prefix pattern does not compile: {exc}") from exc


@dataclass(frozen=True, kw_only=True)
class LogPrefixTable:
    """knowledge/log_prefixes.yaml."""

    __pydantic_config__ = STRICT

    max_layers: int  # how many prefixes one line may carry, nested
    prefixes: tuple[LogPrefix, ...]


@cache
def log_prefixes() -> LogPrefixTable:
    data = _FILE.read_bytes()
    key = content_key("log-prefixes", [(_FILE.name, data)], _CODE)
    return cached(key, lambda: validate(LogPrefixTable, load_yaml(data)), LogPrefixTable)
