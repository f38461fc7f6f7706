"""Connection health shared by the adapters, the healthcheck file and the watchdog.

The watchdog exits the process (non-zero) after a platform has been offline longer than the configured
limit, because Docker restarts an exited container but not an unhealthy one."""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import Callable
from pathlib import Path

log = logging.getLogger("gpu_garden.health")


class Health:
    def __init__(self, heartbeat_file: Path | None = None, clock: Callable[[], float] = time.monotonic):
        self.heartbeat_file = heartbeat_file
        self.clock = clock
        self._state: dict[str, bool] = {}
        self._since: dict[str, float] = {}

    def started(self, platform: str) -> None:
        self._state.setdefault(platform, False)
        self._since.setdefault(platform, self.clock())

    def connected(self, platform: str) -> None:
        if not self._state.get(platform):
            log.info("%s connected", platform)
        self._state[platform] = True
        self._since[platform] = self.clock()

    def disconnected(self, platform: str) -> None:
        if self._state.get(platform, True):
            log.warning("%s disconnected", platform)
            self._since[platform] = self.clock()
        self._state[platform] = False

    def healthy(self) -> bool:
        return bool(self._state) and all(self._state.values())

    def offline_for(self) -> float:
        """Seconds the longest-offline platform has been offline (0 when all are connected)."""
        now = self.clock()
        return max((now - self._since[p] for p, up in self._state.items() if not up), default=0.0)

    def snapshot(self) -> dict[str, bool]:
        return dict(self._state)

    def beat(self) -> None:
        if self.heartbeat_file is not None and self.healthy():
            try:
                self.heartbeat_file.parent.mkdir(parents=True, exist_ok=True)
                self.heartbeat_file.touch()
            except OSError as exc:
                log.warning("cannot write heartbeat file %s: %s", self.heartbeat_file, exc)

    async def watchdog(self, exit_after: float, interval: float = 10.0) -> None:
        """Beat while healthy; raise SystemExit(3) once a platform is offline for ``exit_after`` s."""
        while True:
            self.beat()
            if self.offline_for() > exit_after:
                log.error("offline for more than %.0f s; exiting so the container restarts", exit_after)
                raise SystemExit(3)
            await asyncio.sleep(interval)


def check_heartbeat(path: Path, max_age: float) -> bool:
    """For the container healthcheck: the heartbeat file exists and is fresh."""
    try:
        return time.time() - path.stat().st_mtime <= max_age
    except OSError:
        return False
