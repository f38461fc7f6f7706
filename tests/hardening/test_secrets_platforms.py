"""The planted-secret corpus (every gitleaks rule's first example, in every placement) through the real
Discord and Slack clients against the fake platforms on 127.0.0.1: no post, no thread name, no file and
no log line at DEBUG repeats a secret, and every notice names every kind found."""

from __future__ import annotations

import io
import json
import logging

from bot import logs
from tests.adapters.discord.conftest import running_garden
from tests.adapters.slack.fake_slack import message_event
from tests.hardening.conftest import OPEN
from tests.hardening.hostile import KV_PASTE
from tests.hardening.planted import echoed, planted

CORPUS = planted(per_rule=1)
BATCH = 40  # placements per message: each message carries the error the bot answers with a fix


def batches() -> list[list]:
    return [CORPUS[i : i + BATCH] for i in range(0, len(CORPUS), BATCH)]


def paste(items) -> str:
    return "\n\n".join(p.text for p in items) + "\n" + KV_PASTE


class DebugLog:
    """The bot's own logging at DEBUG (bot.logs.configure), written to a string."""

    def __enter__(self) -> io.StringIO:
        root = logging.getLogger()
        self.saved = (root.handlers[:], root.level)
        self.stream = io.StringIO()
        logs.configure("DEBUG", "text", self.stream)
        return self.stream

    def __exit__(self, *exc) -> None:
        root = logging.getLogger()
        root.handlers[:], root.level = self.saved


def notice_ok(text: str) -> bool:
    return "rotate" in text and "I did not repeat it" not in text


async def test_discord_posts_threads_and_logs_repeat_no_planted_secret(fake_discord, tmp_path):
    with DebugLog() as log:
        async with running_garden(fake_discord, tmp_path / "db.sqlite3", limits=OPEN) as garden:
            fake = garden.fake
            for items in batches():
                source = fake.message(paste(items))
                await fake.dispatch("MESSAGE_CREATE", source)
                (reply,) = await fake.wait_for("POST", rf"/channels/{source['id']}/messages")
                sent = json.dumps(reply.json, ensure_ascii=False)
                assert echoed(sent, items) == []
                assert notice_ok(sent)
            threads = [c for c in fake.calls if c.path.endswith("/threads")]
            assert threads and echoed(json.dumps([t.json for t in threads]), CORPUS) == []
            assert echoed(json.dumps([c.json for c in fake.calls], ensure_ascii=False), CORPUS) == []
    assert echoed(log.getvalue(), CORPUS) == []


async def test_slack_posts_and_debug_logs_repeat_no_planted_secret(slack_factory, fake_slack):
    with DebugLog() as log:
        h = await slack_factory()
        for n, items in enumerate(batches()):
            text = paste(items).replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;")
            await h.event(message_event(text, ts=f"1700000{n:03d}.000100"))
        await h.settled(len(batches()))
        posts = [c.body for c in fake_slack.calls if c.method in ("chat.postMessage", "files.uploadV2")]
        assert len(posts) >= len(batches())
        dumped = json.dumps([c.body for c in fake_slack.calls], ensure_ascii=False, default=str)
        assert echoed(dumped, CORPUS) == []
        assert all(notice_ok(json.dumps(p)) for p in posts if p.get("blocks"))
    assert "on_message" in log.getvalue() or "slack" in log.getvalue()  # DEBUG reached the handler
    assert echoed(log.getvalue(), CORPUS) == []
