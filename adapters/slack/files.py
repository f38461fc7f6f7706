"""Downloading shared snippets and text files (asynchronously, size-capped, token only to Slack).

Slack serves ``url_private_download`` only with the bot token in an ``Authorization: Bearer`` header
(scope ``files:read``); without the scope it answers 200 with an HTML sign-in page, which we detect
and skip.  A file over ``cap`` is read from its tail (errors sit at the end of logs): with a ``Range``
request when its size is announced, else streamed with only the last ``cap`` bytes kept (and at most
``STREAM_FACTOR`` caps read), so a 2 GB log costs us ``cap`` bytes of memory.  The token is sent only to Slack's hosts or to the host of the
configured API URL (GovSlack, a proxy, the tests' fake).
"""

from __future__ import annotations

import asyncio
import logging
from collections import deque
from collections.abc import Callable
from typing import Any
from urllib.parse import urlparse

import aiohttp

from bot.message import Attachment

log = logging.getLogger("gpu_garden.slack.files")

SLACK_HOST_SUFFIXES = (".slack.com", ".slack-gov.com", ".slack-edge.com")
CHUNK = 64 * 1024
STREAM_FACTOR = 8  # without a Range answer, read at most this many caps of a file (keeping its tail)
DOWNLOAD_RETRIES = 2  # a download cut off midway (connection reset, 5xx, 429) is tried again...
RETRY_BACKOFF = 0.5  # ...after 0.5 s, then 1 s
_TRANSIENT = (aiohttp.ClientPayloadError, aiohttp.ClientConnectionError, ConnectionError)


class _Retry(Exception):
    """A transient answer (5xx, 429): worth asking again."""


class FileFetcher:
    def __init__(
        self,
        token: str,
        cap: int,
        api_url: str,
        timeout: float = 20.0,
        on_failure: Callable[[], None] | None = None,
    ):
        self._token = token
        self.cap = cap
        self.on_failure = on_failure  # a download that failed for good (counted on /metrics)
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
                self._failed()
            elif result is not None:
                out.append(result)
        return out

    def _failed(self) -> None:
        if self.on_failure is not None:
            self.on_failure()

    async def fetch(self, f: dict[str, Any]) -> Attachment | None:
        url = str(f.get("url_private_download") or f.get("url_private") or "")
        if not url or not self.trusted(url):
            log.warning("not downloading file %s: its URL is not on a Slack host", f.get("id"))
            return None
        for attempt in range(DOWNLOAD_RETRIES + 1):
            try:
                return await self._fetch_once(f, url)
            except (_Retry, *_TRANSIENT) as exc:
                if attempt == DOWNLOAD_RETRIES:
                    if isinstance(exc, _Retry):
                        log.warning("file %s: %s", f.get("id"), exc)
                        self._failed()
                        return None
                    raise
                log.info("file %s: download failed (%s); retrying", f.get("id"), exc.__class__.__name__)
                await asyncio.sleep(RETRY_BACKOFF * 2**attempt)
        return None

    async def _fetch_once(self, f: dict[str, Any], url: str) -> Attachment | None:
        """One download.  Errors sit at the end of logs, so a file over the cap is read from its tail: a
        ``Range`` request for the last ``cap`` bytes, or (a server that ignores it, an unknown size) the
        stream with only its last ``cap`` bytes kept, up to ``STREAM_FACTOR`` caps read in all."""
        name = str(f.get("name") or f.get("title") or "snippet.txt")
        size = _size(f.get("size"))
        headers = {"Authorization": f"Bearer {self._token}"}
        if size is not None and size > self.cap:
            headers["Range"] = f"bytes=-{self.cap}"
        async with self._client().get(url, headers=headers, allow_redirects=True) as resp:
            if resp.status >= 500 or resp.status == 429:
                raise _Retry(f"HTTP {resp.status}")
            if resp.status not in (200, 206):
                log.warning("file %s: HTTP %s", f.get("id"), resp.status)
                self._failed()
                return None
            ctype = resp.headers.get("Content-Type", "")
            if ctype.startswith("text/html") and not name.lower().endswith((".html", ".htm")):
                log.warning("file %s: got a sign-in page; does the app have files:read?", f.get("id"))
                self._failed()
                return None
            chunks: deque[bytes] = deque()
            kept = read = 0
            ended = False
            while read < STREAM_FACTOR * self.cap:
                chunk = await resp.content.read(CHUNK)
                if not chunk:
                    ended = True
                    break
                chunks.append(chunk)
                kept += len(chunk)
                read += len(chunk)
                while chunks and kept - len(chunks[0]) >= self.cap:
                    kept -= len(chunks.popleft())
        data = b"".join(chunks)[-self.cap :] if chunks else b""
        truncated = read > len(data) or not ended or (size is not None and size > self.cap)
        mimetype = str(f.get("mimetype") or "")
        return Attachment(
            filename=name,
            content=data,
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
