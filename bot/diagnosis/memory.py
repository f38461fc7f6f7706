"""Memory families: nothing left for the KV cache, TGI's KV pool, device OOMs, llama.cpp's KV buffer.

- ``no_kv_memory``: vLLM "No available memory for the cache blocks" (and the negative-KV / auto-fit /
  cut-off forms), SGLang "Not enough memory" / "Loaded weights leave no GPU memory", TGI's warm-up
  "Not enough memory to handle N prefill tokens";
- ``kv_cache_too_small@tgi``: max_total_tokens against max_batch_total_tokens (the KV pool);
- ``gpu_oom``: PyTorch's allocator message classified (absurd request / weights / KV growth /
  fragmentation / another process / one large activation), vLLM's CUDA-graph capture, llama.cpp by stage
  (weights, compute, runtime, Metal working set, Vulkan), SGLang, TGI shards and Ollama;
- ``kv_alloc_failed``: llama.cpp could not allocate its KV buffer.

Every rule states the user's own numbers with their source and computes the values its fixes use.
vLLM's Mamba-block error is a ``kv_cache_too_small@vllm`` finding owned by ``kv.py``;
:func:`vllm_mamba_blocks` is the reply for it, ready to be dispatched from there.
"""

from __future__ import annotations

import math
import re
from dataclasses import dataclass
from typing import Any

from bot.diagnosis.common import bigger_hardware
from bot.facts import PasteFacts
from bot.reply import Fact, Fix, MemoryPicture, MemorySegment, Reply, Section
from calculator.catalog import ModelSpec, Variant, gpus, variant_weight_bytes
from calculator.commands import (
    llamacpp_command,
    ollama_env_command,
    set_flags,
    sglang_command,
    vllm_command,
)
from calculator.fit import MAX_SAFE_UTILIZATION, sglang_kv_remedies
from calculator.kv import LLAMACPP_KV_BYTES, llamacpp_layout, vllm_layout
from calculator.llamacpp import CUDA_CONTEXT_GIB as LLAMACPP_CUDA_CONTEXT_GIB
from calculator.llamacpp import FIT_MARGIN_MIB, compute_buffer_bytes
from calculator.ollama import default_num_ctx
from calculator.sglang import CUDA_CONTEXT_GIB as SGLANG_CUDA_CONTEXT_GIB
from calculator.sglang import default_mem_fraction_static, mem_fraction_for_tokens
from calculator.units import GIB, KIB, MIB, fmt_tokens, round_down_clean
from calculator.versions import (
    vllm_default_utilization,
    vllm_is_v0,
    vllm_subtracts_cudagraph_estimate,
)
from calculator.vllm import (
    ACTIVATION_FACTOR,
    NON_TORCH_GIB_PER_EXTRA_RANK,
    NON_TORCH_GIB_SINGLE,
    default_batching,
    derived_max_model_len,
    estimate_activation_gib,
    estimate_cudagraph_gib,
)

CUDAGRAPH_ENV = "VLLM_MEMORY_PROFILER_ESTIMATE_CUDAGRAPHS"
GRAPH_ROOM_GIB = 2.0  # what to leave outside gpu_memory_utilization for CUDA graphs, NCCL and spikes
EXPANDABLE = "PYTORCH_CUDA_ALLOC_CONF=expandable_segments:True"
METAL_MIN_OS_RESERVE_MIB = 2048  # what macOS keeps at the very least when the wired limit is raised

TGI_FLAGS = [
    ("--max-batch-prefill-tokens",),
    ("--max-input-tokens", "--max-input-length"),
    ("--max-total-tokens",),
    ("--max-batch-total-tokens",),
    ("--num-shard",),
    ("--quantize",),
    ("--cuda-memory-fraction",),
]


# ------------------------------------------------------------------------------------------ helpers


def _first(facts: PasteFacts, *names: str) -> tuple[Any, str]:
    """The first of ``names`` the paste printed (a finding's number, then the context)."""
    for source in (facts.params, facts.context):
        for name in names:
            value = source.get(name)
            if value is not None:
                return value, "log"
    return None, "estimated"


def _total(facts: PasteFacts) -> tuple[float | None, str]:
    value, src = _first(facts, "total_gib", "gpu_total_gib")
    if value:
        return float(value), src
    if facts.gpu is not None:
        return facts.gpu.total_gib, "catalog"
    return None, "estimated"


def _gib(x: float) -> str:
    return f"{x:,.2f} GiB"


def _mib(x: float) -> str:
    return f"{x:,.2f} MiB" if x < 100 else f"{x:,.0f} MiB"


def _size(gib: float) -> str:
    """A size for prose: MiB below 1 GiB, GiB above."""
    if gib <= 0:
        return "0 bytes"
    n = gib * GIB
    if n < KIB:
        return f"{n:,.0f} bytes"
    if n < MIB:
        return f"{n / KIB:,.2f} KiB"
    return _mib(gib * 1024) if gib < 1 else _gib(gib)


def _ceil2(x: float) -> float:
    return math.ceil(x * 100 - 1e-6) / 100


def _floor2(x: float) -> float:
    return math.floor(x * 100 + 1e-6) / 100


def _evidence_number(facts: PasteFacts, pattern: str) -> float | None:
    for line in facts.root.evidence:
        m = re.search(pattern, line)
        if m:
            try:
                return float(m.group(1).replace(",", ""))
            except ValueError:
                return None
    return None


def _evidence_has(facts: PasteFacts, needle: str) -> bool:
    return any(needle.lower() in line.lower() for line in facts.root.evidence)


def _model(facts: PasteFacts) -> ModelSpec | None:
    return facts.model.model if facts.model is not None else None


def _weights_catalog_gib(facts: PasteFacts, shards: int = 1) -> float | None:
    if facts.model is None:
        return None
    return variant_weight_bytes(facts.model.model, facts.model.variant) / max(1, shards) / GIB


def _is_16bit(facts: PasteFacts) -> bool:
    """The served checkpoint is (or may be) 16-bit: online fp8 quantization would halve it."""
    if facts.get("quantization"):
        return False
    variant = facts.model.variant if facts.model is not None else None
    return variant is None or variant.quant in ("bf16", "fp16")


def _smaller_checkpoints(
    facts: PasteFacts, gguf: bool = False, limit: int = 2
) -> list[tuple[Variant, float]]:
    """Catalog checkpoints of the paste's model at least 20% smaller than the one in use (bytes)."""
    if facts.model is None:
        return []
    model, current = facts.model.model, facts.model.variant
    now = variant_weight_bytes(model, current)
    order = {"fp8": 0, "gptq-int8": 1, "awq": 2, "gptq": 3, "nvfp4": 4, "mxfp4": 4, "gguf": 5}
    found = []
    for v in model.variants:
        if (v.quant == "gguf") != gguf or (current is not None and v.id == current.id):
            continue
        size = variant_weight_bytes(model, v)
        if size < now * 0.8:
            found.append((v, float(size)))
    found.sort(key=lambda vs: (order.get(vs[0].quant, 9), -vs[1]))
    return found[:limit]


def _swap_model(command: str | None, old: str | None, new: str, default: str) -> str:
    if command and old and old in command:
        return command.replace(old, new)
    return default


def _context_facts(facts: PasteFacts) -> list[Fact]:
    out = []
    if facts.model is not None:
        out.append(Fact("model", facts.model.label, "catalog"))
    if facts.gpu is not None:
        out.append(Fact("GPU", facts.gpu.name, "catalog"))
    return out


def _reply(
    title: str,
    summary: str,
    short: str,
    numbers: list[Fact],
    fixes: list[Fix],
    notes: list[str],
    picture: MemoryPicture | None = None,
    extra: list[Section | None] | None = None,
    data: dict | None = None,
) -> Reply:
    sections = [Section("Your numbers", facts=numbers)] if numbers else []
    sections += [s for s in (extra or []) if s is not None]
    return Reply(
        kind="diagnosis",
        title=title,
        summary=summary,
        short=short,
        sections=sections,
        fixes=sorted(fixes, key=lambda f: f.rank),
        memory=picture,
        notes=notes,
        data=data or {},
    )


# ------------------------------------------------------------------------------------------ vLLM: no KV memory


def _v0_lines(facts: PasteFacts) -> bool:
    """Numbers only the V0 engine prints (its memory-profiling block, CPU swap blocks)."""
    p = facts.params
    return (
        "cpu_blocks" in p
        or "peak_torch_gib" in p
        or ("requested_gib" in p and "free_gib" not in p)
        or ("activation_gib" in p and "non_torch_gib" in p and "non_kv_gib" not in p)
    )


def _vllm_version(facts: PasteFacts) -> tuple[int, int, int]:
    """The paste's version; when it is not printed, V0-only lines bound it to 0.10 or older."""
    if facts.version_known:
        return facts.vllm_version
    return (0, 10, 0) if _v0_lines(facts) else facts.vllm_version


def _vllm_v0(facts: PasteFacts) -> bool:
    return vllm_is_v0(_vllm_version(facts)) or _v0_lines(facts)


@dataclass
class _VllmBudget:
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


def _vllm_budget(facts: PasteFacts) -> _VllmBudget:
    p = facts.params
    version = _vllm_version(facts)
    v0 = _vllm_v0(facts)
    tp = int(facts.get("tp") or 1)
    pp = int(facts.get("pp") or 1)
    model = _model(facts)
    total, total_src = _total(facts)
    util, util_src = _first(facts, "gpu_memory_utilization")
    if util is None and p.get("gpu_memory_utilization_pct"):
        util, util_src = p["gpu_memory_utilization_pct"] / 100, "log"
    if util is None:
        util, util_src = vllm_default_utilization(version), "estimated"
    requested = p.get("requested_gib") or (total * util if total else None)

    weights, w_src = p.get("weights_gib"), "log"
    if weights is None and model is not None:
        weights, w_src = _weights_catalog_gib(facts, tp * pp), "estimated"
    non_torch, nt_src = p.get("non_torch_gib"), "log"
    if non_torch is None and weights is not None:
        non_torch = NON_TORCH_GIB_SINGLE + (NON_TORCH_GIB_PER_EXTRA_RANK if tp * pp > 1 else 0.0)
        nt_src = "estimated"
    want, want_src = _first(facts, "max_model_len")
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
    bpt = None
    if model is not None:
        try:
            bpt = vllm_layout(
                model, facts.get("kv_cache_dtype") or "auto", tp=tp, pp=pp
            ).all_attention_bytes_per_token
        except ValueError:
            bpt = None
    return _VllmBudget(
        total, total_src, float(util), util_src, requested, weights, w_src, non_torch, nt_src, activation,
        act_src, graphs, g_src, non_kv, nk_src, bpt, int(want) if want else None, want_src,
        int(batched) if batched else None, int(seqs) if seqs else None,
    )  # fmt: skip


def _vllm_picture(b: _VllmBudget, title: str) -> MemoryPicture | None:
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


def vllm_no_kv_memory(facts: PasteFacts) -> Reply:
    p = facts.params
    sig = facts.root.signature
    version = _vllm_version(facts)
    b = _vllm_budget(facts)
    command = facts.context.get("command")
    model_name = facts.context.get("model")
    truncated = sig.endswith("engine_init_truncated")
    auto_fit = sig.endswith("auto_fit")
    deficit = p.get("kv_deficit_gib")
    if deficit is None and b.non_kv is not None and b.requested is not None and b.non_kv > b.requested:
        deficit = b.non_kv - b.requested

    # ---- the math: what utilization the weights + activations + graphs (+ one request) need
    util_zero = util_ctx = None
    kv_ctx_gib = None
    if b.non_kv is not None and b.total:
        util_zero = b.non_kv / b.total
        if b.want and b.bpt:
            kv_ctx_gib = b.want * b.bpt / GIB
            util_ctx = (b.non_kv + kv_ctx_gib) / b.total
    suggest = None
    if util_ctx is not None:
        suggest = max(_ceil2(util_ctx + 0.005), _ceil2(b.util + 0.01))
    elif util_zero is not None:
        suggest = max(0.9 if util_zero <= 0.8 else _ceil2(util_zero + 0.05), _ceil2(b.util + 0.01))
    elif b.util < 0.85 or b.util_src == "estimated":
        suggest = 0.9
    fits_at_max = suggest is not None and suggest <= MAX_SAFE_UTILIZATION

    # ---- title and the two or three sentences
    if truncated:
        w = p.get("weights_gib")
        title = "vLLM: the engine core died right after loading the weights" + (
            f" ({_size(w)}); the error itself is cut off" if w else "; the error itself is cut off"
        )
    elif deficit is not None and b.requested:
        what = "weights + activations" + (" + CUDA graphs" if b.graphs else "")
        title = (
            f"vLLM: {what} need {_gib(b.requested + deficit)}, the budget is "
            f"{_gib(b.requested)} ({b.util:g} x {_gib(b.total or b.requested / b.util)})"
        )
    elif b.util_src == "log" and b.util < 0.5:
        title = f"vLLM: gpu_memory_utilization {b.util:g} leaves nothing for the KV cache"
    elif auto_fit:
        title = "vLLM: --max-model-len auto found no memory for even one token"
    else:
        title = "vLLM: no memory left for the KV cache after the weights and activations"

    sentences = []
    if truncated:
        sentences.append(
            "The V1 engine core raised an exception right after the weights loaded, and the paste stops before "
            'the message; the next step is sizing the KV cache, whose usual failure is "No available memory for '
            'the cache blocks" (an inference: the end of that traceback will confirm it).'
        )
        if version < (0, 11, 0) or not facts.version_known:
            sentences.append(
                "In vLLM 0.8-0.10's V1 engine the budget is total x gpu_memory_utilization minus everything in "
                "use on the GPU, *including other processes*: a second engine (or test) on the same GPU eats "
                "this one's budget."
            )
    else:
        parts = "the weights, the non-torch memory" + (
            ", the activation peak of a max_num_batched_tokens forward pass and the CUDA-graph estimate"
            if vllm_subtracts_cudagraph_estimate(version)
            else " and the activation peak of a max_num_batched_tokens forward pass"
        )
        sentences.append(
            "vLLM gives itself gpu_memory_utilization x the GPU's *total* memory (not x what is free); "
            + parts
            + " come out of that budget first, and the KV cache gets the rest."
        )
        if b.non_kv is not None and b.requested is not None and b.total:
            if deficit is not None and deficit > 0:
                sentences.append(
                    f"Here they take {_gib(b.non_kv)} of a {_gib(b.requested)} budget ({b.util:g} x "
                    f"{_gib(b.total)}), {_gib(deficit)} over, so not one KV block fits."
                )
            else:
                sentences.append(
                    f"Here they take about {_gib(b.non_kv)} of a {_gib(b.requested)} budget ({b.util:g} x "
                    f"{_gib(b.total)}), which leaves nothing usable for the KV cache."
                )
        elif b.util_src == "log" and b.util < 0.5:
            sentences.append(
                f"With {b.util:g} the budget is only {b.util:.0%} of the card: even a small model's weights plus "
                "a 1-2 GiB activation peak do not fit in that."
            )
        else:
            sentences.append(
                "The usual causes: a utilization set low (to share the GPU, or copied from an example: 0.03-0.4 "
                "starves even a 0.5B model), a model too large for the card, or a large profiled activation or "
                "CUDA-graph estimate."
            )
    summary = " ".join(sentences)
    short = (
        "The engine core died after loading the weights; most likely nothing was left for the KV cache."
        if truncated
        else "Weights + activations (+ graphs) fill the whole gpu_memory_utilization budget: 0 KV blocks."
    )

    # ---- your numbers
    numbers: list[Fact] = []
    if b.total:
        numbers.append(Fact("GPU memory (total seen by vLLM)", _gib(b.total), b.total_src))
    numbers.append(
        Fact(
            "gpu_memory_utilization",
            f"{b.util:g}" if b.util_src == "log" else f"not in the paste (default {b.util:g})",
            b.util_src,
        )
    )
    if b.requested:
        numbers.append(
            Fact("budget (total x util)", _gib(b.requested), "log" if p.get("requested_gib") else "computed")
        )
    if b.weights is not None:
        numbers.append(Fact("weights (per GPU)", _gib(b.weights), b.weights_src))
    if b.non_torch is not None and b.non_torch_src == "log":
        numbers.append(Fact("non-torch memory", _gib(b.non_torch), "log"))
    if b.activation is not None:
        numbers.append(Fact("activation peak", _gib(b.activation), b.activation_src))
    if b.graphs:
        numbers.append(Fact("CUDA-graph estimate (v0.21+)", _gib(b.graphs), b.graphs_src))
    if b.non_kv is not None:
        numbers.append(Fact("everything that is not KV cache", _gib(b.non_kv), b.non_kv_src))
    if deficit is not None and deficit > 0:
        numbers.append(
            Fact("over the budget by", _gib(deficit), "log" if p.get("kv_deficit_gib") else "computed")
        )
    if util_zero is not None:
        numbers.append(Fact("utilization that only just holds them (0 KV)", f"{util_zero:.3f}", "computed"))
    if b.want:
        numbers.append(Fact("max_model_len", fmt_tokens(b.want), b.want_src))
    if kv_ctx_gib is not None and b.want:
        numbers.append(Fact(f"KV for one {fmt_tokens(b.want)}-token request", _gib(kv_ctx_gib), "computed"))
    if util_ctx is not None:
        numbers.append(Fact("utilization that also holds that request", f"{util_ctx:.3f}", "computed"))
    numbers += _context_facts(facts)

    # ---- fixes
    fixes: list[Fix] = []
    notes: list[str] = []
    if truncated:
        fixes.append(
            Fix(
                "vllm",
                "show the end of the engine-core traceback",
                "grep -n -A3 -E 'Error|No available memory' <your log>",
                "the last lines name the real error; this reply assumes it is the KV-cache one",
                rank=0,
            )
        )
        fixes.append(
            Fix(
                "vllm",
                "give each engine on a shared GPU its own share (0.8-0.10 V1 counts the other's memory)",
                "first engine:  --gpu-memory-utilization 0.4\nsecond engine: --gpu-memory-utilization 0.85",
                "in 0.8-0.10 V1 the second engine's budget must cover the first engine's memory too (0.85 - 0.4 "
                "= 0.45 of the card for itself); in a test, free the first LLM (del llm; gc.collect(); "
                "torch.cuda.empty_cache()) before making the second",
                "from v0.11 each engine needs its whole util free at startup instead: there the shares must add "
                "up to at most about 0.9",
                rank=1,
            )
        )
    if suggest is not None and fits_at_max and b.total:
        kv_after = suggest * b.total - b.non_kv if b.non_kv is not None else None
        if kv_after is not None:
            tokens = int(kv_after * GIB / b.bpt) if b.bpt else None
            effect = f"budget {_gib(suggest * b.total)}: {_gib(kv_after)} left for the KV cache" + (
                f" = about {fmt_tokens(tokens)} tokens"
                + (f", enough for {fmt_tokens(b.want)}" if b.want and tokens and tokens >= b.want else "")
                if tokens
                else ""
            )
        else:
            effect = f"the budget grows by {_gib((suggest - b.util) * b.total)} for the KV cache"
        fixes.append(
            Fix(
                "vllm",
                f"raise gpu_memory_utilization to {suggest:g}",
                vllm_command(command, model_name, {"--gpu-memory-utilization": f"{suggest:g}"}),
                effect,
                f"needs {_gib(suggest * b.total)} free at startup: nothing else may hold more than "
                f"{_gib((1 - suggest) * b.total)} of this GPU",
                rank=1,
            )
        )
    elif suggest is not None and not b.total and not truncated:
        known = b.util_src == "log"
        fixes.append(
            Fix(
                "vllm",
                f"raise gpu_memory_utilization to {suggest:g}"
                if known
                else f"gpu_memory_utilization back to {suggest:g} (if you lowered it)",
                vllm_command(command, model_name, {"--gpu-memory-utilization": f"{suggest:g}"}),
                (f"{suggest / b.util:.1f}x the budget you gave it" if known else "vLLM's default share")
                + f": {suggest:g} x the GPU's total holds the weights and the activation peak with room for the KV "
                "cache, unless the model is too large for the card",
                "only if no other process needs this GPU; to share it, give this engine the largest share you "
                "can spare and shrink the activation peak (below)",
                rank=1,
            )
        )
    elif suggest is not None and b.total and b.non_kv is not None:
        # not even 0.95 fits the wanted request: cap the context at what 0.95 leaves
        left = MAX_SAFE_UTILIZATION * b.total - b.non_kv
        if left > 0 and b.bpt:
            tokens = round_down_clean(int(left * GIB / b.bpt))
            if tokens >= 256:
                fixes.append(
                    Fix(
                        "vllm",
                        f"util {MAX_SAFE_UTILIZATION} and a {fmt_tokens(tokens)}-token context",
                        vllm_command(
                            command,
                            model_name,
                            {
                                "--gpu-memory-utilization": f"{MAX_SAFE_UTILIZATION}",
                                "--max-model-len": str(tokens),
                            },
                        ),
                        f"{_gib(left)} of KV cache: one request of {fmt_tokens(tokens)} tokens"
                        + (f" (you want {fmt_tokens(b.want)})" if b.want else ""),
                        "nothing else may use this GPU; little concurrency",
                        rank=2,
                    )
                )
    # activation peak: fewer batched tokens / sequences
    act = b.activation
    if act is None or act >= 0.3:
        v0 = _vllm_v0(facts)
        current = b.batched or (None if not v0 else b.want)
        target = 2048 if not current or current > 2048 else max(512, current // 2)
        changes: dict[str, str | None] = {"--max-num-batched-tokens": str(target)}
        if v0:
            changes["--enable-chunked-prefill"] = ""
        if act is not None and current:
            saved = act * (1 - target / current)
            effect = (
                f"the activation peak scales with batched tokens: about {_gib(act)} -> {_gib(act - saved)}"
            )
        elif act is not None:
            effect = f"shrinks the {_gib(act)} activation peak roughly in proportion"
        else:
            effect = "the profiled activation peak scales with the tokens of one forward pass"
        fixes.append(
            Fix(
                "vllm",
                f"profile a smaller forward pass ({fmt_tokens(target)} batched tokens)",
                vllm_command(command, model_name, changes),
                effect,
                "slower prefill of long prompts (they are chunked)",
                rank=3,
            )
        )
        if not v0 and facts.model is not None and b.seqs and b.seqs > 64:
            vocab = facts.model.model.vocab_size
            sampler = min(b.seqs, b.batched or b.seqs) * vocab * 4 * 2 / GIB
            after = min(64, b.batched or 64) * vocab * 4 * 2 / GIB
            if sampler - after > 0.1:
                fixes.append(
                    Fix(
                        "vllm",
                        "fewer concurrent sequences (max_num_seqs 64)",
                        vllm_command(command, model_name, {"--max-num-seqs": "64"}),
                        f"the dummy sampler run holds {b.seqs} x {vocab:,} fp32 logits: about "
                        f"{_gib(sampler)} -> {_gib(after)}",
                        "at most 64 requests decode at once",
                        rank=4,
                    )
                )
    # CUDA graphs (v0.21+ subtracts an estimate; it is sometimes far too high)
    if not facts.get("enforce_eager") and vllm_subtracts_cudagraph_estimate(version):
        est = f" ({_gib(b.graphs)})" if b.graphs else ""
        after = ""
        env_util = min(b.util, 0.9)
        if b.graphs and b.non_kv is not None and b.total:
            kv_back = env_util * b.total - (b.non_kv - b.graphs)
            if kv_back > 0:
                after = f": at util {env_util:g}, {_gib(kv_back)} of KV cache" + (
                    f" = about {fmt_tokens(int(kv_back * GIB / b.bpt))} tokens" if b.bpt else ""
                )
        changes_env: dict[str, str | None] = {}
        if b.util > 0.9:
            changes_env["--gpu-memory-utilization"] = "0.9"
        fixes.append(
            Fix(
                "vllm",
                "stop subtracting the CUDA-graph estimate (v0.21+)",
                f"{CUDAGRAPH_ENV}=0 " + vllm_command(command, model_name, changes_env),
                f"gives the estimate{est} back to the KV cache{after}; reported estimates are sometimes far too "
                "high (one was 118 GiB, vLLM issue #53013; real graphs usually take 0.5-2 GiB)",
                "the graphs are then not budgeted: keep util at most 0.9 so they fit outside it",
                rank=1 if b.graphs and b.graphs > 3 else 2 if b.graphs and b.graphs > 1 else 5,
            )
        )
    if (
        not facts.get("enforce_eager")
        and (vllm_subtracts_cudagraph_estimate(version) or not facts.version_known)
        and not _v0_lines(facts)
    ):
        fixes.append(
            Fix(
                "vllm",
                "run without CUDA graphs",
                vllm_command(command, model_name, {"--enforce-eager": ""}),
                "no graph memory and (v0.21+) no graph estimate in the budget"
                + (f": {_gib(b.graphs)} back" if b.graphs else ""),
                "decode is roughly 10-30% slower; before v0.21 graphs are not in this budget, so it helps less",
                rank=6,
            )
        )
    # smaller weights: only when the weights are a real part of the problem
    w = b.weights
    heavy = w is None or not b.total or w > 0.3 * b.total or not fits_at_max
    smaller = _smaller_checkpoints(facts) if heavy else []
    tp = int(facts.get("tp") or 1)
    for v, size in smaller:
        new_w = size / tp / GIB
        effect = f"weights {_gib(new_w)} per GPU" + (f" instead of {_gib(w)}" if w is not None else "")
        fixes.append(
            Fix(
                "vllm",
                f"serve the {v.quant} checkpoint",
                _swap_model(command, model_name, v.id, f"vllm serve {v.id}"),
                effect,
                "fp8 needs Ampere or newer (native from Ada); AWQ/GPTQ slightly lower quality",
                rank=7,
            )
        )
    if heavy and not smaller and _is_16bit(facts) and (w is None or w >= 2.0):
        half = f": weights {_gib(w)} -> about {_gib(w / 2)}" if w is not None else ""
        fixes.append(
            Fix(
                "vllm",
                "quantize the weights to fp8 when loading",
                vllm_command(command, model_name, {"--quantization": "fp8"}),
                "halves a 16-bit checkpoint" + half,
                "needs compute capability 8.0+ (native fp8 from 8.9); slight quality loss",
                rank=7,
            )
        )
    if b.weights is not None and b.total and b.weights > MAX_SAFE_UTILIZATION * b.total * 0.9:
        notes.append(
            f"the weights alone ({_gib(b.weights)}) nearly fill this {_gib(b.total)} GPU: more GPUs "
            "(--tensor-parallel-size) or a quantized checkpoint are the real fix"
        )

    if facts.model is None and not truncated:
        notes.append(
            "The model is not in the paste (or not in my catalog), so I cannot compute its weights and KV "
            "size; paste the `vllm serve` line and the 'Memory profiling' / 'Model loading took' lines for exact numbers."
        )
    if not facts.version_known and version != (0, 10, 0):
        notes.append(
            "vLLM version not in the paste: the CUDA-graph estimate is only subtracted from v0.21 (default "
            "util 0.92 there, 0.9 before)."
        )
    elif version == (0, 10, 0) and not facts.version_known:
        notes.append(
            "The log lines are V0-engine lines (vLLM 0.10 or older): CUDA graphs are not in this budget there."
        )
    if b.activation_src == "estimated" and b.activation is not None:
        notes.append(
            "The activation peak is estimated from the model's config (3.7 x intermediate_size x 2 B per batched token)."
        )

    hw = None
    if not fits_at_max and facts.model is not None:
        hw = bigger_hardware(facts, b.want)
    picture = _vllm_picture(b, "GPU memory as vLLM budgets it")
    return _reply(
        title,
        summary,
        short,
        numbers,
        fixes,
        notes,
        picture,
        [hw],
        data={
            "util_needed_zero_kv": util_zero,
            "util_needed_for_context": util_ctx,
            "suggested_util": suggest,
        },
    )


# ------------------------------------------------------------------------------------------ SGLang: no KV pool


def _sglang_fraction(facts: PasteFacts) -> tuple[float | None, str]:
    """The fraction the failing run used: the error line, then the line the error was quoted on, then
    the command line / server_args."""
    value = facts.params.get("mem_fraction_static")
    if value is not None:
        return float(value), "log"
    value = _evidence_number(facts, r"--mem-fraction-static[= ]+([0-9]*\.?[0-9]+)")
    if value is not None:
        return value, "log"
    value = facts.context.get("mem_fraction_static")
    return (float(value), "log") if value is not None else (None, "estimated")


def _sglang_cell(facts: PasteFacts, tp: int, dtype: str | None = None) -> float | None:
    model = _model(facts)
    if model is None:
        return None
    try:
        return vllm_layout(
            model, dtype or facts.get("kv_cache_dtype") or "auto", tp=tp
        ).all_attention_bytes_per_token
    except ValueError:
        return None


def _sglang_activation_fixes(facts: PasteFacts, pre: float | None, rank: int, why: str) -> list[Fix]:
    command = facts.context.get("command")
    model_name = facts.context.get("model")
    chunk = facts.get("max_num_batched_tokens")
    target = max(512, int(chunk) // 2) if chunk else 2048
    freed_mb = 1.5 * (max(int(chunk or 4096), 2048) - max(target, 2048))
    gain = ""
    if freed_mb > 0:
        gain = f"; by SGLang's own sizing rule (1.5 MB per chunk token) about {freed_mb / 1024:.1f} GiB less"
        if pre:
            gain += f", i.e. about {freed_mb / 1024 / pre:.2f} more mem_fraction_static"
    fixes = [
        Fix(
            "sglang",
            f"smaller prefill chunks (--chunked-prefill-size {target})",
            sglang_command(command, model_name, {"--chunked-prefill-size": str(target)}),
            f"the prefill activation peak scales with the chunk: {why}{gain}",
            "long prompts prefill in more steps (slightly slower time to first token)",
            rank=rank,
        ),
        Fix(
            "sglang",
            "capture CUDA graphs for fewer batch sizes (--cuda-graph-max-bs 16)",
            sglang_command(command, model_name, {"--cuda-graph-max-bs": "16"}),
            "graph memory grows with the largest captured decode batch",
            "decode batches above 16 run without graphs (slower at high concurrency)",
            rank=rank + 1,
        ),
        Fix(
            "sglang",
            "smaller speculative draft (if you use speculative decoding)",
            sglang_command(
                command, model_name, {"--speculative-num-draft-tokens": "4", "--speculative-num-steps": "3"}
            ),
            "the draft model's weights, KV and graphs come out of the same memory (0.5.23 counts draft "
            "weights in this very check); fewer draft tokens/steps shrink them, no draft at all frees them",
            "a lower speculative speed-up",
            rank=rank + 2,
        ),
    ]
    running = facts.get("max_num_seqs")
    target_running = max(8, int(running) // 2) if running else 32
    fixes.append(
        Fix(
            "sglang",
            f"fewer running requests (--max-running-requests {target_running})",
            sglang_command(command, model_name, {"--max-running-requests": str(target_running)}),
            "a smaller decode batch needs fewer activations and graph memory",
            "lower peak throughput",
            rank=rank + 3,
        )
    )
    return fixes


def sglang_no_kv_memory(facts: PasteFacts) -> Reply:
    p = facts.params
    sig = facts.root.signature
    command = facts.context.get("command")
    model_name = facts.context.get("model")
    tp = int(facts.get("tp") or 1)
    f0, f0_src = _sglang_fraction(facts)
    other = facts.context.get("mem_fraction_static")
    higher = float(other) if other is not None and f0 is not None and float(other) > f0 else None
    total, total_src = _total(facts)
    pre, pre_src = p.get("pre_load_avail_gib"), "log"
    if pre is None and total:
        pre, pre_src = total - SGLANG_CUDA_CONTEXT_GIB, "estimated"
    if total is None and pre:
        total, total_src = pre + SGLANG_CUDA_CONTEXT_GIB, "estimated"
    weights, w_src = p.get("weights_gib"), "log"
    if weights is None:
        weights, w_src = _weights_catalog_gib(facts, tp), "estimated"
    after = p.get("avail_after_weights_gib")
    min_viable, mv_src = p.get("minimum_mem_fraction_static"), "log"
    if min_viable is None and p.get("suggested_mem_fraction_static") is not None:
        min_viable = p["suggested_mem_fraction_static"]
    if min_viable is None and after is not None and p.get("pre_load_avail_gib"):
        min_viable, mv_src = 1 - after / p["pre_load_avail_gib"], "computed"
    if min_viable is None and weights is not None and pre:
        min_viable, mv_src = weights / pre, "estimated"
    cell = _sglang_cell(facts, tp)
    model = _model(facts)
    want, want_src = _first(facts, "context_length")
    if want is None and model is not None:
        want, want_src = min(model.max_position_embeddings, 32768), "catalog"
    want = int(want) if want else None

    def fraction_for(tokens: int, c: float | None = cell) -> float:
        assert weights is not None and pre and c
        return mem_fraction_for_tokens(tokens, c, weights, pre + SGLANG_CUDA_CONTEXT_GIB)

    can_compute = weights is not None and bool(pre) and bool(cell)
    default_f = default_mem_fraction_static(total, tp) if total else None

    # ---- title / summary
    hybrid = "hybrid" in sig
    if sig.startswith("sglang.weights_leave_no_kv"):
        above = p.get("suggested_mem_fraction_static")
        title = f"SGLang: the weights fill --mem-fraction-static={f0:g}" + (
            f"; it must be above {above:g}" if above else ""
        )
    elif higher is not None:
        title = (
            f"SGLang: stuck between --mem-fraction-static {f0:g} (no KV pool) and {higher:g} (out of memory)"
        )
    elif hybrid:
        title = "SGLang: no memory left for the hybrid (Mamba/linear-attention) state cache"
    elif f0 is not None:
        title = f"SGLang: --mem-fraction-static {f0:g} leaves no memory for the KV pool"
    else:
        title = "SGLang: no memory left for the KV pool after the weights"
    sentences = [
        "SGLang lets weights + KV pool take mem_fraction_static x the memory that was free *before* loading "
        "and leaves the rest (1 - fraction) for activations and CUDA graphs."
    ]
    if f0 is not None and min_viable is not None:
        sentences.append(
            f"At {f0:g} the weights{' (with any speculative draft model)' if 'weights_leave' in sig else ''} "
            f"already take that share: the pool needs at least {min_viable:.3f} just to be non-empty."
        )
    elif f0 is not None:
        sentences.append(
            f"At {f0:g} the weights already fill that share, so the pool came out at zero tokens."
        )
    else:
        sentences.append("The weights already fill that share, so the pool came out at zero tokens.")
    if higher is not None:
        sentences.append(
            f"Your paste also shows {higher:g}, which ran out of memory on the other side: the window between "
            f"'no KV pool' and 'no activation room' is under {higher - f0:.2f} of the free memory"
            + (f" ({(higher - f0) * pre:.2f} GiB)" if pre else "")
            + ", so raising the fraction alone cannot work; make room on the activation side or shrink the weights."
        )
    else:
        sentences.append(
            "Raising the fraction grows the pool but takes the memory from activations and CUDA graphs; if the "
            "higher value then hits a CUDA OOM, shrink the activation side or the weights instead."
        )
    summary = " ".join(sentences)
    short = "The weights fill SGLang's static share (--mem-fraction-static): the KV pool has 0 tokens."

    # ---- numbers
    numbers: list[Fact] = []
    if f0 is not None:
        numbers.append(Fact("--mem-fraction-static (the failing run)", f"{f0:g}", f0_src))
    if higher is not None:
        numbers.append(Fact("--mem-fraction-static (the run that ran out of memory)", f"{higher:g}", "log"))
    if min_viable is not None:
        numbers.append(Fact("fraction at which the pool is just empty", f"{min_viable:.4f}", mv_src))
    if total:
        numbers.append(Fact("GPU memory", _gib(total), total_src))
    if pre:
        numbers.append(Fact("free before loading the weights", _gib(pre), pre_src))
    if weights is not None:
        numbers.append(Fact("weights (per GPU)", _gib(weights), w_src))
    if after is not None:
        numbers.append(Fact("free after loading the weights", _gib(after), "log"))
    if f0 is not None and pre and weights is not None:
        numbers.append(Fact(f"KV pool at {f0:g}", _gib(pre * f0 - weights), "computed"))
    if cell:
        numbers.append(Fact("KV per token (per GPU)", f"{cell / KIB:,.0f} KiB", "catalog"))
    if want:
        numbers.append(Fact("context wanted", fmt_tokens(want), want_src))
    if default_f is not None:
        numbers.append(Fact("SGLang's default fraction for this GPU", f"{default_f:g}", "computed"))
    for name, label in (
        ("max_mamba_cache_size", "Mamba state slots"),
        ("mamba_ratio", "state slots per request"),
    ):
        if p.get(name) is not None:
            numbers.append(Fact(label, str(p[name]), "log"))
    numbers += _context_facts(facts)

    # ---- fixes
    fixes: list[Fix] = []
    notes: list[str] = []
    squeezed = higher is not None
    if can_compute and higher is None:
        for r in sglang_kv_remedies(0, want, command, model_name, f0, fraction_for):
            needed = float(r.change.rsplit(" ", 1)[-1])
            headroom = pre * (1 - needed)
            reserve = total * (1 - default_f) if total and default_f is not None else None
            cost = f"leaves {_gib(headroom)} for activations and CUDA graphs"
            if reserve is not None and headroom < reserve:
                squeezed = True
                cost += (
                    f", less than the {_gib(reserve)} SGLang reserves by default here: expect a CUDA OOM unless "
                    "you also shrink the activation side (below)"
                )
            fixes.append(Fix(r.engine, r.change, r.command, r.effect, cost, rank=1))
    elif min_viable is not None and higher is None:
        target = _ceil2(min_viable + 0.03)
        if target <= 0.93:
            pool = (
                f"{(target - min_viable) * pre:.2f} GiB"
                if pre
                else f"{target - min_viable:.0%} of the free memory"
            )
            fixes.append(
                Fix(
                    "sglang",
                    f"raise --mem-fraction-static to {target:g}",
                    sglang_command(command, model_name, {"--mem-fraction-static": f"{target:g}"}),
                    f"a KV pool of about {pool} (each 0.01 above {min_viable:.3f} adds 1% of the free memory)",
                    f"{1 - target:.0%} of the free memory stays for activations and graphs: if it OOMs, shrink the activation side",
                    rank=1,
                )
            )
        else:
            squeezed = True
    elif f0 is not None and higher is None and f0 < 0.88:
        target = _ceil2(min(0.88, f0 + 0.08))
        fixes.append(
            Fix(
                "sglang",
                f"raise --mem-fraction-static to {target:g}",
                sglang_command(command, model_name, {"--mem-fraction-static": f"{target:g}"}),
                f"{target - f0:.0%} more of the free memory for weights + KV pool",
                "less room for activations and CUDA graphs; if it then OOMs, see the activation-side fixes",
                rank=1,
            )
        )
    else:
        squeezed = True
    why = (
        "it is what ran out at the higher fraction"
        if higher is not None
        else "room to raise the fraction safely"
    )
    fixes += _sglang_activation_fixes(facts, pre, rank=2 if squeezed else 4, why=why)
    # need less: fp8 KV, smaller weights, more GPUs
    half_cell = _sglang_cell(facts, tp, "fp8_e5m2")
    if can_compute and half_cell and want:
        needed8 = round(fraction_for(want, half_cell) + 0.005, 2)
        effect = f"halves KV per token: a {fmt_tokens(want)}-token pool needs mem_fraction_static {needed8:g}"
    else:
        effect = "halves KV per token, so a smaller fraction holds the same context"
    kv_changes: dict[str, str | None] = {"--kv-cache-dtype": "fp8_e5m2"}
    fixes.append(
        Fix(
            "sglang",
            "fp8 KV cache",
            sglang_command(command, model_name, kv_changes),
            effect,
            "slight quality loss on long contexts",
            rank=6,
        )
    )
    for v, size in _smaller_checkpoints(facts):
        fixes.append(
            Fix(
                "sglang",
                f"serve the {v.quant} checkpoint",
                _swap_model(command, model_name, v.id, sglang_command(None, v.id, {})),
                f"weights {_gib(size / tp / GIB)} per GPU"
                + (f" instead of {_gib(weights)}" if weights else ""),
                "slightly lower quality; fp8 needs Ampere or newer",
                rank=7,
            )
        )
    if not _smaller_checkpoints(facts) and _is_16bit(facts):
        fixes.append(
            Fix(
                "sglang",
                "quantize the weights to fp8 when loading",
                sglang_command(command, model_name, {"--quantization": "fp8"}),
                "halves a 16-bit checkpoint"
                + (f": {_gib(weights)} -> about {_gib(weights / 2)}" if weights else ""),
                "needs compute capability 8.0+; slight quality loss",
                rank=7,
            )
        )
    fixes.append(
        Fix(
            "sglang",
            f"shard over {tp * 2} GPUs",
            sglang_command(command, model_name, {"--tp": str(tp * 2)}),
            "halves the weights per GPU, which frees the static share for the KV pool",
            f"needs {tp * 2} GPUs",
            rank=8,
        )
    )
    notes.append(
        "mem_fraction_static is a share of the memory free *before* loading: another process on the GPU "
        "(nvidia-smi) shrinks everything."
    )
    if not can_compute:
        notes.append(
            "Paste the 'Load weight begin/end ... avail mem' lines (and the model / GPU) and I can compute the "
            "exact fraction for your context."
        )
    picture = None
    if pre and weights is not None and f0 is not None:
        segs = [
            MemorySegment("weights", weights, w_src),
            MemorySegment("kv cache", max(0.0, pre * f0 - weights), "computed"),
            MemorySegment("activations and graphs", pre * (1 - f0), "computed"),
        ]
        picture = MemoryPicture(pre, segs, f"free memory before loading, split at mem_fraction_static {f0:g}")
    hw = bigger_hardware(facts, want, engine="sglang") if squeezed and facts.model is not None else None
    return _reply(
        title, summary, short, numbers, fixes, notes, picture, [hw], data={"min_viable_fraction": min_viable}
    )


# ------------------------------------------------------------------------------------------ TGI


def _tgi_command(facts: PasteFacts, changes: dict[str, str | None]) -> str:
    base = facts.context.get("command") or (
        f"text-generation-launcher --model-id {facts.context.get('model') or '<model>'}"
    )
    return set_flags(base, changes, TGI_FLAGS, set())


def _activation_bytes_per_token(model: ModelSpec, tp: int) -> float:
    inter = model.intermediate_size or 4 * model.hidden_size
    if model.is_moe and model.moe_intermediate_size:
        inter = model.moe_intermediate_size * (model.experts_per_token or 8)
    return ACTIVATION_FACTOR * inter * model.dtype_bytes / max(1, tp)


def tgi_warmup_no_memory(facts: PasteFacts) -> Reply:
    p = facts.params
    prefill = int(p.get("max_prefill_tokens") or facts.get("max_num_batched_tokens") or 4096)
    max_input = (
        _evidence_number(facts, r"max_input_length=([0-9]+)")
        or facts.get("max_input_tokens")
        or _flag_value(facts.context.get("command"), "--max-input-tokens", "--max-input-length")
    )
    max_input = int(max_input) if max_input else None
    max_total = facts.get("max_model_len")
    tp = int(facts.get("tp") or 1)
    total, total_src = _total(facts)
    model = _model(facts)
    weights = _weights_catalog_gib(facts, tp)
    per_tok = _activation_bytes_per_token(model, tp) if model else None
    act_gib = prefill * per_tok / GIB if per_tok else None
    small = prefill <= 1024
    target = max(max_input or 0, round_down_clean(prefill // 2) if prefill > 512 else prefill // 2)
    fit_tokens = None
    if per_tok and weights is not None and total:
        free = total * float(facts.get("gpu_memory_utilization") or 1.0) - weights - 0.5
        fit_tokens = int(free * 0.5 * GIB / per_tok) if free > 0 else 0  # half for the KV cache afterwards
        if fit_tokens > 0:
            target = max(max_input or 0, min(target, round_down_clean(fit_tokens)))

    title = f"TGI: warm-up ran out of memory on a {fmt_tokens(prefill)}-token prefill batch"
    sentences = [
        f"At warm-up TGI runs one prefill batch of --max-batch-prefill-tokens ({fmt_tokens(prefill)}) before it "
        "sizes the KV cache, and that forward pass hit CUDA out of memory."
    ]
    if small:
        est = (
            f" (about {_size(act_gib)} for this model)"
            if act_gib is not None
            else " (tens of MiB for a 7B model)"
        )
        sentences.append(
            f"{fmt_tokens(prefill)} tokens of activations are tiny{est}, so the weights themselves leave almost "
            "nothing free: lowering the prefill budget further will not save this, smaller or sharded weights will."
        )
    else:
        sentences.append(
            "The activations of that batch grow with its token count, so a smaller prefill budget fits; what it "
            "frees also goes to the KV cache."
        )
    if weights is not None and total:
        sentences.append(f"The weights take about {_gib(weights)} per GPU of {_gib(total)}.")
    summary = " ".join(sentences)
    short = f"TGI's {fmt_tokens(prefill)}-token warm-up prefill does not fit next to the weights."

    numbers = [Fact("--max-batch-prefill-tokens", fmt_tokens(prefill), "log")]
    if max_input:
        numbers.append(Fact("--max-input-tokens", fmt_tokens(max_input), "log"))
    if max_total:
        numbers.append(Fact("--max-total-tokens", fmt_tokens(int(max_total)), "log"))
    if total:
        numbers.append(Fact("GPU memory", _gib(total), total_src))
    if weights is not None:
        numbers.append(Fact("weights (per shard)", _gib(weights), "estimated"))
    if act_gib is not None:
        numbers.append(Fact("activations of the prefill batch", _size(act_gib), "estimated"))
    numbers += _context_facts(facts)

    fixes: list[Fix] = []
    if target and target < prefill:
        changes: dict[str, str | None] = {"--max-batch-prefill-tokens": str(target)}
        cost = "fewer prompt tokens prefilled together (lower throughput)"
        if max_input and max_input > target:
            changes["--max-input-tokens"] = str(target)
            cost += f"; prompts are capped at {fmt_tokens(target)} tokens"
        fixes.append(
            Fix(
                "tgi",
                f"--max-batch-prefill-tokens {target}",
                _tgi_command(facts, changes),
                f"about {target / prefill:.0%} of the warm-up activations"
                + (f" ({_size(target * per_tok / GIB)})" if per_tok else "")
                + (f"; must stay >= --max-input-tokens ({max_input})" if max_input else ""),
                cost,
                rank=3 if small else 1,
            )
        )
    if max_total and int(max_total) > 2048:
        new_total = round_down_clean(int(max_total) // 2)
        new_input = min(max_input or new_total - 1, new_total - 1)
        fixes.append(
            Fix(
                "tgi",
                f"--max-total-tokens {new_total}",
                _tgi_command(
                    facts,
                    {
                        "--max-total-tokens": str(new_total),
                        "--max-input-tokens": str(new_input),
                        "--max-batch-prefill-tokens": str(max(new_input, min(prefill, new_total))),
                    },
                ),
                "shorter requests: less KV per request and a smaller prefill budget is allowed",
                "longer prompts are rejected",
                rank=4,
            )
        )
    fixes.append(
        Fix(
            "tgi",
            "quantize the weights (4-bit)",
            _tgi_command(facts, {"--quantize": "bitsandbytes-nf4"}),
            "about a quarter of 16-bit weights"
            + (f": {_gib(weights)} -> about {_gib(weights / 4 + 0.3)}" if weights else ""),
            "slower kernels and some quality loss; awq/gptq checkpoints (--quantize awq/gptq) are faster",
            rank=1 if small else 2,
        )
    )
    fixes.append(
        Fix(
            "tgi",
            f"shard over {tp * 2} GPUs",
            _tgi_command(facts, {"--num-shard": str(tp * 2)}),
            "halves the weights per GPU",
            f"needs {tp * 2} GPUs",
            rank=2 if small else 3,
        )
    )
    fixes.append(
        Fix(
            "any",
            "check what else holds the GPU",
            "nvidia-smi --query-compute-apps=pid,process_name,used_memory --format=csv",
            "another process (a second shard launcher, a notebook) leaves TGI less than the card",
            rank=5,
        )
    )
    notes = [
        "--max-batch-prefill-tokens must stay >= --max-input-tokens, and --max-input-tokens < --max-total-tokens."
    ]
    if model is None:
        notes.append(
            "The model is not in the paste (or my catalog); paste the launcher's Args line for exact numbers."
        )
    hw = (
        bigger_hardware(facts, int(max_total) if max_total else None) if small and model is not None else None
    )
    return _reply(
        title, summary, short, numbers, fixes, notes, None, [hw], data={"suggested_prefill_tokens": target}
    )


def tgi_kv_cache_too_small(facts: PasteFacts) -> Reply:
    p = facts.params
    sig = facts.root.signature
    max_total = p.get("max_total_tokens") or facts.get("max_model_len")
    max_total = int(max_total) if max_total else None
    kv_tokens = p.get("kv_tokens")
    prefill = p.get("max_batch_prefill_tokens") or facts.get("max_num_batched_tokens")
    prefill = int(prefill) if prefill else None
    tp = int(facts.get("tp") or 1)
    total, total_src = _total(facts)
    model = _model(facts)
    bpt = None
    if model is not None:
        bpt = vllm_layout(model, "auto", tp=tp).all_attention_bytes_per_token
    weights = _weights_catalog_gib(facts, tp)
    est_pool = None
    if kv_tokens is None and bpt and weights is not None and total:
        act = (prefill or 4096) * _activation_bytes_per_token(model, tp) / GIB  # type: ignore[arg-type]
        pool = total * float(facts.get("gpu_memory_utilization") or 1.0) * 0.98 - weights - act - 0.5
        est_pool = max(0, int(pool * GIB / bpt))

    fit = kv_tokens or est_pool
    if sig.startswith("tgi.prefill_gt_batch_total"):
        title = f"TGI: the KV pool holds {fmt_tokens(kv_tokens)} tokens, less than one prefill batch of {fmt_tokens(prefill or 0)}"
    elif kv_tokens and max_total:
        title = f"TGI: the KV pool holds {fmt_tokens(kv_tokens)} tokens, --max-total-tokens asks for {fmt_tokens(max_total)}"
    elif max_total:
        title = f"TGI: the KV pool cannot hold one request of --max-total-tokens {fmt_tokens(max_total)}"
    else:
        title = "TGI: the KV pool is smaller than one request"
    sentences = [
        "After warm-up TGI gives the memory left next to the weights and the prefill activations to the paged "
        "KV cache; that capacity in tokens is max_batch_total_tokens."
    ]
    if kv_tokens:
        sentences.append(f"Here it came out at {fmt_tokens(kv_tokens)} tokens.")
    elif est_pool is not None:
        sentences.append(f"For this model and GPU that is roughly {fmt_tokens(est_pool)} tokens (estimated).")
    if sig.startswith("tgi.prefill_gt_batch_total"):
        sentences.append(
            f"One prefill batch (--max-batch-prefill-tokens {fmt_tokens(prefill or 0)}) must fit in it, and it does not."
        )
    elif max_total:
        sentences.append(
            f"One request may use up to --max-total-tokens ({fmt_tokens(max_total)}), which does not fit, so the "
            "router refuses to start."
        )
    summary = " ".join(sentences)
    short = "TGI's KV pool (max_batch_total_tokens) is smaller than one request."

    numbers: list[Fact] = []
    if max_total:
        numbers.append(Fact("--max-total-tokens", fmt_tokens(max_total), "log"))
    if kv_tokens:
        numbers.append(Fact("KV pool (max_batch_total_tokens)", fmt_tokens(kv_tokens), "log"))
    elif est_pool is not None:
        numbers.append(Fact("KV pool (max_batch_total_tokens)", fmt_tokens(est_pool), "estimated"))
    if prefill:
        numbers.append(Fact("--max-batch-prefill-tokens", fmt_tokens(prefill), "log"))
    if bpt:
        numbers.append(Fact("KV per token (per shard)", f"{bpt / KIB:,.0f} KiB", "catalog"))
        if fit:
            numbers.append(Fact("KV pool size", _gib(fit * bpt / GIB), "computed"))
    if total:
        numbers.append(Fact("GPU memory", _gib(total), total_src))
    numbers += _context_facts(facts)

    fixes: list[Fix] = []
    if fit and fit >= 512:
        new_total = round_down_clean(fit)
        new_input = new_total - 512 if new_total > 2048 else new_total // 2
        new_prefill = max(new_input, min(prefill or new_input, new_total))
        fixes.append(
            Fix(
                "tgi",
                f"--max-total-tokens {new_total}",
                _tgi_command(
                    facts,
                    {
                        "--max-total-tokens": str(new_total),
                        "--max-input-tokens": str(new_input),
                        "--max-batch-prefill-tokens": str(new_prefill),
                    },
                ),
                f"one request of up to {fmt_tokens(new_total)} tokens fits the {fmt_tokens(fit)}-token pool "
                f"(prompts up to {fmt_tokens(new_input)}, at least 512 tokens of answer)",
                "longer requests are rejected; only one request of that length at a time",
                rank=1,
            )
        )
    max_input = _flag_value(facts.context.get("command"), "--max-input-tokens", "--max-input-length")
    if prefill and prefill > 1024:
        new_prefill = round_down_clean(prefill // 2)
        changes: dict[str, str | None] = {"--max-batch-prefill-tokens": str(new_prefill)}
        cost = "fewer prompt tokens prefilled together"
        if max_input and max_input.isdigit() and int(max_input) > new_prefill:
            changes["--max-input-tokens"] = str(new_prefill)
            cost += (
                f"; prompts capped at {fmt_tokens(new_prefill)} tokens (it must stay <= the prefill budget)"
            )
        freed = ""
        if model is not None and bpt:
            gib = (prefill - new_prefill) * _activation_bytes_per_token(model, tp) / GIB
            freed = f": about {_size(gib)} of activations = roughly {fmt_tokens(int(gib * GIB / bpt))} more KV tokens"
        fixes.append(
            Fix(
                "tgi",
                f"--max-batch-prefill-tokens {new_prefill}",
                _tgi_command(facts, changes),
                "a smaller warm-up prefill leaves more memory for the KV pool" + freed,
                cost,
                rank=2,
            )
        )
    mem_frac = facts.get("gpu_memory_utilization")
    if mem_frac is not None and float(mem_frac) < 0.95:
        fixes.append(
            Fix(
                "tgi",
                "give TGI more of the GPU (--cuda-memory-fraction 0.95)",
                _tgi_command(facts, {"--cuda-memory-fraction": "0.95"}),
                f"{0.95 - float(mem_frac):.0%} more of the card for the KV pool"
                + (f" ({_gib((0.95 - float(mem_frac)) * total)})" if total else ""),
                "only if nothing else uses this GPU",
                rank=3,
            )
        )
    fixes.append(
        Fix(
            "tgi",
            "quantize the weights (4-bit)",
            _tgi_command(facts, {"--quantize": "bitsandbytes-nf4"}),
            "the memory the weights no longer take goes to the KV pool"
            + (f" (about {_gib(weights * 0.7)})" if weights is not None else ""),
            "slower kernels and some quality loss; awq/gptq checkpoints are faster",
            rank=4,
        )
    )
    fixes.append(
        Fix(
            "tgi",
            f"shard over {tp * 2} GPUs",
            _tgi_command(facts, {"--num-shard": str(tp * 2)}),
            "each shard holds half the weights and half the KV heads: the pool roughly doubles or more",
            f"needs {tp * 2} GPUs",
            rank=5,
        )
    )
    notes = [
        "TGI requires --max-input-tokens < --max-total-tokens <= max_batch_total_tokens and "
        "--max-input-tokens <= --max-batch-prefill-tokens <= max_batch_total_tokens."
    ]
    if est_pool is not None:
        notes.append(
            "The pool size is estimated from the catalog model and GPU; the router's log prints the real one."
        )
    hw = bigger_hardware(facts, max_total) if fit is not None and max_total and fit < max_total // 4 else None
    return _reply(title, summary, short, numbers, fixes, notes, None, [hw], data={"kv_tokens": fit})


# ------------------------------------------------------------------------------------------ PyTorch's OOM message


@dataclass
class _TorchOOM:
    tried: float | None  # GiB
    total: float | None
    total_src: str
    free: float | None
    allocated: float | None
    reserved: float | None
    unallocated: float | None  # reserved by PyTorch but not handed out
    this_process: float | None
    other: float | None
    allowed: float | None
    kind: str  # absurd | weights | growth | fragmentation | other_process | activation | unknown
    weights: float | None = None
    reserved_logged: bool = False

    @property
    def fragmented(self) -> bool:
        return self.kind == "fragmentation"


def _torch_oom(facts: PasteFacts, shards: int = 1) -> _TorchOOM:
    p = facts.params
    # the MiB twin carries more digits for small sizes ("20.00 MiB" is 0.0195 GiB)
    tried = p["tried_mib"] / 1024 if p.get("tried_mib") is not None else p.get("tried_gib")
    total, total_src = _total(facts)
    free = p["free_mib"] / 1024 if p.get("free_mib") is not None else p.get("free_gib")
    allocated = p.get("allocated_gib")
    unallocated = p.get("reserved_unallocated_gib")
    reserved = p.get("reserved_gib")
    if reserved is None and allocated is not None and unallocated is not None:
        reserved = allocated + unallocated
    if unallocated is None and reserved is not None and allocated is not None:
        unallocated = max(0.0, reserved - allocated)
    weights = _weights_catalog_gib(facts, shards)
    o = _TorchOOM(
        tried, total, total_src, free, allocated, reserved, unallocated, p.get("this_process_gib"),
        p.get("other_process_gib"), p.get("allowed_gib"), "unknown", weights,
    )  # fmt: skip
    o.reserved_logged = p.get("reserved_gib") is not None
    stage = str(facts.context.get("oom_stage") or "")
    if tried is not None and total and tried > 0.95 * total:
        o.kind = "absurd"
    elif stage == "loading" or (weights is not None and total and weights > total - 0.5):
        o.kind = "weights"
    elif o.other is not None and total and o.other >= max(1.0, 0.25 * total):
        o.kind = "other_process"
    elif (
        unallocated is not None
        and reserved
        and tried is not None
        and unallocated >= 0.5
        and unallocated >= 0.15 * reserved
        and unallocated + (free or 0.0) >= tried
    ):
        o.kind = "fragmentation"
    elif stage == "generate" or (
        tried is not None
        and total
        and tried <= max(0.25, 0.01 * total)
        and (free or 0.0) <= max(tried, 0.01 * total)
    ):
        o.kind = "growth"
    elif tried is not None:
        o.kind = "activation"
    return o


def _torch_numbers(o: _TorchOOM) -> list[Fact]:
    out = []
    if o.tried is not None:
        out.append(Fact("tried to allocate", _size(o.tried), "log"))
    if o.total:
        out.append(Fact("GPU total", _gib(o.total), o.total_src))
    if o.free is not None:
        out.append(Fact("free on the GPU", _size(o.free), "log"))
    if o.allocated is not None:
        out.append(Fact("allocated by PyTorch (live tensors)", _gib(o.allocated), "log"))
    if o.reserved is not None:
        out.append(Fact("reserved by PyTorch", _gib(o.reserved), "log" if o.reserved_logged else "computed"))
    if o.unallocated is not None:
        out.append(Fact("reserved but unallocated (cached)", _size(o.unallocated), "log"))
    if o.this_process is not None:
        out.append(Fact("this process in total", _gib(o.this_process), "log"))
    if o.other is not None:
        out.append(Fact("another process", _gib(o.other), "log"))
    if o.allowed is not None:
        out.append(Fact("allowed by a memory fraction", _gib(o.allowed), "log"))
    return out


def _torch_picture(o: _TorchOOM) -> MemoryPicture | None:
    if not o.total or o.allocated is None:
        return None
    segs = [MemorySegment("allocated by PyTorch", o.allocated, "log")]
    if o.unallocated:
        segs.append(MemorySegment("reserved but unallocated", o.unallocated, "log"))
    if o.this_process is not None and o.reserved is not None and o.this_process - o.reserved > 0.01:
        segs.append(MemorySegment("non-torch", o.this_process - o.reserved, "computed"))
    used = sum(s.gib for s in segs)
    free = o.free if o.free is not None else None
    other = o.other
    if other is None and free is not None and o.total - used - free > 0.05:
        other = o.total - used - free
    if other:
        segs.append(
            MemorySegment("other processes / context", other, "log" if o.other is not None else "computed")
        )
    if free is not None:
        segs.append(MemorySegment("free", free, "log"))
    return MemoryPicture(o.total, segs, "GPU memory when the allocation failed")


def _torch_summary(o: _TorchOOM, facts: PasteFacts) -> tuple[str, str, str]:
    """(title, summary, short) for the allocator message, by kind."""
    tried = _size(o.tried) if o.tried is not None else "an allocation"
    total = _gib(o.total) if o.total else "the GPU"
    free = _size(o.free) if o.free is not None else "?"
    if o.kind == "absurd":
        times = o.tried / o.total if o.tried and o.total else 0
        return (
            f"CUDA OOM: tried to allocate {tried} on a {total} GPU ({times:.1f}x the card)",
            f"One tensor of {tried} was requested: {times:.1f} times everything the GPU has, so no memory "
            "setting, cache flag or smaller batch of the same shape fixes it. Sizes like this come from a "
            "shape bug: sequences padded to max_length / the model's maximum positions (131,072 for Llama 3.x), "
            "a whole dataset in one batch, or attention over a quadratic n x n matrix of a very long input. "
            "Find the tensor and fix its shape (truncate, pad to the longest, batch smaller).",
            f"A {tried} request on a {total} GPU is a shape bug (padding / max_length), not a memory shortage.",
        )
    if o.kind == "weights":
        w = f" (about {_gib(o.weights)})" if o.weights is not None else ""
        return (
            f"CUDA OOM while loading: the weights{w} do not fit in {total}",
            f"The model's weights{w} need more than the {total} GPU, so loading fails whatever the batch or "
            "context. Quantize (8-bit / 4-bit), spread the model over more GPUs or offload part of it to the CPU.",
            "The weights do not fit on this GPU.",
        )
    if o.kind == "other_process":
        return (
            f"CUDA OOM: another process holds {_gib(o.other or 0)} of the {total} GPU",
            f"A different process already uses {_gib(o.other or 0)} of this GPU, so this one had only "
            f"{free} free when it asked for {tried}. Stop or move the other process (nvidia-smi shows it), or "
            "pick another GPU with CUDA_VISIBLE_DEVICES.",
            "Another process holds most of the GPU.",
        )
    if o.kind == "fragmentation":
        return (
            f"CUDA OOM from fragmentation: {_size(o.unallocated or 0)} is cached but {tried} would not fit in it",
            f"PyTorch holds {_size(o.unallocated or 0)} reserved-but-unallocated (cached blocks freed by "
            f"earlier tensors) and the driver has {free} free, together enough for {tried}, but no single piece "
            "is large enough. Expandable segments let the allocator grow and reuse blocks instead of splitting them.",
            "Fragmentation: enough memory is cached, but not in one piece.",
        )
    if o.kind == "growth":
        full = (
            f"{_gib(o.allocated)} of {total} allocated"
            if o.allocated is not None
            else f"{free} free of {total}"
        )
        return (
            f"CUDA OOM during inference: the GPU is full ({full}) and a small {tried} step failed",
            f"The failing request is small ({tried}) and only {free} is free: the working set grew step by "
            "step until the card was full. In generation that is the KV cache (each new token torch.cat's its "
            "keys and values onto past_key_value) and the activations of a long context; the fix is less context, "
            "fewer tokens at once, or smaller weights, not an allocator setting.",
            "The KV cache / activations grew until the GPU was full.",
        )
    if o.kind == "activation" and o.free is None:
        return (
            f"CUDA OOM: a {tried} allocation failed",
            f"One {tried} tensor (an activation of the current batch: attention scores, logits, an MLP "
            "intermediate) did not fit in what the weights and the rest leave. The rest of the message (total, "
            "free, allocated, reserved) is not in the paste; it tells whether the card is full, fragmented or shared. "
            "Halving the batch or sequence length of this step is the first thing to try.",
            f"A {tried} activation did not fit.",
        )
    if o.kind == "activation":
        return (
            f"CUDA OOM: a {tried} allocation does not fit in the {free} left on {total}",
            f"One {tried} tensor (an activation of the current batch: attention scores, logits, an MLP "
            f"intermediate) was needed while only {free} was free. The batch size or sequence length of this "
            "step is too large for what the weights and the rest leave; halve it.",
            f"A {tried} activation does not fit in the {free} left.",
        )
    return (
        "CUDA out of memory",
        "A GPU allocation failed. The full 'Tried to allocate ... GPU N has a total capacity of ...' message tells "
        "how far off it is and whether the card is full, fragmented or shared with another process.",
        "A GPU allocation failed.",
    )


def _torch_fixes(o: _TorchOOM, facts: PasteFacts, engine: str = "transformers") -> list[Fix]:
    fixes: list[Fix] = []
    total = o.total
    if o.kind == "absurd":
        fixes.append(
            Fix(
                engine,
                "tokenize to the longest sequence, with a sane cap",
                'batch = tokenizer(texts, padding="longest", truncation=True, max_length=2048, return_tensors="pt")',
                "no more padding to max_length / model_max_length: tensors shrink to what the data needs",
                "inputs longer than 2,048 tokens are cut (pick your real limit)",
                rank=1,
            )
        )
        fixes.append(
            Fix(
                engine,
                "find the shape that explodes",
                "print({k: tuple(v.shape) for k, v in batch.items()})  # before the forward pass",
                "a sequence dimension of 131,072 or a batch of thousands shows the bug at once",
                rank=2,
            )
        )
        return fixes
    if o.kind == "other_process":
        fixes.append(
            Fix(
                "any",
                "find and stop the other process",
                "nvidia-smi --query-compute-apps=pid,process_name,used_memory --format=csv",
                f"frees the {_gib(o.other or 0)} it holds",
                rank=1,
            )
        )
        fixes.append(
            Fix(
                "any",
                "run on a free GPU",
                "CUDA_VISIBLE_DEVICES=1 python your_script.py",
                "this process sees only the GPU you name",
                rank=2,
            )
        )
    if o.kind == "fragmentation":
        fixes.append(
            Fix(
                "any",
                "let the allocator grow segments instead of splitting them",
                f"{EXPANDABLE} python your_script.py",
                f"the {_size(o.unallocated or 0)} cached becomes usable for the {_size(o.tried or 0)} request",
                "PyTorch 2.1+; on older versions use PYTORCH_CUDA_ALLOC_CONF=max_split_size_mb:128",
                rank=1,
            )
        )
    if o.kind == "fragmentation":
        fixes.append(
            Fix(
                engine,
                "halve the batch (or the sequence length) of this step",
                "batch_size = batch_size // 2  # and gradient_accumulation_steps *= 2 when training",
                "a smaller peak also leaves the allocator more room to defragment",
                "slower; training keeps the same effective batch through accumulation",
                rank=2,
            )
        )
    if o.kind in ("growth", "activation", "weights", "unknown"):
        if total:
            budget = max(1, math.floor(total - max(1.5, 0.1 * total)))
            fixes.append(
                Fix(
                    engine,
                    f"cap the GPU at {budget} GiB and offload the rest to the CPU",
                    f'model = AutoModelForCausalLM.from_pretrained(name, device_map="auto", '
                    f'max_memory={{0: "{budget}GiB", "cpu": "64GiB"}})',
                    f"leaves {total - budget:.1f} GiB of the {_gib(total)} GPU for activations and the KV cache",
                    "layers on the CPU run much slower",
                    rank=3 if o.kind != "weights" else 2,
                )
            )
        fixes.append(
            Fix(
                engine,
                "load the weights in 4-bit",
                "from transformers import BitsAndBytesConfig\nmodel = AutoModelForCausalLM.from_pretrained(name, "
                'device_map="auto", quantization_config=BitsAndBytesConfig(load_in_4bit=True))',
                "about a quarter of 16-bit weights"
                + (
                    f": {_gib(o.weights)} -> about {_gib(o.weights / 4 + 0.3)}"
                    if o.weights is not None
                    else ""
                )
                + ", the rest becomes room for context",
                "needs bitsandbytes; some quality loss; or serve a GGUF / AWQ build with llama.cpp or vLLM",
                rank=1 if o.kind == "weights" else 2,
            )
        )
    if o.kind == "growth":
        model = _model(facts)
        left = None
        if model is not None and total and o.weights is not None:
            bpt = vllm_layout(model, "auto").all_attention_bytes_per_token
            left = int((total - o.weights - 1.0) * GIB / bpt) if total - o.weights > 1.0 else 0
        fixes.insert(
            0,
            Fix(
                engine,
                "shorter context: cap the prompt and the new tokens",
                'inputs = tokenizer(prompt, truncation=True, max_length=2048, return_tensors="pt").to(0)\n'
                "out = model.generate(**inputs, max_new_tokens=256)",
                "the KV cache grows with prompt + generated tokens: fewer tokens, less memory"
                + (f"; about {fmt_tokens(left)} tokens of KV fit next to the weights" if left else ""),
                "in text-generation-webui: lower 'truncation_length' and 'max_new_tokens'",
                rank=1,
            ),
        )
    if o.kind == "activation":
        fixes.insert(
            0,
            Fix(
                engine,
                "halve the batch (or the sequence length) of this step",
                "batch_size = batch_size // 2  # and gradient_accumulation_steps *= 2 when training",
                f"the {_size(o.tried or 0)} activation halves with it",
                "slower; training keeps the same effective batch through accumulation",
                rank=1,
            ),
        )
        fixes.append(
            Fix(
                engine,
                "no autograd state during inference",
                "with torch.inference_mode():\n    out = model(**batch)",
                "activations are freed layer by layer instead of kept for backward",
                "inference only; for training use gradient checkpointing (model.gradient_checkpointing_enable())",
                rank=2,
            )
        )
    if o.allowed is not None:
        fixes.append(
            Fix(
                engine,
                "raise the per-process memory fraction",
                "torch.cuda.set_per_process_memory_fraction(0.95)",
                f"the process was capped at {_gib(o.allowed)}",
                "only if nothing else needs the GPU",
                rank=2,
            )
        )
    return fixes


def _torch_notes(o: _TorchOOM) -> list[str]:
    notes = []
    if o.kind != "fragmentation" and o.unallocated is not None:
        share = f" ({o.unallocated / o.reserved:.0%} of what PyTorch holds)" if o.reserved else ""
        notes.append(
            f"Reserved-but-unallocated memory is only {_size(o.unallocated)}{share}"
            + (f" against a {_size(o.tried)} request" if o.tried is not None else "")
            + ": fragmentation is not the main problem, so PYTORCH_CUDA_ALLOC_CONF (expandable segments) would "
            "at best delay the OOM."
        )
    if o.kind == "growth" and o.tried is not None:
        notes.append(
            "Small requests on a full card mean the working set reached the card's size; an allocator flag "
            "only moves the failure a few tokens later."
        )
    return notes


def pytorch_gpu_oom(facts: PasteFacts) -> Reply:
    p = facts.params
    if facts.root.signature.startswith("pytorch.mps_oom"):
        return _mps_oom(facts)
    if facts.root.signature.startswith(("pytorch.cuda_error_oom", "pytorch.cublas_alloc_failed")):
        return _driver_oom(facts)
    o = _torch_oom(facts)
    title, summary, short = _torch_summary(o, facts)
    numbers = _torch_numbers(o)
    if o.weights is not None:
        numbers.append(Fact("weights of the model (16-bit unless quantized)", _gib(o.weights), "catalog"))
    numbers += _context_facts(facts)
    if p.get("gpu_index") is not None:
        numbers.append(Fact("GPU index", str(p["gpu_index"]), "log"))
    fixes = _torch_fixes(o, facts)
    notes = _torch_notes(o)
    hw = bigger_hardware(facts, 8192) if o.kind == "weights" else None
    return _reply(
        title, summary, short, numbers, fixes, notes, _torch_picture(o), [hw], data={"oom_kind": o.kind}
    )


def _mps_oom(facts: PasteFacts) -> Reply:
    p = facts.params

    def gib(name: str) -> float | None:
        if p.get(f"{name}_gib") is not None:
            return p[f"{name}_gib"]
        if p.get(f"{name}_mib") is not None:
            return p[f"{name}_mib"] / 1024
        return None

    allocated, other, cap = gib("allocated"), gib("other_allocations"), gib("max_allowed")
    tried = gib("tried") if p.get("tried_bytes") is None else p["tried_bytes"] / GIB
    title = "PyTorch on Apple silicon: the MPS memory cap is reached" + (f" ({_gib(cap)})" if cap else "")
    summary = (
        "On Apple silicon the GPU shares system RAM and PyTorch caps what MPS may take (a watermark of the "
        "recommended working set)"
        + (
            f": {_size(allocated or 0)} of MPS tensors plus {_size(other or 0)} of other allocations reach the {_gib(cap)} cap"
            if cap
            else ""
        )
        + ". PYTORCH_MPS_HIGH_WATERMARK_RATIO=0.0 lifts the cap but can freeze the machine; a smaller model, a "
        "16-bit dtype or a smaller batch is safer."
    )
    numbers = []
    for label, value in (
        ("MPS allocated", allocated),
        ("other allocations", other),
        ("max allowed", cap),
        ("tried to allocate", tried),
    ):
        if value is not None:
            numbers.append(Fact(label, _size(value), "log"))
    fixes = [
        Fix(
            "transformers",
            "16-bit weights",
            "model = model.to(torch.float16)",
            "halves fp32 weights",
            "",
            rank=1,
        ),
        Fix(
            "any",
            "raise the MPS cap a little (not to 0.0)",
            "PYTORCH_MPS_HIGH_WATERMARK_RATIO=1.0 python your_script.py",
            "lets MPS use the whole recommended working set instead of part of it",
            "past the working set macOS swaps; 0.0 (no limit) can freeze the machine",
            rank=2,
        ),
    ]
    return _reply(title, summary, "The MPS memory cap is reached.", numbers, fixes, [])


def _driver_oom(facts: PasteFacts) -> Reply:
    title = "CUDA error: out of memory outside PyTorch's allocator"
    summary = (
        "The CUDA runtime itself failed to allocate (a new context, a cuBLAS/cuDNN/NCCL workspace or a kernel's own "
        "buffer), which happens when the GPU is already full, most often because another process or another "
        "rank holds it. Check nvidia-smi before changing model settings."
    )
    fixes = [
        Fix(
            "any",
            "see who holds the GPU",
            "nvidia-smi --query-compute-apps=pid,process_name,used_memory --format=csv",
            "a leftover process or a second rank on the same GPU is the usual culprit",
            rank=1,
        ),
        Fix(
            "any",
            "one process per GPU",
            "CUDA_VISIBLE_DEVICES=0 python your_script.py",
            "each rank sees only its own GPU",
            rank=2,
        ),
    ]
    return _reply(
        title, summary, "The GPU was already full when CUDA needed memory.", _context_facts(facts), fixes, []
    )


# ------------------------------------------------------------------------------------------ vLLM: CUDA-graph OOM


def vllm_gpu_oom(facts: PasteFacts) -> Reply:
    p = facts.params
    version = _vllm_version(facts)
    command = facts.context.get("command")
    model_name = facts.context.get("model")
    tp = int(facts.get("tp") or 1)
    total, total_src = _total(facts)
    util, util_src = _first(facts, "gpu_memory_utilization")
    if util is None:
        util, util_src = vllm_default_utilization(version), "estimated"
    util = float(util)
    free_mib = p.get("free_mib")
    tried_mib = p.get("tried_mib")
    model = _model(facts)
    graphs = estimate_cudagraph_gib(model, tp, int(facts.get("pp") or 1)) if model is not None else None
    room_needed = max(GRAPH_ROOM_GIB, (graphs or 0.0) + 1.0)
    room_now = total * (1 - util) if total else None
    if total:
        new_util = _floor2((total - room_needed) / total)
        new_util = min(new_util, _floor2(util - 0.02))
    else:
        new_util = _floor2(util - 0.05)
    new_util = max(new_util, 0.5)
    kv = p.get("kv_cache_gib")
    blocks = p.get("gpu_blocks")
    stops = facts.root.signature.endswith("cudagraph_log_stops")

    title = "vLLM: out of memory while capturing CUDA graphs"
    if util_src == "log" and room_now is not None:
        title += f" (util {util:g} leaves {_size(room_now)})"
    elif stops:
        title = "vLLM: the log stops during CUDA-graph capture (most likely out of memory)"
    sentences = [
        "vLLM captures CUDA graphs after the KV cache is allocated; before v0.21 they (with NCCL buffers and "
        "the CUDA context's growth) must fit in the memory gpu_memory_utilization leaves outside its budget, "
        "and from v0.21 an estimate of them is reserved, which can be too low."
    ]
    if room_now is not None:
        sentences.append(
            f"At {util:g} of {_gib(total)} that is {_size(room_now)}"
            + (
                f"; only {_mib(free_mib)} was free when {_mib(tried_mib)} was requested"
                if free_mib is not None and tried_mib is not None
                else ""
            )
            + ", and graphs typically take 0.5-3 GiB per GPU."
        )
    elif stops:
        sentences.append(
            "No error is shown; a capture that dies at this point is usually out of memory because the "
            "utilization leaves no slack (vLLM's own hint: graphs take an extra 1-3 GiB per GPU)."
        )
    else:
        sentences.append("The utilization leaves no slack for the graphs.")
    summary = " ".join(sentences)
    short = "No room outside gpu_memory_utilization for the CUDA graphs."

    numbers: list[Fact] = []
    if total:
        numbers.append(Fact("GPU memory", _gib(total), total_src))
    numbers.append(Fact("gpu_memory_utilization", f"{util:g}", util_src))
    if room_now is not None:
        numbers.append(Fact("left outside the budget (1-util)", _size(room_now), "computed"))
    if tried_mib is not None:
        numbers.append(Fact("tried to allocate", _mib(tried_mib), "log"))
    if free_mib is not None:
        numbers.append(Fact("free at that moment", _mib(free_mib), "log"))
    for name, label in (
        ("weights_gib", "weights (per GPU)"),
        ("activation_gib", "activation peak"),
        ("kv_cache_gib", "KV cache"),
    ):
        if p.get(name) is not None:
            numbers.append(Fact(label, _gib(p[name]), "log"))
    if blocks:
        numbers.append(
            Fact("KV blocks", f"{blocks:,} (= {fmt_tokens(blocks * 16)} tokens at 16 per block)", "log")
        )
    if graphs:
        numbers.append(Fact("CUDA graphs (rough estimate)", _gib(graphs), "estimated"))
    if p.get("gpu_index") is not None:
        numbers.append(Fact("GPU index", str(p["gpu_index"]), "log"))
    numbers += _context_facts(facts)

    fixes: list[Fix] = []
    if new_util < util:
        if total:
            room_after = total * (1 - new_util)
            effect = f"leaves {_gib(room_after)} outside the budget for graphs and NCCL"
            if kv is not None:
                effect += f"; the KV cache shrinks by {_gib((util - new_util) * total)} to about {_gib(kv - (util - new_util) * total)}"
        else:
            effect = (
                f"moves {util - new_util:.0%} of the GPU's memory out of the KV cache into graph headroom"
            )
            if blocks:
                effect += f"; the {blocks:,} KV blocks shrink a little (the cache stays large)"
        fixes.append(
            Fix(
                "vllm",
                f"lower gpu_memory_utilization to {new_util:g}",
                vllm_command(command, model_name, {"--gpu-memory-utilization": f"{new_util:g}"}),
                effect,
                "a slightly smaller KV cache (fewer concurrent tokens)",
                rank=1,
            )
        )
    fixes.append(
        Fix(
            "vllm",
            "run without CUDA graphs",
            vllm_command(command, model_name, {"--enforce-eager": ""}),
            "nothing is captured, so nothing can run out here",
            "decode is roughly 10-30% slower",
            rank=2,
        )
    )
    seqs = facts.get("max_num_seqs")
    target = max(16, int(seqs) // 4) if seqs else 64
    fixes.append(
        Fix(
            "vllm",
            f"capture fewer graphs (--max-num-seqs {target})",
            vllm_command(command, model_name, {"--max-num-seqs": str(target)}),
            "one graph per batch size up to max_num_seqs (V1: up to 2 x max_num_seqs, at most 512): fewer sizes, less graph memory",
            f"at most {target} requests decode at once",
            rank=3,
        )
    )
    fixes.append(
        Fix(
            "vllm",
            "cap the captured batch sizes (V1)",
            vllm_command(command, model_name, {})
            + " --compilation-config '{\"cudagraph_capture_sizes\": [1, 2, 4, 8, 16, 32, 64]}'",
            "graphs only for batches up to 64; larger batches run without them",
            "V1 engine only (V0: lower --max-num-seqs); slower decode above 64 concurrent requests",
            rank=4,
        )
    )
    notes = []
    if vllm_subtracts_cudagraph_estimate(version):
        notes.append(
            f"From v0.21 keep {CUDAGRAPH_ENV} at its default (1): with it set to 0 the graphs are not "
            "budgeted at all, which is exactly this failure."
        )
    notes.append("Other processes on the same GPU (nvidia-smi) eat the same headroom.")
    if p.get("gpu_index") is not None and int(p["gpu_index"]) > 0:
        notes.append(
            f"The OOM is on GPU {p['gpu_index']}: with tensor/pipeline parallelism every GPU needs the headroom."
        )
    picture = None
    if total and p.get("weights_gib") is not None and kv is not None:
        segs = [MemorySegment("weights", p["weights_gib"], "log")]
        if p.get("non_torch_gib") is not None:
            segs.append(MemorySegment("non-torch", p["non_torch_gib"], "log"))
        if p.get("activation_gib") is not None:
            segs.append(MemorySegment("activations", p["activation_gib"], "log"))
        segs.append(MemorySegment("kv cache", kv, "log"))
        segs.append(MemorySegment("not used (1-util)", total * (1 - util), "computed"))
        picture = MemoryPicture(total, segs, "GPU memory when capture started")
    return _reply(title, summary, short, numbers, fixes, notes, picture, data={"suggested_util": new_util})


# ------------------------------------------------------------------------------------------ SGLang / TGI OOM


def sglang_gpu_oom(facts: PasteFacts) -> Reply:
    command = facts.context.get("command")
    model_name = facts.context.get("model")
    tp = int(facts.get("tp") or 1)
    o = _torch_oom(facts, tp)
    total = o.total
    f0 = facts.context.get("mem_fraction_static")
    f0_src = "log"
    if f0 is None and total:
        f0, f0_src = default_mem_fraction_static(total, tp), "computed"
    graph = facts.root.signature.startswith("sglang.cuda_graph_oom")
    pre = total - SGLANG_CUDA_CONTEXT_GIB if total else None
    new_f = None
    if f0 is not None:
        need = 1.0
        if o.tried is not None:
            need = max(1.0, o.tried - (o.free or 0.0) + 0.5)
        step = need / pre if pre else 0.05
        new_f = _floor2(float(f0) - max(0.02, step))
    title = (
        "SGLang: out of memory while capturing CUDA graphs"
        if graph
        else "SGLang: CUDA out of memory while serving"
    )
    if o.kind == "absurd":
        title, _, _ = _torch_summary(o, facts)
    summary = (
        "SGLang keeps 1 - mem_fraction_static of the free memory for activations and CUDA graphs; "
        + (
            "the graphs of the largest captured decode batch did not fit in it"
            if graph
            else "a prefill or decode batch needed more activations than that share"
        )
        + (
            f" ({_size(o.tried)} requested, {_size(o.free)} free)"
            if o.tried is not None and o.free is not None
            else ""
        )
        + ". Here a *lower* --mem-fraction-static helps (a smaller KV pool, more headroom), as do smaller prefill "
        "chunks and fewer captured batch sizes."
    )
    numbers = _torch_numbers(o)
    if f0 is not None:
        numbers.insert(0, Fact("--mem-fraction-static", f"{float(f0):g}", f0_src))
    numbers += _context_facts(facts)
    fixes: list[Fix] = []
    if new_f is not None:
        fixes.append(
            Fix(
                "sglang",
                f"lower --mem-fraction-static to {new_f:g}",
                sglang_command(command, model_name, {"--mem-fraction-static": f"{new_f:g}"}),
                f"{float(f0) - new_f:.2f} of the free memory"
                + (f" ({_gib((float(f0) - new_f) * pre)})" if pre else "")
                + " moves from the KV pool to activations and graphs",
                "a smaller KV pool (fewer tokens in flight); if it then says 'Not enough memory', the model is too "
                "tight for this GPU",
                rank=1,
            )
        )
    fixes += _sglang_activation_fixes(facts, pre, rank=2, why="it is the activation side that ran out")
    if graph:
        fixes.append(
            Fix(
                "sglang",
                "no CUDA graphs",
                sglang_command(command, model_name, {"--disable-cuda-graph": ""}),
                "nothing to capture",
                "slower decode",
                rank=3,
            )
        )
    notes = _torch_notes(o) if o.unallocated is not None else []
    return _reply(
        title,
        summary,
        "SGLang's activation / graph headroom ran out.",
        numbers,
        fixes,
        notes,
        _torch_picture(o),
    )


def tgi_gpu_oom(facts: PasteFacts) -> Reply:
    tp = int(facts.get("tp") or 1)
    o = _torch_oom(facts, tp)
    prefill = facts.get("max_num_batched_tokens")
    loading = o.kind in ("weights",)
    title, summary, short = _torch_summary(o, facts)
    title = "TGI shard: " + title
    if o.kind not in ("absurd", "weights", "other_process"):
        summary = (
            "A TGI shard ran out of GPU memory after loading: at warm-up the prefill batch "
            "(--max-batch-prefill-tokens) or, while serving, the requests (--max-total-tokens) need more than "
            "the weights leave. " + summary
        )
    numbers = _torch_numbers(o)
    if prefill:
        numbers.append(Fact("--max-batch-prefill-tokens", fmt_tokens(int(prefill)), "log"))
    numbers += _context_facts(facts)
    fixes: list[Fix] = []
    if not loading and o.kind != "absurd":
        target = round_down_clean(int(prefill) // 2) if prefill else 2048
        fixes.append(
            Fix(
                "tgi",
                f"--max-batch-prefill-tokens {target}",
                _tgi_command(facts, {"--max-batch-prefill-tokens": str(target)}),
                "halves the prefill activation peak" if prefill else "a smaller prefill activation peak",
                "must stay >= --max-input-tokens",
                rank=1,
            )
        )
    fixes.append(
        Fix(
            "tgi",
            "quantize the weights (4-bit)",
            _tgi_command(facts, {"--quantize": "bitsandbytes-nf4"}),
            "about a quarter of 16-bit weights"
            + (f": {_gib(o.weights)} -> about {_gib(o.weights / 4 + 0.3)}" if o.weights else ""),
            "slower kernels, some quality loss",
            rank=1 if loading else 2,
        )
    )
    fixes.append(
        Fix(
            "tgi",
            f"shard over {tp * 2} GPUs",
            _tgi_command(facts, {"--num-shard": str(tp * 2)}),
            "halves the weights per GPU",
            f"needs {tp * 2} GPUs",
            rank=2 if loading else 3,
        )
    )
    if o.kind == "fragmentation":
        fixes.append(
            Fix(
                "any",
                "let the allocator grow segments",
                f"docker run -e {EXPANDABLE} ...   # or export it before text-generation-launcher",
                f"the {_size(o.unallocated or 0)} cached becomes usable",
                rank=1,
            )
        )
    notes = _torch_notes(o) if o.unallocated is not None else []
    hw = bigger_hardware(facts, facts.get("max_model_len")) if loading and facts.model is not None else None
    return _reply(title, summary, short, numbers, fixes, notes, _torch_picture(o), [hw])


# ------------------------------------------------------------------------------------------ llama.cpp


def _flag_value(command: str | None, *names: str) -> str | None:
    if not command:
        return None
    alternatives = "|".join(re.escape(n) for n in names)
    m = re.search(rf"(?:^|\s)(?:{alternatives})(?:=|\s+)(\S+)", command)
    return m.group(1) if m else None


def _llama_alloc_mib(facts: PasteFacts) -> float | None:
    p = facts.params
    if p.get("alloc_mib") is not None:
        return float(p["alloc_mib"])
    if p.get("alloc_bytes") is not None:
        return p["alloc_bytes"] / MIB
    return None


def _llama_file(facts: PasteFacts) -> str | None:
    name = facts.context.get("model")
    return str(name) if name and str(name).lower().endswith(".gguf") else None


def _llama_cmd(facts: PasteFacts, changes: dict[str, str | None]) -> str:
    return llamacpp_command(facts.context.get("command"), _llama_file(facts), changes)


def _llama_device_total_mib(facts: PasteFacts) -> tuple[float | None, str]:
    """What the device offers llama.cpp: its free memory at load (log), else the card's total minus the
    CUDA context (catalog)."""
    free = facts.params.get("free_mib")
    if free is not None and facts.root.engine in ("llama.cpp", "ollama") and free > 1024:
        return float(free), "log"
    if facts.gpu is not None and not facts.gpu.unified_memory:
        return (facts.gpu.total_gib - LLAMACPP_CUDA_CONTEXT_GIB) * 1024, "catalog"
    total = facts.context.get("gpu_total_gib")
    if total:
        return (float(total) - LLAMACPP_CUDA_CONTEXT_GIB) * 1024, "log"
    return None, "estimated"


def _gguf_bytes(facts: PasteFacts) -> float | None:
    """Weights of the GGUF in use: the named GGUF variant, else the catalog's Q4_K_M, else an estimate."""
    if facts.model is None:
        return None
    model, variant = facts.model.model, facts.model.variant
    if variant is not None and variant.quant == "gguf":
        return float(variant_weight_bytes(model, variant))
    gguf = [v for v in model.variants if v.quant == "gguf"]
    q4 = next((v for v in gguf if (v.gguf_type or "").upper() == "Q4_K_M"), None)
    if q4 is not None:
        return float(variant_weight_bytes(model, q4))
    return model.params_b * 1e9 * 4.89 / 8


def _llama_kv_per_token(facts: PasteFacts) -> float | None:
    """f16/q8 KV bytes per token over all layers of the catalog model, with the paste's cache types."""
    model = _model(facts)
    if model is None:
        return None
    k = str(facts.get("cache_type_k") or "f16")
    v = str(facts.get("cache_type_v") or k)
    try:
        return llamacpp_layout(model, k, v).all_attention_bytes_per_token
    except ValueError:
        return llamacpp_layout(model).all_attention_bytes_per_token


_GGUF_LADDER = ["Q8_0", "Q6_K", "Q5_K_M", "Q4_K_M", "IQ4_XS", "Q3_K_M", "IQ3_XXS", "Q2_K", "IQ2_M", "IQ2_XXS"]


def _smaller_gguf(filename: str | None, ratio: float) -> tuple[str, str, float] | None:
    """The same GGUF file name at the largest quant whose size is at most ``ratio`` of this one's
    (effective bits per weight from the quant table); None when the name carries no quant or nothing
    above ~2.3 bits per weight is small enough."""
    if not filename:
        return None
    from calculator.catalog import quant_formats

    bpw = {f.name.upper(): f.effective_bpw for f in quant_formats().weight_formats if f.effective_bpw}
    names = sorted(bpw, key=len, reverse=True)
    m = re.search(
        r"(?i)(?<![A-Za-z0-9])(" + "|".join(re.escape(n) for n in names) + r")(?![A-Za-z0-9])", filename
    )
    if not m:
        return None
    current = m.group(1).upper()
    target = bpw[current] * ratio
    for quant in _GGUF_LADDER:
        if bpw.get(quant) and 2.3 <= bpw[quant] <= target and bpw[quant] < bpw[current]:
            return filename[: m.start(1)] + quant + filename[m.end(1) :], quant, bpw[quant]
    return None


def _smaller_sibling(facts: PasteFacts) -> tuple[ModelSpec, Variant] | None:
    """The largest catalog model of the same family with at most 3/4 of the parameters and an Ollama tag."""
    if facts.model is None:
        return None
    from calculator.catalog import models

    current = facts.model.model
    found = [
        (m, v)
        for m in models()
        if m.family == current.family and m.params_b <= 0.75 * current.params_b
        for v in m.variants
        if v.ollama
    ]
    return max(found, key=lambda mv: mv[0].params_b) if found else None


def _max_discrete_gib() -> float:
    return max(g.total_gib for g in gpus() if not g.unified_memory)


def llamacpp_gpu_oom(facts: PasteFacts) -> Reply:
    sig = facts.root.signature
    if sig.startswith("llamacpp.gpu_oom.metal") or (
        sig == "llamacpp.gpu_oom.alloc" and facts.params.get("working_set_mib")
    ):
        return _llama_metal(facts)
    if sig == "llamacpp.gpu_oom.weights":
        return _llama_weights(facts)
    if sig == "llamacpp.gpu_oom.compute":
        return _llama_compute(facts)
    if sig == "llamacpp.gpu_oom.vulkan":
        return _llama_vulkan(facts)
    if sig == "llamacpp.gpu_oom.cuda_runtime":
        return _llama_runtime(facts)
    return _llama_alloc(facts)


def _llama_common_numbers(facts: PasteFacts, alloc: float | None, label: str) -> list[Fact]:
    p = facts.params
    out = []
    device = p.get("device")
    if alloc is not None:
        out.append(Fact(label + (f" (device {device})" if device is not None else ""), _mib(alloc), "log"))
    for name, lab in (
        ("model_buffer_mib", "weights on the first GPU"),
        ("kv_buffer_mib", "KV cache on the first GPU"),
        ("kv_self_mib", "KV cache (all devices)"),
        ("compute_buffer_mib", "compute buffer"),
    ):
        if p.get(name) is not None:
            out.append(Fact(lab, _mib(p[name]), "log"))
    for name, lab in (("n_ctx", "context (n_ctx)"), ("n_gpu_layers", "-ngl")):
        if facts.get(name) is not None:
            out.append(
                Fact(
                    lab,
                    f"{facts.get(name):,}" if isinstance(facts.get(name), int) else str(facts.get(name)),
                    "log",
                )
            )
    if p.get("layers_offload") is not None and p.get("layers_model") is not None:
        out.append(Fact("layers on the GPU", f"{p['layers_offload']}/{p['layers_model']}", "log"))
    avail, src = _llama_device_total_mib(facts)
    if avail is not None:
        out.append(Fact("what the GPU offers llama.cpp", _mib(avail), src))
    out += _context_facts(facts)
    return out


def _llama_weights(facts: PasteFacts) -> Reply:
    p = facts.params
    alloc = _llama_alloc_mib(facts) or 0.0
    device = p.get("device", "0")
    avail, _ = _llama_device_total_mib(facts)
    model = _model(facts)
    ngl = facts.get("n_gpu_layers")
    per_layer = None
    layers_total = model.num_hidden_layers + 1 if model is not None else p.get("layers_model")
    if (
        layers_total
        and ngl
        and alloc
        and device in ("0", 0)
        and not _flag_value(facts.context.get("command"), "-ts", "--tensor-split")
    ):
        per_layer = alloc / min(int(ngl), int(layers_total))  # one GPU held every offloaded layer
    elif model is not None:
        gguf = _gguf_bytes(facts)
        per_layer = gguf / MIB / (model.num_hidden_layers + 1) if gguf else None
    kv_tok = _llama_kv_per_token(facts)
    n_ctx = facts.get("n_ctx")
    kv_per_layer = kv_tok * int(n_ctx) / MIB / model.num_hidden_layers if kv_tok and n_ctx and model else 0.0
    reserve = FIT_MARGIN_MIB + 512.0
    n_fit = None
    if avail and per_layer:
        n_fit = max(0, int((avail - reserve) // (per_layer + kv_per_layer)))
        if layers_total:
            n_fit = min(n_fit, int(layers_total))
    kv_full = kv_tok * int(n_ctx) / MIB if kv_tok and n_ctx else 0.0
    ratio = (avail - reserve - kv_full) / alloc if avail and alloc else None

    title = (
        f"llama.cpp: the weights for device {device}"
        + (f" ({_gib(alloc / 1024)})" if alloc else "")
        + " do not fit in its memory"
    )
    sentences = [
        f"llama.cpp failed to allocate the {_mib(alloc) + ' ' if alloc else ''}weight buffer of the layers assigned to GPU {device} while "
        "loading, before any KV cache or compute buffer existed: -ngl (how many layers go to the GPU) and the "
        "quantization decide this number, not the context size."
    ]
    if avail and n_fit is not None and layers_total:
        sentences.append(
            f"The GPU offers about {_mib(avail)}: {n_fit} of the {int(layers_total)} layers fit once room is kept "
            "for their KV cache and the compute buffers."
        )
    elif avail:
        sentences.append(
            f"The GPU offers about {_mib(avail)}, so roughly {max(0.0, ratio or 0):.0%} of those layers fit once "
            "room is kept for the KV cache and compute buffers."
        )
    elif alloc / 1024 > 100:
        sentences.append(
            f"{_gib(alloc / 1024)} on one device is more than any single consumer or most datacenter GPUs hold: "
            "either the model is too big for this machine at this quant, or -ngl / --tensor-split puts far "
            "too much on one GPU."
        )
    summary = " ".join(sentences)
    numbers = _llama_common_numbers(facts, alloc or None, "weights buffer that failed")
    if per_layer:
        numbers.append(Fact("weights per layer", _mib(per_layer), "computed" if ngl else "estimated"))
    if n_fit is not None:
        numbers.append(Fact("layers that fit on the GPU", str(n_fit), "computed"))

    fixes: list[Fix] = []
    if n_fit is not None and n_fit > 0:
        fixes.append(
            Fix(
                "llama.cpp",
                f"put {n_fit} layers on the GPU (-ngl {n_fit})",
                _llama_cmd(facts, {"-ngl": str(n_fit)}),
                f"{n_fit} x {_mib(per_layer or 0)} = {_mib(n_fit * (per_layer or 0))} of weights, leaving "
                f"{_mib((avail or 0) - n_fit * (per_layer or 0))} for the KV cache and compute buffers",
                "the other layers run on the CPU: slower, the more the slower",
                rank=1,
            )
        )
    fixes.append(
        Fix(
            "llama.cpp",
            "let --fit place the layers",
            _llama_cmd(facts, {"-ngl": None, "-ts": None, "-fit": None, "--fit": "on"}),
            "llama.cpp (b7407+) measures free memory and offloads only what fits (MoE experts to the CPU first)",
            "it only adjusts what you did not set: no -ngl / -ts / -ot on the command line",
            rank=2 if n_fit else 1,
        )
    )
    if model is None or model.is_moe:
        fixes.append(
            Fix(
                "llama.cpp",
                "keep the MoE experts in system RAM" + (" (MoE models)" if model is None else ""),
                _llama_cmd(facts, {"-cmoe": ""}),
                "the expert tensors (most of an MoE model) stay in RAM; attention and shared weights stay on the GPU",
                "needs that much system RAM; slower tokens",
                rank=3,
            )
        )
    file = _llama_file(facts)
    smaller = _smaller_gguf(file, ratio) if ratio is not None and 0 < ratio < 1 else None
    if smaller is not None:
        name, quant, bits = smaller
        command = facts.context.get("command") or f"llama-server -m {file}"
        fixes.append(
            Fix(
                "llama.cpp",
                f"the {quant} quant of the same model",
                command.replace(file, name) if file else _llama_cmd(facts, {}),  # type: ignore[arg-type]
                f"{bits:.2f} bits per weight: at most {ratio:.0%} of this file, so all layers fit on the GPU",
                "quality drops noticeably below about 4 bits per weight",
                rank=3,
            )
        )
    else:
        fixes.append(
            Fix(
                "llama.cpp",
                "a smaller quant of the same model",
                _llama_cmd(facts, {})
                if file
                else "llama-server -m <model>-Q3_K_M.gguf   # the same model, fewer bits per weight",
                (
                    f"the file must shrink to about {ratio:.0%} of its size to fit this GPU"
                    if ratio is not None and 0 < ratio < 1
                    else "fewer bits per weight"
                )
                + " (Q8_0 -> Q4_K_M is about 55% of the size, Q4_K_M -> IQ3_XXS about 67%)",
                "lower quality below about 4 bits per weight",
                rank=4,
            )
        )
    fixes.append(
        Fix(
            "llama.cpp",
            "spread the layers over all GPUs",
            _llama_cmd(facts, {"-sm": "layer", "-ts": None, "--tensor-split": None}),
            "without -ts llama.cpp splits layers by each GPU's free memory",
            "only with more than one GPU",
            rank=5,
        )
    )
    notes = [
        "Weights are allocated per device: with several GPUs, -ts / --tensor-split decides each one's share."
    ]
    if avail is None:
        notes.append(
            "The GPU's memory is not in the paste: the 'using device CUDA0 (...) - N MiB free' line (printed with -lv 4 "
            "on recent builds) lets me compute -ngl exactly."
        )
    hw = (
        bigger_hardware(facts, int(n_ctx) if n_ctx else 8192, engine="llama.cpp")
        if model is not None
        else None
    )
    return _reply(
        title,
        summary,
        "The weights assigned to the GPU do not fit.",
        numbers,
        fixes,
        notes,
        None,
        [hw],
        data={"n_gpu_layers_fit": n_fit},
    )


def _llama_compute(facts: PasteFacts) -> Reply:
    p = facts.params
    alloc = _llama_alloc_mib(facts) or 0.0
    device = str(p.get("device", "0"))
    command = facts.context.get("command")
    ub = _flag_value(command, "-ub", "--ubatch-size")
    ub = int(ub) if ub and ub.isdigit() else 512
    fa = str(facts.get("flash_attn") or "").lower()
    fa_on = fa in ("on", "enabled", "true", "1")
    n_ctx = facts.get("n_ctx")
    multi = (
        device != "0"
        or _flag_value(command, "-ts", "--tensor-split") is not None
        or _evidence_has(facts, "pipeline parallelism")
    )
    retried = bool(facts.context.get("pp_retry")) or _evidence_has(
        facts, "retrying without pipeline parallelism"
    )
    kv_dev = p.get("kv_buffer_mib")
    avail, _ = _llama_device_total_mib(facts)
    model = _model(facts)
    expected = None
    if model is not None and n_ctx:
        expected = compute_buffer_bytes(model, int(n_ctx), ub, fa_on) / MIB * (4 if multi else 1)
    absurd = (
        alloc / 1024 > _max_discrete_gib()
        or (kv_dev is not None and alloc > 100 * kv_dev and alloc > 32 * 1024)
        or (avail is not None and alloc > 4 * avail)
        or (expected is not None and alloc > 20 * expected)
    )

    if absurd:
        title = (
            f"llama.cpp: a {_gib(alloc / 1024)} compute buffer on device {device} is a bug, not your settings"
        )
        summary = (
            f"The compute buffer is scratch space for one micro-batch; it is normally hundreds of MiB to a few GiB. "
            f"{_mib(alloc)} on device {device}"
            + (f" (next to a {_mib(kv_dev)} KV cache on the same GPU)" if kv_dev is not None else "")
            + " is beyond any GPU and any sane graph: the graph was sized wrongly (seen with MLA / fork-specific "
            "attention paths and multi-GPU pipeline copies). Update the build, try without the feature that changes "
            "the graph, and report it with the full log."
        )
        short = "An absurd compute-buffer size: a llama.cpp (fork) bug."
    else:
        size = f" {_gib(alloc / 1024)}" if alloc else ""
        title = f"llama.cpp: the{size} compute buffer did not fit on device {device}"
        if multi:
            title += " (llama.cpp retries without pipeline parallelism)"
        sent = [
            "Weights and KV cache were in place; then the compute buffer"
            + (f" ({_mib(alloc)})" if alloc else "")
            + " failed. It grows with the "
            f"micro-batch (-ub {ub})"
            + (
                ""
                if fa_on
                else " and, without flash attention, with n_ctx x heads (the f32 attention scores)"
            )
            + "."
        ]
        if multi:
            sent.append(
                "With several GPUs and all layers offloaded llama.cpp enables pipeline parallelism, which keeps "
                "n_copies (4) of these buffers; when that fails it logs 'compute buffer allocation failed, retrying "
                "without pipeline parallelism' and tries one copy"
                + (f" (about {_mib(alloc / 4)})." if alloc else ".")
            )
            if retried:
                sent.append(
                    "Your log shows that retry: unless another allocation fails after it, the out-of-memory was "
                    "recovered and non-fatal."
                )
            else:
                sent.append(
                    "If your log continues past that line (slots initialize, the server listens), this OOM was "
                    "recovered and non-fatal; only a second failure stops the load."
                )
        summary = " ".join(sent)
        short = "The compute buffer did not fit" + (
            " (retried without pipeline parallelism)." if multi else "."
        )

    numbers = _llama_common_numbers(facts, alloc or None, "compute buffer that failed")
    numbers.append(
        Fact(
            "micro-batch (-ub)",
            str(ub),
            "log" if _flag_value(command, "-ub", "--ubatch-size") else "estimated",
        )
    )
    numbers.append(Fact("flash attention", fa or "auto/unknown", "log" if fa else "estimated"))
    if expected is not None:
        numbers.append(Fact("expected compute buffer for this model", _mib(expected), "estimated"))

    fixes: list[Fix] = []
    if absurd:
        fixes.append(
            Fix(
                "llama.cpp",
                "rule out automatic fitting",
                _llama_cmd(facts, {"-fit": None, "--fit": "off"}),
                "if --fit's dry run sized the graph, this shows it",
                "builds before b7407 have no --fit: skip this one",
                rank=1,
            )
        )
        fixes.append(
            Fix(
                "llama.cpp",
                "a smaller micro-batch to see whether the size tracks it",
                _llama_cmd(facts, {"-ub": "256", "-b": "256"}),
                "a real compute graph shrinks in proportion; a bogus size usually does not",
                "slower prompt processing",
                rank=2,
            )
        )
        fixes.append(
            Fix(
                "any",
                "update and report",
                "git pull && cmake --build build --config Release -j   # then re-run; if it persists, open an issue with the full log",
                "the graph-size bug may already be fixed upstream",
                rank=3,
            )
        )
    else:
        for new_ub in (512, 256):
            if ub > new_ub:
                fixes.append(
                    Fix(
                        "llama.cpp",
                        f"smaller micro-batch (-ub {new_ub})",
                        _llama_cmd(
                            facts,
                            {"-ub": str(new_ub), "-b": str(max(new_ub, 2048 if new_ub == 512 else new_ub))},
                        ),
                        "the compute buffer scales with -ub: "
                        + (
                            f"about {_mib(alloc * new_ub / ub)} instead of {_mib(alloc)}"
                            if alloc
                            else f"{new_ub / ub:.0%} of its size"
                        ),
                        "slower prompt processing",
                        rank=1 if new_ub == 512 else 2,
                    )
                )
                break
        else:
            fixes.append(
                Fix(
                    "llama.cpp",
                    "smaller micro-batch (-ub 128)",
                    _llama_cmd(facts, {"-ub": "128"}),
                    f"about {_mib(alloc * 128 / ub)} instead of {_mib(alloc)}"
                    if alloc
                    else f"{128 / ub:.0%} of its size",
                    "slower prompt processing",
                    rank=1,
                )
            )
        if not fa_on:
            fixes.append(
                Fix(
                    "llama.cpp",
                    "flash attention",
                    _llama_cmd(facts, {"-fa": "on"}),
                    "the n_ctx x heads attention-score matrix is never materialized: the buffer stops growing with the context",
                    "needs a GPU with flash-attention support in llama.cpp (most CUDA, Metal, Vulkan)",
                    rank=1,
                )
            )
        if n_ctx:
            new_ctx = round_down_clean(int(n_ctx) // 2)
            fixes.append(
                Fix(
                    "llama.cpp",
                    f"smaller context (-c {new_ctx})",
                    _llama_cmd(facts, {"-c": str(new_ctx)}),
                    "the graph covers the full KV length; half the context, a smaller graph and KV cache",
                    "shorter prompts",
                    rank=3,
                )
            )
        if multi:
            fixes.append(
                Fix(
                    "llama.cpp",
                    "shift layers off the GPU that failed",
                    _llama_cmd(
                        facts,
                        {"-ngl": None, "-ts": None, "--tensor-split": None, "-fit": None, "--fit": "on"},
                    ),
                    f"device {device} gets fewer layers and so more room for its compute buffer (--fit balances this for you)",
                    "--fit (b7407+) only moves what you did not set explicitly",
                    rank=4,
                )
            )
    notes = []
    if not retried and multi:
        notes.append(
            "Whether the retry succeeded is not in the lines I matched: look for 'retrying without pipeline "
            "parallelism' right after the error and for the server starting after it."
        )
    return _reply(title, summary, short, numbers, fixes, notes, data={"absurd": absurd, "multi_gpu": multi})


def _llama_runtime(facts: PasteFacts) -> Reply:
    p = facts.params
    fn = p.get("function") or "a CUDA call"
    title = f"llama.cpp: the GPU ran out of memory while running (in {fn})"
    summary = (
        f"Everything was allocated, then a later allocation in {fn} on device {p.get('device', '?')} failed: memory "
        "llama.cpp does not reserve up front (cuBLAS workspace, the CUDA memory pool, another process on the GPU) "
        "pushed it over. Leave more headroom: fewer layers or a smaller context or micro-batch."
    )
    n_ctx = facts.get("n_ctx")
    ngl = facts.get("n_gpu_layers")
    fixes = [
        Fix(
            "llama.cpp",
            "keep more memory free (--fit-target 2048)",
            _llama_cmd(facts, {"--fit-target": "2048"}),
            "--fit (b7407+) leaves 2 GiB free per GPU instead of 1",
            "a little less on the GPU",
            rank=1,
        ),
        Fix(
            "llama.cpp",
            "smaller micro-batch (-ub 256)",
            _llama_cmd(facts, {"-ub": "256"}),
            "smaller runtime buffers",
            "slower prompt processing",
            rank=2,
        ),
    ]
    if ngl and int(ngl) > 2 and int(ngl) < 999:
        fixes.append(
            Fix(
                "llama.cpp",
                f"one or two layers fewer (-ngl {int(ngl) - 2})",
                _llama_cmd(facts, {"-ngl": str(int(ngl) - 2)}),
                "frees two layers of weights and KV",
                "slightly slower",
                rank=3,
            )
        )
    if n_ctx:
        fixes.append(
            Fix(
                "llama.cpp",
                f"-c {round_down_clean(int(n_ctx) * 3 // 4)}",
                _llama_cmd(facts, {"-c": str(round_down_clean(int(n_ctx) * 3 // 4))}),
                "a quarter less KV cache",
                "shorter prompts",
                rank=4,
            )
        )
    fixes.append(
        Fix(
            "any",
            "check for other processes",
            "nvidia-smi --query-compute-apps=pid,process_name,used_memory --format=csv",
            "another process on the GPU takes the headroom",
            rank=5,
        )
    )
    return _reply(
        title,
        summary,
        "Out of memory after loading: too little headroom.",
        _llama_common_numbers(facts, None, ""),
        fixes,
        [],
    )


def _llama_vulkan(facts: PasteFacts) -> Reply:
    alloc = _llama_alloc_mib(facts)
    limit = _evidence_has(facts, "exceeds device")
    title = (
        "llama.cpp (Vulkan): device memory allocation" + (f" of {_mib(alloc)}" if alloc else "") + " failed"
    )
    if limit:
        summary = (
            "The single buffer is larger than the device's maximum allocation size (often 2-4 GiB on integrated and "
            "older GPUs), even if there is free memory in total: make each buffer smaller (micro-batch, context, "
            "layers per device)."
        )
    else:
        summary = (
            "The Vulkan driver has no device memory left for this buffer. Weights (-ngl), the KV cache (-c, cache "
            "type) and the compute buffer (-ub) must come down together to what the GPU holds; on integrated GPUs "
            "the usable share of system RAM is set by the driver/BIOS."
        )
    n_ctx = facts.get("n_ctx")
    fixes = [
        Fix(
            "llama.cpp",
            "smaller micro-batch (-ub 256)",
            _llama_cmd(facts, {"-ub": "256", "-b": "256"}),
            "halves the compute buffer of the default -ub 512",
            "slower prompt processing",
            rank=1,
        ),
        Fix(
            "llama.cpp",
            "q8_0 KV cache",
            _llama_cmd(facts, {"-ctk": "q8_0", "-ctv": "q8_0", "-fa": "on"}),
            "about half the KV cache",
            "negligible quality loss",
            rank=3,
        ),
        Fix(
            "llama.cpp",
            "let --fit place the layers",
            _llama_cmd(facts, {"-ngl": None, "-fit": None, "--fit": "on"}),
            "only what fits goes to the GPU (b7407+)",
            "the rest runs on the CPU",
            rank=2,
        ),
    ]
    if n_ctx:
        new = round_down_clean(int(n_ctx) // 2)
        fixes.append(
            Fix(
                "llama.cpp",
                f"-c {new}",
                _llama_cmd(facts, {"-c": str(new)}),
                "half the KV cache",
                "shorter prompts",
                rank=2,
            )
        )
    return _reply(
        title,
        summary,
        "Vulkan could not allocate device memory.",
        _llama_common_numbers(facts, alloc, "allocation that failed"),
        fixes,
        [],
    )


def _llama_alloc(facts: PasteFacts) -> Reply:
    """A cudaMalloc failure whose next lines (which buffer) are not in the paste."""
    p = facts.params
    alloc = _llama_alloc_mib(facts) or 0.0
    device = p.get("device", "0")
    model = _model(facts)
    n_ctx = facts.get("n_ctx")
    kv_tok = _llama_kv_per_token(facts)
    stage = "unknown"
    kv_full = kv_tok * int(n_ctx) / MIB if kv_tok and n_ctx else None
    gguf = _gguf_bytes(facts)
    if kv_full and abs(alloc - kv_full) / kv_full < 0.1:
        stage = "kv"
    elif gguf and alloc > 0.3 * gguf / MIB:
        stage = "weights"
    if stage == "weights":
        return _llama_weights(facts)
    if stage == "kv":
        return llamacpp_kv_alloc_failed(facts)
    avail, _ = _llama_device_total_mib(facts)
    title = f"llama.cpp: a {_mib(alloc)} buffer could not be allocated on GPU {device}"
    summary = (
        f"cudaMalloc refused {_mib(alloc)} on GPU {device}"
        + (f", which offers about {_mib(avail)}" if avail else "")
        + ". The line after it says which buffer: 'error loading model' = weights (lower -ngl), 'kv cache' = the "
        "KV cache (lower -c or quantize it), 'compute buffers' = the compute graph (lower -ub). Paste a few more "
        "lines for an exact fix; the likely ones are below."
    )
    fixes = [
        Fix(
            "llama.cpp",
            "let --fit place layers and context",
            _llama_cmd(facts, {"-ngl": None, "-c": None, "-fit": None, "--fit": "on"}),
            "llama.cpp (b7407+) fits layers and context to free memory",
            "only adjusts what you did not set",
            rank=1,
        ),
        Fix(
            "llama.cpp",
            "q8_0 KV cache",
            _llama_cmd(facts, {"-ctk": "q8_0", "-ctv": "q8_0", "-fa": "on"}),
            "about half the KV cache",
            "negligible quality loss",
            rank=2,
        ),
        Fix(
            "llama.cpp",
            "smaller micro-batch (-ub 256)",
            _llama_cmd(facts, {"-ub": "256"}),
            "smaller compute buffer",
            "slower prompt processing",
            rank=3,
        ),
    ]
    if model is None:
        fixes.append(
            Fix(
                "llama.cpp",
                "a smaller quant",
                _llama_cmd(facts, {}),
                "smaller weights",
                "lower quality",
                rank=4,
            )
        )
    return _reply(
        title,
        summary,
        "A GPU buffer did not fit.",
        _llama_common_numbers(facts, alloc, "allocation that failed"),
        fixes,
        [],
    )


def _mac_ram_mib(working_set_mib: float) -> float:
    """Unified memory of the Mac from Metal's recommendedMaxWorkingSetSize (2/3 of RAM up to 36 GB,
    3/4 above), snapped to the sizes Apple sells."""
    guess = working_set_mib / (2 / 3) if working_set_mib < 24 * 1024 else working_set_mib / 0.75
    sizes = [8, 16, 18, 24, 32, 36, 48, 64, 96, 128, 192, 256, 512]
    return min(sizes, key=lambda s: abs(s * 1024 - guess)) * 1024.0


def _wired_limit_mib(ram_mib: float) -> int:
    reserve = max(METAL_MIN_OS_RESERVE_MIB, ram_mib / 8)
    return int((ram_mib - reserve) // 256 * 256)


def _llama_metal(facts: PasteFacts) -> Reply:
    p = facts.params
    ws = p.get("working_set_mib")
    kv = p.get("kv_self_mib") or p.get("kv_buffer_mib") or p.get("kv_size_mib")
    compute = p.get("compute_buffer_mib")
    mapped = p.get("metal_allocated_mib")
    alloc = _llama_alloc_mib(facts)
    n_ctx = facts.get("n_ctx")
    ram = _mac_ram_mib(ws) if ws else None
    if ram is None and facts.gpu is not None and facts.gpu.unified_memory:
        ram = facts.gpu.memory_bytes / MIB
        ws = ws or facts.gpu.total_gib * 1024
    limit = _wired_limit_mib(ram) if ram else None
    small_ctx = (kv or 0) + (compute or 0)
    weights_room = ws - small_ctx - 256 if ws else None

    title = "llama.cpp on Apple silicon: more is mapped to the GPU than macOS lets it wire"
    if ws:
        title = f"llama.cpp on Apple silicon: the model does not fit the {_mib(ws)} Metal working set"
    sentences = [
        "On Apple silicon the GPU may wire only part of unified memory (recommendedMaxWorkingSetSize, about 2/3 of "
        "RAM on small Macs, 3/4 on large ones); weights + KV cache + compute buffers must fit in it, and past it Metal "
        "command buffers fail (status 5, GGML_ASSERT in ggml-metal)."
    ]
    if ws and kv is not None and compute is not None:
        sentences.append(
            f"Here the KV cache ({_mib(kv)}{f' at n_ctx {int(n_ctx):,}' if n_ctx else ''}) and compute buffers "
            f"({_mib(compute)}) are small, so the weights are what overflow: they must come under about "
            f"{_mib(weights_room or 0)}."
        )
    elif mapped and ws:
        sentences.append(f"{_mib(mapped)} is mapped against {_mib(ws)}.")
    summary = " ".join(sentences)
    numbers = []
    if ws:
        numbers.append(Fact("recommendedMaxWorkingSetSize", _mib(ws), "log"))
    if mapped:
        numbers.append(Fact("mapped to the GPU", _mib(mapped), "log"))
    if alloc:
        numbers.append(Fact("buffer that failed", _mib(alloc), "log"))
    if kv is not None:
        numbers.append(Fact("KV cache", _mib(kv), "log"))
    if compute is not None:
        numbers.append(Fact("compute buffer", _mib(compute), "log"))
    if n_ctx:
        numbers.append(Fact("context (n_ctx)", f"{int(n_ctx):,}", "log"))
    if ram:
        numbers.append(Fact("unified memory (RAM) of this Mac", f"{ram / 1024:.0f} GB", "computed"))
    if weights_room:
        numbers.append(Fact("room left for the weights", _mib(weights_room), "computed"))
    numbers += _context_facts(facts)

    fixes: list[Fix] = []
    if weights_room:
        fixes.append(
            Fix(
                "llama.cpp",
                f"a GGUF of at most about {weights_room / 1024:.1f} GiB",
                _llama_cmd(facts, {}),
                f"weights under {_mib(weights_room)} + KV + compute fit the {_mib(ws or 0)} working set "
                "(a 7B model: Q4_K_M is about 4.1 GiB, Q5_K_M 4.8, Q8_0 7.2)",
                "below Q4 quality drops",
                rank=1,
            )
        )
    layers = p.get("layers_model") or (_model(facts).num_hidden_layers + 1 if _model(facts) else None)
    ngl = facts.get("n_gpu_layers")
    on_gpu = min(int(ngl), int(layers)) if ngl and layers else (int(layers) if layers else None)
    if on_gpu:
        fewer = max(1, on_gpu * 3 // 4)
        fixes.append(
            Fix(
                "llama.cpp",
                f"fewer layers on the GPU (-ngl {fewer} of {layers})",
                _llama_cmd(facts, {"-ngl": str(fewer)}),
                "a quarter of the layers stay on the CPU side, unwired: the working set shrinks by about a quarter of the weights",
                "those layers run on the CPU cores: slower",
                rank=2,
            )
        )
    if kv and n_ctx and kv > 512:
        new = round_down_clean(int(n_ctx) // 2)
        fixes.append(
            Fix(
                "llama.cpp",
                f"-c {new}",
                _llama_cmd(facts, {"-c": str(new)}),
                f"KV cache {_mib(kv)} -> {_mib(kv / 2)}",
                "shorter prompts",
                rank=2,
            )
        )
    if limit and ram:
        raised = limit - (ws or 0)
        fixes.append(
            Fix(
                "any",
                f"let the GPU wire more memory ({limit:,} MB)",
                f"sudo sysctl iogpu.wired_limit_mb={limit}",
                f"the working set grows from {_mib(ws or 0)} to {limit:,} MiB (+{raised:,.0f} MiB), leaving "
                f"{ram - limit:,.0f} MiB for macOS",
                "macOS 14+ (older: debug.iogpu.wired_limit); resets on reboot; too high a value starves macOS: "
                "swapping, freezes or a kernel panic. Close other apps first",
                rank=3,
            )
        )
        if mapped and mapped > limit:
            fixes[
                -1
            ].effect += f"; still below the {_mib(mapped)} mapped, so a smaller model is needed anyway"
    notes = []
    if not mapped:
        notes.append(
            "The total mapped to the GPU ('( allocated / working set )' at the end of the Metal buffer lines) is not in "
            "what I read; weights = that total minus the KV and compute buffers."
        )
    picture = None
    if ws and kv is not None and compute is not None and weights_room:
        segs = [
            MemorySegment("weights (room)", weights_room, "computed"),
            MemorySegment("kv cache", kv, "log"),
            MemorySegment("compute buffers", compute, "log"),
        ]
        picture = MemoryPicture(
            ws / 1024,
            [MemorySegment(s.label, s.gib / 1024, s.source) for s in segs],
            "Metal working set (what the weights may take)",
        )
    return _reply(
        title,
        summary,
        "Weights + KV + compute exceed the Metal working set.",
        numbers,
        fixes,
        notes,
        picture,
        data={"wired_limit_mb": limit},
    )


def llamacpp_kv_alloc_failed(facts: PasteFacts) -> Reply:
    p = facts.params
    alloc = _llama_alloc_mib(facts)
    device = str(p.get("device", "0"))
    n_ctx = facts.get("n_ctx")
    n_ctx = int(n_ctx) if n_ctx else None
    k_type = str(facts.get("cache_type_k") or "f16")
    v_type = str(facts.get("cache_type_v") or k_type)
    model = _model(facts)
    kv_tok_all = _llama_kv_per_token(facts)
    weights_dev = p.get("model_buffer_mib")
    total_mib, total_src = _llama_device_total_mib(facts)
    compute_est = 512.0
    if model is not None and n_ctx:
        compute_est = compute_buffer_bytes(model, n_ctx, 512, True) / MIB
    avail = None
    if total_mib is not None:
        avail = total_mib - (weights_dev or 0.0) - compute_est - 256.0
    per_tok_dev, per_tok_src, layers_dev = None, "estimated", None
    if alloc and n_ctx:
        per_tok_dev, per_tok_src = alloc * MIB / n_ctx, "computed"
        if model is not None and kv_tok_all:
            layers_dev = round(per_tok_dev / (kv_tok_all / model.num_hidden_layers))
    elif alloc and kv_tok_all:
        # n_ctx not printed: assume this GPU holds every layer's KV (one GPU)
        per_tok_dev, per_tok_src = kv_tok_all, "catalog"
    implied_ctx = int(alloc * MIB / per_tok_dev) if alloc and per_tok_dev and not n_ctx else None

    fit_ctx = fit_q8 = None
    if avail is not None and per_tok_dev:
        fit_ctx = round_down_clean(int(avail * MIB / per_tok_dev)) if avail > 0 else 0
        q8_factor = (
            LLAMACPP_KV_BYTES[k_type] / LLAMACPP_KV_BYTES["q8_0"]
            if k_type in LLAMACPP_KV_BYTES
            else 2 / 1.0625
        )
        fit_q8 = round_down_clean(int(avail * MIB / (per_tok_dev / q8_factor))) if avail > 0 else 0
        if n_ctx:
            fit_q8 = min(fit_q8, n_ctx)
    ratio = avail / alloc if avail is not None and alloc else None

    title = "llama.cpp: the KV cache could not be allocated"
    if facts.root.signature == "llamacpp.context_init_failed" and not alloc:
        reason = p.get("reason")
        title = "llama.cpp: the context (KV cache + compute buffers) could not be created" + (
            f": {reason}" if reason else ""
        )
    if alloc:
        title = f"llama.cpp: the {_mib(alloc)} KV cache does not fit on device {device}"
        if n_ctx:
            title += f" (n_ctx {n_ctx:,})"
    sentences = [
        "llama.cpp reserves the whole KV cache for n_ctx tokens up front, on the GPUs that hold the layers; the "
        "weights were already loaded, so it is the context size (-c) and the cache type, not the model, that did not fit."
    ]
    if alloc and avail is not None:
        sentences.append(
            f"Device {device} offers about {_mib(avail)} after the weights"
            + (f" ({_mib(weights_dev)})" if weights_dev else "")
            + f" and a compute buffer, against the {_mib(alloc)} asked for: the KV cache must shrink "
            f"{alloc / max(avail, 1):.1f}x."
            if avail > 0
            else f"Device {device} has nothing left after the weights: fewer layers on it, not just a smaller context."
        )
    if model is not None and model.num_key_value_heads == model.num_attention_heads:
        sentences.append(
            f"{model.id.split('/')[-1]} has no grouped-query attention ({model.num_key_value_heads} KV heads): its KV "
            "cache per token is several times that of GQA models of the same size."
        )
    summary = " ".join(sentences)
    short = "The KV cache for this context does not fit next to the weights."

    numbers: list[Fact] = []
    if alloc:
        numbers.append(Fact(f"KV buffer that failed (device {device})", _mib(alloc), "log"))
    if n_ctx:
        numbers.append(Fact("context (n_ctx)", f"{n_ctx:,}", "log"))
    elif implied_ctx:
        numbers.append(Fact("context that KV size implies", fmt_tokens(implied_ctx), "computed"))
    numbers.append(
        Fact("cache type K/V", f"{k_type}/{v_type}", "log" if facts.get("cache_type_k") else "estimated")
    )
    if weights_dev is not None:
        numbers.append(Fact("weights on the first GPU", _mib(weights_dev), "log"))
    if p.get("layers_offload") is not None:
        numbers.append(
            Fact("layers on the GPU", f"{p['layers_offload']}/{p.get('layers_model', '?')}", "log")
        )
    if total_mib is not None:
        numbers.append(Fact("what the GPU offers llama.cpp", _mib(total_mib), total_src))
    if avail is not None:
        numbers.append(Fact("left for the KV cache on that GPU", _mib(max(0.0, avail)), "computed"))
    if per_tok_dev:
        numbers.append(Fact(f"KV per token on device {device}", f"{per_tok_dev / KIB:,.0f} KiB", per_tok_src))
    if kv_tok_all and model is not None:
        numbers.append(
            Fact(
                "KV per token, all layers",
                f"{kv_tok_all / KIB:,.0f} KiB ({model.num_key_value_heads} KV heads x {model.head_dim})",
                "catalog",
            )
        )
        if layers_dev:
            numbers.append(Fact(f"layers whose KV lives on device {device}", str(layers_dev), "computed"))
    if ratio is not None:
        numbers.append(Fact("share of the asked KV that fits", f"{max(0.0, ratio):.0%}", "computed"))
    numbers += _context_facts(facts)

    fixes: list[Fix] = []
    if fit_ctx:
        fixes.append(
            Fix(
                "llama.cpp",
                f"context of {fmt_tokens(fit_ctx)} tokens",
                _llama_cmd(facts, {"-c": str(fit_ctx)}),
                f"KV on device {device}: {fit_ctx:,} x {per_tok_dev / KIB:,.0f} KiB = {_mib(fit_ctx * per_tok_dev / MIB)}, "  # type: ignore[operator]
                f"within the {_mib(avail or 0)} free" + (f" (asked for {n_ctx:,})" if n_ctx else ""),
                "longer prompts are cut or rejected",
                rank=1,
            )
        )
    if fit_q8:
        fixes.append(
            Fix(
                "llama.cpp",
                "q8_0 KV cache with flash attention",
                _llama_cmd(facts, {"-c": str(fit_q8), "-fa": "on", "-ctk": "q8_0", "-ctv": "q8_0"}),
                f"1.06 bytes per value instead of {LLAMACPP_KV_BYTES.get(k_type, 2):g}: {fmt_tokens(fit_q8)} tokens fit",
                "negligible quality loss; needs flash attention",
                rank=2,
            )
        )
    if not fit_ctx and ratio is not None and ratio > 0:
        fixes.append(
            Fix(
                "llama.cpp",
                f"context at most {ratio:.0%} of what you set",
                _llama_cmd(facts, {"-c": "<n_ctx x " + f"{ratio:.2f}" + ">", "-fa": "on"}),
                f"the KV cache scales with n_ctx: {ratio:.0%} of it is about {_mib(ratio * (alloc or 0))}, what device {device} has left",
                "n_ctx is not in the paste: multiply your value (llama-cpp-python / Xinference: the n_ctx setting)",
                rank=1,
            )
        )
        fixes.append(
            Fix(
                "llama.cpp",
                "q8_0 KV cache with flash attention",
                _llama_cmd(facts, {"-fa": "on", "-ctk": "q8_0", "-ctv": "q8_0"}),
                f"about half the KV per token: the context can then be up to {min(1.0, ratio * 1.88):.0%} of what you set",
                "negligible quality loss; needs flash attention",
                rank=2,
            )
        )
    fixes.append(
        Fix(
            "llama.cpp",
            "keep the KV cache in system RAM",
            _llama_cmd(facts, {"-nkvo": ""}),
            f"frees the whole KV cache from the GPU ({_mib(alloc)} in RAM instead)"
            if alloc
            else "the KV cache moves to RAM",
            "attention then runs on the CPU: much slower generation",
            rank=4,
        )
    )
    fixes.append(
        Fix(
            "llama.cpp",
            "let --fit choose the context (no -c)",
            _llama_cmd(facts, {"-c": None, "-fit": None, "--fit": "on"}),
            "llama.cpp (b7407+) shrinks the context to what fits, down to 4,096",
            "only without an explicit -c",
            rank=5,
        )
    )
    notes = []
    if model is None:
        notes.append(
            "The model is not in the paste (or my catalog): per-token KV and the exact -c need n_ctx or the model name."
        )
    if not n_ctx:
        notes.append(
            "n_ctx is not in the paste ('llama_new_context_with_model: n_ctx = ...'); under llama-cpp-python / Xinference "
            "it is the n_ctx setting of the model launch."
        )
    picture = None
    if total_mib and alloc and weights_dev:
        segs = [
            MemorySegment("weights", weights_dev / 1024, "log"),
            MemorySegment("compute buffers", compute_est / 1024, "estimated"),
            MemorySegment("kv cache", alloc / 1024, "log"),
        ]
        picture = MemoryPicture(total_mib / 1024, segs, f"device {device} if the KV cache had been allocated")
    hw = (
        bigger_hardware(facts, n_ctx, engine="llama.cpp")
        if model is not None and ratio is not None and ratio < 0.1
        else None
    )
    return _reply(
        title,
        summary,
        short,
        numbers,
        fixes,
        notes,
        picture,
        [hw],
        data={
            "fit_ctx": fit_ctx,
            "fit_ctx_q8": fit_q8,
            "kv_per_token_device": per_tok_dev,
            "kv_room_mib": avail,
        },
    )


# ------------------------------------------------------------------------------------------ Ollama


def ollama_gpu_oom(facts: PasteFacts) -> Reply:
    p = facts.params
    sig = facts.root.signature
    n_ctx = facts.get("n_ctx")
    parallel = int(facts.get("n_parallel") or 1)
    num_ctx = (
        int(n_ctx) // parallel if n_ctx and "--ctx-size" in str(facts.context.get("command") or "") else n_ctx
    )
    num_gpu = p.get("num_gpu")
    alloc = _llama_alloc_mib(facts)
    tag = None
    if facts.model is not None:
        tag = facts.model.variant.ollama if facts.model.variant and facts.model.variant.ollama else None
        tag = tag or next((v.ollama for v in facts.model.model.variants if v.ollama), None)
    named = str(facts.context.get("model") or "")
    if (
        not tag
        and named
        and not named.startswith(("/", ".", "~"))
        and "blobs" not in named
        and "\\" not in named
    ):
        tag = named
    total, total_src = _total(facts)
    kv_tok = _llama_kv_per_token(facts)
    gguf = _gguf_bytes(facts)
    fit_ctx = None
    if kv_tok and gguf and total:
        room = (total - LLAMACPP_CUDA_CONTEXT_GIB - FIT_MARGIN_MIB / 1024 - 0.5) * GIB - gguf
        fit_ctx = round_down_clean(int(room / kv_tok / parallel)) if room > 0 else 0
    if fit_ctx:
        new_ctx, ctx_why = fit_ctx, "what fits next to the weights"
    elif total:
        new_ctx, ctx_why = default_num_ctx(total, 1 << 20), f"Ollama's own default for {_gib(total)} of VRAM"
    else:
        new_ctx, ctx_why = (
            (round_down_clean(int(num_ctx) // 4) if num_ctx else 8192),
            "a quarter of the KV cache",
        )
    if num_ctx and new_ctx >= int(num_ctx):
        new_ctx, ctx_why = round_down_clean(int(num_ctx) // 2), "half the KV cache"

    if sig.endswith("memory_layout"):
        title = "Ollama: no split of the model between GPU and CPU fits" + (
            f" (num_gpu = {num_gpu} forced)" if num_gpu else ""
        )
    elif sig.endswith("insufficient_memory"):
        title = "Ollama engine: not enough memory for weights + KV cache + graph"
    else:
        title = "Ollama: llama-server ran out of memory while starting"
    if num_ctx:
        title += f", context {int(num_ctx):,}"
    sentences = [
        "Ollama starts the model with a fixed context (num_ctx x OLLAMA_NUM_PARALLEL, passed as -c), so llama.cpp "
        "can move layers to the CPU but cannot shrink the KV cache; weights + KV cache + compute graph did not fit."
    ]
    if num_gpu:
        sentences.append(
            f"num_gpu = {num_gpu} forces that many layers onto the GPU, which is more than fits."
        )
    if num_ctx and int(num_ctx) >= 32768:
        sentences.append(
            f"A {int(num_ctx):,}-token context is Ollama's default on 23+ GiB (32k) or 47+ GiB (256k) of VRAM and "
            "often the whole problem."
        )
    summary = " ".join(sentences)
    numbers: list[Fact] = []
    if num_ctx:
        numbers.append(Fact("context (num_ctx)", f"{int(num_ctx):,}", "log"))
    if parallel > 1:
        numbers.append(Fact("OLLAMA_NUM_PARALLEL", str(parallel), "log"))
    if num_gpu:
        numbers.append(Fact("num_gpu (layers forced on the GPU)", str(num_gpu), "log"))
    if alloc:
        numbers.append(Fact("allocation that failed", _mib(alloc), "log"))
    if total:
        numbers.append(Fact("GPU memory", _gib(total), total_src))
    if kv_tok:
        numbers.append(Fact("KV per token", f"{kv_tok / KIB:,.0f} KiB", "catalog"))
    if fit_ctx is not None:
        numbers.append(Fact("context that fits next to the weights", fmt_tokens(fit_ctx), "computed"))
    numbers += _context_facts(facts)

    fixes = [
        Fix(
            "ollama",
            f"context of {fmt_tokens(new_ctx)} tokens",
            ollama_env_command({"OLLAMA_CONTEXT_LENGTH": str(new_ctx)}, tag),
            f"{ctx_why}: the KV cache for {fmt_tokens(new_ctx)} tokens"
            + (f" ({_gib(new_ctx * kv_tok * parallel / GIB)})" if kv_tok else "")
            + " (per request: /set parameter num_ctx "
            + str(new_ctx)
            + ")",
            "Ollama silently drops the oldest messages beyond it",
            rank=1,
        ),
        Fix(
            "ollama",
            "q8_0 KV cache",
            ollama_env_command({"OLLAMA_KV_CACHE_TYPE": "q8_0"}, tag),
            "about half the KV cache at the same context",
            "negligible quality loss; before Ollama 0.30 also set OLLAMA_FLASH_ATTENTION=1",
            rank=2,
        ),
    ]
    if parallel > 1:
        fixes.append(
            Fix(
                "ollama",
                "one request at a time",
                ollama_env_command({"OLLAMA_NUM_PARALLEL": "1"}, tag),
                f"KV cache / {parallel}",
                "requests queue",
                rank=2,
            )
        )
    if num_gpu:
        fewer = max(1, int(num_gpu) * 3 // 4)
        fixes.append(
            Fix(
                "ollama",
                f"fewer layers on the GPU (num_gpu {fewer}), or drop num_gpu",
                f"ollama run {tag or '<model>'}\n>>> /set parameter num_gpu {fewer}",
                "without num_gpu Ollama (or llama.cpp's --fit) picks the layer count that fits",
                "layers on the CPU are slower",
                rank=1,
            )
        )
    smaller = _smaller_checkpoints(facts, gguf=True)
    for v, size in smaller[:1]:
        if v.ollama:
            fixes.append(
                Fix(
                    "ollama",
                    f"smaller tag ({v.ollama})",
                    f"ollama run {v.ollama}",
                    f"weights {_gib(size / GIB)}",
                    "lower quality",
                    rank=3,
                )
            )
    smaller_model = _smaller_sibling(facts)
    if smaller_model is not None:
        sibling, variant = smaller_model
        size = variant_weight_bytes(sibling, variant) / GIB
        now = _gguf_bytes(facts)
        fixes.append(
            Fix(
                "ollama",
                f"a smaller model of the family ({variant.ollama})",
                f"ollama run {variant.ollama}",
                f"{sibling.params_b:g}B instead of {facts.model.model.params_b:g}B parameters: weights about "  # type: ignore[union-attr]
                f"{_gib(size)}" + (f" instead of {_gib(now / GIB)}" if now else ""),
                "a smaller model answers worse",
                rank=3,
            )
        )
    elif not smaller:
        fixes.append(
            Fix(
                "ollama",
                "a smaller quantization tag",
                f"ollama run {(tag or '<model>').split(':')[0]}:<size>-q4_K_M",
                "Q4_K_M is about 4.9 bits per weight (Q8_0: 8.5)",
                "lower quality below Q4",
                rank=3,
            )
        )
    notes = ["`ollama ps` shows the split (e.g. 48%/52% CPU/GPU) and the context of the loaded model."]
    return _reply(
        title,
        summary,
        "Weights + KV cache + graph do not fit; Ollama cannot shrink the context itself.",
        numbers,
        fixes,
        notes,
        data={"suggested_num_ctx": new_ctx},
    )


# ------------------------------------------------------------------------------------------ vLLM Mamba blocks


def vllm_mamba_blocks(facts: PasteFacts) -> Reply:
    """``max_num_seqs (N) exceeds available Mamba cache blocks (M)`` (a kv_cache_too_small@vllm finding;
    kv.py owns that key and can dispatch here on ``facts.root.signature``)."""
    p = facts.params
    seqs = int(p.get("max_num_seqs") or facts.get("max_num_seqs") or 0)
    blocks = int(p.get("mamba_blocks") or 0)
    command = facts.context.get("command")
    model_name = facts.context.get("model")
    total, total_src = _total(facts)
    util, util_src = _first(facts, "gpu_memory_utilization")
    version = facts.vllm_version
    if util is None:
        util, util_src = vllm_default_utilization(version), "estimated"
    util = float(util)
    model = _model(facts)
    tp = int(facts.get("tp") or 1)
    state = None
    if model is not None:
        layout = vllm_layout(model, facts.get("kv_cache_dtype") or "auto", tp=tp)
        state = layout.state_bytes_per_seq or None
    growth = seqs / blocks if blocks else None
    title = f"vLLM: max_num_seqs {seqs:,} is above the {blocks:,} Mamba state blocks the cache holds"
    summary = (
        "A hybrid (Mamba / linear-attention) model keeps one fixed-size state block per running sequence, taken from "
        f"the KV-cache pool. After the weights and the activation peak the pool holds {blocks:,} of them, but "
        f"max_num_seqs is {seqs:,} and full CUDA-graph capture needs a block for every decode sequence, so startup "
        "stops. The cache is not empty; it is too small for the configured concurrency."
    )
    numbers = [
        Fact("max_num_seqs", f"{seqs:,}", "log"),
        Fact("Mamba cache blocks available", f"{blocks:,}", "log"),
        Fact("gpu_memory_utilization", f"{util:g}", util_src),
    ]
    if total:
        numbers.append(Fact("GPU memory", _gib(total), total_src))
    if state:
        numbers.append(Fact("state per sequence (per GPU)", _size(state / GIB), "catalog"))
    numbers += _context_facts(facts)
    target = blocks if blocks < 16 else blocks // 16 * 16
    fixes = [
        Fix(
            "vllm",
            f"--max-num-seqs {target}",
            vllm_command(command, model_name, {"--max-num-seqs": str(target)}),
            f"every decode sequence gets its state block ({target} <= {blocks})",
            f"at most {target} requests run at once (was {seqs})",
            rank=1,
        )
    ]
    if growth and total:
        extra_gib = (seqs - blocks) * state / GIB if state else None
        if extra_gib is not None:
            new_util = _ceil2(util + extra_gib * 1.1 / total)
            why = f"{seqs - blocks} more state blocks x {_size(state / GIB)} = {_gib(extra_gib)}"  # type: ignore[operator]
        else:
            new_util = None
            why = ""
        if new_util is not None and new_util <= MAX_SAFE_UTILIZATION:
            fixes.append(
                Fix(
                    "vllm",
                    f"raise gpu_memory_utilization to {new_util:g}",
                    vllm_command(command, model_name, {"--gpu-memory-utilization": f"{new_util:g}"}),
                    why,
                    "only if nothing else uses this GPU",
                    rank=2,
                )
            )
    elif growth:
        fixes.append(
            Fix(
                "vllm",
                "a larger cache pool",
                vllm_command(
                    command,
                    model_name,
                    {"--gpu-memory-utilization": f"{min(MAX_SAFE_UTILIZATION, _ceil2(util + 0.03)):g}"},
                ),
                f"the pool must grow about {growth:.2f}x for {seqs:,} sequences"
                + (
                    f" ({seqs - blocks} more state blocks x {_size(state / GIB)} = about "
                    f"{_gib((seqs - blocks) * state / GIB)} per GPU)"
                    if state
                    else ""
                )
                + "; each 0.01 of utilization adds 1% of the GPU's memory to it",
                "only if nothing else uses this GPU",
                rank=2,
            )
        )
    fixes.append(
        Fix(
            "vllm",
            "run without CUDA graphs",
            vllm_command(command, model_name, {"--enforce-eager": ""}),
            "no capture needs a block per decode sequence; the scheduler then caps concurrency at the blocks it has",
            "decode is roughly 10-30% slower",
            rank=3,
        )
    )
    return _reply(
        title,
        summary,
        f"{blocks:,} Mamba state blocks cannot serve max_num_seqs {seqs:,}.",
        numbers,
        fixes,
        [],
    )


# ------------------------------------------------------------------------------------------ the table


RULES = {
    "no_kv_memory@vllm": vllm_no_kv_memory,
    "no_kv_memory@sglang": sglang_no_kv_memory,
    "no_kv_memory@tgi": tgi_warmup_no_memory,
    "kv_cache_too_small@tgi": tgi_kv_cache_too_small,
    "gpu_oom@pytorch": pytorch_gpu_oom,
    "gpu_oom@vllm": vllm_gpu_oom,
    "gpu_oom@llama.cpp": llamacpp_gpu_oom,
    "gpu_oom@sglang": sglang_gpu_oom,
    "gpu_oom@tgi": tgi_gpu_oom,
    "gpu_oom@ollama": ollama_gpu_oom,
    "kv_alloc_failed": llamacpp_kv_alloc_failed,
}
