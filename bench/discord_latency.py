"""Discord adapter latency on loopback: the fake Discord (tests/adapters/discord/fake_discord.py) and the
real client (``adapters.discord.serve``: discord.py, real GardenService, real detector, SQLite storage).

For each of N pasted vLLM errors in a passive channel it measures the time from the MESSAGE_CREATE
frame being sent on the fake gateway to the reply's ``POST /channels/<thread>/messages`` arriving at
the fake REST API (after the thread was created), and prints p50 / p99 and the machine.

    .venv/bin/python bench/discord_latency.py              # 200 pastes, one at a time
    .venv/bin/python bench/discord_latency.py -n 500 -c 8  # 500 pastes, 8 in flight
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

from adapters.discord import serve  # noqa: E402
from bot.health import Health  # noqa: E402
from bot.service import GardenService  # noqa: E402
from bot.settings import DiscordSettings, Limits, Settings  # noqa: E402
from bot.storage import Storage  # noqa: E402
from tests.adapters.discord.fake_discord import CHANNEL_ID, USER_ID, FakeDiscord, _user  # noqa: E402

BUDGET_SECONDS = 55.0


def paste(i: int) -> str:
    return (
        f"INFO 06-01 12:00:{i % 60:02d} [worker.py:200] Loading model weights took 14.{i % 10} GB\n"
        f"ValueError: The model's max seq len (131072) is larger than the maximum number of tokens that "
        f"can be stored in KV cache ({5000 + i}). Try increasing gpu_memory_utilization or decreasing "
        f"max_model_len when initializing the engine."
    )


async def run(n: int, concurrency: int, warmup: int) -> list[float]:
    fake = await FakeDiscord().start()
    limits = Limits(user_per_minute=1_000_000, channel_per_minute=1_000_000)
    settings = Settings(
        _env_file=None,  # type: ignore[call-arg]
        discord=DiscordSettings(
            token="bench-token",  # type: ignore[arg-type]
            channels=[str(CHANNEL_ID)],
            api_base=fake.api_base,
            gateway_url=fake.gateway_url,
        ),
        limits=limits,
    )
    latencies: list[float] = []
    health = Health()
    with tempfile.TemporaryDirectory() as tmp:
        service = GardenService(storage=Storage(Path(tmp) / "bench.sqlite3"), limits=limits)
        task = asyncio.create_task(serve(settings, service, health))
        try:
            deadline = time.monotonic() + 15
            while health.snapshot().get("discord") is not True:
                if task.done() or time.monotonic() > deadline:
                    raise RuntimeError("the client did not connect to the fake Discord")
                await asyncio.sleep(0.01)
            sem = asyncio.Semaphore(concurrency)
            deadline = time.monotonic() + BUDGET_SECONDS

            async def one(i: int, record: bool) -> None:
                async with sem:
                    if time.monotonic() > deadline:
                        return
                    author = _user(USER_ID + 1 + i % 97, f"user{i % 97}")
                    message = fake.message(paste(i), author=author)
                    sent = time.perf_counter()
                    await fake.dispatch("MESSAGE_CREATE", message)
                    (reply,) = await fake.wait_for("POST", rf"/channels/{message['id']}/messages", timeout=30)
                    if record:
                        latencies.append(reply.at - sent)

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
    return latency_main(__doc__, run, "MESSAGE_CREATE sent -> reply POST received")


if __name__ == "__main__":
    raise SystemExit(main())
