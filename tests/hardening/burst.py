"""A burst of pastes from many users against the loopback fakes, driving the real clients: every message
is followed from the frame sent to what the platform received (an answer, a throttle notice, or
nothing).  The test suite runs it small; scripts/reliability.py runs the full 1,000 from 50 users."""

from __future__ import annotations

import asyncio
import time
from collections import Counter, defaultdict
from dataclasses import dataclass, field

from bot.service import GardenService
from tests.adapters.discord.fake_discord import BOT_ID, CHANNEL_ID, QUIET_CHANNEL_ID, USER_ID, _user
from tests.adapters.slack.fake_slack import envelope, event_callback, message_event


def paste(i: int) -> str:
    return (
        f"INFO 06-01 12:00:{i % 60:02d} [worker.py:200] Loading model weights took 14.{i % 10} GB\n"
        "ValueError: The model's max seq len (131072) is larger than the maximum number of tokens that can "
        f"be stored in KV cache ({5000 + i}). Try increasing gpu_memory_utilization or decreasing "
        "max_model_len when initializing the engine."
    )


@dataclass
class BurstResult:
    sent: int = 0
    seconds: float = 0.0  # first frame sent -> last delivery received
    outcomes: Counter = field(default_factory=Counter)  # service decisions: reply / throttled / ...
    answers: dict[str, int] = field(default_factory=dict)  # message -> answers delivered
    notices: dict[str, int] = field(default_factory=dict)  # user -> throttle notices delivered
    latencies_ms: list[float] = field(default_factory=list)  # frame sent -> answer received
    unaccounted: list[str] = field(default_factory=list)  # neither answered nor throttled/ignored

    @property
    def answered(self) -> int:
        return sum(1 for n in self.answers.values() if n >= 1)

    @property
    def duplicated(self) -> int:
        return sum(1 for n in self.answers.values() if n > 1)

    @property
    def max_notices_per_user(self) -> int:
        return max(self.notices.values(), default=0)

    @property
    def lost(self) -> int:
        """Messages the service decided to answer that got no answer."""
        return max(0, self.outcomes["reply"] - self.answered) + len(self.unaccounted)

    def percentile(self, q: float) -> float:
        values = sorted(self.latencies_ms)
        if not values:
            return 0.0
        k = max(0, min(len(values) - 1, round(q / 100 * (len(values) - 1))))
        return values[k]


def spy_on(service: GardenService) -> dict[str, list[str]]:
    """Record the service's decision per message id."""
    decisions: dict[str, list[str]] = defaultdict(list)
    original = service.handle

    async def handle(msg, event_id=None, edited=False):
        out = await original(msg, event_id=event_id, edited=edited)
        decisions[msg.message_id].append(out.kind)
        return out

    service.handle = handle  # type: ignore[method-assign]
    return decisions


async def _paced(n: int, seconds: float, send) -> None:
    start = time.perf_counter()
    for i in range(n):
        delay = start + seconds * i / max(1, n) - time.perf_counter()
        if delay > 0:
            await asyncio.sleep(delay)
        await send(i)


async def discord_burst(
    fake, service: GardenService, n: int, users: int, seconds: float, timeout: float = 60.0
):
    """``n`` pastes from ``users`` users (each @mentions the bot, so a throttled one gets a notice),
    spread over ``seconds`` and over the two channels of the fake guild."""
    decisions = spy_on(service)
    result = BurstResult(sent=n)
    sent_at: dict[str, float] = {}
    author_of: dict[str, str] = {}
    channels = [CHANNEL_ID, QUIET_CHANNEL_ID]
    before = len(fake.calls)

    async def send(i: int) -> None:
        uid = USER_ID + 1 + i % users
        msg = fake.message(
            f"<@{BOT_ID}> {paste(i)}",
            author=_user(uid, f"user{i % users}"),
            channel_id=channels[i % users % len(channels)],
            mentions=[fake.mention_of_bot()],
        )
        author_of[msg["id"]] = str(uid)
        sent_at[msg["id"]] = time.perf_counter()
        await fake.dispatch("MESSAGE_CREATE", msg)

    started = time.perf_counter()
    await _paced(n, seconds, send)

    def settled() -> bool:
        return sum(len(v) for v in decisions.values()) >= n

    deadline = time.monotonic() + timeout
    while not settled() and time.monotonic() < deadline:
        await asyncio.sleep(0.02)
    expected = sum(1 for v in decisions.values() if "reply" in v)
    while time.monotonic() < deadline:
        delivered = _discord_deliveries(fake.calls[before:], sent_at)
        if sum(1 for k in delivered if k[1] == "answer") >= expected:
            break
        await asyncio.sleep(0.02)
    await asyncio.sleep(0.3)  # anything late (a duplicate) would arrive now
    last = 0.0
    answers: Counter = Counter()
    notices: Counter = Counter()
    for (source, kind), call in _discord_deliveries(fake.calls[before:], sent_at).items():
        for c in call:
            last = max(last, c.at)
            if kind == "answer":
                answers[source] += 1
                if answers[source] == 1:
                    result.latencies_ms.append((c.at - sent_at[source]) * 1000)
            else:
                notices[author_of[source]] += 1
    result.seconds = (last or time.perf_counter()) - started
    result.answers = {s: answers.get(s, 0) for s in sent_at}
    result.notices = dict(notices)
    for source in sent_at:
        result.outcomes.update(decisions.get(source, ["unaccounted"]))
        if not decisions.get(source):
            result.unaccounted.append(source)
    return result


def _discord_deliveries(calls, sent_at) -> dict[tuple[str, str], list]:
    """(source message, "answer" | "notice") -> the delivered POSTs.  An answer goes into the thread
    named after the message (or as a reply with embeds); a notice is a plain-text reply."""
    import re

    out: dict[tuple[str, str], list] = defaultdict(list)
    for c in calls:
        if c.method != "POST" or c.response is None:
            continue
        m = re.fullmatch(r"/channels/(\d+)/messages", c.path)
        if not m:
            continue
        body = c.json or {}
        if m.group(1) in sent_at:
            out[(m.group(1), "answer")].append(c)
            continue
        ref = str((body.get("message_reference") or {}).get("message_id", ""))
        if ref in sent_at:
            out[(ref, "answer" if body.get("embeds") else "notice")].append(c)
    return out


async def slack_burst(
    fake,
    harness,
    n: int,
    users: int,
    seconds: float,
    channels: tuple[str, ...] = ("CGARDEN",),
    timeout: float = 60.0,
):
    """``n`` pastes from ``users`` users in passive channels (a throttled message there is silent) and
    as @mentions (a throttled one gets an ephemeral notice) - every other message each."""
    service = harness.bridge.service
    decisions = spy_on(service)
    result = BurstResult(sent=n)
    sent_at: dict[str, float] = {}
    author_of: dict[str, str] = {}
    before_calls = len(fake.calls)

    async def send(i: int) -> None:
        user = f"U{i % users:04d}"
        ts = f"1800000000.{i:06d}"
        text = paste(i)
        event = message_event(text, channel=channels[i % len(channels)], user=user, ts=ts)
        if i % 2:
            event = {**event, "type": "app_mention", "text": "<@UGARDEN> " + text}
        author_of[ts] = user
        sent_at[ts] = time.perf_counter()
        await fake.push(envelope("events_api", event_callback(event)))

    started = time.perf_counter()
    await _paced(n, seconds, send)
    deadline = time.monotonic() + timeout
    while sum(len(v) for v in decisions.values()) < n and time.monotonic() < deadline:
        await asyncio.sleep(0.02)
    expected = sum(1 for v in decisions.values() if "reply" in v)
    while time.monotonic() < deadline:
        posts = [c for c in fake.calls[before_calls:] if c.method == "chat.postMessage"]
        if len(posts) >= expected:
            break
        await asyncio.sleep(0.02)
    await harness.bridge.drain(timeout=5)
    await asyncio.sleep(0.3)
    answers: Counter = Counter()
    notices: Counter = Counter()
    last = 0.0
    for c in fake.calls[before_calls:]:
        if c.method == "chat.postMessage" and str(c.body.get("thread_ts")) in sent_at:
            ts = str(c.body["thread_ts"])
            answers[ts] += 1
            last = max(last, c.at)
            if answers[ts] == 1:
                result.latencies_ms.append((c.at - sent_at[ts]) * 1000)
        elif c.method == "chat.postEphemeral":
            notices[str(c.body.get("user"))] += 1
            last = max(last, c.at)
    result.seconds = (last or time.perf_counter()) - started
    result.answers = {ts: answers.get(ts, 0) for ts in sent_at}
    result.notices = dict(notices)
    for ts in sent_at:
        result.outcomes.update(decisions.get(ts, ["unaccounted"]))
        if not decisions.get(ts):
            result.unaccounted.append(ts)
    return result
