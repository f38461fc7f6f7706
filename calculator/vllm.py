"""vLLM's memory budget: how much of a GPU ends up as KV cache, and what that buys.

Follows the worker-side accounting (see shared/reference/vllm_memory.md §1):
``available_kv = total * util - weights - non_torch - activation_peak - cudagraph_estimate``
with the CUDA-graph estimate subtracted by default only from v0.21.  Blocks are 16 tokens (64 for MLA).
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass, field
from functools import cached_property

from calculator.catalog import GPU, ModelSpec, Variant, variant_weight_bytes
from calculator.constants import constant, table
from calculator.kv import VLLM_KV_BYTES, KVLayout, vllm_layout
from calculator.plan import Outcome, Plan, Sourced, Term
from calculator.spec_decode import SpecDecode
from calculator.units import GIB
from calculator.versions import (
    CURRENT_VLLM,
    parse_version,
    vllm_default_utilization,
    vllm_is_v0,
    vllm_subtracts_cudagraph_estimate,
    vllm_yarn_scales_max_len,
)
from calculator.vllm_mm import MmSettings, held_gib, v0_profile, v1_profile, vision_peak_gib

# Budget constants, each with its unit and source (or the logs it was fitted on) in
# data/engine_constants.yaml; tests/calculator/test_engine_constants.py replays those logs.
NON_TORCH_GIB_SINGLE = constant("vllm", "non_torch_gib_single")
NON_TORCH_GIB_PER_EXTRA_RANK = constant("vllm", "non_torch_gib_per_extra_rank")
ACTIVATION_FACTOR = constant("vllm", "activation_factor")  # x intermediate_size x dtype bytes per token
SAMPLER_TEMPORARIES = constant("vllm", "sampler_temporaries")
V0_SAMPLER_BYTES_PER_LOGIT = constant("vllm", "v0_sampler_bytes_per_logit")
CUDAGRAPH_REFERENCE_GIB = constant("vllm", "cudagraph_reference_gib")
CUDAGRAPH_REFERENCE_LAYERS = constant("vllm", "cudagraph_reference_layers")
CUDAGRAPH_REFERENCE_HIDDEN = constant("vllm", "cudagraph_reference_hidden")
CUDAGRAPH_SCALE_EXPONENT = constant("vllm", "cudagraph_scale_exponent")
CUDAGRAPH_MIN_SCALE = constant("vllm", "cudagraph_min_scale")
DEFAULT_BATCHING = table("vllm", "default_batching")
V0_MAX_NUM_SEQS = int(constant("vllm", "v0_max_num_seqs"))
V0_MIN_BATCHED_TOKENS = int(constant("vllm", "v0_min_batched_tokens"))
BLOCK_SIZE = int(constant("vllm", "block_size"))
MLA_BLOCK_SIZE = int(constant("vllm", "mla_block_size"))
UNKNOWN_TOTAL_GIB = constant("vllm", "unknown_total_gib")  # batching tier when the card is unknown
LOGGED_FIT_TOLERANCE = constant("vllm", "logged_fit_tolerance")  # logged / modelled fit that still agrees
V0_LONG_CONTEXT_LEN = int(constant("vllm", "v0_long_context_len"))
MXFP4_MARLIN_HIDDEN_MULTIPLE = int(constant("vllm", "mxfp4_marlin_hidden_multiple"))
MXFP4_MARLIN_INTERMEDIATE_MULTIPLE = int(constant("vllm", "mxfp4_marlin_intermediate_multiple"))
MXFP4_BITS = constant("vllm", "mxfp4_bits_per_weight")
NATIVE_FP4_MIN_CC = constant("vllm", "native_fp4_min_cc")
HYBRID_BLOCK_ALIGNMENT = int(constant("vllm", "hybrid_block_alignment"))
MAMBA_STATE_BLOCKS = int(constant("vllm", "mamba_state_blocks_prefix_caching"))
V0_CHUNKED_BATCHED_TOKENS = int(constant("vllm", "v0_chunked_batched_tokens"))


def _release(rows: tuple[dict[str, int | float | bool], ...]) -> tuple[int, int, int]:
    """A release bound stored as one (major, minor, patch) row."""
    row = next(iter(rows))
    return int(row["major"]), int(row["minor"]), int(row["patch"])


V0_LONG_CONTEXT_CHUNKED_FROM = _release(table("vllm", "v0_long_context_chunked_from"))
PP_WHOLE_MODEL_CHECK_THROUGH = _release(table("vllm", "pp_whole_model_check_through"))


@dataclass
class VllmConfig:
    """The vLLM settings that change memory: parallelism, utilization, lengths, dtypes."""

    tp: int = 1
    pp: int = 1
    gpu_memory_utilization: float | None = None
    max_model_len: int | None = None
    kv_cache_dtype: str = "auto"
    max_num_seqs: int | None = None
    max_num_batched_tokens: int | None = None
    enforce_eager: bool = False
    kv_cache_memory_gib: float | None = None
    version: str = CURRENT_VLLM
    block_size: int | None = None


@dataclass
class VllmBudget:
    """Per-GPU budget in GiB, plus the capacity it implies."""

    total_gib: float
    utilization: float
    requested_gib: float
    weights_gib: float
    non_torch_gib: float
    activation_gib: float
    cudagraph_gib: float
    kv_cache_gib: float
    kv_bytes_per_token: float
    block_size: int
    num_blocks: int
    kv_tokens: int
    max_model_len: int
    max_model_len_fit: int
    max_concurrency: float
    fits: bool
    max_num_seqs: int
    max_num_batched_tokens: int
    cudagraph_in_budget: bool
    notes: list[str] = field(default_factory=list)

    @property
    def free_gib(self) -> float:
        return max(0.0, self.total_gib - self.requested_gib)


def derived_max_model_len(model: ModelSpec, version: str = CURRENT_VLLM) -> int:
    """What vLLM derives from config.json when ``--max-model-len`` is not given."""
    derived = model.max_position_embeddings
    rs = model.rope_scaling
    if rs and rs.factor and rs.type not in ("su", "longrope", "llama3") and model.family != "gemma3":
        v = parse_version(version, CURRENT_VLLM)
        if rs.type == "yarn":
            if vllm_yarn_scales_max_len(v) and rs.original_max_position_embeddings:
                derived = int(rs.original_max_position_embeddings * rs.factor)
        else:
            derived = int(derived * rs.factor)
    return derived


def default_batching(gpu_total_gib: float, gpu_id: str, v0: bool, max_model_len: int) -> tuple[int, int]:
    """(max_num_seqs, max_num_batched_tokens) for the OpenAI server by GPU class (V1)."""
    if v0:
        return V0_MAX_NUM_SEQS, max(max_model_len, V0_MIN_BATCHED_TOKENS)
    for row in DEFAULT_BATCHING:
        if gpu_total_gib >= row["min_gib"] and (row["a100_included"] or "a100" not in gpu_id):
            return int(row["max_num_seqs"]), int(row["max_num_batched_tokens"])
    return int(DEFAULT_BATCHING[-1]["max_num_seqs"]), int(DEFAULT_BATCHING[-1]["max_num_batched_tokens"])


def valid_tp_sizes(heads: int, kv_heads: int | None, limit: int, widths: tuple[int, ...] = ()) -> list[int]:
    """The tensor-parallel sizes up to ``limit`` vLLM accepts: heads % tp == 0; KV heads split
    (kv % tp == 0) or replicate (tp % kv == 0); and the column-parallel MLP width splits evenly
    (MergedColumnParallelLinear's divide)."""
    out = []
    for tp in range(1, limit + 1):
        if heads % tp or any(w % tp for w in widths):
            continue
        if kv_heads and ((kv_heads >= tp and kv_heads % tp) or (kv_heads < tp and tp % kv_heads)):
            continue
        out.append(tp)
    return out


def _round_up(n: int, multiple: int) -> int:
    return -(-n // multiple) * multiple


def mxfp4_marlin_padding_bytes(
    model: ModelSpec, quant: str | None, compute_capability: float | None, tp: int
) -> int:
    """Bytes vLLM adds to an MXFP4 MoE checkpoint on a GPU without native FP4: the Marlin backend
    allocates every expert at a hidden size rounded up to 256 and a per-rank intermediate size rounded
    up to 128 (vllm quantization/mxfp4.py create_weights).  Whole model, all ranks."""
    if quant != "mxfp4" or compute_capability is None or compute_capability >= NATIVE_FP4_MIN_CC:
        return 0
    if not model.is_moe or not model.num_experts:
        return 0
    hidden = model.hidden_size
    inter = (model.moe_intermediate_size or model.intermediate_size or 0) // max(1, tp)
    if inter <= 0:
        return 0
    padded_h = _round_up(hidden, MXFP4_MARLIN_HIDDEN_MULTIPLE)
    padded_i = _round_up(inter, MXFP4_MARLIN_INTERMEDIATE_MULTIPLE)
    extra = 3 * (padded_h * padded_i - hidden * inter)  # gate + up (2 x I x H) and down (H x I)
    return int(extra * model.num_experts * model.num_hidden_layers * max(1, tp) * MXFP4_BITS / 8)


def loaded_weight_bytes(
    model: ModelSpec, variant: Variant | None, compute_capability: float | None, tp: int
) -> int:
    """What vLLM loads for a checkpoint (all ranks): its bytes, plus the Marlin padding of an MXFP4 MoE
    on a GPU without native FP4 (the paste's budget and ``/vram`` both size weights with this)."""
    quant = variant.quant if variant else None
    return variant_weight_bytes(model, variant) + mxfp4_marlin_padding_bytes(
        model, quant, compute_capability, tp
    )


def v0_chunks_long_context(
    model: ModelSpec, max_model_len: int, version: tuple[int, int, int], v0: bool | None = None
) -> bool:
    """V0 turns chunked prefill on by itself above 32K tokens, so it profiles a 512-token chunk instead
    of a max_model_len prefill; not for multimodal, MLA, sliding-window or recurrent models
    (vllm engine/arg_utils.py, use_long_context = max_model_len > 32768, 0.6-0.8)."""
    if (
        not (vllm_is_v0(version) if v0 is None else v0)
        or version < V0_LONG_CONTEXT_CHUNKED_FROM
        or max_model_len <= V0_LONG_CONTEXT_LEN
    ):
        return False
    plain = all(g.kind == "full" for g in model.layer_groups)
    return plain and not model.multimodal and model.mla is None


def _text_pass_gib(model: ModelSpec, tokens: int, num_seqs: int, tp: int, v0: bool) -> float:
    inter = model.intermediate_size or 4 * model.hidden_size
    if model.is_moe and model.moe_intermediate_size:
        inter = model.moe_intermediate_size * (model.experts_per_token or 8)
    per_token = ACTIVATION_FACTOR * inter * model.dtype_bytes / max(1, tp)
    if v0:  # V0 samples after the forward pass has freed its activations: the larger of the two
        return max(tokens * per_token, v0_sampler_bytes(model, tokens, num_seqs)) / GIB
    sampler = min(num_seqs, tokens) * model.vocab_size * 4 * SAMPLER_TEMPORARIES
    return (tokens * per_token + sampler) / GIB


def v0_sampler_bytes(model: ModelSpec, tokens: int, num_seqs: int) -> float:
    """V0's dummy sampler run: every profiled sequence sampled with top-k and top-p over the whole
    vocabulary (a sort, its int64 indices and the masks; data/engine_constants.yaml
    v0_sampler_bytes_per_logit), beside the logits in the model's dtype and the final hidden states."""
    rows = min(num_seqs, tokens)
    logits = rows * model.vocab_size * (V0_SAMPLER_BYTES_PER_LOGIT + model.dtype_bytes)
    return logits + tokens * model.hidden_size * model.dtype_bytes


def estimate_activation_gib(
    model: ModelSpec,
    batched_tokens: int,
    num_seqs: int,
    tp: int,
    v0: bool = False,
    mm: MmSettings | None = None,
    max_len: int | None = None,
) -> float:
    """Profiled activation peak: a forward pass of ``batched_tokens`` plus (V1) a dummy sampler run.

    A model with a known vision tower profiles its dummy images and videos too (calculator/vllm_mm.py):
    V0 runs the text pass over every placeholder token, V1 encodes a batch of the largest items
    first; either way the float32 pixel values and the encoder outputs stay allocated, and the peak
    is the larger of the text pass and one vision block over the largest encoder call."""
    settings = mm or MmSettings()
    if model.vision is None:
        return _text_pass_gib(model, batched_tokens, num_seqs, tp, v0)
    if v0:
        prof = v0_profile(model, batched_tokens, num_seqs, max_len or batched_tokens, settings)
    else:
        prof = v1_profile(model, batched_tokens, num_seqs, settings)
    assert prof is not None
    text = _text_pass_gib(model, prof.text_tokens, prof.seqs or num_seqs, tp, v0)
    return max(text, vision_peak_gib(model, prof.patches, tp)) + held_gib(model, prof)


def estimate_cudagraph_gib(model: ModelSpec, tp: int, pp: int) -> float:
    """Rough CUDA-graph pool size, scaled from one logged capture (see data/engine_constants.yaml)."""
    layers = model.num_hidden_layers / max(1, pp)
    scale = (layers * model.hidden_size / max(1, tp)) / (
        CUDAGRAPH_REFERENCE_LAYERS * CUDAGRAPH_REFERENCE_HIDDEN
    )
    return CUDAGRAPH_REFERENCE_GIB * max(scale, CUDAGRAPH_MIN_SCALE) ** CUDAGRAPH_SCALE_EXPONENT


def vllm_budget(
    model: ModelSpec,
    gpu: GPU,
    weight_bytes: int,
    cfg: VllmConfig,
    total_gib: float | None = None,
) -> VllmBudget:
    """The catalog budget (``/vram``): the same estimate a paste's budget uses, with nothing observed."""
    version = parse_version(cfg.version, CURRENT_VLLM)
    total = total_gib if total_gib is not None else gpu.total_gib
    plan = Plan(
        max_len=cfg.max_model_len, kv_dtype=cfg.kv_cache_dtype, util=cfg.gpu_memory_utilization,
        eager=cfg.enforce_eager, tp=max(1, cfg.tp), pp=max(1, cfg.pp), max_seqs=cfg.max_num_seqs,
        batched_tokens=cfg.max_num_batched_tokens, kv_cache_gib=cfg.kv_cache_memory_gib,
    )  # fmt: skip
    est = VllmEstimate(
        version, plan, VllmObserved(total_gib=Sourced(total, "catalog")), model, weight_bytes, gpu.id
    )
    kv_gib, _terms = est.kv_gib(plan)
    assert kv_gib is not None
    terms = {t.name: t.gib for t in _terms}
    max_len = est.max_len(plan) or model.max_position_embeddings
    max_num_seqs, batched = est.batching(plan)
    block = cfg.block_size or (MLA_BLOCK_SIZE if model.mla else BLOCK_SIZE)
    layout: KVLayout = vllm_layout(model, cfg.kv_cache_dtype, tp=plan.tp, pp=plan.pp)
    notes = (
        ["--kv-cache-memory-bytes fixes the KV budget; gpu_memory_utilization is ignored"]
        if (cfg.kv_cache_memory_gib is not None)
        else []
    )
    util = plan.util or est.default_util()
    graphs_in_budget = est.graphs_in_budget(plan)
    return _capacity(
        layout,
        kv_gib,
        block,
        max_len,
        batched,
        est.v0,
        plan.pp,
        dict(
            total_gib=total,
            utilization=util,
            requested_gib=total * util,
            weights_gib=terms["weights"],
            non_torch_gib=terms["non-torch"],
            activation_gib=terms["activations"],
            cudagraph_gib=0.0 if cfg.enforce_eager else estimate_cudagraph_gib(model, plan.tp, plan.pp),
            max_num_seqs=max_num_seqs,
            max_num_batched_tokens=batched,
            cudagraph_in_budget=graphs_in_budget,
            notes=notes,
        ),
    )


def kv_capacity(
    layout: KVLayout,
    kv_gib: float,
    max_model_len: int,
    block_size: int = BLOCK_SIZE,
    max_num_batched_tokens: int = 2048,
    v0: bool = False,
    pp: int = 1,
) -> tuple[int, int, int, float]:
    """(num_blocks, kv_tokens, max_model_len_fit, max_concurrency) for a KV budget in GiB."""
    avail = max(0.0, kv_gib) * GIB
    if not v0 and is_paged_hybrid(layout):
        return hybrid_capacity(layout, avail, max_model_len)
    per_block = layout.all_attention_bytes_per_token * block_size
    num_blocks = int(avail // per_block) if per_block > 0 else 0
    kv_tokens = num_blocks * block_size
    if v0:
        kv_tokens = block_size * (num_blocks // pp) if pp > 1 else kv_tokens
        fit = kv_tokens
        concurrency = kv_tokens / max_model_len if max_model_len else 0.0
    else:
        usable = num_blocks * per_block
        fit = _blocks_max_len(layout, usable, block_size, max_num_batched_tokens)
        need = _blocks_bytes(layout, max_model_len, block_size, max_num_batched_tokens)
        concurrency = usable / need if need else 0.0
    return num_blocks, kv_tokens, fit, concurrency


def is_paged_hybrid(layout: KVLayout) -> bool:
    """Full attention plus recurrent layers, which V1 pages together (no sliding layers)."""
    return bool(layout.state_layers and layout.growing_layers and not layout.sliding)


@dataclass(frozen=True)
class HybridPages:
    """V1's shared page for a hybrid model: the attention block is raised until one page holds a whole
    recurrent state, and layers are grouped so every group has the same number of layers.  A drafter
    whose KV spec is not the target's forms groups of its own (``draft_groups``), its block scaled so
    its page is the same size (kv_cache_utils.py unify_kv_cache_spec_page_size)."""

    block: int  # attention tokens per page
    page_bytes: float  # one layer's page (the state page is padded to it)
    group_size: int  # layers per KV cache group
    attention_groups: int
    state_groups: int
    draft_groups: int = 0
    draft_block: int = 0
    state_blocks: int = MAMBA_STATE_BLOCKS  # state pages per request in each recurrent group

    def blocks_for(self, length: int) -> int:
        """Pages one request of ``length`` tokens takes across every group."""
        n = max(1, length)
        attn = self.attention_groups * math.ceil(n / self.block)
        draft = self.draft_groups * math.ceil(n / self.draft_block) if self.draft_groups else 0
        return attn + draft + self.state_groups * self.state_blocks


def hybrid_pages(layout: KVLayout) -> HybridPages:
    target_layers = layout.growing_layers - layout.draft_type_layers
    target_bytes = (
        layout.growing_bytes_per_token - layout.draft_type_layers * layout.draft_type_bytes_per_token
    )
    attn_token = target_bytes / target_layers
    state = layout.state_bytes_per_seq / layout.state_layers
    block = HYBRID_BLOCK_ALIGNMENT * math.ceil(state / (HYBRID_BLOCK_ALIGNMENT * attn_token))
    counts = [target_layers, layout.state_layers] + (
        [layout.draft_type_layers] if layout.draft_type_layers else []
    )
    group = min(counts)  # vllm kv_cache_utils: the smallest type
    draft_block = 0
    if layout.draft_type_layers:  # same tokens per block when the per-token bytes agree, else scaled
        draft_block = max(1, round(block * attn_token / layout.draft_type_bytes_per_token))
    return HybridPages(
        block,
        block * attn_token,
        group,
        math.ceil(target_layers / group),
        math.ceil(layout.state_layers / group),
        math.ceil(layout.draft_type_layers / group),
        draft_block,
        MAMBA_STATE_BLOCKS + layout.spec_tokens,
    )


def hybrid_capacity(layout: KVLayout, kv_bytes: float, max_model_len: int) -> tuple[int, int, int, float]:
    """(num_blocks, kv_tokens, max_model_len_fit, max_concurrency) as V1 sizes a hybrid pool: one
    tensor per group slot of num_blocks pages; a request takes cdiv(len, block) pages in each attention
    group and ``2 + num_speculative_tokens`` in each recurrent group (vllm v1/core/kv_cache_utils.py
    get_max_concurrency_for_kv_cache_config, v1/kv_cache_interface.py max_memory_usage_bytes)."""
    p = hybrid_pages(layout)
    num_blocks = int(kv_bytes // (p.page_bytes * p.group_size))
    fit = _longest(lambda n: p.blocks_for(n) <= num_blocks)
    return num_blocks, num_blocks * p.block, fit, num_blocks / p.blocks_for(max_model_len)


def _longest(fits: Callable[[int], bool], limit: int = 1 << 24) -> int:
    """The largest length in 1..limit that ``fits`` (monotone), 0 when not even one token does."""
    if not fits(1):
        return 0
    lo, hi = 1, limit
    while lo < hi:
        mid = (lo + hi + 1) // 2
        lo, hi = (mid, hi) if fits(mid) else (lo, mid - 1)
    return lo


def kv_check_layout(
    model: ModelSpec,
    kv_cache_dtype: str,
    tp: int,
    pp: int,
    version: tuple[int, int, int],
    spec: SpecDecode | None = None,
) -> KVLayout:
    """The layout vLLM V1 checks "one request of max_model_len fits" against, per stage.

    Up to the release in ``pp_whole_model_check_through`` get_kv_cache_configs merges the KV specs of
    every pipeline stage into global groups and checks each stage's memory against them, so the whole
    model's KV need is asked of every stage (vllm v1/core/kv_cache_utils.py; vllm#34076 at 0.15.2rc1:
    24.0 GiB needed for Qwen3-30B-A3B at 262,144 on a 2-stage pipeline, the whole 48 layers).
    Later code projects the groups onto each stage's own layers.
    """
    whole = pp > 1 and not vllm_is_v0(version) and version <= PP_WHOLE_MODEL_CHECK_THROUGH
    return vllm_layout(model, kv_cache_dtype, tp=tp, pp=1 if whole else pp, spec=spec)


def kv_needed_bytes(layout: KVLayout, length: int, block: int = BLOCK_SIZE, in_flight: int = 2048) -> float:
    """The KV one request of ``length`` tokens needs (V1's max_memory_usage_bytes, in whole blocks)."""
    return _blocks_bytes(layout, length, block, in_flight)


def longest_len_for(
    layout: KVLayout, budget_bytes: float, block: int = BLOCK_SIZE, in_flight: int = 2048
) -> int:
    """The longest request a KV budget holds (V1's estimated maximum model length)."""
    return _blocks_max_len(layout, budget_bytes, block, in_flight)


def reported_kv_tokens(layout: KVLayout, tokens: int, concurrency: float, max_len: int, v0: bool) -> int:
    """The "GPU KV cache size: N tokens" V1 prints: blocks x block size for attention-only models, and
    max_concurrency x max_model_len when sliding or recurrent layers make per-request use non-linear
    (vllm v1/core/kv_cache_utils.py _report_kv_cache_config)."""
    if v0 or not (layout.sliding or layout.state_bytes_per_seq):
        return tokens
    return int(concurrency * max_len)


def _blocks_bytes(layout: KVLayout, length: int, block: int, in_flight: int) -> float:
    """vLLM's per-request maximum usage (§2.2): whole blocks, sliding layers capped at the window."""
    total = math.ceil(length / block) * block * layout.growing_bytes_per_token
    for s in layout.sliding:
        capped = min(s.window - 1 + in_flight, length)
        total += (math.ceil(capped / block) + 1) * block * s.bytes_per_token
    return total + layout.state_bytes_per_seq


def _blocks_max_len(layout: KVLayout, budget: float, block: int, in_flight: int) -> int:
    if budget <= 0 or _blocks_bytes(layout, 1, block, in_flight) > budget:
        return 0
    lo, hi = 1, 1 << 24
    if _blocks_bytes(layout, hi, block, in_flight) <= budget:
        return hi
    while lo < hi:
        mid = (lo + hi + 1) // 2
        if _blocks_bytes(layout, mid, block, in_flight) <= budget:
            lo = mid
        else:
            hi = mid - 1
    return lo


def _capacity(layout, kv_gib, block, max_len, batched, v0, pp, fields) -> VllmBudget:
    num_blocks, kv_tokens, fit, concurrency = kv_capacity(layout, kv_gib, max_len, block, batched, v0, pp)
    return VllmBudget(
        kv_cache_gib=kv_gib,
        kv_bytes_per_token=layout.all_attention_bytes_per_token,
        block_size=block,
        num_blocks=num_blocks,
        kv_tokens=kv_tokens,
        max_model_len=max_len,
        max_model_len_fit=fit,
        max_concurrency=concurrency,
        fits=kv_gib > 0 and fit >= max_len,
        **fields,
    )


# ------------------------------------------------------------------------------------------------
# The budget from what was observed: log numbers where the paste has them, catalog and estimates for
# the rest.  A logged KV budget is the anchor: a changed setting moves it by the change in the terms
# that setting touches, so the log's own numbers are never replaced by estimates.


@dataclass
class VllmObserved:
    """Numbers a paste may print (per GPU, GiB unless named otherwise)."""

    total_gib: Sourced | None = None
    weights_gib: Sourced | None = None
    non_torch_gib: Sourced | None = None
    activation_gib: Sourced | None = None
    cudagraph_gib: Sourced | None = None
    kv_cache_gib: Sourced | None = None
    kv_bytes_per_token: Sourced | None = None  # per GPU, at the plan in force
    fit_len: Sourced | None = None  # the longest request the logged KV cache holds
    free_gib: Sourced | None = None  # free memory when the engine started


@dataclass
class VllmEstimate:
    """vLLM's budget as run, from the paste's settings and what its log observed."""

    version: tuple[int, int, int]
    plan0: Plan  # the settings in force (as run)
    obs: VllmObserved
    model: ModelSpec | None = None
    weight_bytes: int | None = None  # the whole checkpoint
    gpu_id: str = ""
    engine_v0: bool | None = None  # the paste ran the V0 engine (VLLM_USE_V1=0 on 0.8-0.10), else by version
    spec: SpecDecode | None = None  # the paste's speculative config: its draft layers share the pool

    @property
    def v0(self) -> bool:
        return self.engine_v0 if self.engine_v0 is not None else vllm_is_v0(self.version)

    def default_util(self) -> float:
        return vllm_default_utilization(self.version)

    def total(self) -> float | None:
        return self.obs.total_gib.value if self.obs.total_gib else None

    def max_len(self, plan: Plan) -> int | None:
        if plan.max_len:
            return plan.max_len
        return derived_max_model_len(self.model, ".".join(map(str, self.version))) if self.model else None

    def batching(self, plan: Plan) -> tuple[int, int]:
        max_len = self.max_len(plan) or V0_MIN_BATCHED_TOKENS
        if self.model is not None and v0_chunks_long_context(self.model, max_len, self.version, self.v0):
            return plan.max_seqs or V0_MAX_NUM_SEQS, plan.batched_tokens or V0_CHUNKED_BATCHED_TOKENS
        seqs_d, tokens_d = default_batching(
            self.total() or UNKNOWN_TOTAL_GIB,
            self.gpu_id,
            self.v0,
            self.max_len(plan) or V0_MIN_BATCHED_TOKENS,
        )
        return plan.max_seqs or seqs_d, plan.batched_tokens or tokens_d

    # -- terms, each for a plan ----------------------------------------------------------------
    def weights(self, plan: Plan) -> Term | None:
        ranks0, ranks = self.plan0.tp * self.plan0.pp, plan.tp * plan.pp
        if self.obs.weights_gib is not None:
            return Term("weights", self.obs.weights_gib.value * ranks0 / ranks, self.obs.weights_gib.source)
        if self.weight_bytes:
            return Term("weights", self.weight_bytes / ranks / GIB, "catalog")
        return None

    def non_torch(self, plan: Plan) -> Term:
        if self.obs.non_torch_gib is not None and (plan.tp * plan.pp > 1) == (
            self.plan0.tp * self.plan0.pp > 1
        ):
            return Term("non-torch", self.obs.non_torch_gib.value, self.obs.non_torch_gib.source)
        extra = NON_TORCH_GIB_PER_EXTRA_RANK if plan.tp * plan.pp > 1 else 0.0
        return Term("non-torch", NON_TORCH_GIB_SINGLE + extra, "estimated")

    def activation(self, plan: Plan) -> Term | None:
        """The logged peak for the plan in force; another plan scales it by the modelled change."""
        if self.model is None:
            if self.obs.activation_gib is None:
                return None
            return Term("activations", self.obs.activation_gib.value, self.obs.activation_gib.source)
        now = self._activation_gib(plan)
        if self.obs.activation_gib is None:
            return Term("activations", now, "estimated")
        then = self._activation_gib(self.plan0)
        if now == then:
            return Term("activations", self.obs.activation_gib.value, self.obs.activation_gib.source)
        return Term("activations", self.obs.activation_gib.value * now / max(1e-9, then), "estimated")

    def _activation_gib(self, plan: Plan) -> float:
        assert self.model is not None
        seqs, batched = self.batching(plan)
        mm = MmSettings(plan.mm_images, plan.mm_videos, plan.mm_max_pixels)
        return estimate_activation_gib(self.model, batched, seqs, plan.tp, self.v0, mm, self.max_len(plan))

    def graphs_in_budget(self, plan: Plan) -> bool:
        """V1 from 0.21 takes its CUDA-graph estimate out of the KV budget; V0 (a paste that proves it,
        whatever release is assumed) captures its graphs after the KV cache is allocated, never before."""
        if self.v0 or plan.eager or not plan.cudagraph_estimate:
            return False
        return vllm_subtracts_cudagraph_estimate(self.version)

    def graphs(self, plan: Plan) -> Term:
        if not self.graphs_in_budget(plan):
            return Term("cuda graphs", 0.0, "computed")
        if self.obs.cudagraph_gib is not None:
            return Term("cuda graphs", self.obs.cudagraph_gib.value, self.obs.cudagraph_gib.source)
        if self.model is None:
            return Term("cuda graphs", 0.0, "estimated")
        return Term("cuda graphs", estimate_cudagraph_gib(self.model, plan.tp, plan.pp), "estimated")

    def bytes_per_token(self, plan: Plan) -> float | None:
        """Per GPU, all attention layers (what a pool is sized by)."""
        if self.model is not None:
            return self.layout(plan).all_attention_bytes_per_token
        if self.obs.kv_bytes_per_token is None:
            return None
        dtype = VLLM_KV_BYTES.get(plan.kv_dtype, 2.0) / VLLM_KV_BYTES.get(self.plan0.kv_dtype, 2.0)
        ranks = (self.plan0.tp * self.plan0.pp) / (plan.tp * plan.pp)
        return self.obs.kv_bytes_per_token.value * dtype * ranks

    def layout(self, plan: Plan) -> KVLayout:
        """The model's KV layout per GPU for ``plan``, the drafter's layers included (V1 only)."""
        assert self.model is not None
        spec = None if self.v0 else self.spec
        return vllm_layout(self.model, plan.kv_dtype, plan.tp, plan.pp, spec)

    # -- the prediction ------------------------------------------------------------------------
    def kv_gib(self, plan: Plan) -> tuple[float | None, list[Term]]:
        total = self.total()
        util = plan.util or self.default_util()
        terms = [
            t
            for t in (self.weights(plan), self.non_torch(plan), self.activation(plan), self.graphs(plan))
            if t
        ]
        if plan.kv_cache_gib is not None:
            return plan.kv_cache_gib, terms
        anchor = self.anchor_kv()
        if anchor is not None:
            base = [t for t in (self.weights(self.plan0), self.non_torch(self.plan0), self.activation(self.plan0), self.graphs(self.plan0)) if t]  # fmt: skip
            util0 = self.plan0.util or self.default_util()
            if util != util0 and total is None:
                return None, terms  # a new utilization needs the card's total
            delta = (total or 0.0) * (util - util0) - (sum(t.gib for t in terms) - sum(t.gib for t in base))
            return anchor + delta, terms
        if total is None:
            return None, terms
        if len(terms) < 4:  # weights or activations unknown
            return None, terms
        return total * util - sum(t.gib for t in terms), terms

    def anchor_kv(self) -> float | None:
        """The KV budget the log shows for the plan in force: printed, or its token capacity times the
        model's bytes per token."""
        if self.obs.kv_cache_gib is not None:
            return float(self.obs.kv_cache_gib.value)
        if self.obs.fit_len is not None and self.model is not None:
            bpt = self.layout(self.plan0).all_attention_bytes_per_token
            return float(self.obs.fit_len.value) * bpt / GIB
        return None

    def evaluate(self, plan: Plan) -> Outcome | None:
        kv, terms = self.kv_gib(plan)
        want = self.max_len(plan)
        if (
            kv is None
            and self.obs.fit_len is not None
            and plan.with_(max_len=self.plan0.max_len) == self.plan0
        ):
            observed = int(self.obs.fit_len.value)
            starts = want is None or observed >= want
            return Outcome(
                starts, observed, 0.0, observed, terms, self.total(), None, "" if starts else "too long"
            )
        if kv is None:
            return None
        total = self.total()
        target = total * (plan.util or self.default_util()) if total else None
        fit, tokens, conc = self._capacity(plan, kv, want)
        if fit is None:
            return None
        starts, why = fit > 0 and kv > 0, ""
        if not starts:
            why = "nothing is left for the KV cache"
        elif want and fit < want:
            starts, why = False, f"the KV cache holds {fit:,} tokens, fewer than max_model_len {want:,}"
        if (
            starts
            and self.obs.free_gib is not None
            and target is not None
            and target > self.obs.free_gib.value
        ) and supports_free_check(self.version):
            starts, why = (
                False,
                f"it asks for {target:.2f} GiB, only {self.obs.free_gib.value:.2f} GiB is free",
            )
        terms = [*terms, Term("kv cache", max(0.0, kv), "computed")]
        return Outcome(starts, fit, kv, tokens, terms, total, target, why, conc)

    def _capacity(self, plan: Plan, kv: float, want: int | None) -> tuple[int | None, int, float | None]:
        fit, tokens, conc = self._raw_capacity(plan, kv, want)
        if fit is not None and self._logged_fit_ratio < 1.0:
            fit = int(fit * self._logged_fit_ratio)
        return fit, tokens, conc

    @cached_property
    def _logged_fit_ratio(self) -> float:
        """The log's own "estimated maximum model length" for its KV budget over the layout's, when the
        engine asks more per token than modelled (a rule of that build): every plan is scaled by it.
        1.0 where they agree or the log prints no such pair (computed once: the plan in force is fixed)."""
        logged_fit, logged_kv = self.obs.fit_len, self.obs.kv_cache_gib
        if logged_fit is None or logged_kv is None:  # without a model too: its per-token bytes are the log's
            return 1.0
        fit0 = self._raw_capacity(self.plan0, logged_kv.value, None)[0]
        ratio = logged_fit.value / fit0 if fit0 else 1.0
        return ratio if ratio < LOGGED_FIT_TOLERANCE else 1.0

    def _raw_capacity(self, plan: Plan, kv: float, want: int | None) -> tuple[int | None, int, float | None]:
        if self.model is not None:
            _seqs, batched = self.batching(plan)
            lay = self.layout(plan)
            block = MLA_BLOCK_SIZE if self.model.mla else BLOCK_SIZE
            _blocks, tokens, fit, conc = kv_capacity(lay, kv, want or 1, block, batched, self.v0, plan.pp)
            check = kv_check_layout(self.model, plan.kv_dtype, plan.tp, plan.pp, self.version, self.spec)
            if not self.v0 and check != lay:  # the start check asks the whole model's KV of each stage
                fit = longest_len_for(
                    check, _blocks * block * lay.all_attention_bytes_per_token, block, batched
                )
            return fit, tokens, conc
        bpt = self.bytes_per_token(plan)
        if not bpt:  # only the logged capacity: it holds for any plan that changes nothing but the length
            if self.obs.fit_len is not None and plan.with_(max_len=self.plan0.max_len) == self.plan0:
                return self.obs.fit_len.value, self.obs.fit_len.value, None
            return None, 0, None
        tokens = int(max(0.0, kv) * GIB // bpt) // BLOCK_SIZE * BLOCK_SIZE
        return tokens, tokens, (tokens / want if want else None)


def supports_free_check(version: tuple[int, int, int]) -> bool:
    """vLLM >= 0.11 refuses to start when free memory is below total x utilization."""
    return version >= (0, 11, 0)
