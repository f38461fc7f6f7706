"""KV-cache bytes per token, per layer type, per GPU.

One :class:`KVLayout` describes what one GPU (one TP/PP rank) stores for a model:
- layers whose cache grows with every token (full attention, MLA);
- sliding-window / chunked layers, whose cache stops growing at ``window`` plus the tokens in flight;
- linear / Mamba layers, which keep a fixed state per sequence.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, replace

from calculator.catalog import ModelSpec
from calculator.spec_decode import SpecDecode, draft_attention

# vLLM --kv-cache-dtype -> bytes per element ("auto" = the model's 16-bit activation dtype)
VLLM_KV_BYTES: dict[str, float] = {
    "auto": 2.0,
    "float16": 2.0,
    "bfloat16": 2.0,
    "fp16": 2.0,
    "bf16": 2.0,
    "fp8": 1.0,
    "fp8_e4m3": 1.0,
    "fp8_e5m2": 1.0,
    "fp8_inc": 1.0,
}

# llama.cpp --cache-type-k / --cache-type-v -> bytes per element (ggml block sizes)
LLAMACPP_KV_BYTES: dict[str, float] = {
    "f32": 4.0,
    "f16": 2.0,
    "bf16": 2.0,
    "q8_0": 34 / 32,
    "q5_1": 24 / 32,
    "q5_0": 22 / 32,
    "q4_1": 20 / 32,
    "q4_0": 18 / 32,
    "iq4_nl": 18 / 32,
}

# the (K, V) cache types llama.cpp's CUDA / HIP build has flash-attention kernels for without
# GGML_CUDA_FA_ALL_QUANTS (f32 runs as f16): ggml/src/ggml-cuda/fattn.cu, ggml_cuda_flash_attn_ext_vec's
# default cases and ggml_cuda_get_best_fattn_kernel's K->type != V->type check (ggml-org/llama.cpp
# 00a2d60).  Another pair has none: -fa auto turns flash attention off (so a quantized V cache is refused)
# and -fa on runs attention on the CPU (llama.cpp#27109, #28456: prefill ~8x slower)
CUDA_FA_KV_PAIRS = frozenset(
    {("f16", "f16"), ("bf16", "bf16"), ("q8_0", "q8_0"), ("q8_0", "q4_0"), ("q4_0", "q4_0")}
)
_CUDA_FA_QUANT_PAIRS = (("q8_0", "q8_0"), ("q4_0", "q4_0"))  # the same type for K and V: every build has them


def cuda_flash_attn_kv(cache_k: str, cache_v: str) -> tuple[str, str] | None:
    """The (K, V) cache types to use for flash attention on CUDA: the pasted ones when a kernel takes them,
    else the best matching quantized pair that stores no more per token (None: none is that small)."""
    as_f16 = {"f32": "f16"}
    if (as_f16.get(cache_k, cache_k), as_f16.get(cache_v, cache_v)) in CUDA_FA_KV_PAIRS:
        return cache_k, cache_v
    if cache_k not in LLAMACPP_KV_BYTES or cache_v not in LLAMACPP_KV_BYTES:
        return None
    budget = LLAMACPP_KV_BYTES[cache_k] + LLAMACPP_KV_BYTES[cache_v]
    return next(
        (p for p in _CUDA_FA_QUANT_PAIRS if LLAMACPP_KV_BYTES[p[0]] + LLAMACPP_KV_BYTES[p[1]] <= budget), None
    )


@dataclass(frozen=True)
class SlidingPart:
    """The sliding-window layers of a model: their bytes per token, window and count."""

    bytes_per_token: float
    window: int
    layers: int


@dataclass(frozen=True)
class KVLayout:
    """What one GPU stores per token / per sequence for one model."""

    growing_bytes_per_token: float
    sliding: tuple[SlidingPart, ...]
    state_bytes_per_seq: float
    attention_layers: int
    growing_layers: int
    state_layers: int = 0  # linear / Mamba layers that keep a state (vLLM gives each a state page)
    # speculative decoding: drafter layers whose KV spec differs from the target's (a KV cache type of
    # their own; they are counted in growing_* too), their bytes per token each, and the draft tokens
    draft_type_layers: int = 0
    draft_type_bytes_per_token: float = 0.0
    spec_tokens: int = 0

    @property
    def all_attention_bytes_per_token(self) -> float:
        """Per-token bytes if every attention layer kept every token (what pools are sized by)."""
        return self.growing_bytes_per_token + sum(s.bytes_per_token for s in self.sliding)

    def seq_bytes(self, context: int, in_flight: int = 0) -> float:
        """Bytes one sequence of ``context`` tokens needs; sliding layers hold window + in-flight."""
        total = self.growing_bytes_per_token * context + self.state_bytes_per_seq
        for s in self.sliding:
            total += s.bytes_per_token * min(context, s.window + in_flight)
        return total

    def max_context(self, budget_bytes: float, in_flight: int = 0, limit: int = 1 << 24) -> int:
        """Largest context one sequence can have within ``budget_bytes`` (0 if not even one token)."""
        if budget_bytes <= 0 or self.seq_bytes(1, in_flight) > budget_bytes:
            return 0
        if self.seq_bytes(limit, in_flight) <= budget_bytes:
            return limit
        lo, hi = 1, limit
        while lo < hi:
            mid = (lo + hi + 1) // 2
            if self.seq_bytes(mid, in_flight) <= budget_bytes:
                lo = mid
            else:
                hi = mid - 1
        return lo


# Architectures whose "linear" group stands for cross-attention to image tokens (a fixed per-sequence cost,
# see data/models/vision_2024_25.yaml), not a recurrent state: V1 does not page it with the attention.
CROSS_ATTENTION_ARCHITECTURES = frozenset({"MllamaForConditionalGeneration"})


def kv_heads_per_rank(total_kv_heads: int, tp: int) -> int:
    """KV heads one TP rank stores: replicated once ``tp`` exceeds the number of KV heads."""
    return max(1, total_kv_heads // max(1, tp))


def layout(
    model: ModelSpec,
    k_bytes: float,
    v_bytes: float | None = None,
    tp: int = 1,
    pp: int = 1,
    mla_has_v: bool = False,
    spec: SpecDecode | None = None,
) -> KVLayout:
    """The KV layout on one GPU of a ``tp`` x ``pp`` deployment.

    ``k_bytes``/``v_bytes``: bytes per element of the K and V caches.  MLA stores one latent vector of
    ``kv_lora_rank + qk_rope_head_dim`` per token and layer, replicated on every TP rank.  ``spec``: the
    speculative config, whose draft layers join the pool (calculator/spec_decode.py); the drafter runs on
    the last pipeline stage, which holds all of its layers.
    """
    if v_bytes is None:
        v_bytes = k_bytes
    pp = max(1, pp)
    growing = 0.0
    state = 0.0
    sliding: list[SlidingPart] = []
    attn_layers = 0
    growing_layers = 0
    state_layers = 0
    for group in model.layer_groups:
        layers = math.ceil(group.count / pp)
        if group.kind == "linear":
            conv_extra = (group.conv_column_bytes or 0) * (spec.num_tokens if spec else 0)
            state += ((group.state_bytes or 0) + conv_extra) * layers / max(1, tp)
            recurrent = group.state_bytes and model.architecture not in CROSS_ATTENTION_ARCHITECTURES
            state_layers += layers if recurrent else 0
            continue
        attn_layers += layers
        if group.kind == "mla":
            assert model.mla is not None
            dim = model.mla.kv_lora_rank + model.mla.qk_rope_head_dim
            per_layer = dim * k_bytes + (dim * v_bytes if mla_has_v else 0.0)
            growing += per_layer * layers
            growing_layers += layers
            continue
        heads = kv_heads_per_rank(group.kv_heads or model.num_key_value_heads, tp)
        head_dim = group.head_dim or model.head_dim
        per_layer = heads * head_dim * (k_bytes + v_bytes)
        if group.kind == "full":
            growing += per_layer * layers
            growing_layers += layers
        else:
            assert group.window is not None
            sliding.append(SlidingPart(per_layer * layers, group.window, layers))
    base = KVLayout(growing, tuple(sliding), state, attn_layers, growing_layers, state_layers)
    return with_draft(base, model, spec, k_bytes, v_bytes, tp) if spec else base


def with_draft(
    base: KVLayout, model: ModelSpec, spec: SpecDecode, k_bytes: float, v_bytes: float, tp: int
) -> KVLayout:
    """``base`` plus the drafter's attention layers (full attention, every token kept)."""
    draft = draft_attention(model, spec)
    if draft is None:
        return replace(base, spec_tokens=spec.num_tokens)
    if draft.mla:
        assert model.mla is not None
        per_layer = (model.mla.kv_lora_rank + model.mla.qk_rope_head_dim) * k_bytes
    else:
        per_layer = kv_heads_per_rank(draft.kv_heads, tp) * draft.head_dim * (k_bytes + v_bytes)
    own = 0 if draft.shares_target_spec else draft.layers
    return replace(
        base,
        growing_bytes_per_token=base.growing_bytes_per_token + per_layer * draft.layers,
        attention_layers=base.attention_layers + draft.layers,
        growing_layers=base.growing_layers + draft.layers,
        draft_type_layers=own,
        draft_type_bytes_per_token=per_layer if own else 0.0,
        spec_tokens=spec.num_tokens,
    )


def vllm_layout(
    model: ModelSpec, kv_cache_dtype: str = "auto", tp: int = 1, pp: int = 1, spec: SpecDecode | None = None
) -> KVLayout:
    if kv_cache_dtype not in VLLM_KV_BYTES:
        raise ValueError(f"unknown vLLM kv-cache-dtype {kv_cache_dtype!r}; known: {', '.join(VLLM_KV_BYTES)}")
    b = VLLM_KV_BYTES[kv_cache_dtype]
    return layout(model, b, b, tp=tp, pp=pp, spec=spec)


def llamacpp_layout(model: ModelSpec, cache_type_k: str = "f16", cache_type_v: str = "f16") -> KVLayout:
    for t in (cache_type_k, cache_type_v):
        if t not in LLAMACPP_KV_BYTES:
            known = ", ".join(LLAMACPP_KV_BYTES)
            raise ValueError(f"unknown llama.cpp cache type {t!r}; known: {known}")
    return layout(model, LLAMACPP_KV_BYTES[cache_type_k], LLAMACPP_KV_BYTES[cache_type_v])
