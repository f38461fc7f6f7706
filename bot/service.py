"""What every adapter calls: policy around the bot.

``GardenService.handle`` takes one neutral message and decides: ignore it (a bot, a duplicate, not for
us), throttle it (one polite notice per user per window), or answer it — with secrets redacted before
anything reads the paste, the CPU work off the event loop, and the outcome logged for stats."""

from __future__ import annotations

import asyncio
import contextlib
import logging
import time
from collections.abc import AsyncIterator
from dataclasses import dataclass, field, replace
from typing import Literal

from bot.core import GardenBot, Paste, collect_paste
from bot.formatter import to_markdown
from bot.message import IncomingMessage, SlashCommand
from bot.metrics import Metrics
from bot.policy import Deduper, RateLimiter
from bot.redact import redact, with_notice
from bot.reply import Reply
from bot.settings import Limits
from bot.storage import Storage, StoredDetails

log = logging.getLogger("gpu_garden.service")

OutcomeKind = Literal["reply", "throttled", "ignored", "duplicate"]


@dataclass
class Outcome:
    kind: OutcomeKind
    reply: Reply | None = None
    notice: str | None = None
    latency_ms: float = 0.0
    secrets: tuple[str, ...] = field(default_factory=tuple)


class GardenService:
    def __init__(
        self,
        bot: GardenBot | None = None,
        storage: Storage | None = None,
        limits: Limits | None = None,
        clock=time.monotonic,
        metrics: Metrics | None = None,
    ):
        self.limits = limits or Limits()
        self.bot = bot or GardenBot(paste_limit=self.limits.paste_max_bytes)
        self.storage = storage
        self.user_limiter = RateLimiter(self.limits.user_per_minute, 60.0, clock)
        self.channel_limiter = RateLimiter(self.limits.channel_per_minute, 60.0, clock)
        self.events = Deduper(ttl=self.limits.dedup_ttl_seconds, clock=clock)
        # users told "try again" in this window, whichever limit refused them: one notice per user
        self.noticed = Deduper(ttl=60.0, max_items=100_000, clock=clock)
        self._inflight: set[str] = set()
        self._turns: dict[str, tuple[asyncio.Lock, int]] = {}
        self.metrics = metrics

    def source_key(self, msg: IncomingMessage) -> str | None:
        """What identifies one message across its events (created, edited, deleted, redelivered)."""
        return f"{msg.platform}:{msg.channel_id}:{msg.message_id}" if msg.message_id else None

    @contextlib.asynccontextmanager
    async def turn(self, msg: IncomingMessage) -> AsyncIterator[None]:
        """One event of a message at a time: an edit or a delete that arrives while the answer is
        being posted waits until it is posted (and recorded), then finds it and follows it."""
        key = self.source_key(msg)
        if key is None:
            yield
            return
        lock, users = self._turns.get(key, (asyncio.Lock(), 0))
        self._turns[key] = (lock, users + 1)
        try:
            async with lock:
                yield
        finally:
            lock, users = self._turns[key]
            if users <= 1:
                del self._turns[key]
            else:
                self._turns[key] = (lock, users - 1)

    async def handle(
        self, msg: IncomingMessage, event_id: str | None = None, edited: bool = False
    ) -> Outcome:
        outcome = await self._handle(msg, event_id, edited)
        if self.metrics is not None:
            self.metrics.observe_outcome(msg.platform, outcome)
        return outcome

    async def _handle(self, msg: IncomingMessage, event_id: str | None, edited: bool) -> Outcome:
        started = time.perf_counter()
        if msg.is_bot:
            return Outcome("ignored")
        if event_id and self.events.seen(f"{msg.platform}:event:{event_id}"):
            return Outcome("duplicate")
        source_key = self.source_key(msg)
        if source_key and not edited and not await self._claim(msg, source_key):
            return Outcome("duplicate")
        throttled = self._throttle(msg)
        if throttled is not None:
            await self._settle(msg)
            return throttled
        if source_key:
            self._inflight.add(source_key)
        try:
            reply, secrets = await asyncio.to_thread(self._answer, msg)
        finally:
            if source_key:
                self._inflight.discard(source_key)
        latency = (time.perf_counter() - started) * 1000
        if reply is None:
            await self._settle(msg)
        if self.storage is not None:
            await asyncio.to_thread(
                self.storage.record_event,
                msg.platform,
                "reply" if reply is not None else "silent",
                reply.signature if reply else None,
                reply.category if reply else None,
                latency,
            )
        kind: OutcomeKind = "reply" if reply is not None else "ignored"
        return Outcome(kind, reply=reply, latency_ms=latency, secrets=secrets)

    async def _claim(self, msg: IncomingMessage, source_key: str) -> bool:
        if source_key in self._inflight or self.events.seen(source_key):
            return False
        if self.storage is None:
            return True
        return await asyncio.to_thread(self.storage.claim, msg.platform, source_key, msg.channel_id)

    def _throttle(self, msg: IncomingMessage) -> Outcome | None:
        """A throttled outcome (with one notice per user per window when addressed), or None."""
        verdict = self.user_limiter.check(f"{msg.platform}:{msg.user_id}")
        if verdict.allowed:
            verdict = self.channel_limiter.check(f"{msg.platform}:{msg.channel_id}")
        if verdict.allowed:
            return None
        notice = None
        if verdict.notify and msg.addressed and not self.noticed.seen(f"{msg.platform}:{msg.user_id}"):
            notice = (
                f"I'm answering a lot right now; try again in about {max(1, round(verdict.retry_after))} s."
            )
        return Outcome("throttled", notice=notice)

    async def _settle(self, msg: IncomingMessage) -> None:
        key = self.source_key(msg)
        if self.storage is not None and key is not None:
            await asyncio.to_thread(self.storage.settle, msg.platform, key)

    async def abandon(self, msg: IncomingMessage, event_id: str | None = None) -> None:
        """The answer could not be posted (the platform failed, the bot is stopping): forget that the
        message was taken, so a redelivery or the next start answers it."""
        key = self.source_key(msg)
        if key is not None:
            self.events.forget(key)
            if self.storage is not None:
                await asyncio.to_thread(self.storage.release, msg.platform, key)
        if event_id:
            self.events.forget(f"{msg.platform}:event:{event_id}")

    def platform_error(self, platform: str, kind: str) -> None:
        if self.metrics is not None:
            self.metrics.platform_error(platform, kind)

    def _answer(self, msg: IncomingMessage) -> tuple[Reply | None, tuple[str, ...]]:
        kinds: list[str] = []
        if msg.command is not None:
            # a command's options are user text too (/vram echoes an unknown model name back)
            msg, kinds = _redact_command(msg)
        if msg.command is not None and msg.command.name.lower() != "triage":
            reply = self.bot.handle(msg)
        else:
            paste = collect_paste(msg, self.limits.paste_max_bytes)
            if msg.command is not None and msg.command.raw:
                paste = Paste(paste.text + "\n" + msg.command.raw, paste.truncated, paste.skipped)
            cleaned = redact(paste.text)
            kinds += [k for k in cleaned.kinds if k not in kinds]
            paste = Paste(cleaned.text, paste.truncated, paste.skipped, cleaned.prefix_cuts)
            if not paste.text.strip():
                reply = self.bot.handle(IncomingMessage(platform=msg.platform, mentioned=msg.addressed))
            else:
                reply = self.bot.triage(paste, addressed=msg.addressed)
        reply = with_notice(reply, kinds)  # one notice: these kinds and those the detector's joins found
        return reply, (reply.secrets if reply is not None else ())

    def reload_knowledge(self, extra_folder) -> tuple[bool, str]:
        """Re-read the built-in and the operator's signature files.  A pack that fails to load leaves
        the signatures in force unchanged; the message says which file and entry is wrong."""
        from bot.detector import Detector
        from knowledge.loader import KnowledgeError, load_with_extra

        try:
            detector = Detector(load_with_extra(extra_folder))
        except KnowledgeError as exc:
            log.error("knowledge reload failed, keeping the previous signatures: %s", exc)
            return False, str(exc)
        except Exception as exc:  # e.g. RecursionError from YAML nested thousands deep: same outcome
            message = f"{extra_folder}: cannot be loaded ({exc.__class__.__name__})"
            log.error("knowledge reload failed, keeping the previous signatures: %s", message)
            return False, message
        self.bot.detector = detector
        count = len(detector.kb.signatures)
        log.info("knowledge reloaded: %d signatures from %d files", count, len(detector.kb.files))
        return True, f"{count} signatures"

    async def feedback(
        self, platform: str, reply_key: str, user_id: str, signature: str | None, helpful: bool
    ) -> bool:
        if self.metrics is not None:
            self.metrics.feedback(platform, signature, helpful)
        if self.storage is None:
            return False
        return await asyncio.to_thread(
            self.storage.record_feedback, platform, reply_key, user_id, signature, helpful
        )

    async def store_details(
        self, platform: str, reply_key: str, reply: Reply, chart: bytes | None = None
    ) -> bool:
        """Keep the full answer behind a reply's Details button (the bot's own, redacted, output);
        False when there is no database to keep it in."""
        if self.storage is None:
            return False
        markdown = to_markdown(reply, full=True)
        return await asyncio.to_thread(self.storage.record_details, platform, reply_key, markdown, chart)

    async def details(self, platform: str, reply_key: str) -> StoredDetails | None:
        """The full answer stored for ``reply_key``, or None (never stored, pruned, no database)."""
        if self.storage is None:
            return None
        return await asyncio.to_thread(self.storage.details_for, platform, reply_key)

    async def remember_reply(self, msg: IncomingMessage, reply_id: str | None, reply: Reply | None) -> None:
        source_key = self.source_key(msg)
        if self.storage is None or source_key is None:
            return
        await asyncio.to_thread(
            self.storage.record_reply,
            msg.platform,
            source_key,
            reply_id,
            reply.signature if reply else None,
            reply.category if reply else None,
        )

    async def previous_reply(self, msg: IncomingMessage) -> str | None:
        """Our reply id for this message (to edit it in place when the message is edited)."""
        source_key = self.source_key(msg)
        if self.storage is None or source_key is None:
            return None
        return await asyncio.to_thread(self.storage.reply_for, msg.platform, source_key)


def _redact_command(msg: IncomingMessage) -> tuple[IncomingMessage, list[str]]:
    """The message with secrets removed from its command's options and free text."""
    command = msg.command
    assert command is not None
    kinds: list[str] = []

    def clean(text: str) -> str:
        cleaned = redact(text)
        kinds.extend(k for k in cleaned.kinds if k not in kinds)
        return cleaned.text

    args = {name: clean(value) if isinstance(value, str) else value for name, value in command.args.items()}
    raw = clean(command.raw)
    if not kinds:
        return msg, kinds
    return replace(msg, command=SlashCommand(command.name, args, raw)), kinds
