"""The lever catalog (knowledge/levers.yaml): what each fix changes, how it is spelled per engine,
what it needs and what it costs."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from functools import cache
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any, Literal

import re2

from knowledge.cache import cached, code_digest, content_key, load_yaml
from knowledge.features import feature
from knowledge.validate import STRICT, validate

if TYPE_CHECKING:
    from pydantic import Field

_FILE = Path(__file__).with_name("levers.yaml")
_CONDITION = r"not [a-z_]+|[a-z_]+ > (?:[a-z_]+|[0-9]+(?:\.[0-9]+)?)"

Backend = Literal["cuda", "rocm", "xpu", "metal", "vulkan"]
Knob = Literal[
    "max_len", "kv_dtype", "util", "eager", "cudagraph_estimate", "tp", "pp", "max_seqs",
    "batched_tokens", "kv_cache_gib", "gpu_layers", "cpu_moe", "kv_offload", "flash_attn", "none",
]  # fmt: skip


@dataclass(frozen=True, kw_only=True)
class Spelling:
    """How one engine spells a lever: a flag, an environment variable or a parameter."""

    __pydantic_config__ = STRICT

    flag: str | None = None
    env: str | None = None
    param: str | None = None
    value: str | None = None  # a fixed value; None: the knob's value
    also: dict[str, str] = field(default_factory=dict)
    requires: list[str] = field(default_factory=list)
    hardware: Literal["fp8_kv", "flash_attn", "bf16"] | None = None
    needs_flash_attn: bool = False

    def __post_init__(self) -> None:
        for f in self.requires:
            try:
                feature(f)
            except KeyError as exc:  # a ValueError is what validation reports
                raise ValueError(exc.args[0]) from None


@dataclass(frozen=True, kw_only=True)
class Lever:
    """One fix: the knob it turns, what it changes and costs, per engine."""

    __pydantic_config__ = STRICT

    id: Annotated[str, Field(pattern=r"^[a-z0-9_]+$")]
    remedies: Annotated[list[str], Field(min_length=1)]
    knob: Knob
    change: str
    cost: str
    effect: str = ""  # what a fixed setting achieves (knob none); default: the change itself
    engines: dict[str, Spelling] = field(default_factory=dict)
    command: str | None = None  # a diagnostic command (advice levers)
    # the diagnostic on another GPU stack (None: it has no such tool), where it differs from ``command``
    commands_on: dict[Backend, str | None] = field(default_factory=dict)
    # conditions on the paste's numbers, all of which must hold: "a > b", "a > 1", "not a"
    when: list[str] = field(default_factory=list)

    def __post_init__(self) -> None:
        for condition in self.when:
            if not re2.fullmatch(_CONDITION, condition):
                raise ValueError(f"lever {self.id}: condition {condition!r} is not 'a > b' or 'not a'")

    def command_for(self, backend: Backend | None) -> str | None:
        """The diagnostic command on ``backend`` (None: not known)."""
        return self.commands_on.get(backend, self.command) if backend else self.command

    def holds(self, get: Callable[[str], Any]) -> bool:
        """Every ``when`` condition holds on the values ``get`` reads (a missing value never does)."""
        for condition in self.when:
            words = condition.split()
            if words[0] == "not":
                if get(words[1]) is not None:
                    return False
                continue
            left, right = get(words[0]), words[2] if words[2][0].isdigit() else get(words[2])
            if left is None or right is None or not float(left) > float(right):
                return False
        return True


@dataclass(frozen=True, kw_only=True)
class LeverFile:
    """knowledge/levers.yaml."""

    __pydantic_config__ = STRICT

    levers: list[Lever]

    def __post_init__(self) -> None:
        seen: dict[str, str] = {}
        for lever in self.levers:
            for r in lever.remedies:
                if r in seen:
                    raise ValueError(f"remedy {r!r} is claimed by both {seen[r]} and {lever.id}")
                seen[r] = lever.id


def _parse(data: bytes) -> LeverFile:
    return validate(LeverFile, load_yaml(data))


# the levers are checked against the feature table: its file and code are part of the key
_FEATURES = Path(__file__).with_name("features.yaml")
_CODE = code_digest(Path(__file__).resolve(), Path(__file__).with_name("features.py"))


@cache
def levers() -> LeverFile:
    """The validated catalog, read back from the validated-data cache when the files are unchanged."""
    data = _FILE.read_bytes()
    sources = [(_FILE.name, data), (_FEATURES.name, _FEATURES.read_bytes())]
    return cached(content_key("levers", sources, _CODE), lambda: _parse(data), LeverFile)


@cache
def _by_remedy() -> dict[str, Lever]:
    return {r: lever for lever in levers().levers for r in lever.remedies}


def lever_for(remedy: str) -> Lever | None:
    return _by_remedy().get(remedy)


def lever(lever_id: str) -> Lever:
    for candidate in levers().levers:
        if candidate.id == lever_id:
            return candidate
    raise KeyError(f"unknown lever {lever_id!r}")
