"""Injection: mentions (@everyone, @here, roles, users, Slack's <!channel> and <!subteam^…>), Markdown
and code-fence breakouts, links with misleading text.  Checked on what the real clients sent to the
loopback fakes: nothing can ping, no link is disguised, and every code block the paste touches closes
where we closed it."""

from __future__ import annotations

import json
import re

from adapters.discord.render import render as discord_render
from bot.core import GardenBot, Paste
from tests.adapters.discord.conftest import eventually, running_garden
from tests.adapters.discord.fake_discord import APP_ID, BOT_ID, CHANNEL_ID, USER_ID
from tests.adapters.slack.fake_slack import message_event, slash_command
from tests.hardening.conftest import OPEN
from tests.hardening.hostile import KV_PASTE, LLAMA_PASTE

MESSAGES = r"/channels/\d+/messages(/\d+)?"
FOLLOWUP = rf"/webhooks/{APP_ID}/[^/]+(/messages/[^/]+)?"
EVIL = "https://evil.example/steal"

HOSTILE_LINES = [
    "@everyone @here look at this",
    f"<@&123456789012345678> <@{USER_ID}> <@!{USER_ID}> <#{CHANNEL_ID}> <@{BOT_ID}>",
    "<!channel> <!here> <!everyone> <@U0123ABCD> <!subteam^S0123|@oncall> <#C0123|general>",
    "```",
    "the fence above is open; this closes it: ``` and ~~~ and `````` ``",
    f"[Click here for free GPUs]({EVIL}) and <{EVIL}|a Slack link>",
    "**bold** __underline__ ||spoiler|| ~~strike~~",
    "# A heading\n> a quote\n- a list",
]


def hostile_paste() -> str:
    model = f"[free GPUs]({EVIL}) @everyone ```"
    return (
        "\n".join(HOSTILE_LINES)
        + f"\nINFO 04-12 08:21:19 [config.py:1] Initializing an LLM engine with config: model='{model}', "
        + "tokenizer='x'\n"
        + f'$ vllm serve "[docs]({EVIL})" --max-model-len 131072 <!channel>\n'
        + KV_PASTE
        + "\n"
        + "```\n"
        + LLAMA_PASTE
        + "\n@everyone ```"
    )


# --- what the reply holds, rendered for Discord ----------------------------------------------------


def _discord_texts(body: dict) -> list[str]:
    out = [body.get("content") or ""]
    for embed in body.get("embeds") or []:
        out += [embed.get("title") or "", embed.get("description") or ""]
        out += [f["name"] for f in embed.get("fields", [])] + [f["value"] for f in embed.get("fields", [])]
        out.append((embed.get("footer") or {}).get("text", ""))
    return out


def assert_discord_safe(body: dict) -> None:
    mentions = body.get("allowed_mentions")
    assert mentions is not None and mentions.get("parse") == [], mentions
    assert not mentions.get("users") and not mentions.get("roles") and not mentions.get("replied_user")
    for text in _discord_texts(body):
        # a masked link needs "](" - broken up outside code, harmless inside
        outside_code = re.sub(r"```.*?```", "", text, flags=re.S)
        assert "](" not in outside_code, outside_code
        # every ``` is one of ours: they pair up, so nothing the paste holds escapes a block
        assert text.count("```") % 2 == 0, text
    # the text cannot ping even where a client would parse it: content is never user text
    assert "@everyone" not in (body.get("content") or "") and "@here" not in (body.get("content") or "")


def test_discord_render_of_a_hostile_paste_is_inert():
    reply = GardenBot().triage(Paste(hostile_paste(), False, []), addressed=True)
    assert reply is not None
    rendered = discord_render(reply, chart=False)
    body = {"embeds": [e.to_dict() for e in rendered.embeds], "allowed_mentions": {"parse": []}}
    assert_discord_safe(body)
    outside_code = re.sub(r"```.*?```", "", " ".join(_discord_texts(body)), flags=re.S)
    assert EVIL not in outside_code  # a "model name" that is a link is not a model id: never said


async def test_discord_hostile_paste_pings_nobody_and_keeps_the_layout(fake_discord, tmp_path):
    async with running_garden(fake_discord, tmp_path / "db.sqlite3", limits=OPEN) as garden:
        fake = garden.fake
        source = fake.message(hostile_paste())
        await fake.dispatch("MESSAGE_CREATE", source)
        (reply,) = await fake.wait_for("POST", rf"/channels/{source['id']}/messages")
        assert_discord_safe(reply.json)

        # the same paste in reply mode (a message reply: replied_user must stay off) and as a mention
        mention = fake.message(
            f"<@{BOT_ID}> " + hostile_paste(), channel_id=CHANNEL_ID + 1, mentions=[fake.mention_of_bot()]
        )
        await fake.dispatch("MESSAGE_CREATE", mention)
        (second,) = await fake.wait_for("POST", rf"/channels/{mention['id']}/messages")
        assert_discord_safe(second.json)


async def test_discord_vram_with_a_hostile_model_name(fake_discord, tmp_path):
    async with running_garden(fake_discord, tmp_path / "db.sqlite3", limits=OPEN) as garden:
        fake = garden.fake
        hostile = f"@everyone <@&1> [free]({EVIL}) ```"
        await fake.dispatch("INTERACTION_CREATE", fake.slash("vram", {"gpu": "rtx-4090", "model": hostile}))
        (followup,) = await fake.wait_for("POST", FOLLOWUP)
        assert_discord_safe(followup.json)


async def test_discord_throttle_notice_pings_nobody(fake_discord, tmp_path):
    from bot.settings import Limits

    async with running_garden(
        fake_discord, tmp_path / "db.sqlite3", limits=Limits(user_per_minute=1, channel_per_minute=100)
    ) as garden:
        fake = garden.fake
        for _ in range(3):
            await fake.dispatch(
                "MESSAGE_CREATE",
                fake.message(f"<@{BOT_ID}> @everyone {KV_PASTE}", mentions=[fake.mention_of_bot()]),
            )
        assert await eventually(lambda: len(fake.delivered("POST", MESSAGES)) == 2, timeout=10)
        await fake.settle(0.3)
        posts = fake.delivered("POST", MESSAGES)
        assert len(posts) == 2  # one answer, one notice, nothing for the third
        for post in posts:
            assert_discord_safe(post.json)


# --- Slack ----------------------------------------------------------------------------------------


def slack_escaped(text: str) -> str:
    return text.replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;")


def _slack_texts(body: dict) -> list[str]:
    out = [str(body.get("text") or "")]
    for block in body.get("blocks") or []:
        text = block.get("text")
        if isinstance(text, dict):
            out.append(text.get("text", ""))
        for element in block.get("elements", ()):
            if isinstance(element.get("text"), str):
                out.append(element["text"])
            elif isinstance(element.get("text"), dict):
                out.append(element["text"].get("text", ""))
    return out


def assert_slack_safe(body: dict) -> None:
    assert "link_names" not in body and body.get("parse") in (None, "none")
    for text in _slack_texts(body):
        # every control character is an entity: no <!channel>, no <@U…>, no <url|misleading text>
        assert "<" not in text and ">" not in text, text
        assert text.count("```") % 2 == 0, text


async def test_slack_hostile_paste_pings_nobody_and_keeps_the_layout(slack_factory, fake_slack):
    h = await slack_factory()
    typed = hostile_paste()
    # what Slack delivers: special mentions and links as markup, what was typed literally as entities
    markup = (
        "<!channel> <!here> <@U0123ABCD> <!subteam^S0123|@oncall> <https://evil.example/steal|free GPUs>\n"
    )
    await h.event(message_event(markup + slack_escaped(typed)))
    await h.event({"type": "app_mention", "user": "U1", "channel": "C2", "ts": "9.1", "text": markup + typed})
    await h.send(
        "slash_commands",
        slash_command(f"gpu:4090 model:{slack_escaped(typed[:200])}", fake_slack.response_url()),
    )
    await h.settled(3)
    bodies = [
        c.body
        for c in fake_slack.calls
        if c.method in ("chat.postMessage", "chat.postEphemeral", "chat.update")
    ]
    bodies += [c.body for c in fake_slack.responses]
    assert len(bodies) >= 3
    for body in bodies:
        assert_slack_safe(body)
    dumped = json.dumps(bodies)
    for ping in ("<!channel", "<!here", "<!everyone", "<@U", "<!subteam", "<#C", "<https"):
        assert ping not in dumped
