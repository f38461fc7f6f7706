"""The bot's SQLite database: which messages were answered (so nothing is answered twice and edits
re-triage in place), feedback votes per signature, an event log for operators' stats, and the full
answer behind each reply's "Details" button (the newest ``details_keep`` per platform are kept).

A message is *claimed* when the bot starts on it and *settled* once its answer is posted (or the bot
decided to stay silent).  A claim left unsettled by an earlier process (stopped mid-post, crashed)
does not block the message: the next process that sees it again may answer it.

Every method swallows database faults (locked, disk full, missing folder) after logging them: the
bot keeps answering when its database is unwell, and says so in the log."""

from __future__ import annotations

import hashlib
import logging
import sqlite3
import threading
import time
import uuid
from collections.abc import Iterator
from contextlib import contextmanager, suppress
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from bot.details import bounded

log = logging.getLogger("gpu_garden.storage")

# the Details store is bounded (our own bounds, not facts): a reply's Markdown is cut past
# bot.details.MAX_BYTES, a chart over CHART_MAX_BYTES is not kept (the memory PNG is about 15 KB),
# and each platform keeps its newest DETAILS_KEEP rows
CHART_MAX_BYTES = 1024 * 1024
DETAILS_KEEP = 2000

SCHEMA = """
CREATE TABLE IF NOT EXISTS replies (
    platform TEXT NOT NULL,
    source_id TEXT NOT NULL,
    channel_id TEXT,
    reply_id TEXT,
    signature TEXT,
    category TEXT,
    created_at REAL NOT NULL,
    settled INTEGER NOT NULL DEFAULT 1,
    owner TEXT,
    PRIMARY KEY (platform, source_id)
);
CREATE TABLE IF NOT EXISTS feedback (
    platform TEXT NOT NULL,
    reply_key TEXT NOT NULL,
    user_hash TEXT NOT NULL,
    signature TEXT,
    vote INTEGER NOT NULL,
    created_at REAL NOT NULL,
    PRIMARY KEY (platform, reply_key, user_hash)
);
CREATE TABLE IF NOT EXISTS events (
    id INTEGER PRIMARY KEY AUTOINCREMENT,
    platform TEXT NOT NULL,
    kind TEXT NOT NULL,
    signature TEXT,
    category TEXT,
    latency_ms REAL,
    created_at REAL NOT NULL
);
CREATE TABLE IF NOT EXISTS details (
    platform TEXT NOT NULL,
    reply_key TEXT NOT NULL,
    markdown TEXT NOT NULL,
    chart BLOB,
    created_at REAL NOT NULL,
    PRIMARY KEY (platform, reply_key)
);
CREATE INDEX IF NOT EXISTS events_time ON events (created_at);
CREATE INDEX IF NOT EXISTS details_time ON details (platform, created_at);
CREATE INDEX IF NOT EXISTS feedback_sig ON feedback (signature);
"""

# databases made before claims could be unsettled: their rows were all answered (DEFAULT 1)
MIGRATIONS = (
    ("settled", "ALTER TABLE replies ADD COLUMN settled INTEGER NOT NULL DEFAULT 1"),
    ("owner", "ALTER TABLE replies ADD COLUMN owner TEXT"),
)


def user_hash(platform: str, user_id: str) -> str:
    """Votes are stored against a hash, not the platform's user id."""
    return hashlib.sha256(f"{platform}:{user_id}".encode()).hexdigest()[:16]


@dataclass(frozen=True)
class StoredDetails:
    """The full answer behind a reply's Details button."""

    markdown: str
    chart: bytes | None = None


@dataclass(frozen=True)
class SignatureStats:
    signature: str
    answers: int
    helpful: int
    not_helpful: int


class Storage:
    def __init__(self, path: Path | str, clock=time.time, details_keep: int = DETAILS_KEEP):
        self.path = Path(path)
        self.clock = clock
        self.details_keep = details_keep
        self._lock = threading.Lock()
        self._conn: sqlite3.Connection | None = None
        self.failures = 0
        self.owner = uuid.uuid4().hex  # this process's claims, told apart from a previous run's

    def _connect(self) -> sqlite3.Connection:
        if self._conn is None:
            if str(self.path) != ":memory:":
                self.path.parent.mkdir(parents=True, exist_ok=True)
            conn = sqlite3.connect(str(self.path), timeout=2.0, check_same_thread=False, isolation_level=None)
            conn.execute("PRAGMA journal_mode=WAL")
            conn.execute("PRAGMA busy_timeout=2000")
            conn.executescript(SCHEMA)
            columns = {row[1] for row in conn.execute("PRAGMA table_info(replies)")}
            for name, sql in MIGRATIONS:
                if name not in columns:
                    conn.execute(sql)
            self._conn = conn
        return self._conn

    @contextmanager
    def _db(self, what: str) -> Iterator[sqlite3.Connection | None]:
        """The connection, or None when the database cannot be opened; faults inside are logged."""
        with self._lock:
            self._check_file()
            try:
                conn = self._connect()
            except (sqlite3.Error, OSError) as exc:
                self._fail(what, exc)
                yield None
                return
            try:
                yield conn
            except (sqlite3.Error, OSError) as exc:
                self._fail(what, exc)

    def _check_file(self) -> None:
        """SQLite writes on into a deleted file without an error; notice it and start a new one."""
        if self._conn is None or str(self.path) == ":memory:" or self.path.exists():
            return
        self.failures += 1
        log.warning("database file %s disappeared; what it held is lost, starting a new one", self.path)
        with suppress(sqlite3.Error):
            self._conn.close()
        self._conn = None

    def _fail(self, what: str, exc: BaseException) -> None:
        self.failures += 1
        log.warning("database unavailable, %s lost: %s: %s", what, exc.__class__.__name__, exc)
        if self._conn is not None:
            with suppress(sqlite3.Error):
                self._conn.close()
            self._conn = None

    def close(self) -> None:
        with self._lock:
            if self._conn is not None:
                self._conn.close()
                self._conn = None

    def _run(self, what: str, sql: str, params: tuple = (), fetch: str = "") -> Any:
        """One statement: its cursor, or its first row / all rows (``fetch``); None when the database
        failed (logged by ``_db``)."""
        with self._db(what) as db:
            if db is not None:
                cur = db.execute(sql, params)
                return cur.fetchone() if fetch == "one" else cur.fetchall() if fetch == "all" else cur
        return None

    def healthy(self) -> bool:
        return self._run("health check", "SELECT 1") is not None

    def reply_for(self, platform: str, source_id: str) -> str | None:
        """The id of our reply to a message, if we answered it ("" when answered without an id)."""
        sql = "SELECT reply_id FROM replies WHERE platform=? AND source_id=?"
        row = self._run("reply lookup", sql, (platform, source_id), "one")
        return None if row is None else (row[0] or "")

    def claim(self, platform: str, source_id: str, channel_id: str | None = None) -> bool:
        """Atomically mark a message as being answered; False if it was answered, or is being answered
        by this process.  An unsettled claim of an earlier process is taken over."""
        cur = self._run(
            "reply claim",
            "INSERT INTO replies (platform, source_id, channel_id, created_at, settled, owner) "
            "VALUES (?,?,?,?,0,?) ON CONFLICT(platform, source_id) DO UPDATE SET "
            "owner=excluded.owner, created_at=excluded.created_at "
            "WHERE replies.settled=0 AND replies.owner IS NOT excluded.owner",
            (platform, source_id, channel_id, self.clock(), self.owner),
        )
        return cur is None or cur.rowcount == 1  # without a database the in-memory deduper still guards

    def settle(self, platform: str, source_id: str) -> None:
        """The message is done with (answered without a reply id, or silently passed over)."""
        sql = "UPDATE replies SET settled=1 WHERE platform=? AND source_id=?"
        self._run("reply settle", sql, (platform, source_id))

    def release(self, platform: str, source_id: str) -> None:
        """Our answer could not be posted: drop the unsettled claim, so the message is answered later."""
        sql = "DELETE FROM replies WHERE platform=? AND source_id=? AND settled=0"
        self._run("reply release", sql, (platform, source_id))

    def record_reply(
        self, platform: str, source_id: str, reply_id: str | None, signature: str | None, category: str | None
    ) -> None:
        """Our reply is posted (or edited, or deleted with ``reply_id`` None): the message is settled."""
        self._run(
            "reply record",
            "INSERT INTO replies (platform, source_id, reply_id, signature, category, created_at, settled) "
            "VALUES (?,?,?,?,?,?,1) ON CONFLICT(platform, source_id) DO UPDATE SET "
            "reply_id=excluded.reply_id, signature=excluded.signature, category=excluded.category, "
            "settled=1",
            (platform, source_id, reply_id, signature, category, self.clock()),
        )

    def record_feedback(
        self, platform: str, reply_key: str, user_id: str, signature: str | None, helpful: bool
    ) -> bool:
        vote = (
            platform,
            reply_key,
            user_hash(platform, user_id),
            signature,
            1 if helpful else -1,
            self.clock(),
        )
        sql = (
            "INSERT INTO feedback (platform, reply_key, user_hash, signature, vote, created_at) "
            "VALUES (?,?,?,?,?,?) ON CONFLICT(platform, reply_key, user_hash) DO UPDATE SET "
            "vote=excluded.vote, created_at=excluded.created_at"
        )
        return self._run("feedback", sql, vote) is not None

    def feedback_counts(self, signature: str) -> tuple[int, int]:
        sql = "SELECT SUM(vote > 0), SUM(vote < 0) FROM feedback WHERE signature=?"
        row = self._run("feedback read", sql, (signature,), "one")
        return (int(row[0] or 0), int(row[1] or 0)) if row is not None else (0, 0)

    def record_details(self, platform: str, reply_key: str, markdown: str, chart: bytes | None) -> bool:
        """Keep the full answer (bounded) for ``reply_key``; prune this platform to the newest rows."""
        text = bounded(markdown)
        png = chart if chart is not None and len(chart) <= CHART_MAX_BYTES else None
        with self._db("details") as db:
            if db is not None:
                db.execute(
                    "INSERT INTO details (platform, reply_key, markdown, chart, created_at) VALUES (?,?,?,?,?) "
                    "ON CONFLICT(platform, reply_key) DO UPDATE SET markdown=excluded.markdown, "
                    "chart=excluded.chart, created_at=excluded.created_at",
                    (platform, reply_key, text, png, self.clock()),
                )
                db.execute(
                    "DELETE FROM details WHERE platform=? AND rowid NOT IN (SELECT rowid FROM details "
                    "WHERE platform=? ORDER BY created_at DESC, rowid DESC LIMIT ?)",
                    (platform, platform, self.details_keep),
                )
                return True
        return False

    def details_for(self, platform: str, reply_key: str) -> StoredDetails | None:
        sql = "SELECT markdown, chart FROM details WHERE platform=? AND reply_key=?"
        row = self._run("details read", sql, (platform, reply_key), "one")
        return None if row is None else StoredDetails(row[0], bytes(row[1]) if row[1] else None)

    def record_event(
        self,
        platform: str,
        kind: str,
        signature: str | None = None,
        category: str | None = None,
        latency_ms: float | None = None,
    ) -> None:
        sql = "INSERT INTO events (platform, kind, signature, category, latency_ms, created_at) VALUES (?,?,?,?,?,?)"
        self._run("event log", sql, (platform, kind, signature, category, latency_ms, self.clock()))

    def stats(self, since_seconds: float) -> list[SignatureStats]:
        """Signatures answered since then, most frequent first, with their feedback."""
        cutoff = self.clock() - since_seconds
        rows = self._run(
            "stats",
            "SELECT e.signature, COUNT(*), "
            "(SELECT COUNT(*) FROM feedback f WHERE f.signature=e.signature AND f.vote>0 AND f.created_at>=?), "
            "(SELECT COUNT(*) FROM feedback f WHERE f.signature=e.signature AND f.vote<0 AND f.created_at>=?) "
            "FROM events e WHERE e.kind='reply' AND e.signature IS NOT NULL AND e.created_at>=? "
            "GROUP BY e.signature ORDER BY COUNT(*) DESC",
            (cutoff, cutoff, cutoff),
            "all",
        )
        return [SignatureStats(r[0], r[1], r[2], r[3]) for r in rows or []]
