"""A fake Slack on 127.0.0.1 (aiohttp): the Web API, response_url, file downloads and uploads, and the
Socket Mode WebSocket.  It records everything it receives, so tests (and bench/slack_latency.py)
drive the real Bolt app over real HTTP and WebSocket and assert on what Slack would have seen.

- ``/api/{method}``: auth.test, apps.connections.open, chat.postMessage, chat.update,
  chat.postEphemeral, files.getUploadURLExternal, files.completeUploadExternal; anything else ``ok``.
  Bodies are merged from the query string, form and JSON (slack_sdk uses all three).
  ``fail(method, status, headers)`` queues an error answer (e.g. a 429 with Retry-After).
- ``/respond/{id}``: the response_url target (slash commands, shortcuts, buttons).
- ``/files/{name}``: serves ``files[name]``, only with the right bearer token (else Slack's HTML
  sign-in page, as the real one does).
- ``/upload/{file_id}``: step 2 of files_upload_v2.
- ``/link``: Socket Mode: sends ``hello``, then whatever ``push()`` sends; records the acks.
"""

from __future__ import annotations

import asyncio
import contextlib
import itertools
import json
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from aiohttp import WSMsgType, web

BOT_USER_ID = "UGARDEN"
BOT_ID = "BGARDEN"
TEAM_ID = "T0001"
BOT_TOKEN = "xoxb-test-token"
APP_TOKEN = "xapp-1-test-token"


@dataclass
class Call:
    method: str
    body: dict[str, Any]
    headers: dict[str, str]
    at: float = field(default_factory=time.perf_counter)


class FakeSlack:
    def __init__(self, bot_token: str = BOT_TOKEN):
        self.bot_token = bot_token
        self.calls: list[Call] = []
        self.responses: list[Call] = []  # POSTs to response_url
        self.downloads: list[Call] = []
        self.uploads: list[Call] = []
        self.acks: list[dict[str, Any]] = []
        self.pushed: dict[str, float] = {}  # envelope_id -> perf_counter when sent
        self.files: dict[str, bytes] = {}
        self.connections = 0
        self.latency: dict[str, float] = {}  # Web API method -> seconds before the fake answers
        self.arrived: list[str] = []  # Web API methods, in the order their requests arrived
        self.abandoned: list[Call] = []  # slow calls whose client went away before the answer
        self._failures: dict[str, list[tuple[int, dict[str, str], dict[str, Any]]]] = {}
        self._ts = itertools.count(1)
        self._file_ids = itertools.count(1)
        self._sockets: set[web.WebSocketResponse] = set()
        self._socket_ready = asyncio.Event()
        self._runner: web.AppRunner | None = None
        self.port = 0

    # lifecycle ---------------------------------------------------------------------------------
    async def start(self) -> FakeSlack:
        app = web.Application()
        app.router.add_post("/api/{method}", self._api)
        app.router.add_get("/api/{method}", self._api)
        app.router.add_post("/respond/{id}", self._respond)
        app.router.add_get("/files/{name}", self._download)
        app.router.add_post("/upload/{file_id}", self._upload)
        app.router.add_get("/link", self._link)
        app.router.add_get("/link/", self._link)
        self._runner = web.AppRunner(app, access_log=None, shutdown_timeout=1.0)
        await self._runner.setup()
        site = web.TCPSite(self._runner, "127.0.0.1", 0)
        await site.start()
        self.port = site._server.sockets[0].getsockname()[1]  # type: ignore[union-attr]
        return self

    async def stop(self) -> None:
        for ws in list(self._sockets):
            await ws.close()
        if self._runner is not None:
            await self._runner.cleanup()
            self._runner = None

    async def __aenter__(self) -> FakeSlack:
        return await self.start()

    async def __aexit__(self, *exc: object) -> None:
        await self.stop()

    # addresses ---------------------------------------------------------------------------------
    @property
    def base(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    @property
    def api_url(self) -> str:
        return f"{self.base}/api/"

    def response_url(self, key: str = "r1") -> str:
        return f"{self.base}/respond/{key}"

    def file_url(self, name: str) -> str:
        return f"{self.base}/files/{name}"

    # control -----------------------------------------------------------------------------------
    def fail(
        self,
        method: str,
        status: int = 429,
        headers: dict[str, str] | None = None,
        body: dict[str, Any] | None = None,
        times: int = 1,
    ) -> None:
        """The next ``times`` calls of ``method`` get this answer instead of the normal one."""
        answer = (status, headers or {}, body or {"ok": False, "error": "ratelimited"})
        self._failures.setdefault(method, []).extend([answer] * times)

    def called(self, method: str) -> list[Call]:
        return [c for c in self.calls if c.method == method]

    async def wait_until(self, predicate: Callable[[], Any], timeout: float = 5.0) -> Any:
        deadline = time.monotonic() + timeout
        while True:
            result = predicate()
            if result:
                return result
            if time.monotonic() > deadline:
                raise AssertionError("fake Slack: timed out waiting")
            await asyncio.sleep(0.005)

    async def wait_for(self, method: str, count: int = 1, timeout: float = 5.0) -> list[Call]:
        await self.wait_until(lambda: len(self.called(method)) >= count, timeout)
        return self.called(method)

    async def wait_connected(self, timeout: float = 5.0) -> None:
        await asyncio.wait_for(self._socket_ready.wait(), timeout)

    async def push(self, envelope: dict[str, Any]) -> None:
        """Send one Socket Mode envelope to the connected client."""
        await self.wait_connected()
        ws = next(iter(self._sockets))
        self.pushed[envelope.get("envelope_id", "")] = time.perf_counter()
        await ws.send_str(json.dumps(envelope))

    # handlers ----------------------------------------------------------------------------------
    @staticmethod
    async def _body(request: web.Request) -> dict[str, Any]:
        body: dict[str, Any] = dict(request.query)
        ctype = request.content_type
        if ctype == "application/json":
            data = await request.json()
            if isinstance(data, dict):
                body.update(data)
        elif ctype in ("application/x-www-form-urlencoded", "multipart/form-data"):
            form = await request.post()
            body.update({k: v for k, v in form.items() if isinstance(v, str)})
        for key in ("blocks", "files", "attachments"):
            if isinstance(body.get(key), str):
                with contextlib.suppress(ValueError):
                    body[key] = json.loads(body[key])
        return body

    def _next_ts(self) -> str:
        return f"1700000000.{next(self._ts):06d}"

    def slow(self, method: str, seconds: float) -> None:
        """REST latency: calls of ``method`` wait ``seconds`` before the fake answers (so an edit, a
        delete or a SIGTERM can arrive while an answer is being posted)."""
        self.latency[method] = seconds

    async def _api(self, request: web.Request) -> web.StreamResponse:
        method = request.match_info["method"]
        self.arrived.append(method)
        body = await self._body(request)
        if self.latency.get(method):
            await asyncio.sleep(self.latency[method])
            if request.transport is None or request.transport.is_closing():
                self.abandoned.append(Call(method, body, dict(request.headers)))
                return web.Response(status=499)  # the client gave up (it was stopped): not delivered
        self.calls.append(Call(method, body, dict(request.headers)))
        queued = self._failures.get(method)
        if queued:
            status, headers, payload = queued.pop(0)
            return web.json_response(payload, status=status, headers=headers)
        if method == "auth.test":
            payload = {
                "ok": True,
                "url": "https://garden.slack.com/",
                "team": "Garden",
                "user": "gpu-garden",
                "team_id": TEAM_ID,
                "user_id": BOT_USER_ID,
                "bot_id": BOT_ID,
            }
        elif method == "apps.connections.open":
            payload = {"ok": True, "url": f"ws://127.0.0.1:{self.port}/link"}
        elif method == "chat.postMessage":
            ts = self._next_ts()
            payload = {"ok": True, "channel": body.get("channel"), "ts": ts, "message": {"ts": ts}}
        elif method == "chat.update":
            payload = {"ok": True, "channel": body.get("channel"), "ts": body.get("ts")}
        elif method == "chat.postEphemeral":
            payload = {"ok": True, "message_ts": self._next_ts()}
        elif method == "files.getUploadURLExternal":
            file_id = f"F{next(self._file_ids):05d}"
            payload = {"ok": True, "file_id": file_id, "upload_url": f"{self.base}/upload/{file_id}"}
        elif method == "files.completeUploadExternal":
            files = body.get("files") or []
            payload = {"ok": True, "files": [{"id": f.get("id"), "title": f.get("title")} for f in files]}
        else:
            payload = {"ok": True}
        return web.json_response(payload)

    async def _respond(self, request: web.Request) -> web.Response:
        body = await self._body(request)
        body["_id"] = request.match_info["id"]
        self.responses.append(Call("response_url", body, dict(request.headers)))
        return web.Response(text="ok")

    async def _download(self, request: web.Request) -> web.Response:
        name = request.match_info["name"]
        self.downloads.append(Call(name, {}, dict(request.headers)))
        if request.headers.get("Authorization") != f"Bearer {self.bot_token}":
            return web.Response(text="<html>Sign in to Slack</html>", content_type="text/html")
        if name not in self.files:
            return web.Response(status=404)
        return web.Response(body=self.files[name], content_type="text/plain")

    async def _upload(self, request: web.Request) -> web.Response:
        data = await request.read()
        self.uploads.append(Call(request.match_info["file_id"], {"size": len(data)}, dict(request.headers)))
        return web.Response(text=f"OK - {len(data)}")

    async def _link(self, request: web.Request) -> web.WebSocketResponse:
        ws = web.WebSocketResponse(autoping=True)
        await ws.prepare(request)
        self._sockets.add(ws)
        self.connections += 1
        await ws.send_str(
            json.dumps(
                {
                    "type": "hello",
                    "num_connections": 1,
                    "debug_info": {"host": "fake", "approximate_connection_time": 3600},
                    "connection_info": {"app_id": "A0001"},
                }
            )
        )
        self._socket_ready.set()
        try:
            async for message in ws:
                if message.type == WSMsgType.TEXT:
                    try:
                        data = json.loads(message.data)
                    except ValueError:
                        continue
                    if isinstance(data, dict) and "envelope_id" in data:
                        data["_at"] = time.perf_counter()
                        self.acks.append(data)
        finally:
            self._sockets.discard(ws)
            if not self._sockets:
                self._socket_ready.clear()
        return ws


# payload builders ------------------------------------------------------------------------------
_counter = itertools.count(1)


def message_event(
    text: str,
    *,
    channel: str = "CGARDEN",
    user: str = "U100",
    ts: str | None = None,
    channel_type: str = "channel",
    **extra: Any,
) -> dict[str, Any]:
    event = {
        "type": "message",
        "channel": channel,
        "user": user,
        "text": text,
        "ts": ts or f"1699999999.{next(_counter):06d}",
        "channel_type": channel_type,
        "event_ts": ts or "1699999999.000000",
    }
    event.update(extra)
    return event


def event_callback(event: dict[str, Any], event_id: str | None = None) -> dict[str, Any]:
    return {
        "token": "legacy",
        "team_id": TEAM_ID,
        "api_app_id": "A0001",
        "event": event,
        "type": "event_callback",
        "event_id": event_id or f"Ev{next(_counter):08d}",
        "event_time": 1700000000,
        "authorizations": [
            {"team_id": TEAM_ID, "user_id": BOT_USER_ID, "is_bot": True, "is_enterprise_install": False}
        ],
    }


def envelope(kind: str, payload: dict[str, Any], envelope_id: str | None = None) -> dict[str, Any]:
    """A Socket Mode envelope: kind is events_api, slash_commands or interactive."""
    return {
        "envelope_id": envelope_id or f"env-{next(_counter)}",
        "type": kind,
        "payload": payload,
        "accepts_response_payload": kind != "events_api",
        "retry_attempt": 0,
        "retry_reason": "",
    }


def slash_command(text: str, response_url: str, *, user: str = "U100", channel: str = "CGARDEN") -> dict:
    return {
        "token": "legacy",
        "team_id": TEAM_ID,
        "team_domain": "garden",
        "channel_id": channel,
        "channel_name": "llm-help",
        "user_id": user,
        "user_name": "someone",
        "command": "/vram",
        "text": text,
        "api_app_id": "A0001",
        "response_url": response_url,
        "trigger_id": f"trig.{next(_counter)}",
    }


def message_shortcut(message: dict[str, Any], response_url: str, *, user: str = "U100") -> dict:
    return {
        "type": "message_action",
        "token": "legacy",
        "action_ts": "1700000001.000000",
        "team": {"id": TEAM_ID, "domain": "garden"},
        "user": {"id": user, "name": "someone", "team_id": TEAM_ID},
        "channel": {"id": message.get("channel", "CGARDEN"), "name": "llm-help"},
        "callback_id": "triage_message",
        "trigger_id": f"trig.{next(_counter)}",
        "message_ts": message["ts"],
        "message": {k: v for k, v in message.items() if k not in ("channel", "channel_type")},
        "response_url": response_url,
    }


def button_click(value: str, action_id: str, response_url: str, *, user: str = "U200") -> dict:
    return {
        "type": "block_actions",
        "team": {"id": TEAM_ID, "domain": "garden"},
        "user": {"id": user, "name": "voter", "team_id": TEAM_ID},
        "api_app_id": "A0001",
        "token": "legacy",
        "container": {"type": "message", "message_ts": "1700000000.000001", "channel_id": "CGARDEN"},
        "trigger_id": f"trig.{next(_counter)}",
        "channel": {"id": "CGARDEN", "name": "llm-help"},
        "response_url": response_url,
        "actions": [
            {
                "action_id": action_id,
                "block_id": "garden_feedback",
                "text": {"type": "plain_text", "text": "Helpful"},
                "value": value,
                "type": "button",
                "action_ts": "1700000002.000000",
            }
        ],
    }
