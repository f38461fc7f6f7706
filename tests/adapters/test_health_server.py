"""The real /healthz and /metrics server on 127.0.0.1, asked over real HTTP, with a real SQLite file."""

from __future__ import annotations

import socket

import aiohttp
import pytest
from prometheus_client.parser import text_string_to_metric_families

from adapters.health_server import bound_port, start_health_server, stop_health_server
from bot.health import Health
from bot.message import IncomingMessage
from bot.metrics import Metrics
from bot.service import GardenService
from bot.settings import Settings
from bot.storage import Storage

KV = "ValueError: The model's max seq len (4096) is larger than the maximum number of tokens that can be stored in KV cache (3664)."


@pytest.fixture
def settings(tmp_path):
    return Settings(_env_file=None, database=tmp_path / "bot.sqlite3", health_port=0)


async def get(port: int, path: str) -> tuple[int, str, str]:
    async with (
        aiohttp.ClientSession() as session,
        session.get(f"http://127.0.0.1:{port}{path}") as resp,
    ):
        return resp.status, resp.headers.get("Content-Type", ""), await resp.text()


async def get_json(port: int, path: str) -> tuple[int, dict]:
    async with aiohttp.ClientSession() as session, session.get(f"http://127.0.0.1:{port}{path}") as resp:
        return resp.status, await resp.json()


async def test_healthz_follows_connections_and_database(settings, tmp_path):
    health = Health()
    health.started("discord")
    storage = Storage(settings.database)
    runner = await start_health_server(settings, health, Metrics(), storage)
    try:
        port = bound_port(runner)
        assert runner.addresses[0][0] == "127.0.0.1"  # loopback unless told otherwise

        status, body = await get_json(port, "/healthz")
        assert status == 503 and body["status"] == "unhealthy"  # started, not yet connected
        assert body["platforms"] == {"discord": False}

        health.connected("discord")
        status, body = await get_json(port, "/healthz")
        assert status == 200
        assert body == {"status": "ok", "platforms": {"discord": True}, "database": "ok"}
        assert settings.database.is_file()  # the check really opened the SQLite file

        health.disconnected("discord")
        status, body = await get_json(port, "/healthz")
        assert status == 503 and body["platforms"] == {"discord": False}
        assert body["offline_seconds"] >= 0

        health.connected("discord")
        assert (await get_json(port, "/healthz"))[0] == 200
        status, _, _ = await get(port, "/nothing-here")
        assert status == 404
    finally:
        await stop_health_server(runner)
        storage.close()
    with pytest.raises(aiohttp.ClientConnectionError):
        await get(port, "/healthz")  # stopped means stopped


async def test_unavailable_database_is_unhealthy(settings, tmp_path):
    blocker = tmp_path / "file"
    blocker.write_text("x")
    storage = Storage(blocker / "sub" / "bot.sqlite3")  # its folder cannot be created
    health = Health()
    health.connected("slack")
    runner = await start_health_server(settings, health, Metrics(), storage)
    try:
        status, body = await get_json(bound_port(runner), "/healthz")
        assert status == 503
        assert body["platforms"] == {"slack": True} and body["database"] == "unavailable"
    finally:
        await stop_health_server(runner)


async def test_metrics_endpoint_serves_real_counts(settings):
    health = Health()
    health.connected("discord")
    storage = Storage(settings.database)
    metrics = Metrics()
    service = GardenService(storage=storage)
    outcome = await service.handle(
        IncomingMessage(platform="discord", text=KV, message_id="m1", user_id="u1", channel_id="c1")
    )
    metrics.observe_outcome("discord", outcome)
    metrics.feedback("discord", outcome.reply.signature, helpful=False)
    runner = await start_health_server(settings, health, metrics, storage)
    try:
        status, content_type, text = await get(bound_port(runner), "/metrics")
    finally:
        await stop_health_server(runner)
        storage.close()
    assert status == 200
    assert content_type.startswith("text/plain") and "version=0.0.4" in content_type
    samples = {
        (s.name, tuple(sorted(s.labels.items()))): s.value
        for family in text_string_to_metric_families(text)
        for s in family.samples
    }
    assert samples[("gpu_garden_messages_total", (("outcome", "reply"), ("platform", "discord")))] == 1
    assert samples[("gpu_garden_platform_up", (("platform", "discord"),))] == 1
    assert samples[("gpu_garden_database_failures_total", ())] == 0
    vote = (("platform", "discord"), ("signature", outcome.reply.signature), ("vote", "not_helpful"))
    assert samples[("gpu_garden_feedback_total", vote)] == 1


async def test_port_from_settings_and_busy_port(settings):
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        free = probe.getsockname()[1]
    settings = settings.model_copy(update={"health_port": free})
    runner = await start_health_server(settings, Health(), Metrics(), None)
    try:
        assert bound_port(runner) == free
        status, body = await get_json(free, "/healthz")
        assert status == 503 and body["database"] == "not configured"  # no platform started
        with pytest.raises(OSError):
            await start_health_server(settings, Health(), Metrics(), None)  # the port is taken
    finally:
        await stop_health_server(runner)


async def test_needs_a_port(settings):
    with pytest.raises(ValueError, match="GPU_GARDEN_HEALTH_PORT"):
        await start_health_server(
            settings.model_copy(update={"health_port": None}), Health(), Metrics(), None
        )
