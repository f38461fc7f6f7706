"""memory_report for SGLang's KV pool: a shared pool, not a per-request limit."""

from __future__ import annotations

from bot.diagnosis.common import diagnosis_reply, known_cause
from bot.diagnosis.numbers import fmt_gib_or_mib
from bot.facts import PasteFacts
from bot.reply import Fact, Fix, Reply
from calculator.commands import sglang_command
from calculator.units import GIB, KIB, fmt_tokens


def sglang_report(facts: PasteFacts) -> Reply:
    p = facts.params
    pool = p.get("kv_tokens")
    ctx = p.get("context_length") or facts.context.get("context_length")
    mrr = p.get("max_running_requests")
    avail = p.get("available_gpu_mem_gib")
    numbers: list[Fact] = []
    if pool:
        numbers.append(Fact("KV pool (max_total_num_tokens)", fmt_tokens(pool), "log"))
    if ctx:
        numbers.append(Fact("context length per request", fmt_tokens(ctx), "log"))
    if mrr:
        numbers.append(Fact("max_running_requests", str(mrr), "log"))
    for key, label in (
        ("chunked_prefill_size", "chunked_prefill_size"),
        ("max_prefill_tokens", "max_prefill_tokens"),
    ):
        if p.get(key):
            numbers.append(Fact(label, fmt_tokens(p[key]), "log"))
    if avail is not None:
        numbers.append(Fact("free after the pool (available_gpu_mem)", fmt_gib_or_mib(avail), "log"))
    if p.get("kv_cache_gib") or (p.get("k_cache_gib") and p.get("v_cache_gib")):
        kv = p.get("kv_cache_gib") or p["k_cache_gib"] + p["v_cache_gib"]
        numbers.append(Fact("KV pool size", fmt_gib_or_mib(kv), "log"))
        if pool:
            numbers.append(Fact("KV per token", f"{kv * GIB / pool / KIB:,.0f} KiB", "computed"))
    full = pool / ctx if pool and ctx else None
    if full is not None:
        numbers.append(Fact("full-length requests at once", f"{full:.2f}", "computed"))
    avg = pool // mrr if pool and mrr else None
    if avg:
        numbers.append(Fact("tokens per request with all running", fmt_tokens(avg), "computed"))
    title = "SGLang: the KV pool and batching limits"
    if p.get("weights_gib") is not None and p.get("avail_after_weights_gib") is not None and not pool:
        title = (
            f"SGLang: the weights take {fmt_gib_or_mib(p['weights_gib'])}; {fmt_gib_or_mib(p['avail_after_weights_gib'])} was free "
            "after loading them"
        )
    elif p.get("avail_after_pool_gib") is not None and not pool:
        title = f"SGLang: {fmt_gib_or_mib(p['avail_after_pool_gib'])} stayed free after the KV pool"
    elif p.get("pre_load_avail_gib") is not None and not pool:
        title = f"SGLang: {fmt_gib_or_mib(p['pre_load_avail_gib'])} free before the weights loaded"
    elif pool and not ctx:
        title = f"SGLang: a KV pool of {fmt_tokens(pool)} tokens"
    if pool and ctx:
        title = f"SGLang: a KV pool of {fmt_tokens(pool)} tokens — {full:.2f} requests of the full {fmt_tokens(ctx)}-token context at once"
    sentences = []
    if pool:
        sentences.append(
            f"max_total_num_tokens={fmt_tokens(pool)} is the whole KV pool on each GPU, shared by every running request — "
            "the total, not a per-request limit."
        )
    if ctx and full is not None:
        sentences.append(
            f"One request may use up to context_len {fmt_tokens(ctx)} tokens, so about {int(full)} full-length requests fit "
            "at once; shorter ones share the pool"
            + (
                f", and with all {mrr} max_running_requests active each gets about {fmt_tokens(avg)} tokens."
                if avg
                else "."
            )
        )
    if avail is not None:
        sentences.append(
            f"available_gpu_mem={avail:g} GB is what stayed free after the pool (SGLang prints GiB as 'GB'): the "
            "headroom for activations and CUDA graphs."
        )
    if not sentences:
        sentences.append(known_cause(facts))
    for key, label in (
        ("weights_gib", "weights"),
        ("avail_after_weights_gib", "free after the weights"),
        ("avail_after_pool_gib", "free after the KV pool"),
        ("pre_load_avail_gib", "free before loading"),
    ):
        if p.get(key) is not None:
            numbers.append(Fact(label, fmt_gib_or_mib(p[key]), "log"))
    fixes: list[Fix] = []
    command = facts.context.get("command")
    model_name = facts.context.get("model")
    mfs = facts.context.get("mem_fraction_static")
    if avail is not None and avail > 6:
        new = round(min(0.95, (mfs or 0.85) + 0.05), 2)
        fixes.append(
            Fix(
                "sglang",
                f"--mem-fraction-static {new}" if mfs else "--mem-fraction-static +0.05",
                sglang_command(command, model_name, {"--mem-fraction-static": str(new)})
                + ("" if mfs else "   # your current value + 0.05 (0.9 if it is 0.85)"),
                f"{avail:g} GiB free after the pool is more than activations and graphs usually need: +0.05 of the GPU "
                "goes to the pool",
                "less headroom; if prefill OOMs, lower --chunked-prefill-size",
                2,
            )
        )
    if full is not None and full < 1:
        fixes.append(
            Fix(
                "sglang",
                f"--context-length {fmt_tokens(int(pool * 0.9) // 1024 * 1024)}",
                sglang_command(
                    command, model_name, {"--context-length": str(int(pool * 0.9) // 1024 * 1024)}
                ),
                "a full-length request fits the pool",
                "shorter requests only",
                1,
            )
        )
    data = {"kv_tokens": pool, "context_length": ctx, "full_requests": full, "max_running_requests": mrr}
    return diagnosis_reply(title, " ".join(sentences), numbers, fixes, [], data=data)
