"""A cache of validated data, keyed by the content of the files it was built from.

Parsing YAML and validating it with pydantic costs far more than reading back the validated objects, so
the knowledge base and the catalogs are pickled once per distinct content and read back on the next
start.  The objects are plain dataclasses (:mod:`knowledge.validate`), so reading them back imports
neither PyYAML nor pydantic.  The key hashes every source file's name and bytes together with the code
that validates them and the installed pydantic's version file (read, not imported), so an edited file,
pack or schema, or another pydantic, rebuilds the entry.

The cache is an optimisation only: a folder that cannot be created or written (read-only containers),
a stale, truncated or foreign entry, or ``GPU_GARDEN_CACHE_DIR=off`` all fall back to building the data
directly, never to an error.  Entries are only read from a folder owned by this user and not writable
by others, because unpickling runs code.
"""

from __future__ import annotations

import importlib.util
import os
import pickle
import stat
import sys
from collections.abc import Callable, Iterable
from functools import cache
from pathlib import Path
from typing import Any, TypeVar

try:  # CPython's BLAKE2, which hashlib.blake2b is: importing hashlib itself loads OpenSSL (4-10 ms a start)
    from _blake2 import blake2b as _hash
except ImportError:  # pragma: no cover - an interpreter without it
    from hashlib import blake2b as _hash

T = TypeVar("T")

ENV = "GPU_GARDEN_CACHE_DIR"
OFF = ("", "0", "off", "none", "false")
KEPT_PER_KIND = 4  # entries of one kind (the knowledge base, a catalog) kept, the newest first


def load_yaml(data: bytes | str) -> Any:
    """YAML parsed with libyaml's C loader where PyYAML has it (the pure-Python one otherwise: same
    result); PyYAML is imported on first use, so a cache hit never imports it."""
    import yaml

    return yaml.load(data, Loader=getattr(yaml, "CSafeLoader", yaml.SafeLoader))


def cache_dir() -> Path | None:
    """Where entries live: ``$GPU_GARDEN_CACHE_DIR``, else ``$XDG_CACHE_HOME/gpu-garden``, else
    ``~/.cache/gpu-garden``; None when switched off."""
    configured = os.environ.get(ENV)
    if configured is not None:
        return None if configured.strip().lower() in OFF else Path(configured)
    base = os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")
    return Path(base) / "gpu-garden"


def code_digest(*paths: Path) -> bytes:
    """The validating code as this process imported it: call at import time, so a process that loaded
    an older schema never files its objects under the key of a newer one on disk."""
    h = _hash()
    for path in paths:
        h.update(path.read_bytes())
    return h.digest()


@cache
def validator_digest() -> bytes:
    """The shared validation code (knowledge/validate.py) and the installed pydantic's ``version.py``
    (its version and the pydantic-core it requires), found without importing pydantic."""
    h = _hash(code_digest(Path(__file__).with_name("validate.py")))
    spec = importlib.util.find_spec("pydantic")
    if spec is not None and spec.origin:
        try:
            h.update(Path(spec.origin).with_name("version.py").read_bytes())
        except OSError:
            h.update(spec.origin.encode())
    return h.digest()


def content_key(kind: str, sources: Iterable[tuple[str, bytes]], code: bytes = b"") -> str:
    """A digest of the sources (name and bytes), the validating code, the interpreter and
    :func:`validator_digest`."""
    h = _hash(f"{kind}\0{sys.version}\0".encode())
    h.update(validator_digest())
    h.update(code)
    for name, data in sources:
        h.update(f"\0{name}\0{len(data)}\0".encode())
        h.update(data)
    return f"{kind}.{h.hexdigest()[:32]}"


def trusted_folder(folder: Path) -> bool:
    """A directory owned by this user and writable by no one else: the only kind entries are read from."""
    try:
        st = folder.stat()
    except OSError:
        return False
    if not stat.S_ISDIR(st.st_mode) or st.st_mode & (stat.S_IWGRP | stat.S_IWOTH):
        return False
    return not hasattr(os, "getuid") or st.st_uid == os.getuid()


def _mtime(path: Path) -> float:
    try:
        return path.stat().st_mtime
    except OSError:
        return 0.0


def _read(path: Path) -> object | None:
    try:
        with path.open("rb") as fh:
            return pickle.load(fh)
    except Exception:  # missing, truncated or from another version: rebuild
        return None


def _write(folder: Path, name: str, value: object) -> None:
    import tempfile

    try:
        folder.mkdir(mode=0o700, parents=True, exist_ok=True)
        if not trusted_folder(folder):
            return
        fd, tmp = tempfile.mkstemp(dir=folder, prefix=f".{name}.")
        try:
            with os.fdopen(fd, "wb") as fh:
                pickle.dump(value, fh, protocol=pickle.HIGHEST_PROTOCOL)
            os.replace(tmp, folder / name)
        except BaseException:
            os.unlink(tmp)
            raise
        kind = name.partition(".")[0]
        # entries for content that has since changed: the newest few are kept (two checkouts of
        # different versions sharing one folder would otherwise evict each other's on every start)
        older = sorted((p for p in folder.glob(f"{kind}.*") if p.name != name), key=_mtime, reverse=True)
        for old in older[KEPT_PER_KIND - 1 :]:
            old.unlink(missing_ok=True)
    except Exception:  # read-only or full disk, unpicklable value: run without a cache
        return


def cached(key: str, build: Callable[[], T], expect: type) -> T:
    """The value stored under ``key``, or ``build()`` (stored for next time when the folder allows)."""
    folder = cache_dir()
    if folder is None:
        return build()
    if trusted_folder(folder):
        value = _read(folder / key)
        if isinstance(value, expect):
            # isinstance sees only the outer type; the key (its content hash) pins the rest of T
            return value  # type: ignore[return-value]
    value = build()
    _write(folder, key, value)
    return value
