"""Channel manners: rate limits with a single notice, and never answering the same event twice."""

from __future__ import annotations

import time
from collections import OrderedDict, deque
from collections.abc import Callable
from dataclasses import dataclass


@dataclass(frozen=True)
class Verdict:
    allowed: bool
    notify: bool = False  # first refusal in this window: tell the user once
    retry_after: float = 0.0


class RateLimiter:
    """Sliding-window limit per key (user, channel); at most one notice per key per window."""

    def __init__(
        self,
        limit: int,
        window: float = 60.0,
        clock: Callable[[], float] = time.monotonic,
        max_keys: int = 100_000,
    ):
        self.limit = limit
        self.window = window
        self.clock = clock
        self.max_keys = max_keys
        self._hits: OrderedDict[str, deque[float]] = OrderedDict()
        self._noticed: dict[str, float] = {}

    def check(self, key: str) -> Verdict:
        now = self.clock()
        hits = self._hits.get(key)
        if hits is None:
            hits = self._hits[key] = deque()
            if len(self._hits) > self.max_keys:
                old, _ = self._hits.popitem(last=False)
                self._noticed.pop(old, None)
        self._hits.move_to_end(key)
        while hits and now - hits[0] >= self.window:
            hits.popleft()
        if len(hits) < self.limit:
            hits.append(now)
            return Verdict(True)
        retry = self.window - (now - hits[0])
        last_notice = self._noticed.get(key)
        notify = last_notice is None or now - last_notice >= self.window
        if notify:
            self._noticed[key] = now
        return Verdict(False, notify, retry)


class Deduper:
    """Remembers event ids for ``ttl`` seconds (bounded): ``seen(id)`` is True the second time."""

    def __init__(
        self, ttl: float = 86400.0, max_items: int = 200_000, clock: Callable[[], float] = time.monotonic
    ):
        self.ttl = ttl
        self.max_items = max_items
        self.clock = clock
        self._seen: OrderedDict[str, float] = OrderedDict()

    def seen(self, event_id: str) -> bool:
        now = self.clock()
        while self._seen:
            oldest, t = next(iter(self._seen.items()))
            if now - t < self.ttl and len(self._seen) <= self.max_items:
                break
            self._seen.pop(oldest)
        if event_id in self._seen:
            return True
        self._seen[event_id] = now
        return False

    def forget(self, event_id: str) -> None:
        """Not seen after all (its handling failed): the next ``seen(id)`` is False again."""
        self._seen.pop(event_id, None)
