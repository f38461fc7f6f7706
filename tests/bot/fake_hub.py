"""A fake Hugging Face Hub on 127.0.0.1 for the real ``huggingface_hub`` client (point HF_ENDPOINT at it).

Serves what the client asks for: ``/api/models/{id}``, ``HEAD``/``GET /{id}/resolve/main/{file}`` with the
ETag and X-Repo-Commit headers, and HTTP range requests (the client reads safetensors headers with
``Range: bytes=0-100000``).  Gated repos answer 401 with ``X-Error-Code: GatedRepo``, missing ones 404
with ``X-Error-Code: RepoNotFound``, missing files 404 with ``EntryNotFound`` — the headers the client
maps to its GatedRepoError / RepositoryNotFoundError / EntryNotFoundError.  ``delay`` makes it slow.
"""

from __future__ import annotations

import hashlib
import json
import struct
import threading
import time
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

COMMIT = "0123456789abcdef0123456789abcdef01234567"


def safetensors_header(tensors: dict[str, tuple[str, list[int]]]) -> bytes:
    """A safetensors file's first bytes: 8-byte little-endian header length, then the JSON header."""
    header: dict[str, object] = {"__metadata__": {"format": "pt"}}
    offset = 0
    sizes = {"BF16": 2, "F16": 2, "F32": 4, "I32": 4, "U8": 1, "F8_E4M3": 1}
    for name, (dtype, shape) in tensors.items():
        n = sizes[dtype]
        for dim in shape:
            n *= dim
        header[name] = {"dtype": dtype, "shape": shape, "data_offsets": [offset, offset + n]}
        offset += n
    raw = json.dumps(header).encode()
    return struct.pack("<Q", len(raw)) + raw


@dataclass
class FakeHub:
    repos: dict[str, dict[str, bytes]] = field(default_factory=dict)
    gated: set[str] = field(default_factory=set)
    delay: float = 0.0
    requests: list[str] = field(default_factory=list)
    server: ThreadingHTTPServer | None = None

    @property
    def url(self) -> str:
        assert self.server is not None
        return f"http://127.0.0.1:{self.server.server_address[1]}"

    def add(self, repo_id: str, files: dict[str, bytes]) -> None:
        self.repos[repo_id] = files

    def start(self) -> FakeHub:
        hub = self

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, *args: object) -> None:
                pass

            def do_HEAD(self) -> None:
                hub._serve(self, body=False)

            def do_GET(self) -> None:
                hub._serve(self, body=True)

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.server.daemon_threads = True
        threading.Thread(target=self.server.serve_forever, daemon=True).start()
        return self

    def stop(self) -> None:
        if self.server is not None:
            self.server.shutdown()
            self.server.server_close()

    def _error(self, h: BaseHTTPRequestHandler, status: int, code: str, message: str) -> None:
        h.send_response(status)
        h.send_header("X-Error-Code", code)
        h.send_header("X-Error-Message", message)
        h.send_header("Content-Type", "application/json")
        body = json.dumps({"error": message}).encode()
        h.send_header("Content-Length", str(len(body)))
        h.end_headers()
        if h.command == "GET":
            h.wfile.write(body)

    def _serve(self, h: BaseHTTPRequestHandler, body: bool) -> None:
        self.requests.append(f"{h.command} {h.path}")
        if self.delay:
            time.sleep(self.delay)
        path = h.path.split("?", 1)[0]
        if path.startswith("/api/models/"):
            repo_id = path.removeprefix("/api/models/").rstrip("/")
            files = self.repos.get(repo_id)
            if files is None:
                return self._error(h, 404, "RepoNotFound", "Repository not found")
            data = json.dumps(
                {"id": repo_id, "sha": COMMIT, "siblings": [{"rfilename": f} for f in files]}
            ).encode()
            return self._send(h, 200, data, body, {"Content-Type": "application/json"})
        parts = path.lstrip("/").split("/", 4)
        if len(parts) < 5 or parts[2] != "resolve":
            return self._error(h, 404, "EntryNotFound", "no such route")
        repo_id, filename = f"{parts[0]}/{parts[1]}", parts[4]
        if repo_id in self.gated:
            return self._error(h, 401, "GatedRepo", "Access to this model is restricted")
        files = self.repos.get(repo_id)
        if files is None:
            return self._error(h, 404, "RepoNotFound", "Repository not found")
        if filename not in files:
            return self._error(h, 404, "EntryNotFound", "Entry not found")
        data = files[filename]
        etag = hashlib.sha1(data).hexdigest()
        headers = {"ETag": f'"{etag}"', "X-Repo-Commit": COMMIT, "Accept-Ranges": "bytes"}
        wanted = h.headers.get("Range") or h.headers.get("range")
        if wanted and wanted.startswith("bytes="):
            first, _, last = wanted.removeprefix("bytes=").partition("-")
            start, end = int(first), min(int(last) if last else len(data) - 1, len(data) - 1)
            headers["Content-Range"] = f"bytes {start}-{end}/{len(data)}"
            return self._send(h, 206, data[start : end + 1], body, headers)
        return self._send(h, 200, data, body, headers)

    def _send(
        self, h: BaseHTTPRequestHandler, status: int, data: bytes, body: bool, headers: dict[str, str]
    ) -> None:
        h.send_response(status)
        for key, value in headers.items():
            h.send_header(key, value)
        h.send_header("Content-Length", str(len(data)))
        h.end_headers()
        if body:
            h.wfile.write(data)
