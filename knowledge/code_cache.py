"""The bytecode of the methods :mod:`dataclasses` generates, kept across starts.

Building a dataclass in Python 3.11 and 3.12 writes the source of its ``__init__``, ``__repr__``,
``__eq__``, ``__hash__`` and, for a frozen one, ``__setattr__``/``__delattr__`` and compiles each with
``exec``; a start builds about a hundred of them, and those compiles were the largest part of a cold
``gpu-garden`` command.  :func:`install` gives the ``dataclasses`` module an ``exec`` that looks the
source text up in a table of code objects compiled before and compiles only what is new; the table is
stored with :mod:`marshal` (the format of ``.pyc`` files) beside the validated-data cache
(:mod:`knowledge.cache`) and written back at exit when something was added; each code object is stored
as its own marshalled bytes and read back only when a class asks for it (a start reads the whole table
but builds the code of the classes it makes, not of every class any command made).  Each entry carries the day
it was last used by a process that wrote the table; one unused for ``KEEP_DAYS`` is dropped then, so the
methods of classes since edited do not pile up (and slow every start's read).

A code object is looked up by the exact text it was compiled from, with the flags ``exec`` would use
(none inherited from this module), so a class is built exactly as without the table.  The table follows
the data cache's rules: switched off with it (``GPU_GARDEN_CACHE_DIR=off``), read only from a folder
owned by this user and not writable by others (loading code runs it), one file per interpreter's
bytecode tag, and any unreadable, truncated or foreign file is ignored and replaced.  Python 3.13 and
later compile all of a class's methods in one ``exec``, which the table serves the same way.
"""

from __future__ import annotations

import builtins
import contextlib
import dataclasses
import marshal
import os
import sys
import time
from pathlib import Path
from types import CodeType
from typing import Any

FILE = f"dataclass-code-v2.{sys.implementation.cache_tag}.marshal"  # v2: each code object marshalled alone
MAX_ENTRIES = 4096  # a table grown past this by edited classes is written back with this process's only
KEEP_DAYS = 30


class _Table:
    """The code objects by source text, loaded on first use; which ones this process used or added."""

    def __init__(self) -> None:
        self.codes: dict[str, CodeType] | None = None
        self.stored: dict[str, bytes] = {}  # the table as read: each code object, still marshalled
        self.days: dict[str, int] = {}  # the day each stored entry was last used
        self.used: set[str] = set()
        self.compiled = 0
        self.folder: Path | None = None


_table = _Table()


def install() -> None:
    """Route the ``exec`` calls of :mod:`dataclasses` through the table (idempotent; call before the
    first dataclass is built)."""
    if getattr(dataclasses, "exec", None) is not _exec:
        setattr(dataclasses, "exec", _exec)  # noqa: B010 - a module global, looked up before builtins


def _exec(source: Any, globals: Any = None, locals: Any = None, /) -> None:
    if isinstance(source, str):
        source = code_for(source)
    builtins.exec(source, globals, locals)


def code_for(text: str) -> CodeType:
    """The code object ``exec(text)`` would compile, from the table when it holds it."""
    codes = _load()
    code = codes.get(text)
    if code is None and text in _table.stored:
        with contextlib.suppress(Exception):  # a broken entry: compiled again below
            code = codes[text] = marshal.loads(_table.stored[text])
    if not isinstance(code, CodeType):
        code = compile(text, "<string>", "exec", dont_inherit=True)
        codes[text] = code
        _table.stored.pop(text, None)  # a broken entry is written back from the code compiled here
        if _table.compiled == 0 and _table.folder is not None:
            import atexit

            atexit.register(_save)
        _table.compiled += 1
    _table.used.add(text)
    return code


def compiled_here() -> int:
    """How many texts this process compiled because the table did not hold them."""
    return _table.compiled


def _load() -> dict[str, CodeType]:
    if _table.codes is not None:
        return _table.codes
    from knowledge.cache import cache_dir, trusted_folder

    _table.codes = {}
    _table.folder = cache_dir()
    if _table.folder is not None and trusted_folder(_table.folder):
        try:
            stored = marshal.loads((_table.folder / FILE).read_bytes())
        except Exception:  # missing, truncated or written by another interpreter: start empty
            stored = None
        for text, entry in stored.items() if isinstance(stored, dict) else ():
            if isinstance(text, str) and isinstance(entry, tuple) and len(entry) == 2:
                code, day = entry
                if isinstance(code, bytes) and isinstance(day, int):
                    _table.stored[text], _table.days[text] = code, day
    return _table.codes


def _save() -> None:
    folder, codes = _table.folder, _table.codes
    if folder is None or codes is None:
        return
    today = int(time.time() // 86400)
    texts = _table.stored.keys() | codes.keys()
    kept = {text for text in texts if text in _table.used or today - _table.days.get(text, 0) <= KEEP_DAYS}
    if len(kept) > MAX_ENTRIES:
        kept = _table.used
    table = {
        text: (
            _table.stored.get(text) or marshal.dumps(codes[text]),
            today if text in _table.used else _table.days[text],
        )
        for text in kept
    }
    from knowledge.cache import trusted_folder

    tmp = folder / f".{FILE}.{os.getpid()}"
    try:
        folder.mkdir(mode=0o700, parents=True, exist_ok=True)
        if not trusted_folder(folder):
            return
        fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
        with os.fdopen(fd, "wb") as fh:
            fh.write(marshal.dumps(table))
        os.replace(tmp, folder / FILE)
    except Exception:  # read-only or full disk: the next start compiles again
        with contextlib.suppress(OSError):
            tmp.unlink(missing_ok=True)
