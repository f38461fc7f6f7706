"""The real `gpu-garden discord` process against the fake Discord on 127.0.0.1: /metrics counts what
it answered, and SIGTERM while an answer is being posted lets the answer out before it exits 0."""

from __future__ import annotations

import asyncio
import contextlib
import os
import signal
import socket
import sys
from collections.abc import AsyncIterator
from pathlib import Path

import aiohttp
import pytest
from prometheus_client.parser import text_string_to_metric_families

from tests.adapters.discord.conftest import db_rows
from tests.adapters.discord.fake_discord import CHANNEL_ID, FakeDiscord

ROOT = Path(__file__).resolve().parents[2]
KV = (
    "ValueError: The model's max seq len (131072) is larger than the maximum number of tokens that can be "
    "stored in KV cache (5728). Try increasing gpu_memory_utilization or decreasing max_model_len when "
    "initializing the engine."
)


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@pytest.fixture
async def fake() -> AsyncIterator[FakeDiscord]:
    fake = await FakeDiscord().start()
    try:
        yield fake
    finally:
        await fake.stop()


@contextlib.asynccontextmanager
async def bot_process(fake: FakeDiscord, db: Path, port: int) -> AsyncIterator[asyncio.subprocess.Process]:
    env = {
        **{k: v for k, v in os.environ.items() if not k.startswith("GPU_GARDEN_")},
        "GPU_GARDEN_DISCORD_TOKEN": "fake-token-for-tests",
        "GPU_GARDEN_DISCORD_CHANNELS": str(CHANNEL_ID),
        "GPU_GARDEN_DISCORD_API_BASE": fake.api_base,
        "GPU_GARDEN_DISCORD_GATEWAY_URL": fake.gateway_url,
        "GPU_GARDEN_DATABASE": str(db),
        "GPU_GARDEN_HEALTH_PORT": str(port),
        "GPU_GARDEN_LIMITS_USER_PER_MINUTE": "1000",
    }
    proc = await asyncio.create_subprocess_exec(
        sys.executable, "-m", "adapters.cli", "discord", cwd=ROOT, env=env, stderr=asyncio.subprocess.PIPE
    )
    try:
        for _ in range(600):
            if fake.identify is not None and fake._ws is not None:
                break
            if proc.returncode is not None:
                raise AssertionError((await proc.stderr.read()).decode())  # type: ignore[union-attr]
            await asyncio.sleep(0.05)
        await asyncio.sleep(0.3)  # READY handled
        yield proc
    finally:
        if proc.returncode is None:
            proc.kill()
            await proc.wait()


async def scrape(port: int) -> dict[tuple[str, tuple[tuple[str, str], ...]], float]:
    async with aiohttp.ClientSession() as session, session.get(f"http://127.0.0.1:{port}/metrics") as resp:
        text = await resp.text()
    out = {}
    for family in text_string_to_metric_families(text):
        for sample in family.samples:
            out[(sample.name, tuple(sorted(sample.labels.items())))] = sample.value
    return out


async def test_metrics_count_messages_findings_replies_and_platform_errors(fake, tmp_path):
    port = free_port()
    async with bot_process(fake, tmp_path / "db.sqlite3", port):
        first, unknown, broken = fake.message(KV), fake.message("hello, all good here"), fake.message(KV)
        await fake.dispatch("MESSAGE_CREATE", first)
        await fake.wait_for("POST", rf"/channels/{first['id']}/messages", timeout=10)
        await fake.dispatch("MESSAGE_CREATE", first)  # a replayed event
        await fake.dispatch("MESSAGE_CREATE", unknown)
        fake.fail[f"POST /channels/{CHANNEL_ID}/messages/{broken['id']}/threads"] = (403, {"code": 50013})
        fake.fail[f"POST /channels/{CHANNEL_ID}/messages"] = (
            403,
            {"message": "Missing Permissions", "code": 50013},
        )
        await fake.dispatch("MESSAGE_CREATE", broken)
        await fake.wait_for("POST", rf"/channels/{CHANNEL_ID}/messages", timeout=10)
        await fake.settle(0.5)
        got = await scrape(port)

    def value(name: str, **labels: str) -> float | None:
        return got.get((name, tuple(sorted(labels.items()))))

    assert value("gpu_garden_messages_total", platform="discord", outcome="reply") == 2.0
    assert value("gpu_garden_messages_total", platform="discord", outcome="duplicate") == 1.0
    assert value("gpu_garden_messages_total", platform="discord", outcome="ignored") == 1.0
    finding = {
        "platform": "discord",
        "signature": "vllm.kv_cache_too_small.v0",
        "category": "kv_cache_too_small",
    }
    assert value("gpu_garden_findings_total", **finding) == 2.0
    assert value("gpu_garden_replies_total", platform="discord", kind="diagnosis") == 2.0
    assert value("gpu_garden_reply_latency_seconds_count", platform="discord") == 2.0
    assert value("gpu_garden_platform_errors_total", platform="discord", kind="send") == 1.0


async def test_sigterm_mid_post_lets_the_answer_out_and_exits_0(fake, tmp_path):
    db = tmp_path / "db.sqlite3"
    async with bot_process(fake, db, free_port()) as proc:
        source = fake.message(KV)
        fake.slow("POST", rf"/channels/{source['id']}/messages", 1.5)
        await fake.dispatch("MESSAGE_CREATE", source)
        await fake.arrival("POST", rf"/channels/{source['id']}/messages", timeout=10)
        proc.send_signal(signal.SIGTERM)
        code = await asyncio.wait_for(proc.wait(), 15)
        stderr = (await proc.stderr.read()).decode()  # type: ignore[union-attr]
    assert code == 0, stderr
    assert len(fake.find("POST", rf"/channels/{source['id']}/messages")) == 1
    assert fake.find("POST", rf"/channels/{source['id']}/messages")[0].response is not None
    (row,) = db_rows(db, "SELECT reply_id, settled FROM replies")
    assert row[0] is not None and row[1] == 1
