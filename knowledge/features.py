"""Features by engine version (knowledge/features.yaml): when each flag, default and behaviour
appeared or went away, markers that date a paste, and forks that diverge.

``supports(engine, version, feature)`` answers True/False for a known version and None when the
version is unknown (the caller decides what an unknown version means and says so).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from functools import cache
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Literal

import re2

from knowledge.cache import cached, code_digest, content_key, load_yaml
from knowledge.validate import STRICT, compiled, validate

if TYPE_CHECKING:
    from pydantic import Field

Version = tuple[int, int, int]
_FILE = Path(__file__).with_name("features.yaml")


def parse_version(text: str | None) -> Version | None:
    """``0.10.1.post1`` → (0, 10, 1); llama.cpp ``b6325`` / ``6325 (abc)`` → (0, 6325, 0)."""
    if not text:
        return None
    text = str(text).strip()
    m = re2.match(r"^b?([0-9]{3,6})(?:\s|$|\s*\()", text)
    if m:
        return (0, int(m.group(1)), 0)
    m = re2.search(r"([0-9]+)\.([0-9]+)(?:\.([0-9]+))?", text)
    if m is None:
        return None
    return int(m.group(1)), int(m.group(2)), int(m.group(3) or 0)


def _check_versions(*versions: str | None) -> None:
    for v in versions:
        if v is not None and parse_version(v) is None:
            raise ValueError(f"not a version: {v!r}")


@dataclass(frozen=True, kw_only=True)
class Feature:
    """A flag, default or behaviour and the engine versions that have it."""

    __pydantic_config__ = STRICT

    id: Annotated[str, Field(pattern=r"^[a-z.]+\.[a-z0-9_]+$")]
    engine: str
    since: str | None = None
    until: str | None = None
    forks: dict[str, bool] = field(default_factory=dict)
    source: Annotated[str, Field(min_length=10)]

    def __post_init__(self) -> None:
        _check_versions(self.since, self.until)

    def holds(self, version: Version, fork: str | None = None) -> bool:
        if fork and fork in self.forks:
            return self.forks[fork]
        since = parse_version(self.since)
        until = parse_version(self.until)
        return (since is None or version >= since) and (until is None or version < until)


@dataclass(frozen=True, kw_only=True)
class Marker:
    """A line that dates a paste (or proves an engine generation)."""

    __pydantic_config__ = STRICT

    engine: str
    pattern: str
    since: str | None = None
    until: str | None = None
    mode: Literal["v0", "v1"] | None = None  # the engine generation the marker proves (vLLM V0 / V1)
    how: str
    source: str

    def __post_init__(self) -> None:
        _check_versions(self.since, self.until)
        compiled(self.pattern)


@dataclass(frozen=True, kw_only=True)
class Fork:
    """A fork of an engine, told apart by a pattern."""

    __pydantic_config__ = STRICT

    engine: str
    fork: str
    pattern: str


@dataclass(frozen=True, kw_only=True)
class QuantMinimum:
    """The compute capability each quantisation method needs, as of a release."""

    __pydantic_config__ = STRICT

    release: str
    source: str
    methods: dict[str, int]


@dataclass(frozen=True, kw_only=True)
class ReleaseDates:
    """When an engine's releases were tagged, and how its log lines carry a date."""

    __pydantic_config__ = STRICT

    engine: str
    dated_by: str  # the date a log line carries, as one YYYY-MM-DD group
    source: str
    dates: dict[str, str]  # release -> the date it was tagged (YYYY-MM-DD)

    def __post_init__(self) -> None:
        compiled(self.dated_by)


@dataclass(frozen=True, kw_only=True)
class Host:
    """An engine that runs another inside it (Ollama runs llama.cpp's ggml), told apart by a pattern: an
    inner engine's error in a paste that shows the host is answered with the host's settings."""

    __pydantic_config__ = STRICT

    engine: str
    host: str
    pattern: str
    source: str

    def __post_init__(self) -> None:
        compiled(self.pattern)


@dataclass(frozen=True, kw_only=True)
class FeatureFile:
    """knowledge/features.yaml."""

    __pydantic_config__ = STRICT

    features: list[Feature]
    markers: list[Marker] = field(default_factory=list)
    forks: list[Fork] = field(default_factory=list)
    hosts: list[Host] = field(default_factory=list)
    quant_min_capability: list[QuantMinimum] = field(default_factory=list)
    releases: list[ReleaseDates] = field(default_factory=list)


def _parse(data: bytes) -> FeatureFile:
    return validate(FeatureFile, load_yaml(data))


_CODE = code_digest(Path(__file__).resolve())


@cache
def feature_table() -> FeatureFile:
    """The validated table, read back from the validated-data cache when the file is unchanged."""
    data = _FILE.read_bytes()
    return cached(content_key("features", [(_FILE.name, data)], _CODE), lambda: _parse(data), FeatureFile)


@cache
def _by_id() -> dict[str, Feature]:
    return {f.id: f for f in feature_table().features}


def feature(feature_id: str) -> Feature:
    try:
        return _by_id()[feature_id]
    except KeyError:
        raise KeyError(f"unknown feature {feature_id!r}") from None


def supports(version: Version | None, feature_id: str, fork: str | None = None) -> bool | None:
    f = feature(feature_id)
    if fork and fork in f.forks:
        return f.forks[fork]
    if version is None:
        return None
    return f.holds(version, fork)


@cache
def _compiled_markers() -> list[tuple[Marker, re2._Regexp]]:
    return [(m, re2.compile(m.pattern)) for m in feature_table().markers]


def version_hints(engine: str, text: str) -> list[Marker]:
    """Markers of ``engine`` that match the paste."""
    return [m for m, rx in _compiled_markers() if m.engine == engine and rx.search(text)]


def engine_mode(engine: str, text: str) -> str | None:
    """The engine generation a marker proves (vLLM ``v0`` / ``v1``), whatever the version says."""
    return next((m.mode for m in version_hints(engine, text) if m.mode), None)


LOG_TAIL = 1 << 18  # bytes of a paste's end searched for its log date (the latest date ends a log)


def release_at_log_date(engine: str, paste: str | bytes) -> tuple[str, str] | None:
    """(the newest release tagged by the latest date the log's lines carry, that date); None when the
    engine's lines carry no date, or one outside the table (before its first or after its last release:
    releases after the table's are unknown here).  ``paste`` as given: normalising strips the log
    prefixes that hold the dates."""
    for table in feature_table().releases:
        if table.engine != engine:
            continue
        tail = paste[-LOG_TAIL:]
        text = tail.decode(errors="replace") if isinstance(tail, bytes) else tail
        dates = re2.findall(table.dated_by, text)
        if not dates:
            return None
        latest = max(dates)
        if latest > max(table.dates.values()):
            return None
        older = [(parse_version(v) or (0, 0, 0), v) for v, d in table.dates.items() if d <= latest]
        return (max(older)[1], latest) if older else None
    return None


def fork_of(engine: str, text: str) -> str | None:
    for f in feature_table().forks:
        if f.engine == engine and re2.search(f.pattern, text):
            return f.fork
    return None


def host_of(engine: str, text: str) -> str | None:
    """The engine a paste shows running ``engine`` inside it, if any."""
    return next(
        (h.host for h in feature_table().hosts if h.engine == engine and re2.search(h.pattern, text)), None
    )


def quant_min_capability(method: str, version: Version | None) -> float | None:
    """The compute capability ``method`` needs in the newest listed release not after ``version``."""
    found = None
    for entry in sorted(
        feature_table().quant_min_capability, key=lambda e: parse_version(e.release) or (0, 0, 0)
    ):
        release = parse_version(entry.release)
        if (version is None or (release is not None and release <= version)) and method in entry.methods:
            found = entry.methods[method] / 10
    return found
