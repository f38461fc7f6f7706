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


async def start_failure(tmp_path: Path, command: str, **env: str) -> tuple[list[str], float]:
    """Run `gpu-garden COMMAND` that cannot start: its stderr lines, and how long it stayed up after
    its last line before the SIGTERM that ends its pause."""
    full = {
        **{k: v for k, v in os.environ.items() if not k.startswith("GPU_GARDEN_")},
        "GPU_GARDEN_LOG_FORMAT": "json",
        "GPU_GARDEN_DATABASE": str(tmp_path / "db.sqlite3"),
        **env,
    }
    proc = await asyncio.create_subprocess_exec(
        sys.executable, "-m", "adapters.cli", command, cwd=ROOT, env=full, stderr=asyncio.subprocess.PIPE
    )
    assert proc.stderr is not None
    lines: list[str] = []
    try:
        while not any("waiting 30 s before exiting" in line for line in lines):
            line = await asyncio.wait_for(proc.stderr.readline(), 30)
            assert line, f"exited without the pause: {lines}"
            lines.append(line.decode().rstrip("\n"))
        await asyncio.sleep(0.5)
        still_up = proc.returncode is None
        proc.send_signal(signal.SIGTERM)
        code = await asyncio.wait_for(proc.wait(), 10)
        lines += [line for line in (await proc.stderr.read()).decode().splitlines() if line]
    finally:
        if proc.returncode is None:
            proc.kill()
            await proc.wait()
    assert still_up and code == 1, lines
    return lines, 0.5


def _json_lines(lines: list[str]) -> list[dict]:
    import json

    return [json.loads(line) for line in lines]  # every line is one JSON object: no plain text


async def test_bad_knowledge_pack_at_start_is_one_json_line_then_the_pause(tmp_path):
    packs = tmp_path / "packs"
    packs.mkdir()
    (packs / "broken.yaml").write_text("engine: custom\nsignatures:\n  - id: x\n    patterns: ['ok']\n")
    lines, _ = await start_failure(
        tmp_path, "discord", GPU_GARDEN_DISCORD_TOKEN="fake-token", GPU_GARDEN_KNOWLEDGE_DIR=str(packs)
    )
    records = _json_lines(lines)
    assert not any("Traceback" in line for line in lines)
    (error,) = [r for r in records if r["message"].startswith("cannot start:")]
    assert error["level"] == "ERROR" and "broken.yaml" in error["message"]


async def test_invalid_settings_before_connecting_are_json_and_pause(tmp_path):
    lines, _ = await start_failure(tmp_path, "slack", GPU_GARDEN_LIMITS_USER_PER_MINUTE="zero")
    records = _json_lines(lines)
    assert any(r["message"].startswith("cannot start: settings:") for r in records)


async def test_wrong_kind_slack_app_token_stops_at_start(tmp_path):
    from tests.adapters.slack.fake_slack import BOT_TOKEN, FakeSlack

    async with FakeSlack() as slack:
        lines, _ = await start_failure(
            tmp_path,
            "slack",
            GPU_GARDEN_SLACK_BOT_TOKEN=BOT_TOKEN,
            GPU_GARDEN_SLACK_APP_TOKEN="xoxb-1-not-an-app-token",
            GPU_GARDEN_SLACK_API_URL=slack.api_url,
        )
        assert slack.connections == 0 and not slack.called("apps.connections.open")
    records = _json_lines(lines)
    assert any("GPU_GARDEN_SLACK_APP_TOKEN is a bot token (xoxb-)" in r["message"] for r in records)
    assert not any("xoxb-1-not-an-app-token" in line for line in lines)
