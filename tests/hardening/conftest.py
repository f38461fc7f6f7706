"""Fixtures for the hardening suite: the loopback fakes with faults on demand (faulty.py), the real
discord.py client and the real Bolt app against them, each with a real GardenService and SQLite file."""

from __future__ import annotations

import contextlib
from collections.abc import AsyncIterator
from typing import Any

import pytest

from bot.service import GardenService
from bot.settings import Limits
from bot.storage import Storage
from tests.adapters.discord.fake_discord import point_discord_py_at
from tests.adapters.slack.conftest import SocketHarness, _close_socket, _socket
from tests.hardening.faulty import FaultyDiscord, FaultySlack

OPEN = Limits(user_per_minute=100_000, channel_per_minute=100_000)


@pytest.fixture
async def fake_discord(monkeypatch: pytest.MonkeyPatch) -> AsyncIterator[FaultyDiscord]:
    fake = await FaultyDiscord().start()
    point_discord_py_at(fake, monkeypatch.setattr)
    try:
        yield fake
    finally:
        await fake.stop()


@pytest.fixture
async def fake_slack() -> AsyncIterator[FaultySlack]:
    async with FaultySlack() as slack:
        yield slack


@pytest.fixture
async def slack_factory(fake_slack, tmp_path):
    """``await make(limits=..., **slack_settings)``: the Bolt app in Socket Mode against the fake, with a
    service and SQLite file of its own; all closed at the end."""
    made: list[SocketHarness] = []

    async def make(limits: Limits | None = None, service: GardenService | None = None, **slack: Any):
        svc = service or GardenService(
            storage=Storage(tmp_path / f"slack{len(made)}.sqlite3"), limits=limits or OPEN
        )
        h = await _socket(fake_slack, svc, **slack)
        made.append(h)
        return h

    yield make
    for h in made:
        await _close_socket(h)
        if h.bridge.service.storage is not None:
            with contextlib.suppress(Exception):
                h.bridge.service.storage.close()
