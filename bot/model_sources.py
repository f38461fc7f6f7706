"""Models outside the catalog: a local config.json (or model folder), a local GGUF file, or — when the
operator allows network access — the Hugging Face Hub's config and safetensors metadata, cached on disk.

Local paths are for the command line only: the chat bot never opens files a user names.
"""

from __future__ import annotations

import json
import logging
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from calculator.catalog import ModelSpec, Variant
from calculator.from_config import ConfigError, spec_from_config, spec_from_gguf
from calculator.resolve import NameNotFound, resolve_model

log = logging.getLogger("gpu_garden.models")

MAX_CONFIG_BYTES = 2 * 1024 * 1024


class ModelSourceError(ValueError):
    """A model that was named but cannot be read; the message says why and what to do."""


@dataclass(frozen=True)
class ResolvedModel:
    model: ModelSpec
    variant: Variant | None
    origin: str  # "catalog", "config.json", "gguf", "hub"

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
    files = list(folder.glob("*.safetensors"))
    return sum(f.stat().st_size for f in files) or None


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
        if name == "tokenizer.ggml.tokens":
            meta["tokenizer.ggml.tokens.count"] = value
        else:
            meta[name] = value
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


def from_hub(repo_id: str, cache_dir: Path | None = None) -> ResolvedModel:
    """config.json and the safetensors size from the Hub (needs network; cached by huggingface_hub)."""
    try:
        from huggingface_hub import get_safetensors_metadata, hf_hub_download
        from huggingface_hub.errors import HfHubHTTPError, OfflineModeIsEnabled
    except ImportError as exc:
        raise ModelSourceError("Hub lookups need the huggingface_hub package") from exc
    try:
        path = hf_hub_download(repo_id, "config.json", cache_dir=str(cache_dir) if cache_dir else None)
        config = _read_json(Path(path))
    except (OfflineModeIsEnabled, HfHubHTTPError, OSError, ValueError) as exc:
        raise ModelSourceError(
            f"cannot look {repo_id} up on the Hugging Face Hub ({exc.__class__.__name__})"
        ) from exc
    size = None
    try:
        meta = get_safetensors_metadata(repo_id)
        size = sum(
            sum(count * _DTYPE_BYTES.get(dtype, 2) for dtype, count in f.parameter_count.items())
            for f in meta.files_metadata.values()
        )
    except Exception as exc:  # the size is optional; the config alone still answers
        log.info("no safetensors metadata for %s: %s", repo_id, exc.__class__.__name__)
    spec, variant = spec_from_config(
        config, repo_id, f"https://huggingface.co/{repo_id}/blob/main/config.json", size
    )
    return ResolvedModel(spec, variant, "hub")


_DTYPE_BYTES = {
    "F32": 4,
    "F16": 2,
    "BF16": 2,
    "F8_E4M3": 1,
    "F8_E5M2": 1,
    "I8": 1,
    "U8": 1,
    "I32": 4,
    "I64": 8,
    "F64": 8,
}


def resolve_model_arg(
    name: str, allow_local: bool = False, allow_hub: bool = False, cache_dir: Path | None = None
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
        if allow_hub and "/" in name and not name.startswith(("/", ".")):
            return from_hub(name.strip(), cache_dir)
        if "/" in name and not exc.ambiguous:
            raise NameNotFound(
                exc.kind,
                exc.query,
                exc.candidates,
                hint="this deployment does not look models up on the Hugging Face Hub; "
                "the command line reads a local config.json or .gguf",
            ) from exc
        raise
