"""Rate limits with one notice per window, and the event deduper."""

from __future__ import annotations

from bot.policy import Deduper, RateLimiter


class Clock:
    def __init__(self):
        self.t = 1000.0

    def __call__(self):
        return self.t


def test_rate_limiter_allows_then_notices_once():
    clock = Clock()
    rl = RateLimiter(3, 60, clock)
    assert [rl.check("u").allowed for _ in range(3)] == [True, True, True]
    first, second = rl.check("u"), rl.check("u")
    assert not first.allowed and first.notify and first.retry_after > 0
    assert not second.allowed and not second.notify  # one notice per window
    clock.t += 61
    assert rl.check("u").allowed


def test_rate_limiter_keys_are_independent_and_bounded():
    clock = Clock()
    rl = RateLimiter(1, 60, clock, max_keys=100)
    for i in range(1000):
        assert rl.check(f"user{i}").allowed
    assert len(rl._hits) <= 100


def test_deduper_ttl_and_bound():
    clock = Clock()
    d = Deduper(ttl=10, max_items=50, clock=clock)
    assert not d.seen("a")
    assert d.seen("a")
    clock.t += 11
    assert not d.seen("a")
    for i in range(500):
        d.seen(str(i))
    assert len(d._seen) <= 51
