"""The loopback fakes of Discord and Slack (tests/adapters/*/fake_*.py) with faults on demand: queued
error answers (429 with Retry-After, 5xx), attachment downloads that dribble or break off midway, and
dropped gateway / Socket Mode connections.  Used by the hardening tests and scripts/reliability.py."""

from __future__ import annotations

import asyncio
import json
import re
from dataclasses import dataclass

from aiohttp import web

from tests.adapters.discord.fake_discord import Call as DiscordCall
from tests.adapters.discord.fake_discord import FakeDiscord
from tests.adapters.slack.fake_slack import Call as SlackCall
from tests.adapters.slack.fake_slack import FakeSlack

CHUNK = 64 * 1024


@dataclass
class Trickle:
    """How one file is served: ``delay`` seconds between 64 KiB chunks; the connection is cut after
    ``cut_after`` bytes on the first ``cut_times`` downloads."""

    delay: float = 0.0
    cut_after: int | None = None
    cut_times: int = 1


async def _serve_bytes(
    request: web.Request, data: bytes, trickle: Trickle, served: dict[str, int], name: str
):
    status = 200
    headers: dict[str, str] = {}
    rng = request.headers.get("Range", "")
    if mt := re.fullmatch(r"bytes=-(\d+)", rng):
        tail = data[-int(mt.group(1)) :]
        headers["Content-Range"] = f"bytes {len(data) - len(tail)}-{len(data) - 1}/{len(data)}"
        data, status = tail, 206
    attempt = served.get(name, 0)
    served[name] = attempt + 1
    cut = trickle.cut_after if attempt < trickle.cut_times else None
    resp = web.StreamResponse(status=status, headers=headers)
    resp.content_type = "text/plain"
    resp.content_length = len(data)
    await resp.prepare(request)
    sent = 0
    while sent < len(data):
        chunk = data[sent : sent + CHUNK]
        if cut is not None and sent + len(chunk) > cut:
            chunk = chunk[: max(0, cut - sent)]
            if chunk:
                await resp.write(chunk)
            assert request.transport is not None
            request.transport.abort()  # the connection drops mid-download
            return resp
        await resp.write(chunk)
        sent += len(chunk)
        if trickle.delay:
            await asyncio.sleep(trickle.delay)
    await resp.write_eof()
    return resp


class FaultyDiscord(FakeDiscord):
    def __init__(self) -> None:
        super().__init__()
        self.queued: list[tuple[str, str, int, dict, dict[str, str]]] = []
        self.trickle: dict[str, Trickle] = {}
        self.served: dict[str, int] = {}

    def fail_next(
        self,
        method: str,
        pattern: str,
        status: int,
        body: dict | None = None,
        headers: dict[str, str] | None = None,
        times: int = 1,
    ) -> None:
        """The next ``times`` requests matching ``method`` and the path regex get this answer."""
        entry = (method, pattern, status, body or {"message": "fault", "code": 0}, headers or {})
        self.queued.extend([entry] * times)

    def rate_limit_next(self, method: str, pattern: str, retry_after: float, times: int = 1) -> None:
        """A per-route 429 as Discord sends it (discord.py needs the ``Via`` header to trust it)."""
        body = {"message": "You are being rate limited.", "retry_after": retry_after, "global": False}
        headers = {"Via": "1.1 google", "Retry-After": str(retry_after), "X-RateLimit-Scope": "user"}
        self.fail_next(method, pattern, 429, body, headers, times)

    def delivered(self, method: str, pattern: str) -> list[DiscordCall]:
        """Calls that the fake answered normally (not the injected faults)."""
        return [c for c in self.find(method, pattern) if c.response is not None]

    async def _rest(self, request: web.Request) -> web.Response:
        path = "/" + request.match_info["tail"]
        for i, (method, pattern, status, body, headers) in enumerate(self.queued):
            if method == request.method and re.fullmatch(pattern, path):
                del self.queued[i]
                payload, files = await self._body(request)
                await self._record(DiscordCall(request.method, path, dict(request.query), payload, files))
                return web.Response(
                    status=status,
                    body=json.dumps(body).encode(),
                    content_type="application/json",
                    headers=headers,
                )
        return await super()._rest(request)

    def attachment(
        self, name: str, data: bytes, content_type: str | None = None, trickle: Trickle | None = None
    ):
        payload = super().attachment(name, data, content_type)
        if trickle is not None:
            self.trickle[payload["url"].rsplit("/", 1)[1]] = trickle
        return payload

    async def _attachment(self, request: web.Request) -> web.StreamResponse:
        name = request.match_info["name"]
        trickle = self.trickle.get(name)
        if trickle is None or name not in self.files:
            return await super()._attachment(request)
        self.file_requests.append(dict(request.headers))
        return await _serve_bytes(request, self.files[name], trickle, self.served, name)


class FaultySlack(FakeSlack):
    def __init__(self) -> None:
        super().__init__()
        self.trickle: dict[str, Trickle] = {}
        self.served: dict[str, int] = {}

    async def drop_socket(self) -> None:
        """Close every Socket Mode connection, as a network blip or a Slack-side refresh would."""
        for ws in list(self._sockets):
            await ws.close(code=1001, message=b"going away")

    async def _download(self, request: web.Request) -> web.StreamResponse:
        name = request.match_info["name"]
        trickle = self.trickle.get(name)
        if trickle is None or name not in self.files:
            return await super()._download(request)
        self.downloads.append(SlackCall(name, {}, dict(request.headers)))
        if request.headers.get("Authorization") != f"Bearer {self.bot_token}":
            return web.Response(text="<html>Sign in to Slack</html>", content_type="text/html")
        return await _serve_bytes(request, self.files[name], trickle, self.served, name)
