"""Run the configured platforms in one process: storage, service, health, signals, watchdog.

Each platform package exposes ``async def serve(settings, service, health) -> None`` which runs until
cancelled.  SIGTERM and SIGINT cancel everything and close connections cleanly (exit 0); the watchdog
exits 3 after a long disconnect so the container's restart policy brings the bot back.
"""

from __future__ import annotations

import asyncio
import contextlib
import importlib
import logging
import os
import signal

from bot.health import Health
from bot.metrics import Metrics
from bot.service import GardenService
from bot.settings import SettingsFields as Settings  # what load_settings returns
from bot.storage import Storage

log = logging.getLogger("gpu_garden.runner")

PLATFORM_MODULES = {"discord": "adapters.discord", "slack": "adapters.slack"}


def build_service(settings: Settings) -> GardenService:
    from bot.core import GardenBot
    from bot.detector import Detector, default_detector
    from bot.hub import warm_up
    from bot.model_sources import resolve_model_arg
    from bot.vram import catalog_lookup
    from knowledge.loader import load_with_extra

    detector = (
        default_detector()
        if settings.knowledge_dir is None
        else Detector(load_with_extra(settings.knowledge_dir))
    )
    lookup = catalog_lookup
    if settings.hub_lookup:
        warm_up()

        def lookup(name: str):  # catalog first, then the Hub for org/name ids
            return resolve_model_arg(name, allow_hub=True, cache_dir=settings.hub_cache_dir)

    bot = GardenBot(detector=detector, paste_limit=settings.limits.paste_max_bytes, model_lookup=lookup)
    return GardenService(
        bot=bot, storage=Storage(settings.database), limits=settings.limits, metrics=Metrics()
    )


CRASH_LOOP_WINDOW = 60.0
CRASH_BACKOFF = 30.0


class StartupError(RuntimeError):
    """The bot cannot start (settings, knowledge pack): one line says what to fix."""


def _startup_problem(exc: BaseException) -> str:
    from knowledge.loader import KnowledgeError

    if isinstance(exc, KnowledgeError | StartupError):
        return str(exc)
    return f"{exc.__class__.__name__}: {exc}"


def _watch_signals(loop: asyncio.AbstractEventLoop, stop: asyncio.Event) -> None:
    for sig in (signal.SIGTERM, signal.SIGINT):
        with contextlib.suppress(NotImplementedError, RuntimeError):
            loop.add_signal_handler(sig, stop.set)


async def _pause_before_exit(stop: asyncio.Event, crash_backoff: float) -> None:
    """Failing fast (a bad token, a broken pack, no network): wait before exiting, so a restart policy
    cannot turn it into a login storm (Discord resets a token after 1000 identifies a day)."""
    log.error(
        "failed within %.0f s of starting; waiting %.0f s before exiting", CRASH_LOOP_WINDOW, crash_backoff
    )
    with contextlib.suppress(asyncio.TimeoutError):
        await asyncio.wait_for(stop.wait(), timeout=crash_backoff)


async def fail_before_start(problem: str, crash_backoff: float = CRASH_BACKOFF) -> int:
    """An error found before the bot could even read its settings: logged as one line (JSON when
    GPU_GARDEN_LOG_FORMAT=json), then the same pause as any fast failure; exit code 1."""
    from bot.logs import configure

    fmt = os.environ.get("GPU_GARDEN_LOG_FORMAT", "text").strip().lower()
    configure("INFO", "json" if fmt == "json" else "text")
    log.error("cannot start: %s", problem)
    stop = asyncio.Event()
    _watch_signals(asyncio.get_running_loop(), stop)
    await _pause_before_exit(stop, crash_backoff)
    return 1


async def serve(
    settings: Settings,
    platforms: list[str],
    service: GardenService | None = None,
    crash_backoff: float = CRASH_BACKOFF,
) -> int:
    loop = asyncio.get_running_loop()
    stop = asyncio.Event()
    _watch_signals(loop, stop)
    try:
        service = service or build_service(settings)
    except Exception as exc:  # a broken knowledge pack: one clear line, not a traceback
        log.error("cannot start: %s", _startup_problem(exc))
        await _pause_before_exit(stop, crash_backoff)
        return 1
    return await _run(settings, platforms, service, stop, crash_backoff)


async def _run(
    settings: Settings,
    platforms: list[str],
    service: GardenService,
    stop: asyncio.Event,
    crash_backoff: float,
) -> int:
    loop = asyncio.get_running_loop()
    health = Health(settings.health_file)
    if service.metrics is None:
        service.metrics = Metrics()
    health_server = None
    if settings.health_port is not None:
        from adapters.health_server import start_health_server

        health_server = await start_health_server(settings, health, service.metrics, service.storage)
    with contextlib.suppress(NotImplementedError, RuntimeError, AttributeError):
        # SIGHUP re-reads the knowledge packs; a broken pack leaves the previous ones in force
        loop.add_signal_handler(signal.SIGHUP, service.reload_knowledge, settings.knowledge_dir)
    tasks: list[asyncio.Task] = []
    for name in platforms:
        module = importlib.import_module(PLATFORM_MODULES[name])
        health.started(name)
        tasks.append(asyncio.create_task(module.serve(settings, service, health), name=name))
    watchdog = asyncio.create_task(health.watchdog(settings.disconnect_exit_seconds), name="watchdog")
    stopper = asyncio.create_task(stop.wait(), name="stop")
    started = loop.time()
    try:
        done, _pending = await asyncio.wait([*tasks, watchdog, stopper], return_when=asyncio.FIRST_COMPLETED)
        code = _exit_code(done, stopper)
        if code and not stop.is_set() and loop.time() - started < CRASH_LOOP_WINDOW:
            await _pause_before_exit(stop, crash_backoff)
    finally:
        # cancelling a platform's serve drains its answers in flight (bounded) before it disconnects
        for task in [*tasks, watchdog, stopper]:
            task.cancel()
        await asyncio.gather(*tasks, watchdog, stopper, return_exceptions=True)
        if health_server is not None:
            from adapters.health_server import stop_health_server

            await stop_health_server(health_server)
        if service.storage is not None:
            service.storage.close()
    return code


def _exit_code(done: set[asyncio.Task], stopper: asyncio.Task) -> int:
    code = 0
    for task in done:
        if task is stopper:
            log.info("stop signal received; shutting down")
            continue
        exc = task.exception()
        if isinstance(exc, SystemExit):
            code = int(exc.code or 0)
        elif exc is not None:
            log.error("%s stopped: %s: %s", task.get_name(), exc.__class__.__name__, exc)
            code = 1
        else:
            log.info("%s finished", task.get_name())
    return code
