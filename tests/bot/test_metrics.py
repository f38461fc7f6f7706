"""Prometheus metrics from real service outcomes: counts, labels, latency, live state, exposition format."""

from __future__ import annotations

from prometheus_client.parser import text_string_to_metric_families

from bot.health import Health
from bot.message import IncomingMessage
from bot.metrics import CONTENT_TYPE, Metrics
from bot.service import GardenService, Outcome
from bot.settings import Limits
from bot.storage import Storage

KV = "ValueError: The model's max seq len (4096) is larger than the maximum number of tokens that can be stored in KV cache (3664)."


def msg(i: str, platform: str = "discord", user: str = "u1", text: str = KV, **kw) -> IncomingMessage:
    return IncomingMessage(platform=platform, text=text, message_id=i, user_id=user, channel_id="c1", **kw)


def parsed(metrics: Metrics) -> dict[str, list]:
    families = text_string_to_metric_families(metrics.render().decode())
    return {f.name: f.samples for f in families}


async def test_outcomes_from_the_real_service_are_counted(tmp_path):
    metrics = Metrics()
    svc = GardenService(storage=Storage(tmp_path / "bot.sqlite3"))
    reply = await svc.handle(msg("1"))
    assert reply.kind == "reply" and reply.reply is not None and reply.reply.signature
    metrics.observe_outcome("discord", reply)
    metrics.observe_outcome("discord", await svc.handle(msg("1")))  # duplicate
    metrics.observe_outcome("discord", await svc.handle(msg("2", is_bot=True)))  # ignored
    metrics.observe_outcome("slack", await svc.handle(msg("3", platform="slack")))

    sig, cat = reply.reply.signature, reply.reply.category or "none"
    assert metrics.value("gpu_garden_messages_total", {"platform": "discord", "outcome": "reply"}) == 1
    assert metrics.value("gpu_garden_messages_total", {"platform": "discord", "outcome": "duplicate"}) == 1
    assert metrics.value("gpu_garden_messages_total", {"platform": "discord", "outcome": "ignored"}) == 1
    assert metrics.value("gpu_garden_messages_total", {"platform": "slack", "outcome": "reply"}) == 1
    labels = {"platform": "discord", "signature": sig, "category": cat}
    assert metrics.value("gpu_garden_findings_total", labels) == 1
    assert metrics.value("gpu_garden_replies_total", {"platform": "discord", "kind": "diagnosis"}) == 1
    assert metrics.value("gpu_garden_reply_latency_seconds_count", {"platform": "discord"}) == 1
    seconds = metrics.value("gpu_garden_reply_latency_seconds_sum", {"platform": "discord"})
    assert seconds is not None and abs(seconds - reply.latency_ms / 1000) < 1e-9


async def test_throttle_notices_and_redacted_secrets():
    metrics = Metrics()
    svc = GardenService(limits=Limits(user_per_minute=1, channel_per_minute=100))
    metrics.observe_outcome("slack", await svc.handle(msg("1", platform="slack", mentioned=True)))
    throttled = await svc.handle(msg("2", platform="slack", mentioned=True))
    assert throttled.kind == "throttled" and throttled.notice
    metrics.observe_outcome("slack", throttled)
    assert metrics.value("gpu_garden_replies_total", {"platform": "slack", "kind": "throttle_notice"}) == 1
    assert metrics.value("gpu_garden_messages_total", {"platform": "slack", "outcome": "throttled"}) == 1

    leaked = await GardenService().handle(msg("9", text=KV + "\nHF_TOKEN=hf_" + "a" * 34))
    assert leaked.secrets
    metrics.observe_outcome("discord", leaked)
    assert metrics.value("gpu_garden_secrets_redacted_total", {"platform": "discord"}) == 1
    assert b"hf_aaaa" not in metrics.render()


def test_feedback_errors_and_unknown_labels():
    metrics = Metrics()
    metrics.feedback("discord", "vllm.kv_cache_too_small", True)
    metrics.feedback("discord", "vllm.kv_cache_too_small", False)
    metrics.feedback("discord", "vllm.kv_cache_too_small", False)
    metrics.feedback("slack", None, True)
    metrics.platform_error("slack", "send")
    metrics.platform_error("slack", "send")
    metrics.observe_outcome("discord", Outcome("reply", reply=None))  # a reply without a body
    vote = {"platform": "discord", "signature": "vllm.kv_cache_too_small"}
    assert metrics.value("gpu_garden_feedback_total", {**vote, "vote": "helpful"}) == 1
    assert metrics.value("gpu_garden_feedback_total", {**vote, "vote": "not_helpful"}) == 2
    assert (
        metrics.value(
            "gpu_garden_feedback_total", {"platform": "slack", "signature": "none", "vote": "helpful"}
        )
        == 1
    )
    assert metrics.value("gpu_garden_platform_errors_total", {"platform": "slack", "kind": "send"}) == 2
    assert metrics.value("gpu_garden_reply_latency_seconds_count", {"platform": "discord"}) is None


def test_instances_do_not_share_state():
    a, b = Metrics(), Metrics()
    a.platform_error("discord", "gateway")
    assert a.value("gpu_garden_platform_errors_total", {"platform": "discord", "kind": "gateway"}) == 1
    assert b.value("gpu_garden_platform_errors_total", {"platform": "discord", "kind": "gateway"}) is None


def test_live_health_and_database_state(tmp_path):
    now = [100.0]
    health = Health(clock=lambda: now[0])
    health.started("discord")
    health.connected("discord")
    health.started("slack")
    storage = Storage(tmp_path / "bot.sqlite3")
    metrics = Metrics()
    metrics.track(health=health, storage=storage)
    metrics.track(health=health, storage=storage)  # tracking again replaces, never duplicates
    assert metrics.value("gpu_garden_platform_up", {"platform": "discord"}) == 1
    assert metrics.value("gpu_garden_platform_up", {"platform": "slack"}) == 0
    now[0] = 130.0
    assert metrics.value("gpu_garden_offline_seconds") == 30.0
    health.disconnected("discord")
    assert metrics.value("gpu_garden_platform_up", {"platform": "discord"}) == 0
    assert metrics.value("gpu_garden_database_failures_total") == 0
    storage.failures = 2
    assert metrics.value("gpu_garden_database_failures_total") == 2


def test_render_is_valid_exposition_format():
    metrics = Metrics()
    metrics.feedback("discord", 'sig"with\\quotes', True)
    metrics.platform_error("discord", "send")
    assert CONTENT_TYPE.startswith("text/plain; version=0.0.4")
    text = metrics.render().decode()
    assert "# TYPE gpu_garden_reply_latency_seconds histogram" in text
    families = parsed(metrics)
    assert {"gpu_garden_messages", "gpu_garden_feedback", "gpu_garden_platform_errors"} <= set(families)
    samples = {s.name: s for s in families["gpu_garden_feedback"]}
    assert samples["gpu_garden_feedback_total"].labels["signature"] == 'sig"with\\quotes'
