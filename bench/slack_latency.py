"""Slack adapter latency on loopback: the fake Slack (tests/adapters/slack/fake_slack.py) and the real
app in Socket Mode (``adapters.slack.serve``, real GardenService, real detector, SQLite storage).

For each of N pasted vLLM errors it measures the time from the Socket Mode envelope being sent to the
threaded ``chat.postMessage`` arriving at the fake, and prints p50 / p99 and the machine.

    .venv/bin/python bench/slack_latency.py              # 200 pastes, one at a time
    .venv/bin/python bench/slack_latency.py -n 500 -c 8  # 500 pastes, 8 in flight
"""

from __future__ import annotations

import asyncio
import contextlib
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "bench"))

from _machine import latency_main  # noqa: E402

from adapters.slack import serve  # noqa: E402
from bot.health import Health  # noqa: E402
from bot.service import GardenService  # noqa: E402
from bot.settings import Limits, Settings, SlackSettings  # noqa: E402
from bot.storage import Storage  # noqa: E402
from tests.adapters.slack.fake_slack import (  # noqa: E402
    APP_TOKEN,
    BOT_TOKEN,
    FakeSlack,
    envelope,
    event_callback,
    message_event,
)

CHANNEL = "CBENCH"
BUDGET_SECONDS = 55.0


def paste(i: int) -> str:
    return (
        f"INFO 06-01 12:00:{i % 60:02d} [worker.py:200] Loading model weights took 14.{i % 10} GB\n"
        f"ValueError: The model's max seq len (131072) is larger than the maximum number of tokens that "
        f"can be stored in KV cache ({5000 + i}). Try increasing gpu_memory_utilization or decreasing "
        f"max_model_len when initializing the engine."
    )


async def run(n: int, concurrency: int, warmup: int) -> list[float]:
    fake = await FakeSlack().start()
    limits = Limits(user_per_minute=1_000_000, channel_per_minute=1_000_000)
    settings = Settings(
        slack=SlackSettings(
            bot_token=BOT_TOKEN, app_token=APP_TOKEN, api_url=fake.api_url, channels=[CHANNEL]
        ),
        limits=limits,
    )
    latencies: list[float] = []
    with tempfile.TemporaryDirectory() as tmp:
        service = GardenService(storage=Storage(Path(tmp) / "bench.sqlite3"), limits=limits)
        task = asyncio.create_task(serve(settings, service, Health()))
        try:
            await fake.wait_connected(timeout=10)
            posts: dict[str, float] = {}
            seen = 0

            def arrived(ts: str) -> float | None:
                nonlocal seen
                calls = fake.calls
                while seen < len(calls):
                    call = calls[seen]
                    seen += 1
                    if call.method == "chat.postMessage":
                        posts[str(call.body.get("thread_ts"))] = call.at
                return posts.get(ts)

            sem = asyncio.Semaphore(concurrency)
            deadline = time.monotonic() + BUDGET_SECONDS

            async def one(i: int, record: bool) -> None:
                async with sem:
                    if time.monotonic() > deadline:
                        return
                    ts = f"1800000000.{i:06d}"
                    event = message_event(paste(i), channel=CHANNEL, user=f"U{i % 97:03d}", ts=ts)
                    env = envelope("events_api", event_callback(event))
                    sent = time.perf_counter()
                    await fake.push(env)
                    got = await fake.wait_until(lambda: arrived(ts), timeout=30)
                    if record:
                        latencies.append(got - sent)

            for i in range(warmup):
                await one(i, record=False)
            await asyncio.gather(*(one(warmup + i, record=True) for i in range(n)))
        finally:
            task.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await task
            service.storage.close()
            await fake.stop()
    return latencies


def main() -> int:
    return latency_main(__doc__, run, "event sent -> chat.postMessage received")


if __name__ == "__main__":
    raise SystemExit(main())
