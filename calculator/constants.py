"""The engine budget constants of ``data/engine_constants.yaml``, validated once at import.

Every number the engine budgets use (beyond units and what a paste prints) is an entry there with its
unit, kind (exact / fitted / estimate) and source; the budget modules read them at import through
:func:`constant` and :func:`table`, so no budget number lives in the code.
"""

from __future__ import annotations

from dataclasses import dataclass, fields
from functools import cache
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Literal

from knowledge.cache import cached, code_digest, content_key, load_yaml
from knowledge.validate import STRICT, validate

if TYPE_CHECKING:
    from pydantic import Field

DATA_FILE = Path(__file__).resolve().parent / "data" / "engine_constants.yaml"

Scalar = int | float
Row = dict[str, int | float | bool]


@dataclass(frozen=True, kw_only=True)
class EngineConstant:
    """One constant: a value (or a table of rows), what it is measured in and where it comes from."""

    __pydantic_config__ = STRICT

    value: Scalar | None = None
    table: tuple[Row, ...] | None = None
    unit: Annotated[str, Field(min_length=1)]
    kind: Literal["exact", "fitted", "estimate"]
    source: Annotated[str, Field(min_length=10)]
    fitted_on: tuple[str, ...] = ()
    tolerance: str | None = None

    def __post_init__(self) -> None:
        if (self.value is None) == (self.table is None):
            raise ValueError("give exactly one of value and table")
        if self.table is not None and (not self.table or len({tuple(r) for r in self.table}) != 1):
            raise ValueError("a table needs rows, all with the same keys")
        if self.kind == "fitted" and not (self.fitted_on and self.tolerance):
            raise ValueError("a fitted constant names the logs it was fitted on and the tolerance")
        if self.kind != "fitted" and (self.fitted_on or self.tolerance):
            raise ValueError("only a fitted constant has fitted_on and tolerance")


@dataclass(frozen=True, kw_only=True)
class _File:
    """data/engine_constants.yaml: engine -> name -> constant."""

    __pydantic_config__ = STRICT

    vllm: dict[str, EngineConstant]
    llamacpp: dict[str, EngineConstant]
    sglang: dict[str, EngineConstant]
    ollama: dict[str, EngineConstant]


def _build(files: list[tuple[str, bytes]]) -> _File:
    return validate(_File, load_yaml(files[0][1]))


_CODE = code_digest(Path(__file__).resolve())


@cache
def engine_constants() -> dict[str, dict[str, EngineConstant]]:
    """engine -> name -> constant, as validated from the data file."""
    files = [(DATA_FILE.name, DATA_FILE.read_bytes())]
    parsed = cached(content_key("engine-constants", files, _CODE), lambda: _build(files), _File)
    return {f.name: dict(getattr(parsed, f.name)) for f in fields(_File)}


def entry(engine: str, name: str) -> EngineConstant:
    try:
        return engine_constants()[engine][name]
    except KeyError:
        raise KeyError(f"no engine constant {engine}.{name} in {DATA_FILE.name}") from None


def constant(engine: str, name: str) -> Scalar:
    """A scalar constant's value (int or float as written)."""
    found = entry(engine, name)
    if found.value is None:
        raise TypeError(f"{engine}.{name} is a table; read it with table()")
    return found.value


def table(engine: str, name: str) -> tuple[Row, ...]:
    """A table constant's rows, in file order."""
    found = entry(engine, name)
    if found.table is None:
        raise TypeError(f"{engine}.{name} is a scalar; read it with constant()")
    return found.table
