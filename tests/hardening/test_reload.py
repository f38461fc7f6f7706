"""A knowledge pack that breaks at reload (GardenService.reload_knowledge, what SIGHUP calls), with a real
folder on disk: whatever is wrong with it, the previous packs stay in force and the bot keeps answering."""

from __future__ import annotations

import logging

import pytest

from bot.message import IncomingMessage
from bot.service import GardenService
from tests.hardening.conftest import OPEN
from tests.hardening.hostile import KV_PASTE

GOOD = """engine: custom
signatures:
  - id: ours.cluster_quota
    category: gpu_oom
    title: Cluster quota
    patterns: ['QuotaExceeded: gpu memory']
    cause: Your namespace hit its GPU quota.
    examples:
      - text: 'QuotaExceeded: gpu memory'
"""

BROKEN = {
    "YAML syntax": "engine: custom\nsignatures: [\n  - id: x\n",
    "not a mapping": "- just\n- a list\n",
    "empty file": "",
    "unknown category": GOOD.replace("gpu_oom", "not_a_category").replace("ours.cluster_quota", "ours.b"),
    "pattern RE2 cannot compile": GOOD.replace("QuotaExceeded: gpu memory']", "(?<=x)y']").replace(
        "ours.cluster_quota", "ours.c"
    ),
    "exponential repetition": GOOD.replace("QuotaExceeded: gpu memory']", "a{1000}{1000}']").replace(
        "ours.cluster_quota", "ours.d"
    ),
    "id already built in": GOOD.replace("ours.cluster_quota", "vllm.kv_cache_too_small.v0"),
    "id defined twice": GOOD + GOOD.split("signatures:\n", 1)[1],
    "YAML nested 5000 deep": "engine: custom\nsignatures: " + "[" * 5000 + "]" * 5000 + "\n",
    "YAML alias bomb": "a: &a [x, x, x, x, x, x, x, x, x]\n"
    + "".join(
        f"{chr(98 + i)}: &{chr(98 + i)} [*{chr(97 + i)}, *{chr(97 + i)}, *{chr(97 + i)}]\n" for i in range(8)
    )
    + "engine: custom\nsignatures: *i\n",
}


async def answers_kv(svc: GardenService, i: int) -> bool:
    out = await svc.handle(
        IncomingMessage(platform="test", text=KV_PASTE, message_id=f"m{i}", mentioned=True)
    )
    return out.reply is not None and out.reply.category == "kv_cache_too_small"


async def answers_quota(svc: GardenService, i: int) -> bool:
    out = await svc.handle(
        IncomingMessage(platform="test", text="QuotaExceeded: gpu memory", message_id=f"q{i}", mentioned=True)
    )
    return out.reply is not None and out.reply.signature == "ours.cluster_quota"


@pytest.mark.parametrize("how", list(BROKEN))
async def test_a_broken_pack_leaves_the_previous_ones_in_force(how, tmp_path, caplog):
    caplog.set_level(logging.ERROR, logger="gpu_garden.service")
    svc = GardenService(limits=OPEN)
    builtin = len(svc.bot.detector.kb.signatures)
    (tmp_path / "ours.yaml").write_text(GOOD)
    ok, _ = svc.reload_knowledge(tmp_path)
    assert ok and await answers_quota(svc, 0)
    before = svc.bot.detector

    (tmp_path / "zz-broken.yaml").write_text(BROKEN[how])
    ok, message = svc.reload_knowledge(tmp_path)  # must not raise, whatever the file holds
    assert not ok and message
    assert svc.bot.detector is before
    assert len(svc.bot.detector.kb.signatures) == builtin + 1
    assert await answers_kv(svc, 1) and await answers_quota(svc, 1)
    assert "keeping the previous signatures" in caplog.text

    (tmp_path / "zz-broken.yaml").unlink()  # fixed: the next reload takes it
    ok, _ = svc.reload_knowledge(tmp_path)
    assert ok and svc.bot.detector is not before


async def test_unreadable_and_vanished_folders(tmp_path):
    svc = GardenService(limits=OPEN)
    (tmp_path / "ours.yaml").write_text(GOOD)
    assert svc.reload_knowledge(tmp_path)[0]
    before = svc.bot.detector
    (tmp_path / "latin1.yaml").write_bytes(b"engine: caf\xe9\n")
    assert not svc.reload_knowledge(tmp_path)[0]
    (tmp_path / "latin1.yaml").unlink()
    (tmp_path / "folder.yaml").mkdir()  # a directory with a pack's name is not a pack
    assert svc.reload_knowledge(tmp_path)[0]
    before = svc.bot.detector
    ok, message = svc.reload_knowledge(tmp_path / "gone")
    assert not ok and "does not exist" in message
    assert svc.bot.detector is before
    assert await answers_kv(svc, 2)
