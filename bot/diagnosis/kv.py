"""kv_cache_too_small: vLLM's KV cache cannot hold one request of max_model_len."""

from __future__ import annotations

from bot.diagnosis.common import bigger_hardware, diagnosis_reply, log_facts, to_fix
from bot.diagnosis.engine_facts import model_gpu_facts, model_spec, vllm_kv_bytes_per_token, vllm_version_note
from bot.diagnosis.gguf import first_ollama_tag
from bot.diagnosis.mamba import vllm_mamba_blocks
from bot.facts import PasteFacts
from bot.reply import Fact, Fix, MemoryPicture, MemorySegment, Reply
from calculator.catalog import variant_weight_bytes
from calculator.fit import (
    KVSituation,
    Remedy,
    llamacpp_kv_remedies,
    ollama_kv_remedies,
    sglang_kv_remedies,
    vllm_kv_remedies,
)
from calculator.llamacpp import LlamaCppConfig, llamacpp_budget
from calculator.units import GIB, KIB, fmt_tokens
from calculator.versions import vllm_default_utilization, vllm_subtracts_cudagraph_estimate
from calculator.vllm import estimate_cudagraph_gib


def _bytes_per_token(facts: PasteFacts, want: int | None) -> tuple[float | None, str]:
    p = facts.params
    if p.get("kv_needed_gib") and want:
        return p["kv_needed_gib"] * GIB / want, "log"
    bpt = vllm_kv_bytes_per_token(model_spec(facts), facts, facts.get("tp") or 1)
    if bpt is not None:
        return bpt, "catalog"
    if p.get("kv_cache_gib") and p.get("kv_tokens"):
        return p["kv_cache_gib"] * GIB / p["kv_tokens"], "log"
    return None, "estimated"


def _fit_tokens(facts: PasteFacts, want: int | None, bpt: float | None) -> tuple[int | None, str]:
    p = facts.params
    if p.get("estimated_max_model_len"):
        return p["estimated_max_model_len"], "log"
    if p.get("kv_tokens"):
        return p["kv_tokens"], "log"
    if p.get("kv_cache_gib") and p.get("kv_needed_gib") and want:
        return int(want * p["kv_cache_gib"] / p["kv_needed_gib"]), "computed"
    if p.get("kv_cache_gib") and bpt:
        return int(p["kv_cache_gib"] * GIB / bpt), "computed"
    return None, "estimated"


def kv_cache_too_small(facts: PasteFacts) -> Reply:
    if facts.root.signature == "vllm.kv_cache_too_small.mamba_blocks":
        return vllm_mamba_blocks(facts)
    p = facts.params
    want = p.get("max_model_len") or facts.context.get("max_model_len")
    bpt, bpt_src = _bytes_per_token(facts, want)
    fit, fit_src = _fit_tokens(facts, want, bpt)
    kv_gib = p.get("kv_cache_gib")
    kv_src = "log"
    if kv_gib is None and fit and bpt:
        kv_gib, kv_src = fit * bpt / GIB, "computed"
    total = p.get("total_gib") or facts.context.get("gpu_total_gib")
    total_src = "log"
    if total is None and facts.gpu is not None:
        total, total_src = facts.gpu.total_gib, "catalog"
    util = p.get("gpu_memory_utilization") or facts.context.get("gpu_memory_utilization")
    util_src = "log"
    if util is None:
        util, util_src = vllm_default_utilization(facts.vllm_version), "estimated"
    version = facts.vllm_version
    model_name = facts.context.get("model")
    command = facts.context.get("command")
    tp = facts.get("tp") or 1

    title = "vLLM: the KV cache is too small for max_model_len"
    if fit and want:
        title = (
            f"vLLM: the KV cache holds {fmt_tokens(fit)} tokens, max_model_len asks for {fmt_tokens(want)}"
        )

    sentences = [
        "vLLM sizes the KV cache from what is left of total memory x gpu_memory_utilization after the "
        "weights, the activation peak and (from v0.21) the CUDA-graph reserve."
    ]
    if kv_gib is not None and fit:
        sentences.append(
            f"Here that left {kv_gib:.2f} GiB, which holds {fmt_tokens(fit)} tokens of this model."
        )
    elif fit:
        sentences.append(f"What was left holds {fmt_tokens(fit)} tokens.")
    if want:
        sentences.append(
            f"max_model_len is {fmt_tokens(want)}, so not even one full-length request fits and the engine refuses to start."
        )
    summary = " ".join(sentences)
    short = "The KV cache cannot hold one request of max_model_len."
    if fit and want:
        short = f"What is left for the KV cache holds {fmt_tokens(fit)} tokens; max_model_len asks for {fmt_tokens(want)}."

    numbers: list[Fact] = []
    if want:
        numbers.append(
            Fact("max_model_len asked for", fmt_tokens(want), "log" if p.get("max_model_len") else "given")
        )
    if fit:
        numbers.append(Fact("longest request that fits", fmt_tokens(fit), fit_src))
    if kv_gib is not None:
        numbers.append(Fact("KV cache budget (per GPU)", f"{kv_gib:.2f} GiB", kv_src))
    if p.get("kv_needed_gib"):
        numbers.append(Fact("KV needed for max_model_len", f"{p['kv_needed_gib']:.2f} GiB", "log"))
    elif want and bpt:
        numbers.append(Fact("KV needed for max_model_len", f"{want * bpt / GIB:.2f} GiB", "computed"))
    if bpt:
        numbers.append(Fact("KV per token (per GPU)", f"{bpt / KIB:,.0f} KiB", bpt_src))
    if total:
        numbers.append(Fact("GPU memory (total seen by vLLM)", f"{total:.2f} GiB", total_src))
    numbers.append(Fact("gpu_memory_utilization", f"{util:g}", util_src))
    numbers += log_facts(
        facts,
        {
            "weights_gib": "weights",
            "activation_gib": "activation peak",
            "non_torch_gib": "non-torch memory",
            "gpu_blocks": "KV blocks",
        },
    )
    numbers += model_gpu_facts(facts)

    graphs = None
    if facts.model is not None:
        graphs = estimate_cudagraph_gib(facts.model.model, tp, facts.get("pp") or 1)
    picture = _picture(facts, total, util, kv_gib, graphs, version, tp)

    fixes: list[Fix] = []
    notes: list[str] = []
    if fit:
        situation = KVSituation(
            fit_len=fit,
            max_model_len=want,
            kv_gib=kv_gib,
            bytes_per_token=bpt,
            total_gib=total,
            utilization=util,
            version=version,
            gpu=facts.gpu,
            model=facts.model.model if facts.model else None,
            tp=tp,
            kv_cache_dtype=facts.get("kv_cache_dtype") or "auto",
            enforce_eager=bool(facts.get("enforce_eager")),
            cudagraph_gib=graphs,
            base_command=command,
            model_name=model_name,
        )
        fixes += [to_fix(r) for r in vllm_kv_remedies(situation)]
        fixes += [to_fix(r) for r in _gguf_fixes(facts, fit, want, total)]
        fixes += [to_fix(r) for r in sglang_kv_remedies(fit, want, None, model_name)]
        if facts.gpu is None:
            notes.append(
                "I could not tell the GPU from the paste: fp8 KV cache works on Ada, Hopper and Blackwell (and MI300)."
            )
    # a wording printed by known versions names them; any other wording assumes a current release
    vllm_version_note(
        facts, notes, None if facts.root.versions else "flags and defaults assume a current release."
    )
    if bpt_src == "catalog":
        notes.append(
            "KV per token is computed from the model's config.json (catalog), not read from your log."
        )

    data = {"fit_tokens": fit, "max_model_len": want, "kv_bytes_per_token": bpt, "kv_cache_gib": kv_gib}
    # when software cannot bridge it: the smallest setup that serves the asked-for length
    hardware = bigger_hardware(facts, want) if want and fit is not None and fit < want else None
    return diagnosis_reply(
        title,
        summary,
        numbers,
        fixes,
        notes,
        short,
        sections=[hardware],
        memory=picture,
        data=data,
        numbers_always=True,
    )


RULES = {"kv_cache_too_small@vllm": kv_cache_too_small}


def _gguf_fixes(facts: PasteFacts, fit: int, want: int | None, total: float | None) -> list[Remedy]:
    """llama.cpp and Ollama: the same model in the same memory.  With the model and GPU known we
    compute llama.cpp's own budget (no utilization reserve, small compute buffers); otherwise we
    reuse vLLM's KV budget, which is conservative for llama.cpp."""
    fit_ctx = fit
    if facts.model is not None and total:
        model = facts.model.model
        variant = facts.model.variant
        weights = variant_weight_bytes(model, variant)
        budget = llamacpp_budget(model, weights, total, LlamaCppConfig(n_ctx=None))
        if budget.n_ctx_max_fit > 0:
            fit_ctx = budget.n_ctx_max_fit
    tag = first_ollama_tag(facts)
    return llamacpp_kv_remedies(fit_ctx, want) + ollama_kv_remedies(fit_ctx, want, tag)


def _picture(facts, total, util, kv_gib, graphs, version, tp) -> MemoryPicture | None:
    if not total or kv_gib is None:
        return None
    p = facts.params
    requested = total * util
    segments: list[MemorySegment] = []
    weights = p.get("weights_gib")
    w_src = "log"
    if weights is None and facts.model is not None:
        weights, w_src = variant_weight_bytes(facts.model.model, facts.model.variant) / tp / GIB, "estimated"
    counted_graphs = graphs if (graphs and vllm_subtracts_cudagraph_estimate(version)) else 0.0
    if weights is not None:
        segments.append(MemorySegment("weights", weights, w_src))
        rest = requested - weights - kv_gib - counted_graphs
        act = p.get("activation_gib")
        if act is not None:
            segments.append(MemorySegment("activations", act, "log"))
            rest -= act
            if p.get("non_torch_gib") is not None:
                segments.append(MemorySegment("non-torch", p["non_torch_gib"], "log"))
                rest -= p["non_torch_gib"]
            if rest > 0.05:
                segments.append(MemorySegment("other", rest, "estimated"))
        elif rest > 0:
            segments.append(MemorySegment("activations+other", rest, "estimated"))
        if counted_graphs:
            segments.append(MemorySegment("cuda graphs", counted_graphs, "estimated"))
    else:
        segments.append(MemorySegment("weights+activations+graphs", max(0.0, requested - kv_gib), "computed"))
    segments.append(MemorySegment("kv cache", kv_gib, "log" if "kv_cache_gib" in p else "computed"))
    segments.append(MemorySegment("not used (1-util)", max(0.0, total - requested), "computed"))
    return MemoryPicture(total_gib=total, segments=segments, title="GPU memory as vLLM budgeted it")
