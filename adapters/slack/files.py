"""Downloading shared snippets and text files (asynchronously, size-capped, token only to Slack).

Slack serves ``url_private_download`` only with the bot token in an ``Authorization: Bearer`` header
(scope ``files:read``); without the scope it answers 200 with an HTML sign-in page, which we detect
and skip.  The announced ``size`` is checked first and at most ``cap`` bytes are ever read, streamed,
so a 2 GB log costs us ``cap`` bytes.  The token is sent only to Slack's hosts or to the host of the
configured API URL (GovSlack, a proxy, the tests' fake).
"""

from __future__ import annotations

import asyncio
import logging
from typing import Any
from urllib.parse import urlparse

import aiohttp

from bot.message import Attachment

log = logging.getLogger("gpu_garden.slack.files")

SLACK_HOST_SUFFIXES = (".slack.com", ".slack-gov.com", ".slack-edge.com")
CHUNK = 64 * 1024


class FileFetcher:
    def __init__(self, token: str, cap: int, api_url: str, timeout: float = 20.0):
        self._token = token
        self.cap = cap
        self.timeout = aiohttp.ClientTimeout(total=timeout, sock_connect=5)
        api_host = urlparse(api_url).hostname
        self.allowed_hosts = {api_host} if api_host else set()
        self._session: aiohttp.ClientSession | None = None

    def trusted(self, url: str) -> bool:
        parsed = urlparse(url)
        host = parsed.hostname or ""
        if parsed.scheme not in ("https", "http"):
            return False
        if host in self.allowed_hosts:
            return True
        return parsed.scheme == "https" and (host == "slack.com" or host.endswith(SLACK_HOST_SUFFIXES))

    def _client(self) -> aiohttp.ClientSession:
        if self._session is None or self._session.closed:
            self._session = aiohttp.ClientSession(timeout=self.timeout)
        return self._session

    async def fetch_all(self, files: list[dict[str, Any]]) -> list[Attachment]:
        if not files:
            return []
        results = await asyncio.gather(*(self.fetch(f) for f in files), return_exceptions=True)
        out: list[Attachment] = []
        for f, result in zip(files, results, strict=True):
            if isinstance(result, BaseException):
                if isinstance(result, asyncio.CancelledError):
                    raise result
                log.warning("could not download file %s: %s", f.get("id"), result.__class__.__name__)
            elif result is not None:
                out.append(result)
        return out

    async def fetch(self, f: dict[str, Any]) -> Attachment | None:
        url = str(f.get("url_private_download") or f.get("url_private") or "")
        name = str(f.get("name") or f.get("title") or "snippet.txt")
        if not url or not self.trusted(url):
            log.warning("not downloading file %s: its URL is not on a Slack host", f.get("id"))
            return None
        size = _size(f.get("size"))
        limit = self.cap if size is None else min(self.cap, size)
        headers = {"Authorization": f"Bearer {self._token}"}
        async with self._client().get(url, headers=headers, allow_redirects=True) as resp:
            if resp.status != 200:
                log.warning("file %s: HTTP %s", f.get("id"), resp.status)
                return None
            ctype = resp.headers.get("Content-Type", "")
            if ctype.startswith("text/html") and not name.lower().endswith((".html", ".htm")):
                log.warning("file %s: got a sign-in page; does the app have files:read?", f.get("id"))
                return None
            data = bytearray()
            while len(data) <= limit:
                chunk = await resp.content.read(min(CHUNK, limit + 1 - len(data)))
                if not chunk:
                    break
                data += chunk
        truncated = len(data) > limit or (size is not None and size > self.cap)
        mimetype = str(f.get("mimetype") or "")
        return Attachment(
            filename=name,
            content=bytes(data[:limit]),
            content_type=mimetype if mimetype.startswith("text/") else "text/plain",
            size=size,
            truncated=truncated,
        )

    async def aclose(self) -> None:
        if self._session is not None and not self._session.closed:
            await self._session.close()
        self._session = None


def _size(value: Any) -> int | None:
    """The size Slack announced, if it is a sane number."""
    if isinstance(value, bool):
        return None
    try:
        size = int(value)
    except (TypeError, ValueError):
        return None
    return size if size >= 0 else None
