"""Load: a burst of pastes from many users against the loopback fakes.  Every message is answered once
or throttled, a throttled user gets at most one notice, nothing is answered twice, nothing is lost.
(Small here; scripts/reliability.py runs 1,000 pastes from 50 users in 10 s and reports the figures.)"""

from __future__ import annotations

from collections import Counter

from bot.message import IncomingMessage
from bot.service import GardenService
from bot.settings import Limits
from bot.storage import Storage
from tests.adapters.discord.conftest import running_garden
from tests.hardening.burst import discord_burst, paste, slack_burst
from tests.hardening.conftest import OPEN

POLICY = Limits()  # the production defaults: 6 answers per user and 20 per channel a minute


async def test_one_notice_per_user_even_when_both_limits_refuse_them():
    """The channel limit refused a user (notice), then their own limit did (a second notice): one
    "try again" per user per window is enough, whichever limit spoke."""
    svc = GardenService(limits=POLICY)
    notices: Counter = Counter()
    kinds: Counter = Counter()
    for i in range(400):
        user = f"u{i % 20}"
        msg = IncomingMessage(
            platform="test",
            text=paste(i),
            user_id=user,
            channel_id=f"c{i % 20 % 2}",
            message_id=str(i),
            mentioned=True,
        )
        out = await svc.handle(msg)
        kinds[out.kind] += 1
        notices[user] += bool(out.notice)
    assert kinds["reply"] == 40  # two channels x 20
    assert max(notices.values()) == 1 and sum(notices.values()) == 20


async def test_discord_burst_with_production_limits(fake_discord, tmp_path):
    async with running_garden(fake_discord, tmp_path / "db.sqlite3", limits=POLICY) as garden:
        result = await discord_burst(garden.fake, garden.service, n=80, users=8, seconds=1.0)
    assert result.unaccounted == []
    assert result.duplicated == 0 and result.lost == 0
    assert result.answered == result.outcomes["reply"] == 40  # the channel limits (2 x 20) bind first
    assert result.outcomes["throttled"] == 40
    assert result.max_notices_per_user <= 1
    assert sum(result.notices.values()) == len(result.notices) <= 8


async def test_discord_burst_answered_exactly_once_when_not_limited(fake_discord, tmp_path):
    async with running_garden(fake_discord, tmp_path / "db.sqlite3", limits=OPEN) as garden:
        result = await discord_burst(garden.fake, garden.service, n=60, users=10, seconds=1.0)
    assert result.outcomes["reply"] == 60
    assert result.answered == 60 and result.duplicated == 0 and result.lost == 0


async def test_slack_burst_with_production_limits(slack_factory, fake_slack, tmp_path):
    h = await slack_factory(limits=POLICY, channels=["CGARDEN", "CHELP"])
    result = await slack_burst(fake_slack, h, n=80, users=8, seconds=1.0, channels=("CGARDEN", "CHELP"))
    assert result.unaccounted == []
    assert result.duplicated == 0 and result.lost == 0
    assert result.answered == result.outcomes["reply"] == 40
    assert result.max_notices_per_user <= 1  # ephemeral, to the user who mentioned the bot


async def test_slack_burst_answered_exactly_once_when_not_limited(slack_factory, fake_slack, tmp_path):
    service = GardenService(storage=Storage(tmp_path / "s.sqlite3"), limits=OPEN)
    h = await slack_factory(service=service)
    result = await slack_burst(fake_slack, h, n=60, users=10, seconds=1.0)
    assert result.answered == 60 and result.duplicated == 0 and result.lost == 0
