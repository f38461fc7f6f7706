"""no_kv_memory@sglang: the weights fill --mem-fraction-static, SGLang's KV pool is empty."""

from __future__ import annotations

from bot.diagnosis.commands import swap_model
from bot.diagnosis.common import bigger_hardware, diagnosis_reply
from bot.diagnosis.engine_facts import (
    catalog_weights_gib,
    evidence_number,
    first_logged,
    gpu_total,
    is_16bit,
    model_gpu_facts,
    model_spec,
    vllm_kv_bytes_per_token,
)
from bot.diagnosis.fixes import shard_fix
from bot.diagnosis.numbers import ceil2, fmt_gib
from bot.diagnosis.sglang_fixes import sglang_activation_fixes
from bot.diagnosis.smaller_builds import smaller_checkpoints
from bot.facts import PasteFacts
from bot.reply import Fact, Fix, MemoryPicture, MemorySegment, Reply
from calculator.commands import sglang_command
from calculator.fit import sglang_kv_remedies
from calculator.sglang import CUDA_CONTEXT_GIB as SGLANG_CUDA_CONTEXT_GIB
from calculator.sglang import default_mem_fraction_static, mem_fraction_for_tokens
from calculator.units import GIB, KIB, fmt_tokens


def _sglang_fraction(facts: PasteFacts) -> tuple[float | None, str]:
    """The fraction the failing run used: the error line, then the line the error was quoted on, then
    the command line / server_args."""
    value = facts.params.get("mem_fraction_static")
    if value is not None:
        return float(value), "log"
    value = evidence_number(facts, r"--mem-fraction-static[= ]+([0-9]*\.?[0-9]+)")
    if value is not None:
        return value, "log"
    value = facts.context.get("mem_fraction_static")
    return (float(value), "log") if value is not None else (None, "estimated")


def sglang_no_kv_memory(facts: PasteFacts) -> Reply:
    p = facts.params
    sig = facts.root.signature
    command = facts.context.get("command")
    model_name = facts.context.get("model")
    tp = int(facts.get("tp") or 1)
    f0, f0_src = _sglang_fraction(facts)
    other = facts.context.get("mem_fraction_static")
    higher = float(other) if other is not None and f0 is not None and float(other) > f0 else None
    total, total_src = gpu_total(facts)
    pre, pre_src = p.get("pre_load_avail_gib"), "log"
    if pre is None and total:
        pre, pre_src = total - SGLANG_CUDA_CONTEXT_GIB, "estimated"
    if total is None and pre:
        total, total_src = pre + SGLANG_CUDA_CONTEXT_GIB, "estimated"
    weights, w_src = p.get("weights_gib"), "log"
    if weights is None:
        weights, w_src = catalog_weights_gib(facts, tp), "estimated"
    after = p.get("avail_after_weights_gib")
    min_viable, mv_src = p.get("minimum_mem_fraction_static"), "log"
    if min_viable is None and p.get("suggested_mem_fraction_static") is not None:
        min_viable = p["suggested_mem_fraction_static"]
    if min_viable is None and after is not None and p.get("pre_load_avail_gib"):
        min_viable, mv_src = 1 - after / p["pre_load_avail_gib"], "computed"
    if min_viable is None and weights is not None and pre:
        min_viable, mv_src = weights / pre, "estimated"
    cell = vllm_kv_bytes_per_token(model_spec(facts), facts, tp)
    model = model_spec(facts)
    want, want_src = first_logged(facts, "context_length")
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
        numbers.append(Fact("GPU memory", fmt_gib(total), total_src))
    if pre:
        numbers.append(Fact("free before loading the weights", fmt_gib(pre), pre_src))
    if weights is not None:
        numbers.append(Fact("weights (per GPU)", fmt_gib(weights), w_src))
    if after is not None:
        numbers.append(Fact("free after loading the weights", fmt_gib(after), "log"))
    if f0 is not None and pre and weights is not None:
        numbers.append(Fact(f"KV pool at {f0:g}", fmt_gib(pre * f0 - weights), "computed"))
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
    numbers += model_gpu_facts(facts)

    # ---- fixes
    fixes: list[Fix] = []
    notes: list[str] = []
    squeezed = higher is not None
    if can_compute and higher is None:
        for r in sglang_kv_remedies(0, want, command, model_name, f0, fraction_for):
            needed = float(r.change.rsplit(" ", 1)[-1])
            headroom = pre * (1 - needed)
            reserve = total * (1 - default_f) if total and default_f is not None else None
            cost = f"leaves {fmt_gib(headroom)} for activations and CUDA graphs"
            if reserve is not None and headroom < reserve:
                squeezed = True
                cost += (
                    f", less than the {fmt_gib(reserve)} SGLang reserves by default here: expect a CUDA OOM unless "
                    "you also shrink the activation side (below)"
                )
            fixes.append(Fix(r.engine, r.change, r.command, r.effect, cost, rank=1))
    elif min_viable is not None and higher is None:
        target = ceil2(min_viable + 0.03)
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
        target = ceil2(min(0.88, f0 + 0.08))
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
    fixes += sglang_activation_fixes(facts, pre, rank=2 if squeezed else 4, why=why)
    # need less: fp8 KV, smaller weights, more GPUs
    half_cell = vllm_kv_bytes_per_token(model_spec(facts), facts, tp, dtype="fp8_e5m2")
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
    for v, size in smaller_checkpoints(facts):
        fixes.append(
            Fix(
                "sglang",
                f"serve the {v.quant} checkpoint",
                swap_model(command, model_name, v.id, sglang_command(None, v.id, {})),
                f"weights {fmt_gib(size / tp / GIB)} per GPU"
                + (f" instead of {fmt_gib(weights)}" if weights else ""),
                "slightly lower quality; fp8 needs Ampere or newer",
                rank=7,
            )
        )
    if not smaller_checkpoints(facts) and is_16bit(facts):
        fixes.append(
            Fix(
                "sglang",
                "quantize the weights to fp8 when loading",
                sglang_command(command, model_name, {"--quantization": "fp8"}),
                "halves a 16-bit checkpoint"
                + (f": {fmt_gib(weights)} -> about {fmt_gib(weights / 2)}" if weights else ""),
                "needs compute capability 8.0+; slight quality loss",
                rank=7,
            )
        )
    fixes.append(
        shard_fix(
            "sglang",
            tp * 2,
            sglang_command(command, model_name, {"--tp": str(tp * 2)}),
            "halves the weights per GPU, which frees the static share for the KV pool",
            8,
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
    data = {"min_viable_fraction": min_viable}
    return diagnosis_reply(title, summary, numbers, fixes, notes, short, [hw], picture, data, ranked=True)


RULES = {"no_kv_memory@sglang": sglang_no_kv_memory}
