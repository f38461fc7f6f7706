"""Prometheus metrics: what the bot saw, what it answered, how people rated it, and how fast.

Each ``Metrics`` owns its own ``CollectorRegistry`` (nothing is registered globally), so several
instances — one per test — never collide.  Adapters report through three calls:

* ``observe_outcome(platform, outcome)`` after ``GardenService.handle``;
* ``feedback(platform, signature, helpful)`` when someone presses a feedback button;
* ``platform_error(platform, kind)`` when a platform call fails (send, download, reconnect…).

``render()`` gives the text exposition format served at ``GET /metrics`` (adapters/health_server.py).
Label values are bounded: platforms are "discord"/"slack", signatures and categories come from the
knowledge base, error kinds are short words chosen by the adapters.  No user, channel or message id is
ever a label."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

from prometheus_client import CollectorRegistry, Counter, Histogram, generate_latest
from prometheus_client.core import CounterMetricFamily, GaugeMetricFamily, Metric
from prometheus_client.exposition import CONTENT_TYPE_PLAIN_0_0_4
from prometheus_client.registry import Collector

CONTENT_TYPE = CONTENT_TYPE_PLAIN_0_0_4  # "text/plain; version=0.0.4; charset=utf-8"

# Replies are CPU work on a paste (detector + calculator): milliseconds normally, seconds when huge.
LATENCY_BUCKETS = (0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0, 30.0)

NONE = "none"  # label value for a missing signature/category


def _label(value: Any) -> str:
    text = str(value).strip() if value is not None else ""
    return text[:100] if text else NONE


class _LiveState(Collector):
    """Read at scrape time: platform connections (bot.health.Health) and database faults (Storage)."""

    def __init__(self, health: Any | None, storage: Any | None):
        self.health = health
        self.storage = storage

    def collect(self) -> Iterator[Metric]:
        if self.health is not None:
            up = GaugeMetricFamily(
                "gpu_garden_platform_up", "1 while the platform connection is up", labels=["platform"]
            )
            for platform, connected in sorted(self.health.snapshot().items()):
                up.add_metric([platform], 1.0 if connected else 0.0)
            yield up
            yield GaugeMetricFamily(
                "gpu_garden_offline_seconds",
                "seconds the longest-offline platform has been offline (0 when all are up)",
                value=float(self.health.offline_for()),
            )
        if self.storage is not None:
            yield CounterMetricFamily(
                "gpu_garden_database_failures",
                "database operations that failed (the bot keeps answering without its database)",
                value=float(getattr(self.storage, "failures", 0)),
            )


# the counters: attribute -> (metric name, help text, labels)
COUNTERS: dict[str, tuple[str, str, tuple[str, ...]]] = {
    "messages": ("gpu_garden_messages", "messages the bot handled, by platform and outcome (reply, ignored, throttled, duplicate)", ("platform", "outcome")),
    "findings": ("gpu_garden_findings", "answered messages by the top finding's signature and category", ("platform", "signature", "category")),
    "replies": ("gpu_garden_replies", "replies the bot produced, by reply kind (diagnosis, vram, no_finding, notice, throttle…)", ("platform", "kind")),
    "secrets": ("gpu_garden_secrets_redacted", "messages in which a secret was found and redacted before reading", ("platform",)),
    "votes": ("gpu_garden_feedback", "feedback votes by signature (vote = helpful or not_helpful)", ("platform", "signature", "vote")),
    "errors": ("gpu_garden_platform_errors", "failed platform calls by kind (send, download, reconnect, ...)", ("platform", "kind")),
}  # fmt: skip


class Metrics:
    messages: Counter
    findings: Counter
    replies: Counter
    secrets: Counter
    votes: Counter
    errors: Counter

    def __init__(self, registry: CollectorRegistry | None = None):
        self.registry = registry or CollectorRegistry(auto_describe=True)
        r = self.registry
        for attribute, (name, documentation, labels) in COUNTERS.items():
            setattr(self, attribute, Counter(name, documentation, labels, registry=r))
        self.latency = Histogram(
            "gpu_garden_reply_latency_seconds",
            "time from receiving a message to having its reply ready",
            ["platform"],
            buckets=LATENCY_BUCKETS,
            registry=r,
        )
        self._live: _LiveState | None = None

    def observe_outcome(self, platform: str, outcome: Any) -> None:
        """Count one ``bot.service.Outcome`` (kind, reply, notice, latency_ms, secrets)."""
        platform = _label(platform)
        kind = _label(getattr(outcome, "kind", None))
        self.messages.labels(platform, kind).inc()
        if getattr(outcome, "secrets", ()):
            self.secrets.labels(platform).inc()
        reply = getattr(outcome, "reply", None)
        if kind == "reply" and reply is not None:
            self.replies.labels(platform, _label(reply.kind)).inc()
            if reply.signature:
                self.findings.labels(platform, _label(reply.signature), _label(reply.category)).inc()
            self.latency.labels(platform).observe(max(0.0, float(outcome.latency_ms)) / 1000.0)
        elif kind == "throttled" and getattr(outcome, "notice", None):
            self.replies.labels(platform, "throttle_notice").inc()

    def feedback(self, platform: str, signature: str | None, helpful: bool) -> None:
        self.votes.labels(_label(platform), _label(signature), "helpful" if helpful else "not_helpful").inc()

    def platform_error(self, platform: str, kind: str) -> None:
        self.errors.labels(_label(platform), _label(kind)).inc()

    def track(self, health: Any | None = None, storage: Any | None = None) -> None:
        """Also export live state read at scrape time: platform connections and database faults."""
        if self._live is not None:
            self.registry.unregister(self._live)
        self._live = _LiveState(health, storage)
        self.registry.register(self._live)

    def render(self) -> bytes:
        """The Prometheus text exposition format (version 0.0.4)."""
        return generate_latest(self.registry)

    def value(self, name: str, labels: dict[str, str] | None = None) -> float | None:
        """One sample's current value (for tests and the stats command); None if never set."""
        return self.registry.get_sample_value(name, labels or {})
