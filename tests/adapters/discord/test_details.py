"""The Details button through the real client against the fake Discord: the full answer ephemeral to
the clicker, after a restart too, the chart along, reply.md when it is too long, a polite answer when
the details are gone."""

from __future__ import annotations

from adapters.discord.details import GONE, custom_id
from tests.adapters.discord.conftest import KV_PASTE, running_garden

CALLBACK = r"/interactions/\d+/[^/]+/callback"
REPLY = r"/channels/\d+/messages"
EPHEMERAL = 1 << 6
TITLE = "vLLM: the KV cache holds 5,728 tokens, the context asks for 131,072"
CHECKED = "_checked on the budget: starts True, fit_tokens 5728, serves 5120_"  # an unknown value is left out
COMMAND = "(add `--max-model-len 5120` to your vLLM command)"  # the paste has no command
# vllm issue 10517 (the dev corpus): the profiler's numbers give the reply a memory picture
PROFILED = (
    "Loading model weights took 14.9888 GB\nMemory profiling results: total_gpu_memory=23.58GiB "
    "initial_memory_usage=15.34GiB peak_torch_memory=17.98GiB memory_usage_post_profile=15.35GiB "
    "non_torch_memory=0.35GiB kv_cache_size=2.89GiB gpu_memory_utilization=0.90\n# GPU blocks: 1478, "
    "# CPU blocks: 2048\nMaximum concurrency for 29000 tokens per request: 0.82x\nThe model's max seq len "
    "(29000) is larger than the maximum number of tokens that can be stored in KV cache (23648). Try "
    "increasing `gpu_memory_utilization` or decreasing `max_model_len` when initializing the engine."
)


def buttons(sent: dict) -> dict[str, str]:
    return {b["label"]: b["custom_id"] for b in sent["components"][0]["components"]}


def old_reply(fake, key: str) -> dict:
    """One of our replies from before, carrying a Details button for ``key``."""
    button = {"type": 2, "style": 1, "label": "Details", "custom_id": custom_id(key)}
    return {**fake.message(""), "author": fake.bot_user, "components": [{"type": 1, "components": [button]}]}


def described(callback) -> str:
    return "\n\n".join(e.get("description", "") for e in callback.json["data"]["embeds"])


async def test_details_gives_the_full_answer_to_the_clicker_and_survives_a_restart(fake_discord, tmp_path):
    fake = fake_discord
    db = tmp_path / "garden.sqlite3"
    async with running_garden(fake, db):
        source = fake.message(KV_PASTE)
        await fake.dispatch("MESSAGE_CREATE", source)
        (post,) = await fake.wait_for("POST", REPLY)
        sent = fake.sent_message(post)
        ids = buttons(sent)
        assert list(ids) == ["Helpful", "Not helpful", "Details"]
        assert ids["Details"] == f"gg:dt:{source['id']}"
        assert "**Why**" not in str(post.json["embeds"])  # the first post stays chat-sized
        await fake.dispatch("INTERACTION_CREATE", fake.button_click(sent, ids["Details"]))
        (first,) = await fake.wait_for("POST", CALLBACK)

    fake.identify = None  # a new process: nothing in memory, the database is the same
    async with running_garden(fake, db):
        await fake.dispatch("INTERACTION_CREATE", fake.button_click(sent, ids["Details"]))
        _, again = await fake.wait_for("POST", CALLBACK, count=2)

    for callback in (first, again):
        data = callback.json["data"]
        assert callback.json["type"] == 4 and data["flags"] == EPHEMERAL
        assert data["allowed_mentions"] == {"parse": []}
        assert data["embeds"][0]["title"] == TITLE
        text = described(callback)
        assert "**Why**" in text and CHECKED in text and COMMAND in text
        assert "- kv tokens: **5,728** _(from your log)_" in text
        assert not callback.files  # no chart for this paste, no file
    assert again.json["data"]["embeds"] == first.json["data"]["embeds"]


async def test_details_carry_the_memory_chart(fake_discord, tmp_path):
    async with running_garden(fake_discord, tmp_path / "garden.sqlite3") as garden:
        fake = garden.fake
        await fake.dispatch("MESSAGE_CREATE", fake.message(PROFILED))
        (post,) = await fake.wait_for("POST", REPLY)
        sent = fake.sent_message(post)
        await fake.dispatch("INTERACTION_CREATE", fake.button_click(sent, buttons(sent)["Details"]))
        (callback,) = await fake.wait_for("POST", CALLBACK)
    data = callback.json["data"]
    assert data["embeds"][-1]["image"]["url"] == "attachment://memory.png"
    ((name, png),) = callback.files.values()
    assert name == "memory.png" and png.startswith(b"\x89PNG")
    assert "```\nGPU memory as vLLM budgets it: 23.58 GiB" in described(callback)
    assert "--gpu-memory-utilization 0.93" in described(callback)


async def test_details_too_long_for_embeds_come_as_reply_md(garden):
    fake = garden.fake
    fixes = "\n".join(f"- fix {i}\n```bash\nvllm serve m --max-model-len {1024 + i}\n```" for i in range(400))
    markdown = f"## Many fixes\n\n**Why**\nbecause\n\n{fixes}\n"
    assert garden.storage.record_details("discord", "4242", markdown, None)
    await fake.dispatch("INTERACTION_CREATE", fake.button_click(old_reply(fake, "4242"), custom_id("4242")))
    (callback,) = await fake.wait_for("POST", CALLBACK)
    data = callback.json["data"]
    assert data["flags"] == EPHEMERAL
    assert data["embeds"][0]["title"] == "Many fixes"
    assert "attached as **reply.md**" in data["embeds"][0]["description"]
    ((name, body),) = callback.files.values()
    assert name == "reply.md" and body.decode() == markdown


async def test_details_of_an_unknown_reply_are_politely_gone(garden):
    fake = garden.fake
    await fake.dispatch("INTERACTION_CREATE", fake.button_click(old_reply(fake, "999"), custom_id("999")))
    (callback,) = await fake.wait_for("POST", CALLBACK)
    assert callback.json["type"] == 4
    data = callback.json["data"]
    assert (data["content"], data["flags"], data["allowed_mentions"]) == (GONE, EPHEMERAL, {"parse": []})
    assert "details are no longer available" in GONE


async def test_pruned_details_are_gone_too(fake_discord, tmp_path):
    async with running_garden(fake_discord, tmp_path / "garden.sqlite3") as garden:
        fake = garden.fake
        garden.storage.details_keep = 1  # each platform keeps its newest rows only
        sent = []
        for n in (1, 2):
            await fake.dispatch("MESSAGE_CREATE", fake.message(KV_PASTE.replace("5728", f"572{n}")))
            posts = await fake.wait_for("POST", REPLY, count=n)
            sent.append(fake.sent_message(posts[-1]))
        for n, message in enumerate(sent, 1):
            await fake.dispatch("INTERACTION_CREATE", fake.button_click(message, buttons(message)["Details"]))
            await fake.wait_for("POST", CALLBACK, count=n)
        old, new = fake.find("POST", CALLBACK)
    assert old.json["data"]["content"] == GONE
    assert new.json["data"]["embeds"][0]["title"].startswith("vLLM: the KV cache holds 5,722 tokens")


async def test_an_edited_paste_updates_the_details_too(garden):
    fake = garden.fake
    source = fake.message(KV_PASTE)
    await fake.dispatch("MESSAGE_CREATE", source)
    await fake.wait_for("POST", REPLY)
    edited_text = KV_PASTE.replace("131072", "32768").replace("5728", "3664")
    edited = {**source, "content": edited_text, "edited_timestamp": "2026-08-01T00:00:00+00:00"}
    await fake.dispatch("MESSAGE_UPDATE", edited)
    (patch,) = await fake.wait_for("PATCH", r"/channels/\d+/messages/\d+")
    message = fake.sent_message(patch)
    assert buttons(message)["Details"] == f"gg:dt:{source['id']}"
    await fake.dispatch("INTERACTION_CREATE", fake.button_click(message, buttons(message)["Details"]))
    (callback,) = await fake.wait_for("POST", CALLBACK)
    title = callback.json["data"]["embeds"][0]["title"]
    assert title == "vLLM: the KV cache holds 3,664 tokens, the context asks for 32,768"
