"""Models outside the catalog: a local config.json (or model folder), a local GGUF file, or — when the
operator allows network access — the Hugging Face Hub's config and safetensors metadata, cached on disk.

Local paths are for the command line only: the chat bot never opens files a user names."""

from __future__ import annotations

import json
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from bot.hub import HUB_BUDGET_SECONDS, MAX_CONFIG_BYTES, HubError
from bot.hub import lookup as hub_lookup
from calculator.catalog import ModelSpec, Variant
from calculator.from_config import ConfigError, spec_from_config, spec_from_gguf
from calculator.resolve import NameNotFound, resolve_model


class ModelSourceError(ValueError):
    """A model that was named but cannot be read; the message says why and what to do."""


@dataclass(frozen=True)
class ResolvedModel:
    """A model's geometry and quant, where it came from, and what to say about that."""

    model: ModelSpec
    variant: Variant | None
    origin: str  # "catalog", "config.json", "gguf", "hub", "paste"
    notes: tuple[str, ...] = ()  # what the reply should say about where the model came from

    @property
    def label(self) -> str:
        return self.variant.id if self.variant else self.model.id


def _read_json(path: Path) -> dict[str, Any]:
    if path.stat().st_size > MAX_CONFIG_BYTES:
        raise ModelSourceError(f"{path}: too large for a config.json")
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, json.JSONDecodeError) as exc:
        raise ModelSourceError(f"{path}: not a readable JSON file ({exc.__class__.__name__})") from exc
    if not isinstance(data, dict):
        raise ModelSourceError(f"{path}: expected a JSON object")
    return data


def _checkpoint_size(folder: Path) -> int | None:
    index = folder / "model.safetensors.index.json"
    if index.is_file():
        try:
            total = _read_json(index).get("metadata", {}).get("total_size")
            if isinstance(total, int) and total > 0:
                return total
        except ModelSourceError:
            pass
    return sum(f.stat().st_size for f in folder.glob("*.safetensors")) or None


def from_config_path(path: Path) -> ResolvedModel:
    folder = path if path.is_dir() else path.parent
    config = path / "config.json" if path.is_dir() else path
    if not config.is_file():
        raise ModelSourceError(f"{path}: no config.json there")
    try:
        spec, variant = spec_from_config(
            _read_json(config), folder.name or str(path), str(config), _checkpoint_size(folder)
        )
    except (ConfigError, ValueError) as exc:
        raise ModelSourceError(f"{config}: {exc}") from exc
    return ResolvedModel(spec, variant, "config.json")


def _gguf_value(field: Any) -> Any:
    import numpy as np

    parts = [field.parts[i] for i in field.data]
    types = field.types
    if types and types[0].name == "STRING":
        return bytes(parts[0]).decode("utf-8", "replace") if len(parts) == 1 else None
    if types and types[0].name == "ARRAY":
        if len(types) > 1 and types[1].name == "STRING":
            return len(parts)  # only the count matters (vocabulary size)
        return [
            np.asarray(p).tolist()[0] if np.asarray(p).size == 1 else np.asarray(p).tolist() for p in parts
        ]
    value = np.asarray(parts[0]).tolist()
    return value[0] if isinstance(value, list) and len(value) == 1 else value


def from_gguf(path: Path) -> ResolvedModel:
    try:
        from gguf import GGUFReader
    except ImportError as exc:  # pragma: no cover - gguf is a dependency
        raise ModelSourceError("reading GGUF files needs the gguf package") from exc
    try:
        reader = GGUFReader(str(path), "r")
    except (OSError, ValueError) as exc:
        raise ModelSourceError(f"{path}: not a readable GGUF file ({exc})") from exc
    meta: dict[str, Any] = {}
    for name, field in reader.fields.items():
        if name.startswith("GGUF."):
            continue
        try:
            value = _gguf_value(field)
        except (IndexError, ValueError, TypeError):
            continue
        meta["tokenizer.ggml.tokens.count" if name == "tokenizer.ggml.tokens" else name] = value
    size = path.stat().st_size
    file_type = _gguf_file_type(meta.get("general.file_type"))
    try:
        spec, variant = spec_from_gguf(meta, path.stem, str(path), size, file_type)
    except (ConfigError, ValueError) as exc:
        raise ModelSourceError(f"{path}: {exc}") from exc
    return ResolvedModel(spec, variant, "gguf")


def _gguf_file_type(code: Any) -> str | None:
    try:
        from gguf import LlamaFileType

        return LlamaFileType(int(code)).name.removeprefix("MOSTLY_") if code is not None else None
    except (ImportError, ValueError, TypeError):
        return None


_HUB_SAYS: dict[str, str] = {
    "gated": "{repo} is gated on the Hugging Face Hub: accept its license there and give the bot a token "
    "(HF_TOKEN), or paste its config.json",
    "missing": "the Hugging Face Hub has no public model {repo} (a typo, or a private repo)",
    "no_config": "{repo} on the Hugging Face Hub has no config.json (a GGUF-only repo? name the .gguf file)",
    "offline": "Hub lookups are off here (HF_HUB_OFFLINE) and {repo} is not in the Hub cache",
    "timeout": "the Hugging Face Hub did not answer within {budget:g} s, so I answered without it",
    "unreachable": "the Hugging Face Hub could not be reached, so I answered without it",
    "invalid": "{repo} is not a usable Hugging Face repo id or config",
}


def hub_message(exc: HubError, budget: float = HUB_BUDGET_SECONDS) -> str:
    """The plain sentence a reply uses for a Hub failure."""
    return _HUB_SAYS[exc.kind].format(repo=exc.repo_id, budget=budget)


def from_hub(
    repo_id: str, cache_dir: Path | None = None, budget: float = HUB_BUDGET_SECONDS
) -> ResolvedModel:
    """config.json and the safetensors size from the Hub (bounded, cached on disk); raises HubError."""
    found = hub_lookup(repo_id, cache_dir or Path("hub-cache"), budget)
    source = f"https://huggingface.co/{repo_id}/blob/main/config.json"
    try:
        spec, variant = spec_from_config(found.config, repo_id, source, found.size_bytes)
    except (ConfigError, ValueError, TypeError) as exc:
        raise HubError("invalid", repo_id, str(exc)) from exc
    note = f"{repo_id} is not in my catalog; its geometry is from its config.json on the Hugging Face Hub"
    if found.size_bytes:
        note += f" and its size from the safetensors headers ({found.size_bytes / 1e9:.2f} GB"
        note += f", mostly {found.main_dtype})" if found.main_dtype else ")"
    return ResolvedModel(spec, variant, "hub", (note,))


def from_paste(text: str, lookup: Callable[[str], ResolvedModel] | None = None) -> ResolvedModel | None:
    """The model a pasted log describes: its own printed geometry (llama.cpp, Ollama), else the model it
    names (vLLM's ``model=``) through ``lookup`` (catalog, then the Hub when allowed).  None when the
    paste says nothing usable; never raises."""
    from calculator.from_log import read_log

    try:
        found = read_log(text)
    except (ValueError, TypeError):
        return None
    if found is None:
        return None
    if found.spec is not None:
        note = f"geometry read from the pasted {found.engine} log ({found.name or found.spec.id})"
        return ResolvedModel(found.spec, found.variant, "paste", (note, *found.notes))
    if not found.name or lookup is None:
        return None
    try:
        named = lookup(found.name)
    except (NameNotFound, ModelSourceError, HubError, ValueError):
        return None
    return ResolvedModel(named.model, named.variant, named.origin, (*named.notes, *found.notes))


def resolve_model_arg(
    name: str,
    allow_local: bool = False,
    allow_hub: bool = False,
    cache_dir: Path | None = None,
    budget: float = HUB_BUDGET_SECONDS,
) -> ResolvedModel:
    """Catalog first; then (CLI only) a local path; then (if allowed) the Hub.  Raises NameNotFound or
    ModelSourceError with a message a person can act on."""
    if allow_local:
        path = Path(name).expanduser()
        if path.exists():
            if path.suffix.lower() == ".gguf":
                return from_gguf(path)
            return from_config_path(path)
    try:
        match = resolve_model(name)
        return ResolvedModel(match.model, match.variant, "catalog")
    except NameNotFound as exc:
        repo = name.strip()
        if exc.ambiguous or "/" not in repo or repo.startswith(("/", ".", "~")):
            raise
        if not allow_hub:
            raise NameNotFound(
                exc.kind,
                exc.query,
                exc.candidates,
                hint="this deployment does not look models up on the Hugging Face Hub; "
                "the command line reads a local config.json or .gguf",
            ) from exc
        try:
            return from_hub(repo, cache_dir, budget)
        except HubError as hub_exc:
            raise NameNotFound(
                exc.kind, exc.query, exc.candidates, hint=hub_message(hub_exc, budget)
            ) from hub_exc
