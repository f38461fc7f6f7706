"""The secret rules as data: GPU Garden's own (bot/data/secret_rules.yaml) and gitleaks'
(bot/data/secret_rules_gitleaks.yaml, imported by scripts/import_gitleaks.py), compiled for RE2.

A rule set finds, in one pass over the text, which rules can match at all: an RE2 Set of the rules'
keywords (case-insensitive literals, as gitleaks prefilters); only those rules' regexes then run.
"""

from __future__ import annotations

import math
from collections import Counter
from dataclasses import dataclass
from functools import cache
from pathlib import Path
from typing import Literal

import re2
import yaml
from pydantic import BaseModel, ConfigDict, Field

DATA = Path(__file__).resolve().parent / "data"
TERMINATOR_MAX = 2  # gitleaks' rules end a secret with one quote/space/semicolon or an escaped \\n
OWN_FILE = DATA / "secret_rules.yaml"
GITLEAKS_FILE = DATA / "secret_rules_gitleaks.yaml"


class RuleSpec(BaseModel):
    model_config = ConfigDict(extra="forbid")

    id: str
    kind: str
    regex: str
    keywords: list[str] = Field(default_factory=list)
    entropy: float = 0.0
    group: int | None = None
    allow: list[str] = Field(default_factory=list)  # a secret part matching one of these whole is not one
    stage: Literal["first", "last"] | None = None
    source: str | None = None


class RuleFile(BaseModel):
    source: str | None = None
    rules: list[RuleSpec]


@dataclass(frozen=True)
class SecretRule:
    id: str
    kind: str
    pattern: re2._Regexp
    group: int  # the part that is the secret (0: the whole match)
    entropy: float  # least bits per character of that part
    keywords: tuple[str, ...]
    allow: re2._Regexp | None = None
    explicit_group: bool = False

    def secret_span(self, m) -> tuple[int, int] | None:
        """Where the secret is in a match, or None when it is too regular to be one."""
        start, end = m.span(self.group)
        if start < 0 and not self.explicit_group:  # gitleaks: the first group that took part
            start, end = next((m.span(g) for g in range(1, len(m.groups()) + 1) if m.start(g) >= 0), (-1, -1))
        if start < 0 or (not self.explicit_group and m.end(0) - end > TERMINATOR_MAX):
            # gitleaks reports a rule's first group when it names none; where more of the token
            # follows that group (a webhook URL's later segments), the whole match is the secret
            start, end = m.span(0)
        if end <= start:
            return None
        secret = m.string[start:end]
        if self.entropy and shannon(secret) < self.entropy:
            return None
        if self.allow is not None and self.allow.fullmatch(secret) is not None:
            return None
        return start, end


def shannon(data: bytes | str) -> float:
    counts = Counter(data)
    n = len(data)
    return -sum(c / n * math.log2(c / n) for c in counts.values())


def _compile(spec: RuleSpec) -> SecretRule:
    options = re2.Options()
    options.max_mem = 32 << 20
    pattern = re2.compile(spec.regex, options)
    group = spec.group if spec.group is not None else (1 if pattern.groups else 0)
    if group > pattern.groups:
        group = 0
    allow = re2.compile("|".join(f"(?:{a})" for a in spec.allow)) if spec.allow else None
    keywords = tuple(k.lower() for k in spec.keywords)
    return SecretRule(
        spec.id,
        spec.kind,
        pattern,
        group,
        spec.entropy,
        keywords,
        allow,
        explicit_group=spec.group is not None,
    )


def _read(path: Path) -> list[RuleSpec]:
    return RuleFile.model_validate(yaml.safe_load(path.read_text(encoding="utf-8"))).rules


class RuleSet:
    """The rules in precedence order, and a one-pass keyword prefilter over them."""

    def __init__(self, specs: list[RuleSpec]):
        self.rules = tuple(_compile(s) for s in specs)
        self._keywords: list[str] = sorted({k for r in self.rules for k in r.keywords})
        self._always = [i for i, r in enumerate(self.rules) if not r.keywords]
        self._by_keyword = {
            k: [i for i, r in enumerate(self.rules) if k in r.keywords] for k in self._keywords
        }
        options = re2.Options()
        options.case_sensitive = False
        options.literal = True
        options.max_mem = 64 << 20
        self._set = re2.Set.SearchSet(options)
        for k in self._keywords:
            self._set.Add(k)
        self._set.Compile()

    def candidates(self, data: bytes) -> list[int]:
        """Indexes of the rules one of whose keywords is in ``data``, in precedence order."""
        hits = set(self._always)
        for k in self._set.Match(data) or ():
            hits.update(self._by_keyword[self._keywords[k]])
        return sorted(hits)


@cache
def default_rules() -> RuleSet:
    own = _read(OWN_FILE)
    first = [s for s in own if s.stage != "last"]
    last = [s for s in own if s.stage == "last"]
    return RuleSet(first + _read(GITLEAKS_FILE) + last)
