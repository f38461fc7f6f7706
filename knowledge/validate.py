"""Validation of raw data (parsed YAML) into the plain dataclasses the rest of the code reads.

The schemas are stdlib dataclasses: the dataclass is the schema, and pydantic validates data into it
only when a cache entry is (re)built, so a start that reads the validated objects back from the cache
never imports pydantic.  Constraints are written in the annotations as ``Annotated[int, Field(ge=0)]``;
under ``from __future__ import annotations`` those annotations are strings that nothing evaluates at
runtime, and a schema module imports ``Field`` for type checking only.  Pydantic resolves the names of
an annotation in the frame that builds the ``TypeAdapter`` as well as in the class's module: that frame
is :func:`_adapter`'s, which imports them.  Checks across fields are ``__post_init__`` methods raising
``ValueError``, which pydantic reports as a validation error of the entry (and which also run when code
builds an object directly).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, TypeVar

import re2

if TYPE_CHECKING:
    from pydantic import TypeAdapter

T = TypeVar("T")

# what every schema dataclass sets as ``__pydantic_config__``: an unknown key is an error
STRICT: dict[str, Any] = {"extra": "forbid"}


_ADAPTERS: dict[type, TypeAdapter[Any]] = {}  # one per schema, built on its first validation


def _adapter(kind: type) -> TypeAdapter[Any]:
    from pydantic import Field, TypeAdapter  # noqa: F401  (Field: named by the schemas' annotations)

    if kind not in _ADAPTERS:
        # _parent_depth=2 (the default): names in annotations resolve in this frame, which has Field
        _ADAPTERS[kind] = TypeAdapter(kind, _parent_depth=2)
    return _ADAPTERS[kind]


def validate(kind: type[T], data: object) -> T:
    """``data`` validated into ``kind``; raises ``pydantic.ValidationError`` (a ``ValueError``)."""
    result: T = _adapter(kind).validate_python(data)
    return result


_QUIET = re2.Options()
_QUIET.log_errors = False  # the error is raised with its message; RE2 need not also print it


def compiled(pattern: str) -> re2._Regexp:
    """``pattern`` compiled by RE2; one it rejects is a ``ValueError`` (what validation reports)."""
    try:
        return re2.compile(pattern, options=_QUIET)
    except re2.error as exc:
        raise ValueError(f"pattern does not compile under RE2: {exc}") from exc


def positive(obj: object, *names: str) -> None:
    """Raise ``ValueError`` naming the first of ``obj``'s attributes ``names`` that is set and not > 0."""
    for name in names:
        value = getattr(obj, name)
        if value is not None and not value > 0:
            raise ValueError(f"{name} must be greater than 0, not {value!r}")
