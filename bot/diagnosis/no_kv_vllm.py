"""no_kv_memory@vllm: weights + activations (+ CUDA graphs) leave nothing for vLLM's KV cache."""

from __future__ import annotations

from bot.diagnosis.commands import swap_model
from bot.diagnosis.common import bigger_hardware, diagnosis_reply
from bot.diagnosis.engine_facts import is_16bit, is_vllm_v0, model_gpu_facts, paste_vllm_version, v0_log_lines
from bot.diagnosis.fixes import no_cuda_graphs_fix
from bot.diagnosis.numbers import ceil2, fmt_gib, fmt_size
from bot.diagnosis.smaller_builds import smaller_checkpoints
from bot.diagnosis.vllm_budget import CUDAGRAPH_ENV, budget_picture, vllm_budget
from bot.facts import PasteFacts
from bot.reply import Fact, Fix, Reply
from calculator.commands import vllm_command
from calculator.fit import MAX_SAFE_UTILIZATION
from calculator.units import GIB, fmt_tokens, round_down_clean
from calculator.versions import vllm_subtracts_cudagraph_estimate


def vllm_no_kv_memory(facts: PasteFacts) -> Reply:
    p = facts.params
    sig = facts.root.signature
    version = paste_vllm_version(facts)
    b = vllm_budget(facts)
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
        suggest = max(ceil2(util_ctx + 0.005), ceil2(b.util + 0.01))
    elif util_zero is not None:
        suggest = max(0.9 if util_zero <= 0.8 else ceil2(util_zero + 0.05), ceil2(b.util + 0.01))
    elif b.util < 0.85 or b.util_src == "estimated":
        suggest = 0.9
    fits_at_max = suggest is not None and suggest <= MAX_SAFE_UTILIZATION

    # ---- title and the two or three sentences
    if truncated:
        w = p.get("weights_gib")
        title = "vLLM: the engine core died right after loading the weights" + (
            f" ({fmt_size(w)}); the error itself is cut off" if w else "; the error itself is cut off"
        )
    elif deficit is not None and b.requested:
        what = "weights + activations" + (" + CUDA graphs" if b.graphs else "")
        title = (
            f"vLLM: {what} need {fmt_gib(b.requested + deficit)}, the budget is "
            f"{fmt_gib(b.requested)} ({b.util:g} x {fmt_gib(b.total or b.requested / b.util)})"
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
                    f"Here they take {fmt_gib(b.non_kv)} of a {fmt_gib(b.requested)} budget ({b.util:g} x "
                    f"{fmt_gib(b.total)}), {fmt_gib(deficit)} over, so not one KV block fits."
                )
            else:
                sentences.append(
                    f"Here they take about {fmt_gib(b.non_kv)} of a {fmt_gib(b.requested)} budget ({b.util:g} x "
                    f"{fmt_gib(b.total)}), which leaves nothing usable for the KV cache."
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
        numbers.append(Fact("GPU memory (total seen by vLLM)", fmt_gib(b.total), b.total_src))
    numbers.append(
        Fact(
            "gpu_memory_utilization",
            f"{b.util:g}" if b.util_src == "log" else f"not in the paste (default {b.util:g})",
            b.util_src,
        )
    )
    if b.requested:
        numbers.append(
            Fact(
                "budget (total x util)", fmt_gib(b.requested), "log" if p.get("requested_gib") else "computed"
            )
        )
    if b.weights is not None:
        numbers.append(Fact("weights (per GPU)", fmt_gib(b.weights), b.weights_src))
    if b.non_torch is not None and b.non_torch_src == "log":
        numbers.append(Fact("non-torch memory", fmt_gib(b.non_torch), "log"))
    if b.activation is not None:
        numbers.append(Fact("activation peak", fmt_gib(b.activation), b.activation_src))
    if b.graphs:
        numbers.append(Fact("CUDA-graph estimate (v0.21+)", fmt_gib(b.graphs), b.graphs_src))
    if b.non_kv is not None:
        numbers.append(Fact("everything that is not KV cache", fmt_gib(b.non_kv), b.non_kv_src))
    if deficit is not None and deficit > 0:
        numbers.append(
            Fact("over the budget by", fmt_gib(deficit), "log" if p.get("kv_deficit_gib") else "computed")
        )
    if util_zero is not None:
        numbers.append(Fact("utilization that only just holds them (0 KV)", f"{util_zero:.3f}", "computed"))
    if b.want:
        numbers.append(Fact("max_model_len", fmt_tokens(b.want), b.want_src))
    if kv_ctx_gib is not None and b.want:
        numbers.append(
            Fact(f"KV for one {fmt_tokens(b.want)}-token request", fmt_gib(kv_ctx_gib), "computed")
        )
    if util_ctx is not None:
        numbers.append(Fact("utilization that also holds that request", f"{util_ctx:.3f}", "computed"))
    numbers += model_gpu_facts(facts)

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
            effect = f"budget {fmt_gib(suggest * b.total)}: {fmt_gib(kv_after)} left for the KV cache" + (
                f" = about {fmt_tokens(tokens)} tokens"
                + (f", enough for {fmt_tokens(b.want)}" if b.want and tokens and tokens >= b.want else "")
                if tokens
                else ""
            )
        else:
            effect = f"the budget grows by {fmt_gib((suggest - b.util) * b.total)} for the KV cache"
        fixes.append(
            Fix(
                "vllm",
                f"raise gpu_memory_utilization to {suggest:g}",
                vllm_command(command, model_name, {"--gpu-memory-utilization": f"{suggest:g}"}),
                effect,
                f"needs {fmt_gib(suggest * b.total)} free at startup: nothing else may hold more than "
                f"{fmt_gib((1 - suggest) * b.total)} of this GPU",
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
                        f"{fmt_gib(left)} of KV cache: one request of {fmt_tokens(tokens)} tokens"
                        + (f" (you want {fmt_tokens(b.want)})" if b.want else ""),
                        "nothing else may use this GPU; little concurrency",
                        rank=2,
                    )
                )
    # activation peak: fewer batched tokens / sequences
    act = b.activation
    if act is None or act >= 0.3:
        v0 = is_vllm_v0(facts)
        current = b.batched or (None if not v0 else b.want)
        target = 2048 if not current or current > 2048 else max(512, current // 2)
        changes: dict[str, str | None] = {"--max-num-batched-tokens": str(target)}
        if v0:
            changes["--enable-chunked-prefill"] = ""
        if act is not None and current:
            saved = act * (1 - target / current)
            effect = f"the activation peak scales with batched tokens: about {fmt_gib(act)} -> {fmt_gib(act - saved)}"
        elif act is not None:
            effect = f"shrinks the {fmt_gib(act)} activation peak roughly in proportion"
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
                        f"{fmt_gib(sampler)} -> {fmt_gib(after)}",
                        "at most 64 requests decode at once",
                        rank=4,
                    )
                )
    # CUDA graphs (v0.21+ subtracts an estimate; it is sometimes far too high)
    if not facts.get("enforce_eager") and vllm_subtracts_cudagraph_estimate(version):
        est = f" ({fmt_gib(b.graphs)})" if b.graphs else ""
        after = ""
        env_util = min(b.util, 0.9)
        if b.graphs and b.non_kv is not None and b.total:
            kv_back = env_util * b.total - (b.non_kv - b.graphs)
            if kv_back > 0:
                after = f": at util {env_util:g}, {fmt_gib(kv_back)} of KV cache" + (
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
        and not v0_log_lines(facts)
    ):
        fixes.append(
            no_cuda_graphs_fix(
                command,
                model_name,
                "no graph memory and (v0.21+) no graph estimate in the budget"
                + (f": {fmt_gib(b.graphs)} back" if b.graphs else ""),
                "decode is roughly 10-30% slower; before v0.21 graphs are not in this budget, so it helps less",
                6,
            )
        )
    # smaller weights: only when the weights are a real part of the problem
    w = b.weights
    heavy = w is None or not b.total or w > 0.3 * b.total or not fits_at_max
    smaller = smaller_checkpoints(facts) if heavy else []
    tp = int(facts.get("tp") or 1)
    for v, size in smaller:
        new_w = size / tp / GIB
        effect = f"weights {fmt_gib(new_w)} per GPU" + (f" instead of {fmt_gib(w)}" if w is not None else "")
        fixes.append(
            Fix(
                "vllm",
                f"serve the {v.quant} checkpoint",
                swap_model(command, model_name, v.id, f"vllm serve {v.id}"),
                effect,
                "fp8 needs Ampere or newer (native from Ada); AWQ/GPTQ slightly lower quality",
                rank=7,
            )
        )
    if heavy and not smaller and is_16bit(facts) and (w is None or w >= 2.0):
        half = f": weights {fmt_gib(w)} -> about {fmt_gib(w / 2)}" if w is not None else ""
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
            f"the weights alone ({fmt_gib(b.weights)}) nearly fill this {fmt_gib(b.total)} GPU: more GPUs "
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
    picture = budget_picture(b, "GPU memory as vLLM budgets it")
    data = {
        "util_needed_zero_kv": util_zero,
        "util_needed_for_context": util_ctx,
        "suggested_util": suggest,
    }
    return diagnosis_reply(title, summary, numbers, fixes, notes, short, [hw], picture, data, ranked=True)


RULES = {"no_kv_memory@vllm": vllm_no_kv_memory}
