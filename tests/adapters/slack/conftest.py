"""Fixtures for the Slack adapter: a fake Slack on loopback, the real Bolt app in Socket Mode or HTTP
mode against it, a real GardenService with a tmp_path SQLite database, and a leak check."""

from __future__ import annotations

import asyncio
import json
import time
from dataclasses import dataclass
from typing import Any

import aiohttp
import pytest
from slack_bolt.adapter.socket_mode.async_handler import AsyncSocketModeHandler
from slack_sdk.signature import SignatureVerifier

from adapters.slack.app import SlackBridge, start_http
from bot.service import GardenService
from bot.settings import Limits, Settings, SlackSettings
from bot.storage import Storage
from tests.adapters.slack.fake_slack import (
    APP_TOKEN,
    BOT_TOKEN,
    FakeSlack,
    envelope,
    event_callback,
)

SIGNING_SECRET = "test-signing-secret"
CHANNEL = "CGARDEN"


def make_settings(fake: FakeSlack, limits: Limits | None = None, **slack: Any) -> Settings:
    values: dict[str, Any] = {
        "bot_token": BOT_TOKEN,
        "app_token": APP_TOKEN,
        "signing_secret": SIGNING_SECRET,
        "api_url": fake.api_url,
        "channels": [CHANNEL],
    }
    values.update(slack)
    return Settings(slack=SlackSettings(**values), limits=limits or Limits())


@pytest.fixture(autouse=True)
async def no_leftover_tasks():
    """Every test must end with its listeners, sockets and servers closed: no task left running."""
    yield
    current = asyncio.current_task()
    deadline = time.monotonic() + 2.0
    while True:
        left = [t for t in asyncio.all_tasks() if t is not current and not t.done()]
        if not left or time.monotonic() > deadline:
            break
        await asyncio.sleep(0.01)
    assert not left, f"tasks left running: {[t.get_coro() for t in left]}"


@pytest.fixture
async def fake():
    async with FakeSlack() as slack:
        yield slack


@pytest.fixture
def service(tmp_path):
    svc = GardenService(storage=Storage(tmp_path / "garden.sqlite3"))
    yield svc
    svc.storage.close()


@dataclass
class SocketHarness:
    fake: FakeSlack
    bridge: SlackBridge
    handler: AsyncSocketModeHandler

    async def send(self, kind: str, payload: dict[str, Any], **envelope_fields: Any) -> str:
        env = envelope(kind, payload)
        env.update(envelope_fields)
        await self.fake.push(env)
        return env["envelope_id"]

    async def event(self, event: dict[str, Any], event_id: str | None = None) -> str:
        return await self.send("events_api", event_callback(event, event_id))

    async def acked(self, envelope_id: str) -> dict[str, Any]:
        return await self.fake.wait_until(
            lambda: next((a for a in self.fake.acks if a["envelope_id"] == envelope_id), None)
        )

    async def settled(self, count: int, timeout: float = 10.0) -> None:
        """Wait until ``count`` listeners have finished, then for everything they started."""
        await self.fake.wait_until(lambda: self.bridge.completed >= count, timeout)
        await self.bridge.drain()


async def _socket(fake: FakeSlack, service: GardenService, **slack: Any):
    bridge = SlackBridge(make_settings(fake, **slack), service)
    handler = AsyncSocketModeHandler(bridge.app, APP_TOKEN)
    await handler.connect_async()
    await fake.wait_connected()
    return SocketHarness(fake, bridge, handler)


async def _close_socket(h: SocketHarness) -> None:
    await h.bridge.drain()
    await h.handler.close_async()
    await h.bridge.aclose()


@pytest.fixture
async def socket(fake, service):
    h = await _socket(fake, service)
    yield h
    await _close_socket(h)


@pytest.fixture
async def socket_factory(fake, service):
    """For tests that need other settings (brief, not passive, small limits) or another service."""
    made: list[SocketHarness] = []

    async def make(svc: GardenService | None = None, **slack: Any) -> SocketHarness:
        h = await _socket(fake, svc or service, **slack)
        made.append(h)
        return h

    yield make
    for h in made:
        await _close_socket(h)


@dataclass
class HttpHarness:
    fake: FakeSlack
    bridge: SlackBridge
    url: str
    session: aiohttp.ClientSession

    async def post(self, body: bytes, content_type: str, *, secret: str = SIGNING_SECRET, **headers: str):
        ts = str(int(time.time()))
        signature = SignatureVerifier(secret).generate_signature(timestamp=ts, body=body.decode())
        all_headers = {
            "Content-Type": content_type,
            "X-Slack-Request-Timestamp": ts,
            "X-Slack-Signature": signature,
            **headers,
        }
        async with self.session.post(self.url, data=body, headers=all_headers) as resp:
            return resp.status, await resp.text()

    async def event(self, payload: dict[str, Any], **headers: str):
        return await self.post(json.dumps(payload).encode(), "application/json", **headers)


@pytest.fixture
async def http(fake, service):
    bridge = SlackBridge(make_settings(fake, mode="http"), service)
    runner = await start_http(bridge, None, "127.0.0.1", 0)
    port = runner.addresses[0][1]
    async with aiohttp.ClientSession() as session:
        yield HttpHarness(fake, bridge, f"http://127.0.0.1:{port}/slack/events", session)
    await bridge.drain()
    await runner.cleanup()
    await bridge.aclose()
