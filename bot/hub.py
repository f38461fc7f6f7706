"""The Hugging Face Hub as a model source: a repo's config.json and its safetensors header metadata
(parameter count per dtype, hence the checkpoint's size), through ``huggingface_hub``.

- Bounded: the whole lookup gets ``budget`` seconds (3 s by default, issue 13); past that the caller
  answers without it and says so.  The worker thread is a daemon and every request has its own timeout,
  so a stalled Hub never holds the process.
- Cached on disk: one small JSON per repo under ``cache_dir/models``; a second lookup makes no request.
  ``huggingface_hub`` keeps its own file cache under ``cache_dir/hf``.
- ``HF_HUB_OFFLINE`` is honoured (only the cache answers); ``HF_ENDPOINT`` is read at call time (a mirror,
  or the fake Hub the tests run on 127.0.0.1); ``HF_TOKEN`` lets gated repos the operator accepted answer.
- Failures are typed (:class:`HubError.kind`) so the reply can say them plainly: gated, missing, offline,
  timeout, unreachable, not a model config."""

from __future__ import annotations

import json
import os
import threading
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal

import re2

if TYPE_CHECKING:
    import logging


HUB_BUDGET_SECONDS = 3.0  # issue 13: a Hub lookup may delay an answer by at most 3 s
MAX_CONFIG_BYTES = 2 * 1024 * 1024
DEFAULT_ENDPOINT = "https://huggingface.co"
# Hub repo ids: "org/name", letters, digits, "-", "_", "." (huggingface_hub validate_repo_id), <= 96 each
_REPO_ID = re2.compile(r"^[A-Za-z0-9][A-Za-z0-9_.-]{0,95}/[A-Za-z0-9][A-Za-z0-9_.-]{0,95}$")
# bytes per element of each safetensors dtype (safetensors format spec)
DTYPE_BYTES = {
    **dict.fromkeys(("F64", "I64", "U64"), 8),
    **dict.fromkeys(("F32", "I32", "U32"), 4),
    **dict.fromkeys(("F16", "BF16", "I16", "U16"), 2),
    **dict.fromkeys(("F8_E4M3", "F8_E5M2", "I8", "U8", "BOOL"), 1),
}

HubErrorKind = Literal["offline", "timeout", "unreachable", "gated", "missing", "no_config", "invalid"]


class HubError(Exception):
    def __init__(self, kind: HubErrorKind, repo_id: str, detail: str = ""):
        self.kind = kind
        self.repo_id = repo_id
        super().__init__(detail or kind)


@dataclass(frozen=True)
class HubModel:
    """A repo's config.json and safetensors parameter counts as the Hub gave them."""

    repo_id: str
    config: dict[str, Any]
    parameters: dict[str, int]  # safetensors dtype -> parameter count; empty when the Hub had none

    @property
    def size_bytes(self) -> int | None:
        total = sum(n * DTYPE_BYTES[d] for d, n in self.parameters.items() if d in DTYPE_BYTES)
        return total or None

    @property
    def main_dtype(self) -> str | None:
        return max(self.parameters, key=lambda d: self.parameters[d]) if self.parameters else None


def _log() -> logging.Logger:
    import logging  # on first use: a catalog model's /vram never logs here

    return logging.getLogger("gpu_garden.hub")


def warm_up() -> None:
    """Import huggingface_hub in the background (about a second on a cold start), so that the first
    lookup of a long-running bot spends its 3 s on the Hub, not on imports."""
    import importlib

    threading.Thread(target=importlib.import_module, args=("huggingface_hub",), daemon=True).start()


def offline() -> bool:
    return os.environ.get("HF_HUB_OFFLINE", "").strip().upper() in ("1", "ON", "YES", "TRUE")


def _cache_file(cache_dir: Path, repo_id: str) -> Path:
    return cache_dir / "models" / (repo_id.replace("/", "--") + ".json")


def read_cache(cache_dir: Path, repo_id: str) -> HubModel | None:
    path = _cache_file(cache_dir, repo_id)
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
        config, params = data["config"], data["parameters"]
    except (OSError, ValueError, KeyError, TypeError):
        return None
    if not isinstance(config, dict) or not isinstance(params, dict):
        return None
    return HubModel(repo_id, config, {str(k): int(v) for k, v in params.items()})


def _write_cache(cache_dir: Path, found: HubModel) -> None:
    from datetime import UTC, datetime

    path = _cache_file(cache_dir, found.repo_id)
    record = {
        "repo_id": found.repo_id,
        "fetched": datetime.now(UTC).isoformat(timespec="seconds"),
        "config": found.config,
        "parameters": found.parameters,
    }
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        tmp = path.with_suffix(".tmp")
        tmp.write_text(json.dumps(record), encoding="utf-8")
        tmp.replace(path)
    except OSError as exc:  # a read-only volume costs a request next time, nothing more
        _log().warning("cannot cache the Hub config of %s: %s", found.repo_id, exc.__class__.__name__)


def _classify(exc: BaseException, repo_id: str) -> HubError:
    from huggingface_hub import errors

    checks: list[tuple[str, HubErrorKind]] = [
        ("OfflineModeIsEnabled", "offline"),
        ("LocalEntryNotFoundError", "unreachable"),
        ("GatedRepoError", "gated"),
        ("RepositoryNotFoundError", "missing"),
        ("RevisionNotFoundError", "missing"),
        ("RemoteEntryNotFoundError", "no_config"),
        ("EntryNotFoundError", "no_config"),
    ]
    for name, kind in checks:
        cls = getattr(errors, name, None)
        if cls is not None and isinstance(exc, cls):
            return HubError(kind, repo_id, exc.__class__.__name__)
    status = getattr(getattr(exc, "response", None), "status_code", None)
    if status in (401, 403):
        return HubError("gated", repo_id, f"HTTP {status}")
    if status == 404:
        return HubError("missing", repo_id, "HTTP 404")
    return HubError("unreachable", repo_id, exc.__class__.__name__)


def _parameters(repo_id: str, endpoint: str) -> dict[str, int]:
    """Parameter count per dtype from the safetensors headers (HTTP range requests, no weights)."""
    from huggingface_hub import HfApi

    try:
        meta = HfApi(endpoint=endpoint).get_safetensors_metadata(repo_id)
    except Exception as exc:  # optional: the config alone still answers
        _log().info("no safetensors metadata for %s: %s", repo_id, exc.__class__.__name__)
        return {}
    counts: dict[str, int] = {}
    for file_meta in meta.files_metadata.values():
        for dtype, n in file_meta.parameter_count.items():
            counts[dtype] = counts.get(dtype, 0) + int(n)
    return counts


def _fetch(repo_id: str, cache_dir: Path, endpoint: str, budget: float) -> HubModel:
    from huggingface_hub import hf_hub_download

    try:
        path = hf_hub_download(
            repo_id, "config.json", cache_dir=str(cache_dir / "hf"), endpoint=endpoint, etag_timeout=budget
        )
    except Exception as exc:
        raise _classify(exc, repo_id) from exc
    file = Path(path)
    if file.stat().st_size > MAX_CONFIG_BYTES:
        raise HubError("invalid", repo_id, "config.json too large")
    try:
        config = json.loads(file.read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, ValueError) as exc:
        raise HubError("invalid", repo_id, "config.json is not JSON") from exc
    if not isinstance(config, dict):
        raise HubError("invalid", repo_id, "config.json is not an object")
    return HubModel(repo_id, config, _parameters(repo_id, endpoint))


def lookup(repo_id: str, cache_dir: Path, budget: float = HUB_BUDGET_SECONDS) -> HubModel:
    """The repo's config and safetensors sizes: from the disk cache, else from the Hub within ``budget``."""
    if not _REPO_ID.search(repo_id) or ".." in repo_id:
        raise HubError("invalid", repo_id, "not an org/name repo id")
    if (cached := read_cache(cache_dir, repo_id)) is not None:
        return cached
    if offline():
        raise HubError("offline", repo_id, "HF_HUB_OFFLINE is set")
    endpoint = (os.environ.get("HF_ENDPOINT") or DEFAULT_ENDPOINT).rstrip("/")
    pending = _start(repo_id, cache_dir, endpoint, budget)
    if not pending.done.wait(timeout=budget):
        raise HubError("timeout", repo_id, f"no answer within {budget:g} s")
    if isinstance(pending.result, HubError):
        raise pending.result
    assert pending.result is not None
    return pending.result


@dataclass
class _Pending:
    """A Hub lookup in flight, shared by the callers that wait for it."""

    done: threading.Event
    result: HubModel | HubError | None = None


_LOCK = threading.Lock()
_IN_FLIGHT: dict[tuple[str, str, str], _Pending] = {}


def _start(repo_id: str, cache_dir: Path, endpoint: str, budget: float) -> _Pending:
    """One worker per repo at a time: a second asker while the first is still out waits on the same one
    (a slow or dead Hub then costs one background worker, not one per message)."""
    key = (repo_id, endpoint, str(cache_dir))
    with _LOCK:
        if (pending := _IN_FLIGHT.get(key)) is not None:
            return pending
        pending = _IN_FLIGHT[key] = _Pending(threading.Event())

    def work() -> None:
        try:
            found = _fetch(repo_id, cache_dir, endpoint, budget)
            _write_cache(cache_dir, found)  # even when it comes too late for this answer
            pending.result = found
        except HubError as exc:
            pending.result = exc
        except Exception as exc:  # never let a worker die silently
            pending.result = HubError("unreachable", repo_id, exc.__class__.__name__)
        finally:
            with _LOCK:
                _IN_FLIGHT.pop(key, None)
            pending.done.set()

    threading.Thread(target=work, name=f"hub:{repo_id}", daemon=True).start()
    return pending
