"""vLLM's Mamba state blocks: max_num_seqs above the blocks the cache holds (dispatched from kv.py)."""

from __future__ import annotations

from bot.diagnosis.common import diagnosis_reply
from bot.diagnosis.engine_facts import gpu_total, model_gpu_facts, model_spec, vllm_utilization
from bot.diagnosis.fixes import no_cuda_graphs_fix
from bot.diagnosis.numbers import ceil2, fmt_gib, fmt_size
from bot.facts import PasteFacts
from bot.reply import Fact, Fix, Reply
from calculator.commands import vllm_command
from calculator.fit import MAX_SAFE_UTILIZATION
from calculator.kv import vllm_layout
from calculator.units import GIB


def vllm_mamba_blocks(facts: PasteFacts) -> Reply:
    """``max_num_seqs (N) exceeds available Mamba cache blocks (M)`` (a kv_cache_too_small@vllm finding;
    kv.py owns that key and can dispatch here on ``facts.root.signature``)."""
    p = facts.params
    seqs = int(p.get("max_num_seqs") or facts.get("max_num_seqs") or 0)
    blocks = int(p.get("mamba_blocks") or 0)
    command = facts.context.get("command")
    model_name = facts.context.get("model")
    total, total_src = gpu_total(facts)
    util, util_src = vllm_utilization(facts, facts.vllm_version)
    model = model_spec(facts)
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
        numbers.append(Fact("GPU memory", fmt_gib(total), total_src))
    if state:
        numbers.append(Fact("state per sequence (per GPU)", fmt_size(state / GIB), "catalog"))
    numbers += model_gpu_facts(facts)
    target = blocks if blocks < 16 else blocks // 16 * 16
    fixes = []
    if target > 0:  # with no block at all, fewer sequences cannot help: memory has to be found first
        fixes.append(
            Fix(
                "vllm",
                f"--max-num-seqs {target}",
                vllm_command(command, model_name, {"--max-num-seqs": str(target)}),
                f"every decode sequence gets its state block ({target} <= {blocks})",
                f"at most {target} requests run at once (was {seqs})",
                rank=1,
            )
        )
    if growth and total:
        extra_gib = (seqs - blocks) * state / GIB if state else None
        if extra_gib is not None:
            new_util = ceil2(util + extra_gib * 1.1 / total)
            why = f"{seqs - blocks} more state blocks x {fmt_size(state / GIB)} = {fmt_gib(extra_gib)}"  # type: ignore[operator]
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
                    {"--gpu-memory-utilization": f"{min(MAX_SAFE_UTILIZATION, ceil2(util + 0.03)):g}"},
                ),
                f"the pool must grow about {growth:.2f}x for {seqs:,} sequences"
                + (
                    f" ({seqs - blocks} more state blocks x {fmt_size(state / GIB)} = about "
                    f"{fmt_gib((seqs - blocks) * state / GIB)} per GPU)"
                    if state
                    else ""
                )
                + "; each 0.01 of utilization adds 1% of the GPU's memory to it",
                "only if nothing else uses this GPU",
                rank=2,
            )
        )
    fixes.append(
        no_cuda_graphs_fix(
            command,
            model_name,
            "no capture needs a block per decode sequence; the scheduler then caps concurrency at the blocks it has",
            "decode is roughly 10-30% slower",
            3,
        )
    )
    return diagnosis_reply(
        title,
        summary,
        numbers,
        fixes,
        [],
        f"{blocks:,} Mamba state blocks cannot serve max_num_seqs {seqs:,}.",
        ranked=True,
    )
