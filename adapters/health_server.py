"""A small HTTP server beside the bot: ``GET /healthz`` and ``GET /metrics``.

Started by the runner when ``health_port`` is set (``GPU_GARDEN_HEALTH_PORT``).  It listens on
127.0.0.1 unless told otherwise (``host=`` or a ``health_host`` setting): in a container, set
``GPU_GARDEN_HEALTH_HOST=0.0.0.0`` and publish the port only where Prometheus can reach it.

``/healthz`` answers 200 ``{"status": "ok", ...}`` while every started platform is connected and the
database answers, and 503 otherwise, with the reason in the body.  The container's healthcheck does not
use it (the heartbeat file works with no port and a read-only filesystem); it is for monitors and load
balancers.  ``/metrics`` is the Prometheus text format from ``bot.metrics.Metrics``.
"""

from __future__ import annotations

import asyncio
import logging
from typing import Any

from aiohttp import web

from bot.health import Health
from bot.metrics import CONTENT_TYPE, Metrics

log = logging.getLogger("gpu_garden.health_server")

DEFAULT_HOST = "127.0.0.1"

HEALTH_KEY = web.AppKey("health", Health)
METRICS_KEY = web.AppKey("metrics", Metrics)
STORAGE_KEY = web.AppKey("storage", object)


async def healthz(request: web.Request) -> web.Response:
    health = request.app[HEALTH_KEY]
    storage = request.app[STORAGE_KEY]
    platforms = health.snapshot()
    connected = health.healthy()
    database: bool | None = None
    if storage is not None:
        database = await asyncio.to_thread(storage.healthy)
    ok = connected and database is not False
    body: dict[str, Any] = {
        "status": "ok" if ok else "unhealthy",
        "platforms": platforms,
        "database": "ok" if database else ("unavailable" if database is False else "not configured"),
    }
    if not connected:
        body["offline_seconds"] = round(health.offline_for(), 1)
    return web.json_response(body, status=200 if ok else 503, headers={"Cache-Control": "no-store"})


async def metrics(request: web.Request) -> web.Response:
    payload = await asyncio.to_thread(request.app[METRICS_KEY].render)
    response = web.Response(body=payload, headers={"Cache-Control": "no-store"})
    response.headers["Content-Type"] = CONTENT_TYPE
    return response


def build_app(health: Health, metrics_: Metrics, storage: Any | None) -> web.Application:
    app = web.Application()
    app[HEALTH_KEY] = health
    app[METRICS_KEY] = metrics_
    app[STORAGE_KEY] = storage
    app.router.add_get("/healthz", healthz)
    app.router.add_get("/metrics", metrics)
    return app


async def start_health_server(
    settings: Any,
    health: Health,
    metrics: Metrics,
    storage: Any | None,
    host: str | None = None,
    port: int | None = None,
) -> web.AppRunner:
    """Serve /healthz and /metrics; returns the runner (its ``addresses`` show the bound port).

    ``port`` defaults to ``settings.health_port`` (0 picks a free port); ``host`` to
    ``settings.health_host`` when that setting exists, else 127.0.0.1.
    """
    port = settings.health_port if port is None else port
    if port is None:
        raise ValueError("health server needs a port (GPU_GARDEN_HEALTH_PORT)")
    host = host or getattr(settings, "health_host", None) or DEFAULT_HOST
    metrics.track(health=health, storage=storage)
    runner = web.AppRunner(build_app(health, metrics, storage), access_log=None, handle_signals=False)
    await runner.setup()
    site = web.TCPSite(runner, host, port, reuse_address=True)
    try:
        await site.start()
    except OSError:
        await runner.cleanup()
        raise
    log.info("health server on %s", ", ".join(_fmt(a) for a in runner.addresses))
    return runner


async def stop_health_server(runner: web.AppRunner) -> None:
    await runner.cleanup()


def bound_port(runner: web.AppRunner) -> int:
    """The TCP port the server listens on (useful with port 0)."""
    return int(runner.addresses[0][1])


def _fmt(address: Any) -> str:
    if isinstance(address, tuple) and len(address) >= 2:
        host, port = address[0], address[1]
        return f"[{host}]:{port}" if ":" in str(host) else f"{host}:{port}"
    return str(address)
