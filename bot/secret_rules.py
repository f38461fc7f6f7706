"""The secret rules as data: GPU Garden's own (bot/data/secret_rules.yaml) and gitleaks'
(bot/data/secret_rules_gitleaks.yaml, imported by scripts/import_gitleaks.py), compiled for RE2.

A rule set finds, in one pass over the text, which rules can match at all: an RE2 Set of the rules'
keywords (case-insensitive literals, as gitleaks prefilters); on a long text, one more pass of a Set of
those rules' regexes keeps the ones that match somewhere.  Only they then run, one by one.

Start-up cost: the rules are parsed and validated once per content of the two files and kept in the
validated-data cache (:mod:`knowledge.cache`) as plain values, so a start reads them back without
YAML or pydantic; each rule's regex is compiled on its first use (every regex is compiled once when
the cache entry is built, so a rule that does not compile under RE2 still fails at load)."""

from __future__ import annotations

import math
from collections import Counter
from dataclasses import dataclass, field
from functools import cache, cached_property
from pathlib import Path
from typing import Any, Literal

import re2

from knowledge.cache import cached, code_digest, content_key, load_yaml
from knowledge.validate import STRICT, validate

DATA = Path(__file__).resolve().parent / "data"
# From 1 MiB a Set of the candidates' regexes beats running them one by one: on bench/detector_vs_grep.py's
# 10 MiB log (docs/benchmarks.md's machine) a rule took 2-3 ms a MiB, a Set of 15: 3 ms a MiB + 21 ms to build
SET_MIN_BYTES = 1 << 20
SET_MAX_MEM = 64 << 20  # per Set; past it a Set fails (to build, or answers without \z)
# ... for a few candidates only: a paste holding many rules' keywords (1.6 MiB of planted secrets, 200+
# candidates) made the Set's DFA thrash its memory before failing, 10x slower than searching one by one
SET_MAX_RULES = 32
SETS_KEPT = 16  # compiled Sets kept per rule set, by candidate list (a paste's views share one)
TERMINATOR_MAX = 2  # gitleaks' rules end a secret with one quote/space/semicolon or an escaped \\n
OWN_FILE = DATA / "secret_rules.yaml"
GITLEAKS_FILE = DATA / "secret_rules_gitleaks.yaml"
_CODE = code_digest(Path(__file__).resolve())


@dataclass(frozen=True, kw_only=True)
class RuleData:
    """One rule of a rule file as validated (pydantic, on a cache miss) and kept by the cache."""

    __pydantic_config__ = STRICT

    id: str
    kind: str
    regex: str
    keywords: tuple[str, ...] = ()
    entropy: float = 0.0
    group: int | None = None
    allow: tuple[str, ...] = ()  # a secret part matching one of these whole is not one
    stage: Literal["first", "last"] | None = None
    source: str | None = None


@dataclass(frozen=True, kw_only=True)
class _RuleFile:
    """The secret rules file as stored: its source and its rules."""

    source: str | None = None
    rules: list[RuleData]


@dataclass(frozen=True)
class SecretRule:
    """A rule ready to search: its regexes compiled on first use."""

    id: str
    kind: str
    regex: str
    entropy: float  # least bits per character of the secret part
    keywords: tuple[str, ...]
    allow_regex: str | None = None
    explicit_group: bool = False
    group_given: int | None = field(default=None, repr=False)

    @property
    def source(self) -> str:
        """The regex as searched: ^ and $ at every line (gitleaks' rules end on ``$`` where a secret
        ends its file; in a paste it ends a line: sidekiq-sensitive-url missed every URL but the last)."""
        return "(?m)" + self.regex

    @cached_property
    def pattern(self) -> Any:
        options = re2.Options()  # a DFA out of memory falls back to the NFA: no log line on stderr
        options.max_mem, options.log_errors = 32 << 20, False
        return re2.compile(self.source, options)

    @cached_property
    def group(self) -> int:
        """The part that is the secret (0: the whole match)."""
        groups = self.pattern.groups
        group = self.group_given if self.group_given is not None else (1 if groups else 0)
        return 0 if group > groups else group

    @cached_property
    def allow(self) -> Any:
        return re2.compile(self.allow_regex) if self.allow_regex is not None else None

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


def _rule(spec: RuleData) -> SecretRule:
    return SecretRule(
        spec.id,
        spec.kind,
        spec.regex,
        spec.entropy,
        tuple(k.lower() for k in spec.keywords),
        "|".join(f"(?:{a})" for a in spec.allow) if spec.allow else None,
        explicit_group=spec.group is not None,
        group_given=spec.group,
    )


def _read(data: bytes) -> list[RuleData]:
    return validate(_RuleFile, load_yaml(data)).rules


def _build(own: bytes, gitleaks: bytes) -> tuple[RuleData, ...]:
    """Every rule in precedence order, each regex compiled once to prove it compiles."""
    mine = _read(own)
    specs = [s for s in mine if s.stage != "last"] + _read(gitleaks) + [s for s in mine if s.stage == "last"]
    for spec in specs:
        rule = _rule(spec)
        _ = rule.pattern, rule.allow, rule.group
    return tuple(specs)


class RuleSet:
    """The rules in precedence order, and a one-pass keyword prefilter over them."""

    def __init__(self, specs: list[RuleData] | tuple[RuleData, ...]):
        self.rules = tuple(_rule(s) for s in specs)
        self._keywords: list[str] = sorted({k for r in self.rules for k in r.keywords})
        self._always = [i for i, r in enumerate(self.rules) if not r.keywords]
        self._by_keyword: dict[str, list[int]] = {k: [] for k in self._keywords}
        for i, r in enumerate(self.rules):
            for k in dict.fromkeys(r.keywords):
                self._by_keyword[k].append(i)
        self._set = _search_set(self._keywords, case_sensitive=False, literal=True)
        if self._set is None:
            raise re2.error("the secret rules' keywords do not fit an RE2 Set")
        self._regex_sets: dict[tuple[int, ...], Any] = {}

    def candidates(self, data: bytes | bytearray) -> list[int]:
        """Indexes of the rules one of whose keywords is in ``data``, in precedence order."""
        hits = set(self._always)
        for k in self._set.Match(data) or ():
            hits.update(self._by_keyword[self._keywords[k]])
        return sorted(hits)

    def matching(self, data: bytes | bytearray) -> list[int]:
        """The candidates whose regex matches somewhere in ``data``.  On a long text that is one pass of an
        RE2 Set of their regexes and ``\\z``, which matches every text: an answer without it means the
        Set's DFA ran out of memory, and every candidate is searched (as when RE2 cannot build the Set)."""
        found = self.candidates(data)
        if len(data) < SET_MIN_BYTES or not found or len(found) > SET_MAX_RULES:
            return found
        if (key := tuple(found)) not in self._regex_sets:
            if len(self._regex_sets) >= SETS_KEPT:
                self._regex_sets.clear()
            self._regex_sets[key] = _search_set([*(self.rules[i].source for i in found), r"\z"])
        hits = set(self._regex_sets[key].Match(data) or ()) if self._regex_sets[key] is not None else set()
        return [i for n, i in enumerate(found) if n in hits] if len(found) in hits else found


def _search_set(patterns: list[str], **flags: bool) -> Any:
    """An unanchored RE2 Set of the patterns (None when RE2 cannot build it)."""
    options = re2.Options()
    options.max_mem, options.log_errors = SET_MAX_MEM, False
    for name, value in flags.items():
        setattr(options, name, value)
    regex_set = re2.Set.SearchSet(options)
    try:
        for pattern in patterns:
            regex_set.Add(pattern)
        regex_set.Compile()
    except re2.error:
        return None
    return regex_set


@cache
def default_rules() -> RuleSet:
    own, gitleaks = OWN_FILE.read_bytes(), GITLEAKS_FILE.read_bytes()
    key = content_key("secret-rules", [("own", own), ("gitleaks", gitleaks)], _CODE)
    return RuleSet(cached(key, lambda: _build(own, gitleaks), tuple))
