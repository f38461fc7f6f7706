"""vLLM's memory budget: total x gpu_memory_utilization split into weights, activations, graphs and KV."""

from __future__ import annotations

from dataclasses import dataclass

from bot.diagnosis.engine_facts import (
    catalog_weights_gib,
    first_logged,
    gpu_total,
    is_vllm_v0,
    model_spec,
    paste_vllm_version,
    vllm_kv_bytes_per_token,
)
from bot.facts import PasteFacts
from bot.reply import MemoryPicture, MemorySegment
from calculator.versions import vllm_default_utilization, vllm_subtracts_cudagraph_estimate
from calculator.vllm import (
    NON_TORCH_GIB_PER_EXTRA_RANK,
    NON_TORCH_GIB_SINGLE,
    default_batching,
    derived_max_model_len,
    estimate_activation_gib,
    estimate_cudagraph_gib,
)

CUDAGRAPH_ENV = "VLLM_MEMORY_PROFILER_ESTIMATE_CUDAGRAPHS"


@dataclass
class VllmBudget:
    total: float | None
    total_src: str
    util: float
    util_src: str
    requested: float | None
    weights: float | None
    weights_src: str
    non_torch: float | None
    non_torch_src: str
    activation: float | None
    activation_src: str
    graphs: float
    graphs_src: str
    non_kv: float | None
    non_kv_src: str
    bpt: float | None
    want: int | None
    want_src: str
    batched: int | None
    seqs: int | None


def vllm_budget(facts: PasteFacts) -> VllmBudget:
    p = facts.params
    version = paste_vllm_version(facts)
    v0 = is_vllm_v0(facts)
    tp = int(facts.get("tp") or 1)
    pp = int(facts.get("pp") or 1)
    model = model_spec(facts)
    total, total_src = gpu_total(facts)
    util, util_src = first_logged(facts, "gpu_memory_utilization")
    if util is None and p.get("gpu_memory_utilization_pct"):
        util, util_src = p["gpu_memory_utilization_pct"] / 100, "log"
    if util is None:
        util, util_src = vllm_default_utilization(version), "estimated"
    requested = p.get("requested_gib") or (total * util if total else None)

    weights, w_src = p.get("weights_gib"), "log"
    if weights is None and model is not None:
        weights, w_src = catalog_weights_gib(facts, tp * pp), "estimated"
    non_torch, nt_src = p.get("non_torch_gib"), "log"
    if non_torch is None and weights is not None:
        non_torch = NON_TORCH_GIB_SINGLE + (NON_TORCH_GIB_PER_EXTRA_RANK if tp * pp > 1 else 0.0)
        nt_src = "estimated"
    want, want_src = first_logged(facts, "max_model_len")
    if want is None and model is not None:
        want, want_src = derived_max_model_len(model), "catalog"
    batched = facts.get("max_num_batched_tokens")
    seqs = facts.get("max_num_seqs")
    if model is not None and (batched is None or seqs is None):
        seqs_d, batched_d = default_batching(
            total or 24.0, facts.gpu.id if facts.gpu else "", v0, want or 2048
        )
        batched = batched or batched_d
        seqs = seqs or seqs_d
    activation, act_src = p.get("activation_gib"), "log"
    if activation is None and model is not None and batched:
        activation = estimate_activation_gib(model, int(batched), int(seqs or 256), tp, v0)
        act_src = "estimated"
    graphs, g_src = 0.0, "estimated"
    if vllm_subtracts_cudagraph_estimate(version) and not facts.get("enforce_eager"):
        if p.get("cudagraph_estimate_gib") is not None:
            graphs, g_src = p["cudagraph_estimate_gib"], "log"
        elif model is not None:
            graphs = estimate_cudagraph_gib(model, tp, pp)

    non_kv, nk_src = None, "estimated"
    if p.get("kv_deficit_gib") is not None and requested:
        non_kv, nk_src = requested + p["kv_deficit_gib"], "computed"
    elif p.get("non_kv_gib") is not None:
        non_kv, nk_src = p["non_kv_gib"] + graphs, "log"
    elif p.get("peak_torch_gib") is not None:
        non_kv, nk_src = p["peak_torch_gib"] + (non_torch or 0.0) + graphs, "computed"
    elif weights is not None and activation is not None:
        srcs = {w_src, act_src}
        non_kv = weights + (non_torch or 0.0) + activation + graphs
        nk_src = "computed" if srcs == {"log"} else "estimated"
    bpt = vllm_kv_bytes_per_token(model, facts, tp, pp)
    return VllmBudget(
        total, total_src, float(util), util_src, requested, weights, w_src, non_torch, nt_src, activation,
        act_src, graphs, g_src, non_kv, nk_src, bpt, int(want) if want else None, want_src,
        int(batched) if batched else None, int(seqs) if seqs else None,
    )  # fmt: skip


def budget_picture(b: VllmBudget, title: str) -> MemoryPicture | None:
    if not b.total or b.weights is None:
        return None
    segs = [MemorySegment("weights", b.weights, b.weights_src)]
    if b.non_torch is not None:
        segs.append(MemorySegment("non-torch", b.non_torch, b.non_torch_src))
    if b.activation is not None:
        segs.append(MemorySegment("activations", b.activation, b.activation_src))
    if b.graphs:
        segs.append(MemorySegment("cuda graphs", b.graphs, b.graphs_src))
    used = sum(s.gib for s in segs)
    requested = b.requested or b.total * b.util
    if requested - used > 0.01:
        segs.append(MemorySegment("kv cache", requested - used, "computed"))
    segs.append(MemorySegment("not used (1-util)", max(0.0, b.total - requested), "computed"))
    return MemoryPicture(total_gib=b.total, segments=segs, title=title)
