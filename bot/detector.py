"""Find the errors that matter in a paste, with their numbers and the context around them.

Each signature's patterns are tried on the physical-line view first and then on the wrap-joined views;
the first match per signature becomes a :class:`Finding`.  Findings are ranked: errors before
warnings before informational memory reports, then by the signature's priority, then by position."""

from __future__ import annotations

from array import array
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from functools import cache
from typing import Any

import re2

from bot.literals import required_all
from bot.normalize import Normalized, normalize
from bot.numbers import parse_int, parse_number, parse_token_count
from bot.redact import redact_joins
from knowledge import KnowledgeBase, load_builtin
from knowledge.loader import LoadedSignature

# bytes per printed unit: b, bytes, then kb/mb/gb/tb (powers of 1000) and kib/mib/gib/tib (of 1024)
_MEM_FACTORS = {"b": 1, "bytes": 1} | {f"{p}b": 1000**n for n, p in enumerate("kmgt", 1)}
_MEM_FACTORS |= {f"{p}ib": 1 << (10 * n) for n, p in enumerate("kmgt", 1)}
_TARGET = {"_gib": 1 << 30, "_mib": 1 << 20, "_bytes": 1}
MAX_TOKENS = 1 << 27  # 134M: ten times the longest context any model offers; larger is nonsense
MAX_GIB = 1 << 16  # 64 TiB: more RAM or GPU memory than any one machine has
EVIDENCE_CHARS = 400
SEVERITY_RANK = {"error": 0, "warning": 1, "info": 2}


@dataclass
class Finding:
    """One signature that matched: what it is, how urgent, and the numbers it captured."""

    signature: str
    category: str
    engine: str
    title: str
    severity: str
    priority: int
    params: dict[str, Any]
    evidence: list[str]
    line: int
    cause_template: str
    remedies: list[str]
    invalid: dict[str, str] = field(default_factory=dict)
    versions: str | None = None
    advice: list[str] = field(default_factory=list)
    form: str | None = None


@dataclass
class Context:
    """What the paste says about the setup: model, GPU, flags, version, the command line."""

    fields: dict[str, Any] = field(default_factory=dict)

    def get(self, name: str, default: Any = None) -> Any:
        return self.fields.get(name, default)


@dataclass
class Detection:
    """Everything the detector found in one paste, the root finding first."""

    findings: list[Finding]
    context: Context
    normalized: Normalized
    raw: str | bytes = ""  # the paste as given: log prefixes (and the dates in them) are not normalised away
    secrets: tuple[str, ...] = ()  # kinds of secret the wrap-joined views rebuilt (removed from them)

    @property
    def root(self) -> Finding | None:
        return self.findings[0] if self.findings else None


def convert_param(name: str, unit: str, raw: str, unit_text: str | None = None) -> Any:
    """Normalise one captured value; None when it is not a sane value of that unit."""
    if unit == "text":
        return raw.strip()[:200] or None
    if unit in ("tokens", "count"):
        return _at_most(parse_int(raw), MAX_TOKENS)
    value = parse_number(raw)
    if value is None or unit == "number":
        return value
    if unit == "ratio":
        return value if value <= 1.5 else None
    if unit == "capability":
        return round(value / 10, 1) if value >= 10 else value
    printed = (unit_text or "").strip().lower() if unit == "dynamic" else unit
    if (factor := _MEM_FACTORS.get(printed)) is None:
        return None
    target = next((f for suffix, f in _TARGET.items() if name.endswith(suffix)), 1 << 30)
    result = value * factor / target
    if target != 1 and result > MAX_GIB * (1 << 30) / target:
        return None
    return int(result) if target == 1 else round(result, 6)


def _text(value: bytes | str | None) -> str | None:
    return value.decode("utf-8", "replace") if isinstance(value, bytes) else value


def _extract(sig: LoadedSignature, match: Any) -> tuple[dict[str, Any], dict[str, str]]:
    params, invalid = dict[str, Any](), dict[str, str]()
    groups = {k: _text(v) for k, v in match.groupdict().items()}
    for name, unit in sig.signature.captures.items():
        if (raw := groups.get(name)) is None:
            continue
        value = convert_param(name, unit, raw, groups.get(f"{name}_unit"))
        if value is None:
            invalid[name] = raw[:60]
        else:
            params[name] = value
    return params, invalid


def _evidence(view, start: int, end: int) -> tuple[list[str], int]:
    first, last = view.line_at(start), view.line_at(max(start, end - 1))
    lines = [view.logical_line(i)[:EVIDENCE_CHARS] for i in range(first, min(last, first + 2) + 1)]
    return lines, view.first_physical[first]


class LazyPatterns(Sequence[Any]):
    """The bank's patterns by id, each compiled on first use (iterating compiles every one)."""

    def __init__(self, sources: list[str]) -> None:
        self._sources = sources
        self._compiled: list[Any] = [None] * len(sources)

    def __len__(self) -> int:
        return len(self._sources)

    def __getitem__(self, index: Any) -> Any:
        found = self._compiled[index]
        if found is None:
            found = self._compiled[index] = re2.compile(self._sources[index])
        return found


def _search_set(patterns: list[str], max_mem: int, case_sensitive: bool = True) -> tuple[Any, int]:
    """An RE2 Set of the patterns plus the sentinel ``\\z`` (its id returned); None if RE2 cannot build it."""
    options = re2.Options()
    options.max_mem, options.log_errors, options.case_sensitive = max_mem, False, case_sensitive
    found = re2.Set.SearchSet(options)
    try:
        for pattern in patterns:
            found.Add(pattern)
        sentinel = found.Add(PatternBank.SENTINEL)
        found.Compile()
    except re2.error:
        return None, -1
    return found, sentinel


class PatternBank:
    """Every pattern of a knowledge base, each compiled on first use, and what finds the few worth
    searching in a view.  In a short view: the patterns whose required literal (bot/literals.py) it
    holds, found by one case-insensitive RE2 Set of those literals, so a short paste compiles a few
    patterns only.  In a long view: the patterns that match anywhere, found by RE2 Sets of CHUNK
    patterns each (one DFA over all of them thrashes on near-misses: 1.2 s vs 0.64 s for three Sets
    on bench/detector_vs_grep.py's 10 MiB near-misses; 0.27 s vs 0.17 s on its realistic log).
    Every Set also holds a sentinel, ``\\z``, which matches every text: RE2's ``Set::Match`` answers
    "no match" both when nothing matched and when its DFA ran out of memory, so a result without the
    sentinel means the pass failed, and every pattern it covers is then searched (never "no finding")."""

    SET_MAX_MEM = 256 << 20
    SENTINEL = r"\z"
    CHUNK = 150
    LONG_VIEW = 64 << 10  # bytes: a shorter view is searched candidate by candidate

    def __init__(self) -> None:
        self._ids: dict[str, int] = {}
        self.compiled: Sequence[Any] = LazyPatterns([])
        self._chunks: dict[int, tuple[Any, int]] = {}
        self._by_literal: list[tuple[int, ...]] = []
        self._always: frozenset[int] = frozenset()
        self._literals: tuple[Any, int] = (None, -1)

    def add(self, pattern: str) -> int:
        """The pattern's id (validated by the knowledge schema, which compiles every pattern)."""
        return self._ids.setdefault(pattern, len(self._ids))

    def freeze(self) -> None:
        sources = list(self._ids)
        self.compiled = LazyPatterns(sources)
        owners: dict[str, list[int]] = {}
        for pid, needed in enumerate(required_all(sources)):
            for literal in needed or [""]:
                owners.setdefault(literal, []).append(pid)
        self._always = frozenset(owners.pop("", ()))
        self._by_literal = [tuple(ids) for ids in owners.values()]
        self._literals = _search_set([re2.escape(lit) for lit in owners], 64 << 20, case_sensitive=False)

    def scan(self, norm: Normalized) -> list[frozenset[int] | None]:
        """Per view, the ids of the patterns that may match it (None: unknown, search them all)."""
        return [self._scan_one(view.data) for view in norm.views]

    def candidates(self, data: bytes) -> frozenset[int] | None:
        found = _matches(self._literals, data)
        return None if found is None else self._always.union(*(self._by_literal[i] for i in found))

    def _scan_one(self, data: bytes) -> frozenset[int] | None:
        if len(data) < self.LONG_VIEW:
            return self.candidates(data)
        hits: set[int] = set()
        for first in range(0, len(self._ids), self.CHUNK):
            found = _matches(self.chunk_set(first // self.CHUNK), data)
            every = range(first, min(first + self.CHUNK, len(self._ids)))  # searched when the pass failed
            hits.update(every if found is None else (first + i for i in found))
        return frozenset(hits)

    def chunk_set(self, chunk: int) -> tuple[Any, int]:
        if chunk not in self._chunks:
            first = chunk * self.CHUNK
            self._chunks[chunk] = _search_set(list(self._ids)[first : first + self.CHUNK], self.SET_MAX_MEM)
        return self._chunks[chunk]


def _matches(built: tuple[Any, int], data: bytes) -> list[int] | None:
    """The ids a Set matched in ``data``; None when its pass failed (no sentinel) or it was not built."""
    found, sentinel = built
    matched = (found.Match(data) or ()) if found is not None else ()
    return [i for i in matched if i != sentinel] if sentinel in matched else None


class Detector:
    """Signatures and context rules of one knowledge base, compiled once."""

    def __init__(self, kb: KnowledgeBase):
        self.kb = kb
        self.bank = PatternBank()
        self._sigs = [
            (
                s,
                [self.bank.add(p) for p in s.signature.patterns],
                [self.bank.add(p) for p in s.signature.requires],
                [self.bank.add(p) for p in s.signature.excludes],
            )
            for s in kb.signatures
        ]
        self._rules = [(engine, rule.field, self.bank.add(rule.pattern), rule) for engine, rule in kb.context]
        self.bank.freeze()

    def detect(self, text: str | bytes, prefix_cuts: array | None = None) -> Detection:
        norm, secrets = redact_joins(normalize(text, prefix_cuts))
        hits = self.bank.scan(norm)
        findings: list[Finding] = []
        for loaded, patterns, requires, excludes in self._sigs:
            found = self._first_match(norm, hits, patterns)
            if found is None:
                continue
            missing = any(self._first_match(norm, hits, [r]) is None for r in requires)
            if missing or any(self._first_match(norm, hits, [x]) is not None for x in excludes):
                continue
            view, match = found
            findings.append(_finding(loaded, view, match))
        ranked = _rank(findings, self.kb)
        root_engine = ranked[0].engine if ranked else None
        return Detection(ranked, self._context(norm, hits, root_engine), norm, text, secrets)

    def _first_match(self, norm: Normalized, hits: list, pattern_ids: list[int]) -> tuple[Any, Any] | None:
        """The first pattern that matches anywhere; among the views, the match that fills the most named
        groups (a wrapped line may match the unjoined view with its optional tail cut off), at a tie one
        going on where the best stopped at a line's end (a wrap cut ``875352064`` / ``0``)."""
        for pid in pattern_ids:
            best: tuple[Any, Any] | None = None
            best_filled = -1
            for view, view_hits in zip(norm.views, hits, strict=True):
                if view_hits is not None and pid not in view_hits:
                    continue
                pattern = self.bank.compiled[pid]  # compiled here: only the patterns the Set found
                if not (m := pattern.search(view.data)):
                    continue
                filled = sum(1 for v in m.groupdict().values() if v is not None)
                if filled > best_filled or (filled == best_filled and _goes_on(best, m)):
                    best, best_filled = (view, m), filled
                if filled == pattern.groups and (best is None or not _cut_numbers(best)):
                    break  # nothing left for a joined view to add
            if best is not None:
                return best
        return None

    def _context(self, norm: Normalized, hits: list, prefer_engine: str | None = None) -> Context:
        """Every context field the rules find; when engines disagree (an Ollama runner's ``--model``
        blob path vs the ``ollama run`` tag), the root finding's engine wins, then file order."""
        found: dict[str, list[tuple[str, Any]]] = {}
        for engine, field_name, pid, rule in self._rules:
            if any(e == engine for e, _v in found.get(field_name, [])):
                continue
            for m in self._in_reading_order(norm, hits, pid, field_name in _NUMBERS):
                value = _context_value(field_name, _text(m.groupdict().get("value")) or rule.value or "")
                if value is not None:
                    found.setdefault(field_name, []).append((engine, value))
                    break
        return Context({k: next((v for e, v in c if e == prefer_engine), c[0][1]) for k, c in found.items()})

    def _in_reading_order(self, norm: Normalized, hits: list, pid: int, numeric: bool) -> Iterable[Any]:
        """A rule's matches: the plain view's, then (lazily) the last joined one's; a number's in every view,
        earliest in the paste first and at a tie the joined line (a wrap did not cut it: ``23.5`` / ``6 GiB``)."""
        views = range(len(norm.views)) if numeric else dict.fromkeys((0, len(norm.views) - 1))
        # lazily: the pattern is compiled only when some view may hold it
        found = ((vi, m) for vi in views if (hits[vi] is None or pid in hits[vi]) and (m := self.bank.compiled[pid].search(norm.views[vi].data)))  # fmt: skip
        if not numeric:
            return (m for _vi, m in found)
        keyed: list[tuple[tuple[int, ...], Any]] = []
        for vi, m in found:  # by its physical line, its column, then its view (the plain one last)
            data, at = norm.views[vi].data, m.start()
            keyed.append(((norm.views[vi].first_physical[data.count(b"\n", 0, at)], at - data.rfind(b"\n", 0, at), vi or 9), m))  # fmt: skip
        return [m for _key, m in sorted(keyed, key=lambda km: km[0])]


def _cut_numbers(found: tuple[Any, Any]) -> list[int]:
    """The groups of a match that end in a digit where it ends, at its line's end, when the next line starts
    with one: a wrap may have cut them."""
    view, m = found
    after = view.data[m.end() : m.end() + 64]
    if after[:1] != b"\n" or not after[1:].lstrip()[:1].isdigit():
        return []
    return [g for g in range(1, m.re.groups + 1) if m.end(g) == m.end() and (m.group(g) or b"")[-1:].isdigit()]  # fmt: skip


def _goes_on(best: tuple[Any, Any] | None, m: Any) -> bool:
    """Whether match ``m`` reads a number on where the best one stopped at a line's end (a wrap's cut:
    ``875352064`` / ``0``), its other groups the same (a joined view may join two records)."""
    if best is None or not (cut := _cut_numbers(best)):
        return False
    old = best[1]
    same = all(m.group(g) == old.group(g) for g in range(1, m.re.groups + 1) if g not in cut)
    grown = [(m.group(g) or b"", old.group(g)) for g in cut]
    return same and all(new.startswith(was) and new[len(was) :].isdigit() for new, was in grown)


@cache
def default_detector() -> Detector:
    return Detector(load_builtin())


def detect(text: str | bytes, detector: Detector | None = None) -> Detection:
    return (detector or default_detector()).detect(text)


def _finding(loaded: LoadedSignature, view: Any, match: Any) -> Finding:
    params, invalid = _extract(loaded, match)
    evidence, line = _evidence(view, match.start(), match.end())
    sig = loaded.signature
    return Finding(
        signature=sig.id,
        category=sig.category,
        engine=loaded.engine,
        title=sig.title,
        severity=sig.severity,
        priority=sig.priority,
        params=params,
        evidence=evidence,
        line=line,
        cause_template=sig.cause,
        remedies=list(sig.remedies),
        invalid=invalid,
        versions=sig.versions,
        advice=list(sig.advice),
        form=sig.form,
    )


def _rank(findings: list[Finding], kb: KnowledgeBase) -> list[Finding]:
    suppressed: set[str] = set()
    for loaded in filter(None, (kb.by_id(f.signature) for f in findings)):
        suppressed.update(loaded.signature.suppresses)
    kept = [f for f in findings if f.signature not in suppressed and f.category not in suppressed]
    # an informational report is context for the error, not something it hides
    kept += [f for f in findings if f not in kept and f.severity == "info"]
    kept.sort(key=lambda f: (SEVERITY_RANK.get(f.severity, 3), -f.priority, f.line))
    return kept


_INT_FIELDS = set("tp pp gpu_count max_num_seqs max_num_batched_tokens n_parallel n_gpu_layers".split())
_FLOAT_FIELDS = {"gpu_total_gib", "compute_capability"}
_RATIO_FIELDS = {"gpu_memory_utilization", "mem_fraction_static"}  # a share of the GPU: (0, 1]
_TOKEN_FIELDS = set(
    "max_model_len n_ctx n_ctx_train context_length max_total_tokens max_input_tokens".split()
)
_BOOL_FIELDS = {"enforce_eager", "flash_attn_unavailable"}
_NUMBERS = _INT_FIELDS | _FLOAT_FIELDS | _RATIO_FIELDS | _TOKEN_FIELDS


def _context_value(field_name: str, raw: str) -> Any:
    raw = raw.strip().strip("\"'")
    if field_name in _INT_FIELDS:
        return _at_most(parse_int(raw), MAX_TOKENS)
    if field_name in _FLOAT_FIELDS:
        return _at_most(parse_number(raw), MAX_GIB)
    if field_name in _RATIO_FIELDS:
        return value if (value := parse_number(raw)) is not None and 0 < value <= 1 else None
    if field_name in _TOKEN_FIELDS:
        return _at_most(parse_token_count(raw), MAX_TOKENS)
    if field_name in _BOOL_FIELDS:
        return raw.lower() in ("1", "true", "yes")
    return raw[: 2000 if field_name == "command" else 300] or None


def _at_most(value: Any, limit: float) -> Any:
    """A context number, or None when it is beyond anything real (``-c 999999999999999K``)."""
    return value if value is not None and value <= limit else None
