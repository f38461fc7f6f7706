"""Error signatures as data: one YAML file per engine, validated by a pydantic schema.

Nothing here imports ``bot`` or ``adapters``.
"""

from knowledge.loader import KnowledgeBase, KnowledgeError, load_builtin, load_knowledge
from knowledge.schema import Category, ContextRule, Signature, SignatureFile

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
