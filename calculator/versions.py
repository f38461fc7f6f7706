"""Engine version parsing and the version-dependent defaults the math depends on."""

from __future__ import annotations

import re

CURRENT_VLLM = "0.33.0"
CURRENT_LLAMACPP_BUILD = 10366
CURRENT_OLLAMA = "0.33.0"
CURRENT_SGLANG = "0.5.23"

_VERSION = re.compile(r"(\d+)\.(\d+)(?:\.(\d+))?")


def parse_version(text: str | None, default: str) -> tuple[int, int, int]:
    m = _VERSION.search(text or "") or _VERSION.search(default)
    assert m is not None
    return int(m.group(1)), int(m.group(2)), int(m.group(3) or 0)


def vllm_default_utilization(version: tuple[int, int, int]) -> float:
    """0.92 from v0.21.0 (PR #38284), 0.9 before."""
    return 0.92 if version >= (0, 21, 0) else 0.9


def vllm_subtracts_cudagraph_estimate(version: tuple[int, int, int]) -> bool:
    """From v0.21 the CUDA-graph memory estimate is taken out of the KV budget by default."""
    return version >= (0, 21, 0)


def vllm_is_v0(version: tuple[int, int, int]) -> bool:
    """Before 0.8 the V0 engine (no chunked prefill by default) was the default."""
    return version < (0, 8, 0)


def vllm_has_auto_max_len(version: tuple[int, int, int]) -> bool:
    """``--max-model-len auto`` exists from v0.14.0 (PR #29431)."""
    return version >= (0, 14, 0)


def vllm_yarn_scales_max_len(version: tuple[int, int, int]) -> bool:
    """Up to 0.29 a YaRN rope_scaling multiplied the derived max_model_len; from 0.30 it does not."""
    return version < (0, 30, 0)


def llamacpp_fa_takes_value(build: int | None) -> bool:
    """``-fa`` became ``-fa on|off|auto`` with PR #15434 (about b6325)."""
    return build is None or build >= 6325


def ollama_estimate_windows(arch: str, version: tuple[int, int, int]) -> bool:
    """Whether Ollama's own memory estimate (fs/ggml/ggml.go GraphSize, the offload line's
    ``memory.required.kv``) sizes ``arch``'s sliding layers by a window: gemma3 from v0.6.3 (commit
    f66216e39, PR #9987, first tagged in v0.6.3), gpt-oss from v0.11.0 (its GraphSize case arrived with
    the model); every other architecture, and these before, get every layer at the full context."""
    return (arch == "gemma3" and version >= (0, 6, 3)) or (arch == "gptoss" and version >= (0, 11, 0))
