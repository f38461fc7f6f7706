"""Fixtures: a fake Discord on loopback and the real client (create_bot) connected to it."""

from __future__ import annotations

import asyncio
import contextlib
import sqlite3
from collections.abc import AsyncIterator, Callable
from dataclasses import dataclass
from pathlib import Path

import pytest

from adapters.discord import GardenClient, create_bot
from bot.health import Health
from bot.service import GardenService
from bot.settings import DiscordSettings, Limits, Settings
from bot.storage import Storage
from tests.adapters.discord.fake_discord import CHANNEL_ID, FakeDiscord, point_discord_py_at

TOKEN = "fake-token-for-tests"
KV_PASTE = (
    "ValueError: The model's max seq len (131072) is larger than the maximum number of tokens that can be "
    "stored in KV cache (5728). Try increasing gpu_memory_utilization or decreasing max_model_len when "
    "initializing the engine."
)


@dataclass
class Garden:
    fake: FakeDiscord
    client: GardenClient
    service: GardenService
    storage: Storage
    health: Health
    db: Path


def make_settings(**discord: object) -> Settings:
    values: dict[str, object] = {"token": TOKEN, "channels": [str(CHANNEL_ID)]}
    values.update(discord)
    return Settings(
        _env_file=None,  # type: ignore[call-arg]
        discord=DiscordSettings(**values),  # type: ignore[arg-type]
        limits=Limits(user_per_minute=1000, channel_per_minute=1000),
    )


def db_rows(db: Path, sql: str) -> list[tuple]:
    with contextlib.closing(sqlite3.connect(db)) as conn:
        return conn.execute(sql).fetchall()


async def eventually(check: Callable[[], bool], timeout: float = 5.0) -> bool:
    """Poll ``check`` until it holds (the client's work after its last REST call is asynchronous)."""
    deadline = asyncio.get_running_loop().time() + timeout
    while not check():
        if asyncio.get_running_loop().time() > deadline:
            return False
        await asyncio.sleep(0.01)
    return True


@pytest.fixture
async def fake_discord(monkeypatch: pytest.MonkeyPatch) -> AsyncIterator[FakeDiscord]:
    fake = await FakeDiscord().start()
    point_discord_py_at(fake, monkeypatch.setattr)
    try:
        yield fake
    finally:
        await fake.stop()


@contextlib.asynccontextmanager
async def running_garden(
    fake: FakeDiscord, db: Path, *, limits: Limits | None = None, **discord: object
) -> AsyncIterator[Garden]:
    """The real client, started against the fake, READY; closed (no task, no socket left) on exit."""
    settings = make_settings(**discord)
    if limits is not None:
        settings = settings.model_copy(update={"limits": limits})
    storage = Storage(db)
    service = GardenService(storage=storage, limits=settings.limits)
    health = Health()
    client = create_bot(settings, service, health, guild_ready_timeout=0.05)
    task = asyncio.create_task(client.start(TOKEN), name="discord-client")
    try:
        await asyncio.wait_for(client.wait_until_ready(), 10)
        yield Garden(fake, client, service, storage, health, db)
    finally:
        await client.close()
        with contextlib.suppress(asyncio.CancelledError):
            await asyncio.wait_for(task, 5)
        storage.close()


@pytest.fixture
async def garden(fake_discord: FakeDiscord, tmp_path: Path) -> AsyncIterator[Garden]:
    async with running_garden(fake_discord, tmp_path / "garden.sqlite3") as g:
        yield g
