"""Error signatures as data: one YAML file per engine, validated by pydantic into plain dataclasses
(:mod:`knowledge.schema`, :mod:`knowledge.validate`).

Nothing here imports ``bot`` or ``adapters``.  The names below are imported on first use, so a
command that only needs :mod:`knowledge.cache` (the catalogs' loader) never parses the schema.
"""

from __future__ import annotations

from importlib import import_module
from typing import TYPE_CHECKING, Any

from knowledge.code_cache import install as _install_dataclass_code_cache

_install_dataclass_code_cache()  # before this package builds its first dataclass (knowledge/code_cache.py)

if TYPE_CHECKING:
    from knowledge.loader import KnowledgeBase, KnowledgeError, load_builtin, load_knowledge
    from knowledge.schema import Category, ContextRule, Signature, SignatureFile

_WHERE = {
    "KnowledgeBase": "knowledge.loader",
    "KnowledgeError": "knowledge.loader",
    "load_builtin": "knowledge.loader",
    "load_knowledge": "knowledge.loader",
    "Category": "knowledge.schema",
    "ContextRule": "knowledge.schema",
    "Signature": "knowledge.schema",
    "SignatureFile": "knowledge.schema",
}

__all__ = [
    "Category",
    "ContextRule",
    "KnowledgeBase",
    "KnowledgeError",
    "Signature",
    "SignatureFile",
    "load_builtin",
    "load_knowledge",
]


def __getattr__(name: str) -> Any:
    module = _WHERE.get(name)
    if module is None:
        raise AttributeError(f"module 'knowledge' has no attribute {name!r}")
    return getattr(import_module(module), name)
