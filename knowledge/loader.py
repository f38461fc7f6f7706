"""Load and validate signature files: the built-in ones and an operator's extra folder.

YAML is parsed with libyaml's C loader when PyYAML has it (the pure-Python loader otherwise: same
documents, several times slower), and the validated knowledge base is kept in a cache keyed by the
files' content (:mod:`knowledge.cache`), so a start with unchanged files skips both (and imports
neither PyYAML nor pydantic: the signatures are plain dataclasses, validated when the entry is built).
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from functools import cache
from pathlib import Path
from typing import TYPE_CHECKING

from knowledge.cache import cached, code_digest, content_key, load_yaml
from knowledge.schema import ContextRule, Signature, SignatureFile
from knowledge.validate import validate

if TYPE_CHECKING:
    from pydantic import ValidationError


class KnowledgeError(ValueError):
    """A signature file that cannot be used: names the file, the entry and what is wrong."""


@dataclass(frozen=True)
class LoadedSignature:
    """A signature with the engine and file it came from."""

    signature: Signature
    engine: str
    origin: str


@dataclass(frozen=True)
class KnowledgeBase:
    """Every loaded signature and context rule, in load order."""

    signatures: tuple[LoadedSignature, ...]
    context: tuple[tuple[str, ContextRule], ...]  # (engine, rule)
    files: tuple[str, ...]

    def by_id(self, sig_id: str) -> LoadedSignature | None:
        return next((s for s in self.signatures if s.signature.id == sig_id), None)


# pydantic's wording for an unknown key of a dataclass ("Unexpected keyword argument"), said plainly
_MESSAGES = {"unexpected_keyword_argument": "unknown field (not in the schema)"}


def _describe(exc: ValidationError, data: object) -> str:
    parts = []
    for err in exc.errors():
        loc = err["loc"]
        where = ".".join(str(x) for x in loc)
        if len(loc) >= 2 and loc[0] == "signatures" and isinstance(loc[1], int) and isinstance(data, dict):
            try:
                entry_id = data["signatures"][loc[1]].get("id", f"#{loc[1]}")
                rest = ".".join(str(x) for x in loc[2:])
                where = f"signature {entry_id!r}" + (f": {rest}" if rest else "")
            except (KeyError, IndexError, AttributeError, TypeError):
                pass
        # a __post_init__ check's ValueError is its own message (pydantic prefixes "Value error, ")
        message = _MESSAGES.get(err["type"], err["msg"].removeprefix("Value error, "))
        parts.append(f"{where}: {message}" if where else message)
    return "; ".join(parts)


def parse_file(text: str, origin: str) -> SignatureFile:
    import yaml  # only when a file is parsed (a cache miss or a pack being tested)

    try:
        data = load_yaml(text)
    except yaml.YAMLError as exc:
        raise KnowledgeError(f"{origin}: not valid YAML: {exc}") from exc
    if not isinstance(data, dict):
        raise KnowledgeError(f"{origin}: expected a mapping with 'engine' and 'signatures'")
    from pydantic import ValidationError

    try:
        return validate(SignatureFile, data)
    except ValidationError as exc:
        raise KnowledgeError(f"{origin}: {_describe(exc, data)}") from exc


BUILTIN_DIR = Path(__file__).resolve().parent / "signatures"


def _builtin_texts() -> Iterable[tuple[str, str]]:
    for path in sorted(BUILTIN_DIR.glob("*.yaml")):
        yield f"knowledge/signatures/{path.name}", path.read_text(encoding="utf-8")


def _folder_texts(folder: Path) -> Iterable[tuple[str, str]]:
    if not folder.is_dir():
        raise KnowledgeError(f"{folder}: knowledge folder does not exist or is not a directory")
    for path in sorted(folder.iterdir()):
        if path.suffix in (".yaml", ".yml") and path.is_file():
            try:
                yield str(path), path.read_text(encoding="utf-8")
            except (OSError, UnicodeDecodeError) as exc:
                raise KnowledgeError(f"{path}: cannot be read: {exc}") from exc


def load_knowledge(sources: Iterable[tuple[str, str]]) -> KnowledgeBase:
    sigs: list[LoadedSignature] = []
    rules: list[tuple[str, ContextRule]] = []
    files: list[str] = []
    seen: dict[str, str] = {}
    for origin, text in sources:
        parsed = parse_file(text, origin)
        files.append(origin)
        for sig in parsed.signatures:
            if sig.id in seen:
                raise KnowledgeError(f"{origin}: signature {sig.id!r} already defined in {seen[sig.id]}")
            seen[sig.id] = origin
            sigs.append(LoadedSignature(sig, parsed.engine, origin))
        rules.extend((parsed.engine, rule) for rule in parsed.context)
    return KnowledgeBase(tuple(sigs), tuple(rules), tuple(files))


_CODE = code_digest(Path(__file__).resolve().parent / "schema.py", Path(__file__).resolve())


def load_cached(kind: str, texts: list[tuple[str, str]]) -> KnowledgeBase:
    """:func:`load_knowledge` of these texts, from the cache when the same content was loaded before."""
    key = content_key(kind, ((origin, text.encode("utf-8")) for origin, text in texts), _CODE)
    return cached(key, lambda: load_knowledge(texts), KnowledgeBase)


@cache
def load_builtin() -> KnowledgeBase:
    return load_cached("knowledge", list(_builtin_texts()))


def load_with_extra(extra_folder: Path | None) -> KnowledgeBase:
    """Built-in signatures plus an operator's folder; any bad file raises :class:`KnowledgeError`."""
    if extra_folder is None:
        return load_builtin()
    return load_cached("knowledge-packs", [*_builtin_texts(), *_folder_texts(extra_folder)])
