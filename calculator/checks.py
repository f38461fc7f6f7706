"""Field checks written once, in a dataclass's annotations, applied without pydantic.

A field says its bounds as ``Annotated[int, Interval(ge=1, le=64)]``, its choices as ``Literal[...]``, a
conversion run first as :class:`Convert`, a value never shown (a token) as :class:`Secret`; pydantic
enforces the same when it validates the class at a boundary.  :func:`check` (from ``__post_init__``)
applies them and converts what the type implies (``str`` → ``Path``, ``int`` → ``float``, a dict → a
nested dataclass); a bad value raises :class:`FieldError` worded as pydantic words it, never quoting it.
"""

from __future__ import annotations

import dataclasses
import types
from collections.abc import Callable
from functools import cache
from pathlib import Path
from typing import Annotated, Any, Literal, Union, get_args, get_origin, get_type_hints

_BOUNDS: dict[str, tuple[str, Callable[[Any, Any], bool]]] = {
    "ge": ("greater than or equal to", lambda v, b: v >= b),
    "gt": ("greater than", lambda v, b: v > b),
    "le": ("less than or equal to", lambda v, b: v <= b),
    "lt": ("less than", lambda v, b: v < b),
}


class FieldError(ValueError):
    """One field's value is not allowed; ``loc`` is its path (``("limits", "user_per_minute")``)."""

    def __init__(self, loc: tuple[str, ...], msg: str):
        super().__init__(f"{'.'.join(loc)}: {msg}")
        self.loc, self.msg = loc, msg


class Checked:
    """A dataclass base whose fields are checked when an instance is made (and by ``replace``)."""

    def __post_init__(self) -> None:
        check(self)


@dataclasses.dataclass(frozen=True)
class Interval:
    """Bounds of a number (annotated_types' names; its import costs more than the rest of a check)."""

    ge: float | None = None
    gt: float | None = None
    le: float | None = None
    lt: float | None = None

    def limits(self) -> dict[str, float]:
        return {k: v for k, v in dataclasses.asdict(self).items() if v is not None}

    def __get_pydantic_core_schema__(self, source: Any, handler: Any) -> Any:
        return {**handler(source), **self.limits()}  # pydantic-core's own ge/gt/le/lt on int and float


@dataclasses.dataclass(frozen=True)
class Convert:
    """A conversion run before the field's checks (pydantic runs it too, as a before-validator)."""

    fn: Callable[[Any], Any]

    def __get_pydantic_core_schema__(self, source: Any, handler: Any) -> Any:
        from pydantic_core import core_schema

        return core_schema.no_info_before_validator_function(self.fn, handler(source))


class Secret:
    """A token: its value only through :meth:`get_secret_value`, never in a repr, str or error (not a
    dataclass, so ``dataclasses.asdict`` of the settings keeps it whole rather than spelling it out)."""

    __slots__ = ("_value",)

    def __init__(self, value: str):
        self._value = value

    def get_secret_value(self) -> str:
        return self._value

    def __repr__(self) -> str:
        return "Secret('**********')"

    def __str__(self) -> str:
        return "**********"

    def __eq__(self, other: object) -> bool:
        return isinstance(other, Secret) and other._value == self._value

    def __hash__(self) -> int:
        return hash(self._value)

    @classmethod
    def from_input(cls, value: Any) -> Secret:
        if isinstance(value, str | Secret):
            return value if isinstance(value, Secret) else cls(value)
        raise TypeError  # worded by the checker; the value is never quoted

    @classmethod
    def __get_pydantic_core_schema__(cls, source: Any, handler: Any) -> Any:
        from pydantic_core import core_schema as cs

        text = cs.no_info_after_validator_function(cls, cs.str_schema())
        return cs.union_schema([cs.is_instance_schema(cls), text], serialization=cs.to_string_ser_schema())


def _number(value: Any, kind: type) -> Any:
    if isinstance(value, bool) or not isinstance(value, int | float):
        raise TypeError
    if kind is int and value != int(value):
        raise TypeError
    return kind(value)


def _exact(kind: type) -> Callable[[Any], Any]:
    def accept(value: Any) -> Any:
        if not isinstance(value, kind):
            raise TypeError
        return value

    return accept


_SCALARS: dict[Any, tuple[Callable[[Any], Any], str]] = {
    int: (lambda v: _number(v, int), "Input should be a valid integer"),
    float: (lambda v: _number(v, float), "Input should be a valid number"),
    str: (_exact(str), "Input should be a valid string"),
    bool: (_exact(bool), "Input should be a valid boolean"),
    Path: (lambda v: Path(v) if isinstance(v, str | Path) else _exact(Path)(v), "Input is not a valid path"),
}


Checker = Callable[[Any, tuple[str, ...]], Any]


def _choices(options: tuple[Any, ...]) -> str:
    quoted = [repr(o) for o in options]
    return quoted[0] if len(quoted) == 1 else ", ".join(quoted[:-1]) + " or " + quoted[-1]


def _annotated(tp: Any) -> Checker:
    base, *meta = get_args(tp)
    inner = _compile(base)
    converts = [m.fn for m in meta if isinstance(m, Convert)]
    bounds = [(*_BOUNDS[n], v) for m in meta if isinstance(m, Interval) for n, v in m.limits().items()]

    def annotated(value: Any, loc: tuple[str, ...]) -> Any:
        for fn in converts:
            value = fn(value)
        value = inner(value, loc)
        for words, holds, limit in bounds:
            if not holds(value, limit):
                raise FieldError(loc, f"Input should be {words} {limit}")
        return value

    return annotated


def _literal(options: tuple[Any, ...]) -> Checker:
    def literal(value: Any, loc: tuple[str, ...]) -> Any:
        if value in options:
            return value
        raise FieldError(loc, f"Input should be {_choices(options)}")

    return literal


def _listed(item: Checker) -> Checker:
    def listed(value: Any, loc: tuple[str, ...]) -> Any:
        if not isinstance(value, list):
            raise FieldError(loc, "Input should be a valid list")
        return [item(v, (*loc, str(i))) for i, v in enumerate(value)]

    return listed


def _scalar(tp: Any) -> Checker:
    accept, msg = _SCALARS.get(tp) or (getattr(tp, "from_input", None), "Input is not allowed")
    if accept is None:
        if dataclasses.is_dataclass(tp) and isinstance(tp, type):
            return lambda value, loc: value if isinstance(value, tp) else build(tp, value, loc)
        return lambda value, loc: value

    def scalar(value: Any, loc: tuple[str, ...]) -> Any:
        try:
            return accept(value)
        except (TypeError, ValueError):
            raise FieldError(loc, msg) from None

    return scalar


@cache
def _compile(tp: Any) -> Checker:
    """The check of one annotation, worked out once (a request is checked in the matchmaker's loops)."""
    origin = get_origin(tp)
    if origin is Annotated:
        return _annotated(tp)
    if origin in (Union, types.UnionType):
        args = get_args(tp)
        inner, nullable = _compile(next(a for a in args if a is not type(None))), type(None) in args
        return lambda value, loc: None if value is None and nullable else inner(value, loc)
    if origin is Literal:
        return _literal(get_args(tp))
    if origin is list:
        return _listed(_compile(get_args(tp)[0]))
    return _scalar(tp)


@cache
def _hints(cls: Any) -> tuple[tuple[str, Any], ...]:
    hints = get_type_hints(cls, include_extras=True)
    return tuple((f.name, hints[f.name]) for f in dataclasses.fields(cls) if f.init)


@cache
def _plan(cls: Any) -> tuple[tuple[str, Checker], ...]:
    return tuple((name, _compile(tp)) for name, tp in _hints(cls))


def check(obj: Any) -> None:
    """Check and convert every field of a dataclass instance in place."""
    cls: Any = type(obj)
    for name, run in _plan(cls):
        value = getattr(obj, name)
        checked = run(value, (name,))
        if checked is not value:
            object.__setattr__(obj, name, checked)


def build(cls: type, data: Any, loc: tuple[str, ...] = ()) -> Any:
    """``cls(**data)`` for a mapping of its fields (others ignored); errors carry ``loc`` in front."""
    if not isinstance(data, dict):
        raise FieldError(loc, f"Input should be a dictionary or an instance of {cls.__name__}")
    names = {name for name, _ in _hints(cls)}
    try:
        return cls(**{k: v for k, v in data.items() if k in names})
    except FieldError as exc:
        raise FieldError((*loc, *exc.loc), exc.msg) from None


def dotted_keys(data: dict[str, Any]) -> frozenset[str]:
    """The fields a mapping gives, sections' fields as ``section.field`` (what was set, not defaulted)."""
    return frozenset(
        f"{k}.{sub}" if isinstance(v, dict) else k
        for k, v in data.items()
        for sub in (v if isinstance(v, dict) else [None])
    )


def pydantic_fields(cls: Any) -> dict[str, Any]:
    """A dataclass's fields as ``pydantic.create_model`` takes them: ``(annotation, default)``."""
    from pydantic import Field

    hints = dict(_hints(cls))
    missing = dataclasses.MISSING
    return {
        f.name: (
            hints[f.name],
            f.default if f.default_factory is missing else Field(default_factory=f.default_factory),
        )
        for f in dataclasses.fields(cls)
        if f.init
    }
