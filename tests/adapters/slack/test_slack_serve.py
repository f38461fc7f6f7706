"""``serve()`` as the runner calls it: Socket Mode and HTTP mode, health, clean shutdown."""

from __future__ import annotations

import asyncio
import socket as socketlib

import aiohttp
import pytest

from adapters.slack import SlackConfigError, serve
from bot.health import Health
from tests.adapters.slack.conftest import make_settings
from tests.adapters.slack.fake_slack import envelope, event_callback, message_event

PASTE = (
    "ValueError: The model's max seq len (131072) is larger than the maximum number of tokens that can be "
    "stored in KV cache (5728). Try increasing gpu_memory_utilization or decreasing max_model_len when "
    "initializing the engine."
)


async def stop(task: asyncio.Task) -> None:
    task.cancel()
    with pytest.raises(asyncio.CancelledError):
        await task


async def test_socket_mode_envelope_is_acked_and_answered(fake, service):
    health = Health()
    health.started("slack")
    task = asyncio.create_task(serve(make_settings(fake), service, health, health_poll=0.05))
    try:
        await fake.wait_connected()
        (opened,) = fake.called("apps.connections.open")
        assert opened.headers["Authorization"] == "Bearer xapp-1-test-token"
        env = envelope("events_api", event_callback(message_event(PASTE, ts="1700000200.000100")))
        await fake.push(env)
        await fake.wait_until(lambda: any(a["envelope_id"] == env["envelope_id"] for a in fake.acks))
        (post,) = await fake.wait_for("chat.postMessage")
        assert post.body["thread_ts"] == "1700000200.000100" and "5,728" in post.body["text"]
        await fake.wait_until(lambda: health.snapshot().get("slack"))
    finally:
        await stop(task)
    await fake.wait_until(lambda: not fake._sockets)  # the WebSocket was closed on the way out


async def test_http_mode_serves_signed_requests_and_healthz(fake, service):
    with socketlib.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    settings = make_settings(fake, mode="http", http_host="127.0.0.1", http_port=port)
    health = Health()
    task = asyncio.create_task(serve(settings, service, health))
    try:
        async with aiohttp.ClientSession() as session:

            async def healthy() -> bool:
                try:
                    async with session.get(f"http://127.0.0.1:{port}/healthz") as resp:
                        return resp.status == 200
                except aiohttp.ClientConnectionError:
                    return False

            for _ in range(200):
                if await healthy():
                    break
                await asyncio.sleep(0.01)
            else:
                raise AssertionError("HTTP mode never came up")
            async with session.post(
                f"http://127.0.0.1:{port}/slack/events",
                data=b"{}",
                headers={"X-Slack-Signature": "v0=bad", "X-Slack-Request-Timestamp": "1"},
            ) as resp:
                assert resp.status == 401
        assert health.snapshot() == {"slack": True}
    finally:
        await stop(task)


async def test_rejected_token_stops_with_a_clear_error(fake, service):
    fake.fail("auth.test", status=200, body={"ok": False, "error": "invalid_auth"})
    health = Health()
    with pytest.raises(SlackConfigError, match="invalid_auth"):
        await serve(make_settings(fake), service, health)
    assert health.snapshot() == {"slack": False}


async def test_missing_tokens_are_named(fake, service):
    with pytest.raises(SlackConfigError, match="APP_TOKEN"):
        await serve(make_settings(fake, app_token=None), service, Health())
    with pytest.raises(SlackConfigError, match="SIGNING_SECRET"):
        await serve(make_settings(fake, mode="http", signing_secret=None), service, Health())
