"""Application commands and buttons through the real client: /vram (defer, follow-up, autocomplete),
/triage (modal), the "Triage this error" context menu, and feedback buttons stored in SQLite."""

from __future__ import annotations

from tests.adapters.discord.conftest import KV_PASTE, db_rows, eventually, running_garden
from tests.adapters.discord.fake_discord import APP_ID, CHANNEL_ID, USER_ID

CALLBACK = r"/interactions/\d+/[^/]+/callback"
FOLLOWUP = rf"/webhooks/{APP_ID}/[^/]+"
EPHEMERAL = 1 << 6


async def test_vram_is_deferred_then_followed_up_with_the_chart(garden):
    fake = garden.fake
    await fake.dispatch(
        "INTERACTION_CREATE",
        fake.slash(
            "vram", {"gpu": "rtx-4090", "model": "qwen2.5-7b", "engine": "llama.cpp", "context": "32k"}
        ),
    )
    (callback,) = await fake.wait_for("POST", CALLBACK)
    assert callback.json == {"type": 5, "data": {"flags": EPHEMERAL}}  # thinking, only the user sees it
    (followup,) = await fake.wait_for("POST", FOLLOWUP)
    assert followup.query.get("wait") in ("1", "true")
    body = followup.json
    assert body["allowed_mentions"] == {"parse": []}
    embed = body["embeds"][-1]
    assert "RTX 4090" in body["embeds"][0]["title"] and "llama.cpp" in body["embeds"][0]["title"]
    assert "```\nNVIDIA GeForce RTX 4090 memory" in body["embeds"][0]["description"]  # the text bar
    assert embed["image"]["url"] == "attachment://memory.png"
    ((name, png),) = followup.files.values()
    assert name == "memory.png" and png.startswith(b"\x89PNG")
    assert [a["filename"] for a in body["attachments"]] == ["memory.png"]
    labels = [b["label"] for b in body["components"][0]["components"]]
    assert labels == ["Helpful", "Not helpful"]


async def test_vram_public_when_asked(garden):
    fake = garden.fake
    await fake.dispatch(
        "INTERACTION_CREATE",
        fake.slash(
            "vram",
            {
                "gpu": "rtx-4090",
                "model": "qwen2.5-7b",
                "kv_cache_dtype": "fp8",
                "gpus": 1,
                "ephemeral": False,
            },
        ),
    )
    (callback,) = await fake.wait_for("POST", CALLBACK)
    assert callback.json["type"] == 5 and not (callback.json.get("data") or {}).get("flags", 0) & EPHEMERAL
    (followup,) = await fake.wait_for("POST", FOLLOWUP)
    assert not followup.json.get("flags", 0) & EPHEMERAL
    assert "fits" in followup.json["embeds"][0]["title"]


async def test_vram_with_only_a_gpu_is_answered(garden):
    fake = garden.fake
    await fake.dispatch("INTERACTION_CREATE", fake.slash("vram", {"gpu": "rtx-4090"}))
    (followup,) = await fake.wait_for("POST", FOLLOWUP)
    assert followup.json["embeds"][0]["title"]


async def test_vram_bad_input_gets_the_usage(garden):
    fake = garden.fake
    await fake.dispatch(
        "INTERACTION_CREATE",
        fake.slash("vram", {"gpu": "rtx-4090", "model": "qwen2.5-7b", "context": "lots"}),
    )
    (followup,) = await fake.wait_for("POST", FOLLOWUP)
    embed = followup.json["embeds"][0]
    assert embed["title"] == "I could not answer that /vram" and "lots" in embed["description"]


async def test_autocomplete_answers_with_at_most_25_choices(garden):
    fake = garden.fake
    await fake.dispatch("INTERACTION_CREATE", fake.autocomplete("vram", "gpu", "4090"))
    await fake.dispatch("INTERACTION_CREATE", fake.autocomplete("vram", "model", ""))
    first, second = await fake.wait_for("POST", CALLBACK, count=2)
    for call in (first, second):
        assert call.json["type"] == 8
        assert 1 <= len(call.json["data"]["choices"]) <= 25
    by_type = {c.json["data"]["choices"][0]["value"]: c for c in (first, second)}
    assert "rtx-4090" in by_type
    assert all(len(c["name"]) <= 100 for call in (first, second) for c in call.json["data"]["choices"])


async def test_triage_opens_a_modal_and_answers_the_paste(garden):
    fake = garden.fake
    await fake.dispatch("INTERACTION_CREATE", fake.slash("triage"))
    (modal,) = await fake.wait_for("POST", CALLBACK)
    assert modal.json["type"] == 9
    text_input = modal.json["data"]["components"][0]["components"][0]
    assert text_input["style"] == 2 and text_input["max_length"] == 4000
    await fake.dispatch("INTERACTION_CREATE", fake.modal_submit(modal, KV_PASTE))
    _, deferred = await fake.wait_for("POST", CALLBACK, count=2)
    assert deferred.json == {"type": 5, "data": {"flags": EPHEMERAL}}
    (followup,) = await fake.wait_for("POST", FOLLOWUP)
    assert "5,728" in followup.json["embeds"][0]["title"]
    assert followup.json["allowed_mentions"] == {"parse": []}


async def test_context_menu_triages_the_target_once(garden):
    fake = garden.fake
    target = fake.message(f"@everyone help\n{KV_PASTE}", channel_id=CHANNEL_ID)
    await fake.dispatch("INTERACTION_CREATE", fake.context_menu("Triage this error", target))
    (deferred,) = await fake.wait_for("POST", CALLBACK)
    assert deferred.json == {"type": 5}  # public: the answer is for the message's author
    (followup,) = await fake.wait_for("POST", FOLLOWUP)
    assert "5,728" in followup.json["embeds"][0]["title"]
    assert followup.json["allowed_mentions"] == {"parse": []}
    reply_id = followup.response["id"]
    assert await eventually(
        lambda: db_rows(garden.db, "SELECT reply_id FROM replies") == [(f"{CHANNEL_ID}/{reply_id}",)]
    )

    await fake.dispatch("INTERACTION_CREATE", fake.context_menu("Triage this error", target))
    _, again = await fake.wait_for("POST", CALLBACK, count=2)
    assert again.json["type"] == 4 and again.json["data"]["flags"] == EPHEMERAL
    assert reply_id in again.json["data"]["content"]  # a link to the first answer
    await fake.settle()
    assert len(fake.find("POST", FOLLOWUP)) == 1


async def test_feedback_click_is_stored_and_survives_a_restart(fake_discord, tmp_path):
    db = tmp_path / "garden.sqlite3"
    fake = fake_discord
    async with running_garden(fake, db):
        source = fake.message(KV_PASTE)
        await fake.dispatch("MESSAGE_CREATE", source)
        (reply,) = await fake.wait_for("POST", r"/channels/\d+/messages")
        sent = fake.sent_message(reply)
        helpful = sent["components"][0]["components"][0]["custom_id"]
        await fake.dispatch("INTERACTION_CREATE", fake.button_click(sent, helpful))
        (thanks,) = await fake.wait_for("POST", CALLBACK)
        assert thanks.json["type"] == 4 and thanks.json["data"]["flags"] == EPHEMERAL
        assert thanks.json["data"]["content"].startswith("Thanks")
        votes = "SELECT reply_key, signature, vote FROM feedback"
        assert db_rows(db, votes) == [(source["id"], "vllm.kv_cache_too_small.v0", 1)]

    # a new process: no view in memory, the custom_id alone carries the state
    fake.identify = None
    async with running_garden(fake, db):
        not_helpful = sent["components"][0]["components"][1]["custom_id"]
        await fake.dispatch("INTERACTION_CREATE", fake.button_click(sent, not_helpful))
        await fake.wait_for("POST", CALLBACK, count=2)
        assert db_rows(db, votes) == [(source["id"], "vllm.kv_cache_too_small.v0", -1)]  # one vote per user
        assert str(USER_ID) not in str(db_rows(db, "SELECT * FROM feedback"))  # stored as a hash


async def test_throttled_command_gets_an_ephemeral_notice(fake_discord, tmp_path):
    from bot.settings import Limits

    async with running_garden(fake_discord, tmp_path / "db", limits=Limits(user_per_minute=1)) as garden:
        fake = garden.fake
        args = {"gpu": "rtx-4090", "model": "qwen2.5-7b", "ephemeral": False}
        await fake.dispatch("INTERACTION_CREATE", fake.slash("vram", args))
        await fake.wait_for("POST", FOLLOWUP)
        await fake.dispatch("INTERACTION_CREATE", fake.slash("vram", args))
        await fake.wait_for("DELETE", rf"/webhooks/{APP_ID}/[^/]+/messages/@original")
        _, notice = await fake.wait_for("POST", FOLLOWUP, count=2)
        assert notice.json["flags"] == EPHEMERAL and "try again" in notice.json["content"]
