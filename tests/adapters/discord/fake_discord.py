"""A fake Discord on loopback: REST under ``/api/v10`` and a gateway WebSocket, both on 127.0.0.1:0.

discord.py runs unmodified against it once ``discord.http.Route.BASE`` and
``discord.gateway.DiscordWebSocket.DEFAULT_GATEWAY`` point here (see ``point_discord_py_at``).  Every
REST call is recorded in ``calls`` so tests assert on what the client really sent; gateway events are
pushed with ``dispatch``.  Payload builders (``message``, ``slash``, ``context_menu``, ``button_click``,
``modal_submit``) make the dicts Discord would send.

Gotchas this file encodes (platforms.md §1.5): Content-Type must be exactly ``application/json``,
member payloads need ``flags``, the interaction callback answers ``{"interaction": {...}}``, READY's
``resume_gateway_url`` must be loopback too.
"""

from __future__ import annotations

import asyncio
import itertools
import json
import re
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import aiohttp
from aiohttp import web

BOT_ID = 900000000000000001
APP_ID = 900000000000000002
GUILD_ID = 900000000000000010
CHANNEL_ID = 900000000000000020  # passive channel (enabled in settings)
QUIET_CHANNEL_ID = 900000000000000021  # not enabled: only mentions are answered there
DM_CHANNEL_ID = 900000000000000030
USER_ID = 900000000000000100
OTHER_BOT_ID = 900000000000000200

EVERYONE_PERMS = str((1 << 41) - 1)  # everything (send, threads, embeds, attach) for the tests


def _json(data: Any, status: int = 200) -> web.Response:
    # discord.py compares the Content-Type literally: no "; charset=utf-8"
    return web.Response(status=status, body=json.dumps(data).encode(), content_type="application/json")


def _user(uid: int, name: str, bot: bool = False) -> dict:
    return {
        "id": str(uid),
        "username": name,
        "discriminator": "0",
        "global_name": name,
        "avatar": None,
        "bot": bot,
        "public_flags": 0,
    }


def _member(user: dict | None = None) -> dict:
    data = {
        "roles": [],
        "joined_at": "2026-01-01T00:00:00+00:00",
        "deaf": False,
        "mute": False,
        "flags": 0,
        "nick": None,
        "pending": False,
        "permissions": EVERYONE_PERMS,
    }
    if user is not None:
        data["user"] = user
    return data


def _now() -> str:
    return time.strftime("%Y-%m-%dT%H:%M:%S+00:00", time.gmtime())


@dataclass
class Call:
    method: str
    path: str  # without the /api/v10 prefix
    query: dict[str, str]
    json: Any = None  # the JSON body, or payload_json of a multipart body
    files: dict[str, tuple[str, bytes]] = field(default_factory=dict)  # form name -> (filename, bytes)
    response: Any = None  # what the fake answered
    at: float = field(default_factory=time.perf_counter)


class FakeDiscord:
    def __init__(self) -> None:
        self.calls: list[Call] = []
        self.identify: dict | None = None
        self.files: dict[str, bytes] = {}  # served under /attachments/<name>
        self.file_requests: list[dict[str, str]] = []  # headers of each attachment download
        self.fail: dict[str, tuple[int, dict]] = {}  # "POST /channels/1/messages/2/threads" -> (status, body)
        self.close_on_identify: int | None = None  # e.g. 4014: disallowed intents
        self.latency: list[tuple[str, str, float]] = []  # (method, path regex, seconds) before answering
        self.arrived: list[str] = []  # "METHOD /path" of every REST request, when it arrives
        self.resumes = 0
        self.bot_user = _user(BOT_ID, "GPU Garden", bot=True)
        self.user = _user(USER_ID, "alice")
        self._ids = itertools.count(1_300_000_000_000_000_000)
        self._seq = 0
        self._ws: web.WebSocketResponse | None = None
        self._changed = asyncio.Condition()
        self._runner: web.AppRunner | None = None
        self._sockets: set[web.WebSocketResponse] = set()
        self.port = 0

    # lifecycle ---------------------------------------------------------------------------------
    async def start(self) -> FakeDiscord:
        app = web.Application()
        app.router.add_route("GET", "/gateway", self._gateway)
        app.router.add_route("GET", "/attachments/{name}", self._attachment)
        app.router.add_route("*", "/api/v10/{tail:.*}", self._rest)
        self._runner = web.AppRunner(app, access_log=None, handle_signals=False)
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

    @property
    def base(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    @property
    def api_base(self) -> str:
        return f"{self.base}/api/v10"

    @property
    def gateway_url(self) -> str:
        return f"ws://127.0.0.1:{self.port}/gateway"

    def new_id(self) -> int:
        return next(self._ids)

    # waiting on what the client sends --------------------------------------------------------------
    async def _record(self, call: Call) -> None:
        self.calls.append(call)
        async with self._changed:
            self._changed.notify_all()

    def find(self, method: str, pattern: str) -> list[Call]:
        rx = re.compile(pattern)
        return [c for c in self.calls if c.method == method and rx.fullmatch(c.path)]

    async def wait_for(self, method: str, pattern: str, count: int = 1, timeout: float = 5.0) -> list[Call]:
        """The first ``count`` calls matching ``method`` and the path regex, waiting for them."""

        async def ready() -> list[Call]:
            async with self._changed:
                await self._changed.wait_for(lambda: len(self.find(method, pattern)) >= count)
            return self.find(method, pattern)[:count]

        return await asyncio.wait_for(ready(), timeout)

    def slow(self, method: str, pattern: str, seconds: float) -> None:
        """REST latency: requests matching ``method`` and the path regex wait ``seconds`` before the
        fake answers them (an edit or a SIGTERM can then arrive while an answer is being posted)."""
        self.latency.append((method, pattern, seconds))

    async def arrival(self, method: str, pattern: str, count: int = 1, timeout: float = 5.0) -> None:
        """Wait until ``count`` requests matching have arrived (answered or not)."""
        rx = re.compile(pattern)
        deadline = asyncio.get_running_loop().time() + timeout

        def matching() -> int:
            return sum(
                1
                for m, _, path in (a.partition(" ") for a in self.arrived)
                if m == method and rx.fullmatch(path)
            )

        while matching() < count:
            if asyncio.get_running_loop().time() > deadline:
                raise TimeoutError(f"no {method} {pattern} arrived")
            await asyncio.sleep(0.005)

    async def settle(self, seconds: float = 0.2) -> None:
        """Give the client time to (not) react: used to assert that nothing was sent."""
        await asyncio.sleep(seconds)

    # gateway -----------------------------------------------------------------------------------
    async def _gateway(self, request: web.Request) -> web.WebSocketResponse:
        ws = web.WebSocketResponse()
        await ws.prepare(request)
        self._sockets.add(ws)
        await ws.send_json({"op": 10, "d": {"heartbeat_interval": 41250}})
        try:
            async for frame in ws:
                if frame.type != aiohttp.WSMsgType.TEXT:
                    continue
                msg = json.loads(frame.data)
                op = msg.get("op")
                if op == 1:
                    await ws.send_json({"op": 11})
                elif op == 2 and self.close_on_identify is not None:
                    await ws.close(code=self.close_on_identify, message=b"refused")
                elif op == 2:
                    self.identify = msg["d"]
                    self._ws = ws
                    await self._send_ready(ws)
                elif op == 6:
                    self.resumes += 1
                    self._ws = ws
                    await self._send(ws, "RESUMED", {})
        finally:
            self._sockets.discard(ws)
            if self._ws is ws:
                self._ws = None
        return ws

    async def _send(self, ws: web.WebSocketResponse, event: str, data: Any) -> None:
        self._seq += 1
        await ws.send_json({"op": 0, "t": event, "s": self._seq, "d": data})

    async def _send_ready(self, ws: web.WebSocketResponse) -> None:
        await self._send(
            ws,
            "READY",
            {
                "v": 10,
                "user": self.bot_user,
                "guilds": [{"id": str(GUILD_ID), "unavailable": True}],
                "session_id": "fake-session",
                "resume_gateway_url": self.gateway_url,
                "application": {"id": str(APP_ID), "flags": 0},
                "private_channels": [],
                "relationships": [],
                "shard": [0, 1],
            },
        )
        await self._send(ws, "GUILD_CREATE", self.guild())

    async def dispatch(self, event: str, data: dict) -> None:
        """Push one gateway event to the connected client."""
        if self._ws is None:
            raise RuntimeError("no client is connected to the fake gateway")
        await self._send(self._ws, event, data)

    async def drop_connection(self) -> None:
        """Close the gateway socket as a network blip would (the client reconnects and resumes)."""
        if self._ws is not None:
            await self._ws.close(code=4000, message=b"blip")

    def guild(self) -> dict:
        def channel(cid: int, name: str, position: int) -> dict:
            return {
                "id": str(cid),
                "type": 0,
                "guild_id": str(GUILD_ID),
                "name": name,
                "position": position,
                "permission_overwrites": [],
                "parent_id": None,
                "nsfw": False,
                "topic": None,
                "rate_limit_per_user": 0,
                "last_message_id": None,
                "flags": 0,
            }

        return {
            "id": str(GUILD_ID),
            "name": "Garden test guild",
            "owner_id": str(USER_ID),
            "unavailable": False,
            "member_count": 3,
            "large": False,
            "features": [],
            "premium_tier": 0,
            "roles": [
                {
                    "id": str(GUILD_ID),
                    "name": "@everyone",
                    "permissions": EVERYONE_PERMS,
                    "position": 0,
                    "color": 0,
                    "colors": {"primary_color": 0, "secondary_color": None, "tertiary_color": None},
                    "hoist": False,
                    "managed": False,
                    "mentionable": False,
                    "flags": 0,
                }
            ],
            "channels": [channel(CHANNEL_ID, "help", 1), channel(QUIET_CHANNEL_ID, "general", 2)],
            "threads": [],
            "members": [_member(self.bot_user), _member(self.user)],
            "emojis": [],
            "stickers": [],
            "presences": [],
            "voice_states": [],
            "stage_instances": [],
            "guild_scheduled_events": [],
            "soundboard_sounds": [],
        }

    # payload builders --------------------------------------------------------------------------
    def attachment(self, name: str, data: bytes, content_type: str | None = None) -> dict:
        """Serve ``data`` at a loopback URL and return the attachment object pointing at it."""
        key = f"{self.new_id()}-{name}"
        self.files[key] = data
        url = f"{self.base}/attachments/{key}"
        payload = {
            "id": str(self.new_id()),
            "filename": name,
            "size": len(data),
            "url": url,
            "proxy_url": url,
        }
        if content_type is not None:
            payload["content_type"] = content_type
        return payload

    def message(
        self,
        content: str,
        *,
        channel_id: int = CHANNEL_ID,
        message_id: int | None = None,
        author: dict | None = None,
        attachments: list[dict] | None = None,
        mentions: list[dict] | None = None,
        guild: bool = True,
        edited: bool = False,
    ) -> dict:
        author = author or self.user
        data: dict[str, Any] = {
            "id": str(message_id or self.new_id()),
            "channel_id": str(channel_id),
            "author": author,
            "content": content,
            "timestamp": _now(),
            "edited_timestamp": _now() if edited else None,
            "tts": False,
            "mention_everyone": "@everyone" in content,
            "mentions": mentions or [],
            "mention_roles": [],
            "attachments": attachments or [],
            "embeds": [],
            "pinned": False,
            "type": 0,
            "flags": 0,
            "components": [],
        }
        if guild:
            data["guild_id"] = str(GUILD_ID)
            data["member"] = _member()
        return data

    def mention_of_bot(self) -> dict:
        return {**self.bot_user, "member": _member()}

    def _interaction(self, itype: int, data: dict, *, message: dict | None = None) -> dict:
        payload: dict[str, Any] = {
            "id": str(self.new_id()),
            "application_id": str(APP_ID),
            "type": itype,
            "token": f"tok-{self.new_id()}",
            "version": 1,
            "guild_id": str(GUILD_ID),
            "channel_id": str(CHANNEL_ID),
            "channel": {"id": str(CHANNEL_ID), "type": 0, "guild_id": str(GUILD_ID), "name": "help"},
            "member": _member(self.user),
            "app_permissions": EVERYONE_PERMS,
            "locale": "en-US",
            "guild_locale": "en-US",
            "entitlements": [],
            "authorizing_integration_owners": {"0": str(GUILD_ID)},
            "context": 0,
            "attachment_size_limit": 10 * 1024 * 1024,
            "data": data,
        }
        if message is not None:
            payload["message"] = message
        return payload

    def slash(self, name: str, options: dict[str, Any] | None = None) -> dict:
        kinds = {bool: 5, int: 4, float: 10, str: 3}
        opts = [{"name": k, "type": kinds[type(v)], "value": v} for k, v in (options or {}).items()]
        return self._interaction(2, {"id": str(self.new_id()), "name": name, "type": 1, "options": opts})

    def autocomplete(self, name: str, focused: str, typed: str, others: dict[str, str] | None = None) -> dict:
        opts = [{"name": k, "type": 3, "value": v} for k, v in (others or {}).items()]
        opts.append({"name": focused, "type": 3, "value": typed, "focused": True})
        return self._interaction(4, {"id": str(self.new_id()), "name": name, "type": 1, "options": opts})

    def context_menu(self, name: str, target: dict) -> dict:
        return self._interaction(
            2,
            {
                "id": str(self.new_id()),
                "name": name,
                "type": 3,
                "target_id": target["id"],
                "resolved": {"messages": {target["id"]: target}},
            },
        )

    def button_click(self, message: dict, custom_id: str) -> dict:
        return self._interaction(3, {"custom_id": custom_id, "component_type": 2}, message=message)

    def modal_submit(self, callback: Call, value: str) -> dict:
        """Fill every text input of the modal a callback (type 9) opened with ``value``."""
        modal = callback.json["data"]

        def fill(component: dict) -> dict:
            if component.get("type") == 4:
                return {"type": 4, "custom_id": component["custom_id"], "value": value}
            out = {"type": component["type"]}
            if "id" in component:
                out["id"] = component["id"]
            if "components" in component:
                out["components"] = [fill(c) for c in component["components"]]
            if "component" in component:
                out["component"] = fill(component["component"])
            return out

        return self._interaction(
            5, {"custom_id": modal["custom_id"], "components": [fill(c) for c in modal["components"]]}
        )

    def sent_message(self, call: Call) -> dict:
        """The message object the fake returned for a recorded message POST (to click its buttons)."""
        return call.response

    # REST --------------------------------------------------------------------------------------
    async def _body(self, request: web.Request) -> tuple[Any, dict[str, tuple[str, bytes]]]:
        files: dict[str, tuple[str, bytes]] = {}
        if request.content_type.startswith("multipart/"):
            payload: Any = None
            reader = await request.multipart()
            async for part in reader:
                if part.name == "payload_json":  # type: ignore[union-attr]
                    payload = json.loads(await part.text())  # type: ignore[union-attr]
                else:
                    files[part.name or ""] = (part.filename or "", bytes(await part.read()))  # type: ignore[union-attr]
            return payload, files
        if request.can_read_body:
            raw = await request.read()
            if raw:
                try:
                    return json.loads(raw), files
                except ValueError:
                    return raw.decode("utf-8", "replace"), files
        return None, files

    async def _rest(self, request: web.Request) -> web.Response:
        path = "/" + request.match_info["tail"]
        self.arrived.append(f"{request.method} {path}")
        body, files = await self._body(request)
        for method, pattern, seconds in self.latency:
            if method == request.method and re.fullmatch(pattern, path):
                await asyncio.sleep(seconds)
                if request.transport is None or request.transport.is_closing():
                    # the client gave up (it was stopped): recorded, but never delivered
                    await self._record(Call(request.method, path, dict(request.query), body, files))
                    return web.Response(status=499)
                break
        call = Call(request.method, path, dict(request.query), body, files)
        key = f"{request.method} {path}"
        if key in self.fail:
            await self._record(call)
            status, payload = self.fail[key]
            return _json(payload, status)
        response, status = self._respond(call)
        call.response = response
        await self._record(call)
        if status == 204:
            return web.Response(status=204)
        return _json(response, status)

    def _message_object(self, channel_id: str, body: dict, files: dict[str, tuple[str, bytes]]) -> dict:
        mid = str(self.new_id())
        attachments = []
        for i, (_form, (name, data)) in enumerate(sorted(files.items())):
            attachments.append(
                {
                    "id": str(self.new_id()),
                    "filename": name,
                    "size": len(data),
                    "url": f"{self.base}/attachments/sent-{mid}-{i}",
                    "proxy_url": f"{self.base}/attachments/sent-{mid}-{i}",
                }
            )
        message = {
            **self.message(body.get("content") or "", channel_id=int(channel_id), message_id=int(mid)),
            "author": self.bot_user,
            "embeds": body.get("embeds") or [],
            "components": body.get("components") or [],
            "attachments": attachments,
            "flags": body.get("flags", 0),
            "mention_everyone": False,
        }
        if body.get("message_reference"):
            message["message_reference"] = body["message_reference"]
            message["type"] = 19
        return message

    def _respond(self, call: Call) -> tuple[Any, int]:
        p, m = call.path, call.method
        body = call.json if isinstance(call.json, dict) else {}
        if m == "GET" and p == "/users/@me":
            return self.bot_user, 200
        if m == "GET" and p == "/oauth2/applications/@me":
            return {
                "id": str(APP_ID),
                "name": "GPU Garden",
                "description": "",
                "icon": None,
                "bot_public": True,
                "bot_require_code_grant": False,
                "owner": self.user,
                "verify_key": "00",
                "flags": 0,
                "interactions_endpoint_url": None,
            }, 200
        if m == "GET" and p in ("/gateway", "/gateway/bot"):
            return {"url": f"ws://127.0.0.1:{self.port}/gateway", "shards": 1}, 200
        if m == "PUT" and re.fullmatch(r"/applications/\d+(/guilds/\d+)?/commands", p):
            out = []
            for cmd in call.json or []:
                out.append(
                    {
                        "description": "",
                        **cmd,
                        "id": str(self.new_id()),
                        "application_id": str(APP_ID),
                        "version": "1",
                    }
                )
            return out, 200
        if mt := re.fullmatch(r"/channels/(\d+)/messages/(\d+)/threads", p):
            return {
                "id": mt.group(2),
                "guild_id": str(GUILD_ID),
                "parent_id": mt.group(1),
                "owner_id": str(BOT_ID),
                "name": body.get("name", "thread"),
                "type": 11,
                "last_message_id": None,
                "rate_limit_per_user": 0,
                "message_count": 0,
                "member_count": 1,
                "flags": 0,
                "thread_metadata": {
                    "archived": False,
                    "auto_archive_duration": body.get("auto_archive_duration", 1440),
                    "archive_timestamp": _now(),
                    "locked": False,
                },
            }, 201
        if m == "POST" and (mt := re.fullmatch(r"/channels/(\d+)/messages", p)):
            return self._message_object(mt.group(1), body, call.files), 200
        if m == "PATCH" and (mt := re.fullmatch(r"/channels/(\d+)/messages/(\d+)", p)):
            msg = self._message_object(mt.group(1), body, call.files)
            msg["id"] = mt.group(2)
            msg["edited_timestamp"] = _now()
            return msg, 200
        if m == "POST" and (mt := re.fullmatch(r"/interactions/(\d+)/([^/]+)/callback", p)):
            return {
                "interaction": {
                    "id": mt.group(1),
                    "type": 2,
                    "response_message_loading": body.get("type") == 5,
                    "response_message_ephemeral": bool((body.get("data") or {}).get("flags", 0) & 64),
                }
            }, 200
        if m == "POST" and re.fullmatch(r"/webhooks/\d+/[^/]+", p):
            return self._message_object(str(CHANNEL_ID), body, call.files), 200
        if m == "PATCH" and re.fullmatch(r"/webhooks/\d+/[^/]+/messages/[^/]+", p):
            return self._message_object(str(CHANNEL_ID), body, call.files), 200
        if m == "DELETE":
            return None, 204
        return {"message": f"fake discord has no route for {m} {p}", "code": 0}, 404

    # attachments -------------------------------------------------------------------------------
    async def _attachment(self, request: web.Request) -> web.StreamResponse:
        name = request.match_info["name"]
        self.file_requests.append(dict(request.headers))
        data = self.files.get(name)
        if data is None:
            return web.Response(status=404)
        rng = request.headers.get("Range", "")
        if mt := re.fullmatch(r"bytes=-(\d+)", rng):
            tail = data[-int(mt.group(1)) :]
            return web.Response(
                status=206,
                body=tail,
                headers={"Content-Range": f"bytes {len(data) - len(tail)}-{len(data) - 1}/{len(data)}"},
            )
        return web.Response(body=data)  # no Content-Type header: like message.txt without content_type


def point_discord_py_at(fake: FakeDiscord, setattr_: Callable[[Any, str, Any], None]) -> None:
    """Aim discord.py's REST base and gateway at the fake (``setattr_`` is monkeypatch.setattr)."""
    import discord.gateway
    import discord.http
    import yarl

    setattr_(discord.http.Route, "BASE", fake.api_base)
    setattr_(discord.gateway.DiscordWebSocket, "DEFAULT_GATEWAY", yarl.URL(fake.gateway_url))
