"""The SQLite database locked, full, or missing: the bot keeps answering, and logs what it lost."""

from __future__ import annotations

import contextlib
import logging
import os
import shutil
import sqlite3
import subprocess
import uuid
from collections.abc import Iterator
from pathlib import Path

import pytest

from bot.message import IncomingMessage
from bot.service import GardenService
from bot.storage import Storage
from tests.hardening.conftest import OPEN
from tests.hardening.hostile import KV_PASTE


def msg(i: int, text: str = KV_PASTE) -> IncomingMessage:
    return IncomingMessage(platform="test", text=text, message_id=str(i), user_id=f"u{i % 3}", mentioned=True)


async def answer_all(svc: GardenService, n: int, start: int = 0) -> list[str]:
    kinds = []
    for i in range(start, start + n):
        out = await svc.handle(msg(i))
        kinds.append(out.kind)
        if out.reply is not None:
            await svc.remember_reply(msg(i), f"r{i}", out.reply)
            await svc.feedback("test", f"c:{i}", "voter", out.reply.signature, True)
    return kinds


def losses(caplog) -> list[str]:
    return [r.getMessage() for r in caplog.records if "database unavailable" in r.getMessage()]


async def test_locked_database(tmp_path, caplog):
    """Another process holds the write lock: each write waits out the 2 s busy timeout, fails, is logged;
    the reply goes out regardless, and the next message after the lock is released is stored again."""
    caplog.set_level(logging.WARNING, logger="gpu_garden.storage")
    db = tmp_path / "garden.sqlite3"
    storage = Storage(db)
    assert storage.healthy()
    svc = GardenService(storage=storage, limits=OPEN)
    holder = sqlite3.connect(db, isolation_level=None)
    holder.execute("BEGIN EXCLUSIVE")
    try:
        out = await svc.handle(msg(1))
        assert out.kind == "reply" and out.reply is not None
        assert await svc.feedback("test", "c:1", "voter", out.reply.signature, True) is False
    finally:
        holder.execute("ROLLBACK")
        holder.close()
    assert storage.failures >= 2
    lost = losses(caplog)
    assert any("reply claim lost" in m for m in lost) and any("feedback lost" in m for m in lost)
    assert all("locked" in m for m in lost)
    # recovered: stored again, and the in-memory deduper kept the first message from a second answer
    assert (await svc.handle(msg(2))).kind == "reply"
    assert (await svc.handle(msg(1))).kind == "duplicate"
    assert storage.reply_for("test", "test:local:2") == ""
    storage.close()


def _disk_stays_full(storage: Storage, monkeypatch) -> None:
    """Every connection the storage opens may not grow the file past its current size: what a full disk
    looks like to SQLite ("database or disk is full"), even after it reconnects."""
    original = Storage._connect

    def connect(self: Storage) -> sqlite3.Connection:
        fresh = self._conn is None
        conn = original(self)
        if fresh:
            pages = conn.execute("PRAGMA page_count").fetchone()[0]
            conn.execute(f"PRAGMA max_page_count={pages}")
        return conn

    monkeypatch.setattr(Storage, "_connect", connect)


async def test_full_disk_via_max_page_count(tmp_path, caplog, monkeypatch):
    caplog.set_level(logging.WARNING, logger="gpu_garden.storage")
    storage = Storage(tmp_path / "garden.sqlite3")
    _disk_stays_full(storage, monkeypatch)
    svc = GardenService(storage=storage, limits=OPEN)
    kinds = await answer_all(svc, 150)
    assert kinds == ["reply"] * 150
    assert storage.failures > 0
    assert any("full" in m for m in losses(caplog))
    assert any("feedback lost" in m for m in losses(caplog))
    storage.close()


@contextlib.contextmanager
def tiny_tmpfs(size_kib: int = 256) -> Iterator[Path]:
    where = Path("/tmp") / f"garden-full-{uuid.uuid4().hex[:8]}"
    where.mkdir()
    mounted = False
    try:
        if os.geteuid() == 0:
            mounted = (
                subprocess.run(
                    ["mount", "-t", "tmpfs", "-o", f"size={size_kib}k", "tmpfs", str(where)],
                    capture_output=True,
                    check=False,
                ).returncode
                == 0
            )
        if not mounted:
            pytest.skip("cannot mount a tmpfs here (needs root and CAP_SYS_ADMIN)")
        yield where
    finally:
        if mounted:
            subprocess.run(["umount", "-l", str(where)], capture_output=True, check=False)
        with contextlib.suppress(OSError):
            where.rmdir()


def fill(folder: Path) -> int:
    """Write a filler file until the file system refuses: ENOSPC from now on."""
    written = 0
    with contextlib.suppress(OSError), open(folder / "filler", "wb") as fh:
        while True:
            fh.write(b"\0" * 4096)
            fh.flush()
            os.fsync(fh.fileno())
            written += 4096
    return written


async def test_full_disk_on_a_real_tiny_tmpfs(caplog):
    caplog.set_level(logging.WARNING, logger="gpu_garden.storage")
    with tiny_tmpfs() as folder:
        storage = Storage(folder / "garden.sqlite3")
        assert storage.healthy()
        fill(folder)
        svc = GardenService(storage=storage, limits=OPEN)
        kinds = await answer_all(svc, 40)
        storage.close()
    assert kinds == ["reply"] * 40
    assert storage.failures > 0
    assert any("full" in m for m in losses(caplog)), losses(caplog)


@pytest.mark.parametrize("where", ["under a file", "in a folder that cannot be made"])
async def test_missing_database(where, tmp_path, caplog):
    caplog.set_level(logging.WARNING, logger="gpu_garden.storage")
    if where == "under a file":
        (tmp_path / "not-a-folder").write_text("x")
        path = tmp_path / "not-a-folder" / "garden.sqlite3"
    else:
        path = Path("/proc/garden-no-such-dir") / "garden.sqlite3"  # /proc refuses it, even to root
    storage = Storage(path)
    svc = GardenService(storage=storage, limits=OPEN)
    kinds = await answer_all(svc, 5)
    assert kinds == ["reply"] * 5
    assert storage.failures >= 5
    assert any("feedback lost" in m for m in losses(caplog))
    assert (await svc.handle(msg(0))).kind == "duplicate"  # the in-memory deduper still guards


async def test_database_deleted_while_running_is_noticed_and_recreated(tmp_path, caplog):
    """SQLite keeps writing to a deleted file without an error: everything after the deletion would be
    lost in silence.  The storage notices the file is gone, says so, and starts a new one."""
    caplog.set_level(logging.WARNING, logger="gpu_garden.storage")
    folder = tmp_path / "data"
    storage = Storage(folder / "garden.sqlite3")
    svc = GardenService(storage=storage, limits=OPEN)
    assert await answer_all(svc, 3) == ["reply"] * 3
    shutil.rmtree(folder)
    assert await answer_all(svc, 3, start=3) == ["reply"] * 3
    assert any("disappeared" in r.getMessage() for r in caplog.records)
    assert (folder / "garden.sqlite3").is_file()
    with contextlib.closing(sqlite3.connect(folder / "garden.sqlite3")) as conn:
        assert conn.execute("SELECT COUNT(*) FROM feedback").fetchone()[0] == 3
    storage.close()
