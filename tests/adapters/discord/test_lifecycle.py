"""serve() and sync_commands(): health reporting, reconnects, clean cancellation, command sync, and
the end-to-end cases that need a special service (long replies, what the service is given)."""

from __future__ import annotations

import asyncio

import discord
import pytest

from adapters.discord import serve, sync_commands
from bot.health import Health
from bot.service import GardenService
from bot.storage import Storage
from tests.adapters.discord.conftest import KV_PASTE, eventually, make_settings
from tests.adapters.discord.fake_discord import APP_ID, BOT_ID, GUILD_ID, QUIET_CHANNEL_ID

COMMANDS = {"vram", "triage", "Triage this error"}


def _pending_tasks() -> set[asyncio.Task]:
    return {t for t in asyncio.all_tasks() if t is not asyncio.current_task() and not t.done()}


async def test_serve_reports_health_and_closes_cleanly_on_cancel(fake_discord, tmp_path, monkeypatch):
    import discord.gateway
    import discord.http

    # the settings' endpoint overrides are what aim the client at the fake here
    monkeypatch.setattr(discord.http.Route, "BASE", "http://127.0.0.1:9/api/v10")
    monkeypatch.setattr(discord.gateway.DiscordWebSocket, "DEFAULT_GATEWAY", None)
    settings = make_settings(api_base=fake_discord.api_base, gateway_url=fake_discord.gateway_url)
    storage = Storage(tmp_path / "db")
    service = GardenService(storage=storage)
    health = Health()
    before = _pending_tasks()
    task = asyncio.create_task(serve(settings, service, health))
    assert await eventually(lambda: health.snapshot() == {"discord": True}, timeout=10)
    assert not fake_discord.find("PUT", r"/applications/.*")  # commands are not synced on start

    await fake_discord.drop_connection()  # a network blip: disconnected, then resumed
    assert await eventually(lambda: fake_discord.resumes == 1)
    assert await eventually(lambda: health.snapshot() == {"discord": True})

    task.cancel()
    with pytest.raises(asyncio.CancelledError):
        await task
    assert health.snapshot() == {"discord": False}
    await asyncio.sleep(0)
    assert _pending_tasks() <= before
    storage.close()


async def test_disconnect_is_reported(garden):
    states: list[bool] = []
    original = garden.health.disconnected

    def spy(platform: str) -> None:
        states.append(False)
        original(platform)

    garden.health.disconnected = spy  # type: ignore[method-assign]
    await garden.fake.drop_connection()
    assert await eventually(lambda: garden.fake.resumes == 1)
    assert states == [False]
    assert await eventually(lambda: garden.health.snapshot() == {"discord": True})


async def test_serve_explains_a_refused_message_content_intent(fake_discord, caplog):
    fake_discord.close_on_identify = 4014
    health = Health()
    with pytest.raises(discord.PrivilegedIntentsRequired):
        await asyncio.wait_for(serve(make_settings(), GardenService(), health), 10)
    assert "Privileged Gateway Intents" in caplog.text
    assert health.snapshot() == {"discord": False}


async def test_sync_commands_to_one_guild(fake_discord):
    code = await sync_commands(make_settings(), str(GUILD_ID))
    assert code == 0
    (put,) = fake_discord.find("PUT", rf"/applications/{APP_ID}/guilds/{GUILD_ID}/commands")
    assert {c["name"] for c in put.json} == COMMANDS
    vram = next(c for c in put.json if c["name"] == "vram")
    options = {o["name"]: o for o in vram["options"]}
    assert set(options) == {
        "gpu", "model", "engine", "context", "kv_cache_dtype", "gpus", "utilization", "ephemeral"
    }  # fmt: skip
    assert options["gpu"]["autocomplete"] and options["model"]["autocomplete"]
    assert [c["value"] for c in options["engine"]["choices"]] == ["vllm", "llama.cpp", "ollama", "sglang"]
    assert options["ephemeral"]["type"] == 5
    menu = next(c for c in put.json if c["name"] == "Triage this error")
    assert menu["type"] == 3
    assert not fake_discord.find("GET", "/gateway.*")  # logs in over REST only, no gateway session


async def test_sync_commands_globally_and_failures(fake_discord):
    assert await sync_commands(make_settings(), None) == 0
    assert fake_discord.find("PUT", rf"/applications/{APP_ID}/commands")
    fake_discord.fail[f"PUT /applications/{APP_ID}/guilds/1/commands"] = (
        403,
        {"message": "Missing Access", "code": 50001},
    )
    assert await sync_commands(make_settings(), "1") == 1


async def test_a_too_long_reply_is_sent_as_reply_md(garden, monkeypatch):
    triage = garden.service.bot.triage

    def verbose(paste, addressed=True):
        reply = triage(paste, addressed)
        if reply is not None:
            reply.notes += [f"note {i}: " + "a long assumption " * 10 for i in range(60)]
            reply.summary += " and a very long key point" * 200  # beyond an embed's description
        return reply

    monkeypatch.setattr(garden.service.bot, "triage", verbose)
    fake = garden.fake
    await fake.dispatch("MESSAGE_CREATE", fake.message(KV_PASTE))
    (reply,) = await fake.wait_for("POST", r"/channels/\d+/messages")
    embeds = reply.json["embeds"]
    assert "reply.md" in embeds[0]["description"] and "5,728" in embeds[0]["title"]
    ((name, data),) = reply.files.values()
    assert name == "reply.md"
    text = data.decode()
    assert text.startswith("## vLLM") and "note 59" in text and "--max-model-len" in text
    assert reply.json["allowed_mentions"] == {"parse": []}


async def test_the_service_gets_the_text_without_our_mention(garden, monkeypatch):
    seen = []
    handle = garden.service.handle

    async def spy(msg, event_id=None, edited=False):
        seen.append(msg)
        return await handle(msg, event_id=event_id, edited=edited)

    monkeypatch.setattr(garden.service, "handle", spy)
    fake = garden.fake
    message = fake.message(
        f"<@{BOT_ID}> why?\n{KV_PASTE}", channel_id=QUIET_CHANNEL_ID, mentions=[fake.mention_of_bot()]
    )
    await fake.dispatch("MESSAGE_CREATE", message)
    await fake.wait_for("POST", r"/channels/\d+/messages")
    (msg,) = seen
    assert msg.text == f"why?\n{KV_PASTE}"
    assert msg.mentioned and not msg.is_bot and not msg.is_dm
    assert (msg.platform, msg.channel_id, msg.message_id) == ("discord", str(QUIET_CHANNEL_ID), message["id"])
