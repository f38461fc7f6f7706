"""TGI's memory at warm-up: the prefill batch that does not fit, and a KV pool smaller than one request."""

from __future__ import annotations

from bot.diagnosis.commands import flag_argument, tgi_command
from bot.diagnosis.common import bigger_hardware, diagnosis_reply
from bot.diagnosis.engine_facts import (
    catalog_weights_gib,
    evidence_number,
    gpu_total,
    model_gpu_facts,
    model_spec,
)
from bot.diagnosis.fixes import gpu_processes_fix, tgi_quantize_fix, tgi_shard_fix
from bot.diagnosis.numbers import fmt_gib, fmt_size
from bot.facts import PasteFacts
from bot.reply import Fact, Fix, Reply
from calculator.catalog import ModelSpec
from calculator.kv import vllm_layout
from calculator.units import GIB, KIB, fmt_tokens, round_down_clean
from calculator.vllm import ACTIVATION_FACTOR


def _activation_bytes_per_token(model: ModelSpec, tp: int) -> float:
    inter = model.intermediate_size or 4 * model.hidden_size
    if model.is_moe and model.moe_intermediate_size:
        inter = model.moe_intermediate_size * (model.experts_per_token or 8)
    return ACTIVATION_FACTOR * inter * model.dtype_bytes / max(1, tp)


def _max_total_fix(
    facts: PasteFacts, new_total: int, new_input: int, new_prefill: int, effect: str, cost: str, rank: int
) -> Fix:
    """Shorter requests: --max-total-tokens with the input and prefill limits that must follow it."""
    changes: dict[str, str | None] = {
        "--max-total-tokens": str(new_total),
        "--max-input-tokens": str(new_input),
        "--max-batch-prefill-tokens": str(new_prefill),
    }
    return Fix("tgi", f"--max-total-tokens {new_total}", tgi_command(facts, changes), effect, cost, rank=rank)


def tgi_warmup_no_memory(facts: PasteFacts) -> Reply:
    p = facts.params
    prefill = int(p.get("max_prefill_tokens") or facts.get("max_num_batched_tokens") or 4096)
    max_input = (
        evidence_number(facts, r"max_input_length=([0-9]+)")
        or facts.get("max_input_tokens")
        or flag_argument(facts.context.get("command"), "--max-input-tokens", "--max-input-length")
    )
    max_input = int(max_input) if max_input else None
    max_total = facts.get("max_model_len")
    tp = int(facts.get("tp") or 1)
    total, total_src = gpu_total(facts)
    model = model_spec(facts)
    weights = catalog_weights_gib(facts, tp)
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
            f" (about {fmt_size(act_gib)} for this model)"
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
        sentences.append(f"The weights take about {fmt_gib(weights)} per GPU of {fmt_gib(total)}.")
    summary = " ".join(sentences)
    short = f"TGI's {fmt_tokens(prefill)}-token warm-up prefill does not fit next to the weights."

    numbers = [Fact("--max-batch-prefill-tokens", fmt_tokens(prefill), "log")]
    if max_input:
        numbers.append(Fact("--max-input-tokens", fmt_tokens(max_input), "log"))
    if max_total:
        numbers.append(Fact("--max-total-tokens", fmt_tokens(int(max_total)), "log"))
    if total:
        numbers.append(Fact("GPU memory", fmt_gib(total), total_src))
    if weights is not None:
        numbers.append(Fact("weights (per shard)", fmt_gib(weights), "estimated"))
    if act_gib is not None:
        numbers.append(Fact("activations of the prefill batch", fmt_size(act_gib), "estimated"))
    numbers += model_gpu_facts(facts)

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
                tgi_command(facts, changes),
                f"about {target / prefill:.0%} of the warm-up activations"
                + (f" ({fmt_size(target * per_tok / GIB)})" if per_tok else "")
                + (f"; must stay >= --max-input-tokens ({max_input})" if max_input else ""),
                cost,
                rank=3 if small else 1,
            )
        )
    if max_total and int(max_total) > 2048:
        new_total = round_down_clean(int(max_total) // 2)
        new_input = min(max_input or new_total - 1, new_total - 1)
        fixes.append(
            _max_total_fix(
                facts,
                new_total,
                new_input,
                max(new_input, min(prefill, new_total)),
                "shorter requests: less KV per request and a smaller prefill budget is allowed",
                "longer prompts are rejected",
                4,
            )
        )
    fixes.append(
        tgi_quantize_fix(
            facts,
            "about a quarter of 16-bit weights"
            + (f": {fmt_gib(weights)} -> about {fmt_gib(weights / 4 + 0.3)}" if weights else ""),
            "slower kernels and some quality loss; awq/gptq checkpoints (--quantize awq/gptq) are faster",
            1 if small else 2,
        )
    )
    fixes.append(tgi_shard_fix(facts, tp, "halves the weights per GPU", 2 if small else 3))
    fixes.append(
        gpu_processes_fix(
            "check what else holds the GPU",
            "another process (a second shard launcher, a notebook) leaves TGI less than the card",
            5,
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
    data = {"suggested_prefill_tokens": target}
    return diagnosis_reply(title, summary, numbers, fixes, notes, short, [hw], data=data, ranked=True)


def tgi_kv_cache_too_small(facts: PasteFacts) -> Reply:
    p = facts.params
    sig = facts.root.signature
    max_total = p.get("max_total_tokens") or facts.get("max_model_len")
    max_total = int(max_total) if max_total else None
    kv_tokens = p.get("kv_tokens")
    prefill = p.get("max_batch_prefill_tokens") or facts.get("max_num_batched_tokens")
    prefill = int(prefill) if prefill else None
    tp = int(facts.get("tp") or 1)
    total, total_src = gpu_total(facts)
    model = model_spec(facts)
    bpt = None
    if model is not None:
        bpt = vllm_layout(model, "auto", tp=tp).all_attention_bytes_per_token
    weights = catalog_weights_gib(facts, tp)
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
            numbers.append(Fact("KV pool size", fmt_gib(fit * bpt / GIB), "computed"))
    if total:
        numbers.append(Fact("GPU memory", fmt_gib(total), total_src))
    numbers += model_gpu_facts(facts)

    fixes: list[Fix] = []
    if fit and fit >= 512:
        new_total = round_down_clean(fit)
        new_input = new_total - 512 if new_total > 2048 else new_total // 2
        new_prefill = max(new_input, min(prefill or new_input, new_total))
        fixes.append(
            _max_total_fix(
                facts,
                new_total,
                new_input,
                new_prefill,
                f"one request of up to {fmt_tokens(new_total)} tokens fits the {fmt_tokens(fit)}-token pool "
                f"(prompts up to {fmt_tokens(new_input)}, at least 512 tokens of answer)",
                "longer requests are rejected; only one request of that length at a time",
                1,
            )
        )
    max_input = flag_argument(facts.context.get("command"), "--max-input-tokens", "--max-input-length")
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
            freed = f": about {fmt_size(gib)} of activations = roughly {fmt_tokens(int(gib * GIB / bpt))} more KV tokens"
        fixes.append(
            Fix(
                "tgi",
                f"--max-batch-prefill-tokens {new_prefill}",
                tgi_command(facts, changes),
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
                tgi_command(facts, {"--cuda-memory-fraction": "0.95"}),
                f"{0.95 - float(mem_frac):.0%} more of the card for the KV pool"
                + (f" ({fmt_gib((0.95 - float(mem_frac)) * total)})" if total else ""),
                "only if nothing else uses this GPU",
                rank=3,
            )
        )
    fixes.append(
        tgi_quantize_fix(
            facts,
            "the memory the weights no longer take goes to the KV pool"
            + (f" (about {fmt_gib(weights * 0.7)})" if weights is not None else ""),
            "slower kernels and some quality loss; awq/gptq checkpoints are faster",
            4,
        )
    )
    fixes.append(
        tgi_shard_fix(
            facts,
            tp,
            "each shard holds half the weights and half the KV heads: the pool roughly doubles or more",
            5,
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
    data = {"kv_tokens": fit}
    return diagnosis_reply(title, summary, numbers, fixes, notes, short, [hw], data=data, ranked=True)


RULES = {
    "no_kv_memory@tgi": tgi_warmup_no_memory,
    "kv_cache_too_small@tgi": tgi_kv_cache_too_small,
}
