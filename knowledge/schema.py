"""The schema of a signature file.

A file holds one engine's signatures and context rules::

    engine: vllm
    signatures:
      - id: vllm.kv_cache_too_small.v0
        category: kv_cache_too_small
        title: "..."
        patterns: ["...(?P<max_model_len>[0-9,]+)..."]
        captures: {max_model_len: tokens}
        cause: "..."
        remedies: [max_model_len, kv_cache_dtype]
        examples:
          - text: "..."
            params: {max_model_len: 131072}
    context:
      - {field: max_model_len, pattern: "--max-model-len[= ](?P<value>[0-9]+)"}

Patterns are RE2 syntax (linear time on any input).  ``requires``/``excludes`` are further RE2
patterns that must (not) match anywhere in the paste.  ``cause`` may name captures as ``{name}``;
the diagnosis fills them in (``?`` when a value was not in the paste).  Named captures must be declared in
``captures`` with the unit the engine printed; the detector normalises memory to GiB or MiB
(by the capture's name suffix), token and count values to integers.  Units: ``tokens``/``count``
(integers), ``ratio`` (0-1.5, e.g. gpu_memory_utilization), ``number`` (any finite non-negative
float, e.g. a concurrency of 8.43x), ``capability`` (``7.5`` or ``75`` → 7.5), ``text``, and the
memory units ``gib``/``mib``/``kib``/``gb``/``mb``/``bytes`` or ``dynamic`` (unit from ``<name>_unit``).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Annotated, Literal, get_args

import re2

from knowledge.validate import STRICT, compiled

if TYPE_CHECKING:
    from pydantic import Field

# The corpus README's vocabulary: the memory and context categories.
MemoryCategory = Literal[
    "kv_cache_too_small",
    "no_kv_memory",
    "gpu_memory_in_use",
    "gpu_oom",
    "kv_alloc_failed",
    "host_memory",
    "tp_divisibility",
    "dtype_unsupported",
    "quantization_unsupported",
    "max_len_exceeds_model",
    "batched_tokens_too_small",
    "context_exceeded",
    "runner_crashed",
    "memory_report",
]
# Non-memory errors we still know how to answer (a config error is never a memory category).
NonMemoryCategory = Literal[
    "kv_quant_needs_flash_attn",
    "gpu_unsupported",
    "invalid_argument",
    # not memory, though they read like it: the cause is a bug, a per-allocation or per-buffer limit,
    # disk space, or an estimate the engine got wrong
    "looks_like_memory",
    # common failures with a short fix that no memory arithmetic explains
    "nccl_shared_memory",
    "hub_access",
    "disk_full",
    "permission_denied",
    "port_in_use",
    "driver_mismatch",
    "illegal_memory_access",
    "chat_template",
    "unsupported_architecture",
    # a launcher's own "could not load" line: the cause is in the backend's lines before it
    "load_failed",
]
Category = Literal[MemoryCategory, NonMemoryCategory]

CONFIG_CATEGORIES: frozenset[str] = frozenset(get_args(NonMemoryCategory))
MEMORY_CATEGORIES: frozenset[str] = frozenset(get_args(MemoryCategory))

Unit = Literal[
    "tokens",
    "count",
    "gib",
    "mib",
    "kib",
    "gb",
    "mb",
    "bytes",
    "ratio",
    "number",
    "capability",
    "text",
    "dynamic",
]

# What a signature may list under ``remedies``; the diagnosis turns each into a computed fix.
REMEDIES: frozenset[str] = frozenset(
    {
        # vLLM
        "max_model_len",
        "max_model_len_auto",
        "kv_cache_dtype",
        "gpu_memory_utilization",
        "lower_gpu_memory_utilization",
        "enforce_eager",
        "cudagraph_estimate_off",
        "max_num_seqs",
        "max_num_batched_tokens",
        "enable_chunked_prefill",
        "tensor_parallel",
        "valid_tp_sizes",
        "pipeline_parallel",
        "dtype_half",
        "quantization_for_gpu",
        "allow_long_max_model_len",
        "free_gpu_memory",
        "kv_cache_memory",
        "limit_mm_per_prompt",
        "disable_cuda_graph",
        # requests
        "shorten_prompt",
        "lower_max_tokens",
        "generation_within_positions",
        # llama.cpp
        "ctx_size",
        "cache_type",
        "flash_attn",
        "n_gpu_layers",
        "cpu_moe",
        "ubatch_size",
        "no_kv_offload",
        "parallel_slots",
        "fit",
        "tensor_split",
        "metal_wired_limit",
        "no_pipeline_parallel",
        # Ollama
        "ollama_context_length",
        "ollama_kv_cache_type",
        "ollama_num_parallel",
        "ollama_num_gpu",
        "ollama_gpu_overhead",
        "free_host_memory",
        "ollama_server_log",
        "ollama_loaded_models",
        "ollama_context_in_force",
        "llamacpp_list_devices",
        "upgrade_engine",
        # SGLang
        "mem_fraction_static",
        "context_length",
        "max_running_requests",
        "chunked_prefill_size",
        "schedule_conservativeness",
        "page_size_one",
        "no_dynamic_chunking",
        "mamba_cache_size",
        # PyTorch / transformers / TGI
        "expandable_segments",
        "reduce_batch",
        "max_batch_prefill_tokens",
        "tgi_infer_total_tokens",
        "max_total_tokens",
        "max_input_tokens",
        # any engine
        "smaller_quant",
        "bigger_gpu",
        "check_other_processes",
    }
)

Engine = Literal[
    "vllm",
    "llama.cpp",
    "ollama",
    "sglang",
    "tgi",
    "pytorch",
    "lmstudio",
    "mlx",
    "tensorrt-llm",
    "exllamav2",
    "koboldcpp",
    "llama-cpp-python",
    "sycl",
    "vulkan",
    "vllm.rs",
    "tt-metal",
    "localai",
    "aphrodite",
    "lmdeploy",
    "text-generation-webui",
    "any",
    "custom",
]
CONTEXT_FIELDS = (
    "model",
    "flash_attn_unavailable",
    "gpu",
    "gpu_count",
    "gpu_total_gib",
    "tp",
    "pp",
    "gpu_memory_utilization",
    "max_model_len",
    "max_num_seqs",
    "max_num_batched_tokens",
    "kv_cache_dtype",
    "dtype",
    "quantization",
    "enforce_eager",
    "engine_version",
    "command",
    "n_ctx",
    "n_ctx_train",
    "n_parallel",
    "cache_type_k",
    "cache_type_v",
    "flash_attn",
    "n_gpu_layers",
    "mem_fraction_static",
    "context_length",
    "max_running_requests",
    "chunked_prefill_size",
    "max_total_tokens",
    "max_input_tokens",
    "max_batch_prefill_tokens",
    "compute_capability",
    "os",
    "pp_retry",
    "oom_stage",
    "page_size",
    "page_size_forced",
    "pp_chunk_profile_failed",
)
# the context field (above) a log states each engine setting in, by engine (bot/situation.py reads them)
SETTING_CONTEXT_FIELDS: dict[str, dict[str, str]] = {
    "vllm": {
        "max_len": "max_model_len", "util": "gpu_memory_utilization", "kv_dtype": "kv_cache_dtype",
        "tp": "tp", "pp": "pp", "max_seqs": "max_num_seqs", "batched_tokens": "max_num_batched_tokens",
        "eager": "enforce_eager", "quantization": "quantization", "dtype": "dtype",
    },
    "llama.cpp": {
        "max_len": "n_ctx", "cache_type_k": "cache_type_k", "cache_type_v": "cache_type_v",
        "flash_attn": "flash_attn", "gpu_layers": "n_gpu_layers", "parallel": "n_parallel",
    },
    "ollama": {"max_len": "n_ctx", "parallel": "n_parallel", "cache_type_k": "cache_type_k"},
    "sglang": {"max_len": "context_length", "util": "mem_fraction_static", "max_seqs": "max_running_requests",
               "tp": "tp", "kv_dtype": "kv_cache_dtype"},
    "tgi": {"max_len": "max_total_tokens"},
}  # fmt: skip


@dataclass(frozen=True, kw_only=True)
class Example:
    """A paste a signature must (or must not) match, with the values it must capture."""

    __pydantic_config__ = STRICT

    text: Annotated[str, Field(min_length=1)]
    params: dict[str, float | int | str] = field(default_factory=dict)
    source: str = ""
    expect: Literal["match", "no_match"] = "match"


Form = Literal[
    "capacity_short",
    "budget_over",
    "capability_below",
    "constraint_violated",
    "report",
    "wrapper",
    "advice",
    "static_share",
]


@dataclass(frozen=True, kw_only=True)
class Signature:
    """One recognisable failure: its patterns, captures, cause and remedies."""

    __pydantic_config__ = STRICT

    id: Annotated[str, Field(pattern=r"^[a-z0-9_.:-]+$")]
    category: Category
    title: str
    severity: Literal["error", "warning", "info"] = "error"
    # rank among findings: higher is the root
    priority: Annotated[int, Field(ge=0, le=100)] = 50
    # any one matching makes a finding (first wins)
    patterns: Annotated[list[str], Field(min_length=1)]
    requires: list[str] = field(default_factory=list)  # each must also match somewhere in the paste
    excludes: list[str] = field(default_factory=list)  # none may match anywhere in the paste
    captures: dict[str, Unit] = field(default_factory=dict)
    cause: str
    remedies: list[str] = field(default_factory=list)
    form: Form | None = None  # the generic diagnosis that answers it; default: by category
    # short steps the reply lists when no remedy computes a fix; may name captures as {name},
    # e.g. 'run the container with --ipc=host (or --shm-size=16g)'
    advice: list[str] = field(default_factory=list)
    # engine versions that print this wording, e.g. '<=0.10.2' or '>=0.15'; the newest such version
    # is assumed when the paste does not say
    versions: Annotated[str | None, Field(pattern=r"^(<=|>=|<|>|==)?[0-9]+(\.[0-9]+){0,2}$")] = None
    # signature ids (or categories) this one explains when both match
    suppresses: list[str] = field(default_factory=list)
    examples: Annotated[list[Example], Field(min_length=1)]

    def __post_init__(self) -> None:
        for name in ("patterns", "requires", "excludes"):
            for p in getattr(self, name):
                try:
                    compiled(p)
                except ValueError as exc:
                    raise ValueError(f"{name}: {exc}") from None
        unknown = [r for r in self.remedies if r not in REMEDIES]
        if unknown:
            raise ValueError(f"remedies: unknown remedies {unknown}; known: {', '.join(sorted(REMEDIES))}")
        self._captures_declared()

    def _captures_declared(self) -> None:
        for p in self.patterns:
            names = set(compiled(p).groupindex)
            for name in names:
                base = name.removesuffix("_unit")
                if name not in self.captures and not (name.endswith("_unit") and base in self.captures):
                    raise ValueError(f"capture {name!r} in a pattern is not declared under captures")
        for name, unit in self.captures.items():
            if unit in ("gib", "mib", "kib", "gb", "mb", "bytes", "dynamic") and not name.endswith(
                ("_gib", "_mib", "_bytes")
            ):
                raise ValueError(f"memory capture {name!r} must end in _gib, _mib or _bytes")
        for step in self.advice:
            for name in re2.findall(r"\{([a-z_]+)\}", step):
                if name not in self.captures:
                    raise ValueError(f"advice names {{{name}}}, which is not declared under captures")


@dataclass(frozen=True, kw_only=True)
class ContextRule:
    """A pattern that reads one context field (model, flags, versions) from a paste."""

    __pydantic_config__ = STRICT

    field: str
    pattern: str
    value: str | None = None  # constant value when the pattern has no group

    def __post_init__(self) -> None:
        if self.field not in CONTEXT_FIELDS:
            raise ValueError(f"unknown context field {self.field!r}; known: {', '.join(CONTEXT_FIELDS)}")
        if "value" not in compiled(self.pattern).groupindex and self.value is None:
            raise ValueError("a context pattern needs a (?P<value>...) group or a constant value")


@dataclass(frozen=True, kw_only=True)
class SignatureFile:
    """One engine's signature file."""

    __pydantic_config__ = STRICT

    engine: Engine
    signatures: list[Signature] = field(default_factory=list)
    context: list[ContextRule] = field(default_factory=list)

    def __post_init__(self) -> None:
        seen: set[str] = set()
        for s in self.signatures:
            if s.id in seen:
                raise ValueError(f"duplicate signature id {s.id!r}")
            seen.add(s.id)
