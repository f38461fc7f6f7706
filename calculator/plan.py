"""What every engine budget shares: sourced values, the settings a fix can change (a Plan), and the
prediction for a plan (an Outcome).

A budget is built once from what a paste showed (log numbers) and what the catalogs know (model, GPU),
with the rest estimated; ``evaluate(plan)`` recomputes it for any settings, so every fix is checked on
the same arithmetic that explains the failure.
"""

from __future__ import annotations

from dataclasses import dataclass, field, replace
from typing import Any, Literal

Source = Literal["log", "user", "catalog", "estimated", "computed", "given", "default"]


@dataclass(frozen=True)
class Sourced:
    """A value and where it came from; ``how`` says how an inferred value was inferred."""

    value: Any
    source: Source = "log"
    how: str = ""


def first(*candidates: Sourced | None) -> Sourced | None:
    return next((c for c in candidates if c is not None and c.value is not None), None)


@dataclass(frozen=True)
class Plan:
    """The settings that decide memory, engine-neutral names (each engine reads the ones it has).

    max_len: vLLM max_model_len / llama.cpp n_ctx / Ollama num_ctx / SGLang context_length.
    kv_dtype: vLLM/SGLang ``auto``/``fp8``; llama.cpp/Ollama ``f16``/``q8_0``/``q4_0``.
    util: vLLM gpu_memory_utilization / SGLang mem_fraction_static.
    """

    max_len: int | None = None
    kv_dtype: str = "auto"
    util: float | None = None
    eager: bool = False
    cudagraph_estimate: bool = True
    tp: int = 1
    pp: int = 1
    max_seqs: int | None = None
    batched_tokens: int | None = None
    kv_cache_gib: float | None = None  # vLLM --kv-cache-memory-bytes
    gpu_layers: int | None = None  # llama.cpp -ngl / Ollama num_gpu; None: all
    parallel: int = 1
    ubatch: int | None = None
    flash_attn: bool = True
    kv_offload: bool = True  # llama.cpp: False = -nkvo (KV in host RAM)
    cpu_moe: bool = False
    mm_images: int | None = None  # vLLM --limit-mm-per-prompt image=N; None: the engine default
    mm_videos: int | None = None  # vLLM --limit-mm-per-prompt video=N
    mm_max_pixels: int | None = None  # vLLM --mm-processor-kwargs '{"max_pixels": N}'

    def with_(self, **changes: Any) -> Plan:
        return replace(self, **changes)


@dataclass
class Term:
    """One line of a memory budget: what it is, its size and where that came from."""

    name: str  # weights | non-torch | activations | cuda graphs | compute buffers | kv cache | ...
    gib: float
    source: Source = "estimated"


@dataclass
class Outcome:
    """What a plan is predicted to do on one device."""

    starts: bool
    fit_len: int  # longest single request that fits (tokens)
    kv_gib: float  # memory for the KV cache / pool
    kv_tokens: int  # tokens the cache holds in total
    terms: list[Term] = field(default_factory=list)
    total_gib: float | None = None
    target_gib: float | None = None  # what the engine asks for (util x total), when it has a target
    why_not: str = ""  # when it does not start: the reason in a few words
    concurrency: float | None = None

    def serves(self, length: int | None) -> bool:
        return self.starts and (length is None or self.fit_len >= length)
