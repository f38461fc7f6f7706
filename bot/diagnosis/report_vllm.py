"""memory_report for vLLM's profile: the KV cache in tokens and requests, runs side by side."""

from __future__ import annotations

import re

from bot.diagnosis.common import diagnosis_reply, known_cause
from bot.diagnosis.engine_facts import paste_text
from bot.diagnosis.numbers import fmt_gib_or_mib, fmt_number, pow2_floor
from bot.facts import PasteFacts
from bot.reply import Fact, Fix, MemoryPicture, MemorySegment, Reply, Section
from calculator.commands import vllm_command
from calculator.units import GIB, KIB, fmt_tokens

_BREAKDOWN = re.compile(
    r"model weights take ([0-9.]+) ?GiB; non_torch_memory takes ([0-9.]+) ?GiB; PyTorch activation peak memory "
    r"takes ([0-9.]+) ?GiB; the rest of the memory reserved for KV Cache is ([0-9.]+) ?GiB"
)


def vllm_report(facts: PasteFacts) -> Reply:
    p = facts.params
    engine_name = "Aphrodite" if "aphrodite" in facts.root.signature else "vLLM"
    text = paste_text(facts)
    runs = [(_run_label(text, m.start()), *map(float, m.groups())) for m in _BREAKDOWN.finditer(text)]
    total = p.get("total_gib") or facts.context.get("gpu_total_gib")
    util = p.get("gpu_memory_utilization") or facts.context.get("gpu_memory_utilization")
    if util is None and p.get("gpu_memory_utilization_pct") is not None:
        util = p["gpu_memory_utilization_pct"] / 100
    weights = p.get("weights_gib")
    act = p.get("activation_gib")
    if act is None and p.get("peak_torch_gib") is not None and weights is not None:
        act = p["peak_torch_gib"] - weights
    non_torch = p.get("non_torch_gib")
    kv = p.get("kv_cache_gib")
    blocks = p.get("gpu_blocks")
    tokens = p.get("kv_tokens")
    tokens_src = "log"
    if tokens is None and blocks:
        tokens, tokens_src = blocks * 16, "computed"
    mml = p.get("max_model_len") or facts.context.get("max_model_len")
    conc = p.get("max_concurrency")
    bpt = None
    if p.get("kv_ref_gib") and p.get("kv_ref_tokens"):
        bpt = p["kv_ref_gib"] * GIB / p["kv_ref_tokens"]
    elif kv and tokens:
        bpt = kv * GIB / tokens
    requested = p.get("requested_gib") or (total * util if total and util else None)
    numbers: list[Fact] = []
    if total:
        numbers.append(Fact("GPU memory (total)", fmt_gib_or_mib(total), "log"))
    if util:
        numbers.append(Fact("gpu_memory_utilization", f"{util:g}", "log"))
    if requested:
        numbers.append(
            Fact(
                "budget (total x utilization)",
                fmt_gib_or_mib(requested),
                "log" if p.get("requested_gib") else "computed",
            )
        )
    if weights is not None:
        numbers.append(Fact("weights", fmt_gib_or_mib(weights), "log"))
    if act is not None:
        numbers.append(
            Fact(
                "activation peak",
                fmt_gib_or_mib(act),
                "log" if p.get("activation_gib") is not None else "computed",
            )
        )
    if non_torch is not None:
        numbers.append(Fact("non-torch memory", fmt_gib_or_mib(non_torch), "log"))
    if kv is not None:
        numbers.append(Fact("KV cache", fmt_gib_or_mib(kv), "log"))
    if blocks:
        numbers.append(Fact("KV blocks", fmt_tokens(blocks), "log"))
    if tokens:
        numbers.append(Fact("KV cache tokens", fmt_tokens(tokens), tokens_src))
    if bpt:
        numbers.append(Fact("KV per token", f"{bpt / KIB:,.0f} KiB", "computed"))
    if mml:
        numbers.append(Fact("max_model_len", fmt_tokens(mml), "log"))
    mml_src = "log"
    if mml is None and conc and tokens and p.get("kv_ref_tokens"):
        guess = tokens / conc
        if abs(guess - p["kv_ref_tokens"]) <= 0.02 * p["kv_ref_tokens"]:
            mml, mml_src = p["kv_ref_tokens"], "computed"
            numbers.append(Fact("max_model_len (tokens / concurrency)", fmt_tokens(mml), mml_src))
    if conc is None and tokens and mml:
        conc = tokens / mml
    if conc is not None:
        numbers.append(
            Fact(
                "requests of max_model_len at once",
                f"{conc:.2f}",
                "log" if p.get("max_concurrency") else "computed",
            )
        )

    sections: list[Section] = []
    fixes: list[Fix] = []
    notes: list[str] = []
    sentences: list[str] = []
    title = f"{engine_name}: memory profile"
    if len(runs) >= 2:
        a, b = runs[0], runs[-1]
        grow = b[2] - a[2]
        title = (
            f"{engine_name}: {fmt_number(grow)} GiB more non-torch memory in '{b[0]}' — the KV cache shrinks from "
            f"{a[4]:.2f} to {b[4]:.2f} GiB"
        )
        sentences.append(
            f"Both runs split the same budget ({sum(a[1:]):.2f} vs {sum(b[1:]):.2f} GiB) with nearly the same weights "
            f"({a[1]:.2f} vs {b[1]:.2f} GiB) and activation peak ({a[3]:.2f} vs {b[3]:.2f} GiB)."
        )
        sentences.append(
            f"What differs is non-torch memory: {b[2]:.2f} GiB in '{b[0]}' instead of {a[2]:.2f} GiB — {fmt_number(grow)} GiB "
            "allocated outside PyTorch (the plugin's own workspace or buffers) — and vLLM takes it straight out of "
            f"the KV cache, which drops from {a[4]:.2f} to {b[4]:.2f} GiB ({(a[4] - b[4]) / a[4]:.0%} fewer tokens)."
        )
        numbers = []
        for r in runs:
            numbers.append(
                Fact(
                    f"{r[0]}: weights / non-torch / activations / KV cache",
                    f"{r[1]:.2f} / {r[2]:.2f} / {r[3]:.2f} / {r[4]:.2f} GiB",
                    "log",
                )
            )
        numbers.append(Fact("non-torch memory added", f"{grow:.2f} GiB", "computed"))
        numbers.append(
            Fact("KV cache lost", f"{a[4] - b[4]:.2f} GiB ({(a[4] - b[4]) / a[4]:.0%})", "computed")
        )
        fixes.append(
            Fix(
                "vllm",
                "find what allocates outside PyTorch",
                "nvidia-smi --query-compute-apps=pid,used_memory --format=csv   # while the engine profiles\n"
                "# then look in the plugin's settings for a workspace / cache / buffer size and lower it",
                f"every GiB of non-torch memory you get back is a GiB of KV cache ({grow:.2f} GiB here)",
                "",
                1,
            )
        )
        fixes.append(
            Fix(
                "vllm",
                "compare with the stock AWQ kernels",
                vllm_command(
                    facts.context.get("command"), facts.context.get("model"), {"--quantization": "awq"}
                ),
                f"the first run's {a[4]:.2f} GiB of KV cache, if the plugin's speed-up does not matter more",
                "the plugin's kernels are not used",
                2,
            )
        )
        notes.append(
            "V0 profiling counts non-torch memory measured during the profiling run as permanent: a plugin that "
            "reserves a large workspace up front shrinks the KV cache by exactly that much."
        )
        picture = _vllm_picture(
            None, None, b[1], b[3], b[2], b[4], f"GPU memory as vLLM budgeted it ({b[0]})"
        )
        data = {
            "runs": [
                dict(zip(("label", "weights", "non_torch", "activation", "kv"), r, strict=True)) for r in runs
            ],
            "non_torch_added_gib": grow,
        }
        return diagnosis_reply(
            title,
            " ".join(sentences),
            numbers,
            fixes,
            notes,
            f"{grow:.2f} GiB of non-torch memory comes out of the KV cache ({a[4]:.2f} -> {b[4]:.2f} GiB).",
            sections,
            picture,
            data,
        )

    base_cmd = facts.context.get("command") or (
        "aphrodite run <model>" if engine_name == "Aphrodite" else None
    )
    model_name = facts.context.get("model")
    if kv is not None and tokens and mml and conc is not None:
        title = (
            f"{engine_name}: {fmt_gib_or_mib(kv)} of KV cache holds {fmt_tokens(tokens)} tokens — {conc:.2f} requests of "
            f"{fmt_tokens(mml)} tokens at once"
        )
    elif kv is not None and tokens:
        title = f"{engine_name}: {fmt_gib_or_mib(kv)} of KV cache holds {fmt_tokens(tokens)} tokens"
    elif kv is not None:
        title = f"{engine_name}: {fmt_gib_or_mib(kv)} is left for the KV cache"
    elif tokens and mml and conc is not None:
        title = f"{engine_name}: the KV cache holds {fmt_tokens(tokens)} tokens — {conc:.2f} requests of {fmt_tokens(mml)} tokens at once"
    elif tokens:
        title = f"{engine_name}: the KV cache holds {fmt_tokens(tokens)} tokens"
    elif conc is not None and mml:
        title = f"{engine_name}: the KV cache fits {conc:.2f} requests of {fmt_tokens(mml)} tokens at once"
    elif weights is not None:
        title = f"{engine_name}: the weights take {fmt_gib_or_mib(weights)} per GPU"
    parts = [
        f"{label} {fmt_gib_or_mib(v)}"
        for label, v in (
            ("the weights take", weights),
            ("the activation peak", act),
            ("non-torch memory", non_torch),
        )
        if v is not None
    ]
    if weights is None and p.get("peak_torch_gib") is not None:
        parts.insert(0, f"weights + activation peak (torch) take {fmt_gib_or_mib(p['peak_torch_gib'])}")
    listed = ", ".join(parts[:-1]) + f" and {parts[-1]}" if len(parts) > 1 else "".join(parts)
    if requested and kv is not None and total and util and parts:
        sentences.append(
            f"{engine_name} may use {fmt_gib_or_mib(total)} x {util:g} = {fmt_gib_or_mib(requested)}: {listed}, leaving {fmt_gib_or_mib(kv)} "
            "for the KV cache."
        )
    elif parts and kv is not None:
        sentences.append(
            f"Of {engine_name}'s budget {listed}, leaving {fmt_gib_or_mib(kv)} for the KV cache."
        )
    elif parts:
        non_kv = p.get("non_kv_gib")
        sentences.append(
            (f"Everything that is not KV cache takes {fmt_gib_or_mib(non_kv)}: " if non_kv else "")
            + (listed[0].upper() + listed[1:] if not non_kv else listed)
            + "; the KV cache gets what is left of the budget."
        )
    if conc is not None and mml and not (tokens and bpt):
        sentences.append(
            f"The KV cache fits {conc:.2f} requests of the full {fmt_tokens(mml)} tokens at once"
            + (", more when they are shorter." if conc >= 1 else ": not even one full-length request.")
        )
    if tokens and bpt:
        held = (
            f"{fmt_tokens(blocks)} blocks of 16 = " if blocks and tokens_src == "computed" else ""
        ) + f"{fmt_tokens(tokens)} tokens"
        if conc is not None and mml and conc >= 1:
            sentences.append(
                f"That is {held} at {bpt / KIB:,.0f} KiB per token: {conc:.2f} requests of the full {fmt_tokens(mml)} "
                "tokens at once (more when they are shorter), so this configuration is fine."
            )
        elif conc is not None and mml:
            sentences.append(
                f"That is {held} at {bpt / KIB:,.0f} KiB per token: not even one request of {fmt_tokens(mml)} fits ({conc:.2f}x)."
            )
        else:
            sentences.append(f"That is {held} at {bpt / KIB:,.0f} KiB per token.")
    elif tokens and not sentences:
        sentences.append(
            f"{fmt_tokens(tokens)} tokens is the whole KV cache, shared by all running requests; one request can use up "
            "to max_model_len of it."
        )
    if act is not None and weights and act > 0.25 * weights:
        sentences.append(
            f"The activation peak is large ({act / weights:.0%} of the weights): it is sized by the profiling batch "
            "(max_num_batched_tokens; for vision models also the image encoder)"
            + (
                f", and every GiB cut from it is about {fmt_tokens(GIB / bpt)} more tokens of KV cache."
                if bpt
                else "."
            )
        )
        fixes.append(
            Fix(
                "vllm",
                "a smaller profiling peak",
                vllm_command(base_cmd, model_name, {"--max-num-batched-tokens": "4096"})
                + (
                    "\n# vision models: also fewer/smaller images per prompt (--limit-mm-per-prompt)"
                    if act > 2
                    else ""
                ),
                "the activation peak shrinks with the prefill batch, and the KV cache gets what it frees",
                "slower prefill of long prompts",
                2,
            )
        )
    if non_torch is not None and kv and non_torch > 2:
        sentences.append(
            f"Non-torch memory is {fmt_gib_or_mib(non_torch)} — far above the usual 0.2-0.5 GiB (NCCL, cuBLAS) — and it comes "
            "straight out of the KV cache."
        )
    if util is not None and total and util < 0.95 and bpt:
        extra = (0.95 - util) * total
        fixes.append(
            Fix(
                "vllm",
                "gpu_memory_utilization 0.95",
                vllm_command(base_cmd, model_name, {"--gpu-memory-utilization": "0.95"}),
                f"+{fmt_gib_or_mib(extra)} for the KV cache = about {fmt_tokens(extra * GIB / bpt)} more tokens"
                + (
                    f" ({(tokens + extra * GIB / bpt) / mml:.2f} requests of {fmt_tokens(mml)})"
                    if tokens and mml
                    else ""
                ),
                "only if nothing else uses this GPU; less room for activation spikes",
                1,
            )
        )
    if mml and conc is not None and conc >= 1 and tokens:
        half = pow2_floor(mml // 2) if mml > 4096 else None
        if half:
            fixes.append(
                Fix(
                    "vllm",
                    f"max_model_len {fmt_tokens(half)} for more concurrency",
                    vllm_command(base_cmd, model_name, {"--max-model-len": str(half)}),
                    f"the same {fmt_tokens(tokens)}-token cache holds {tokens / half:.2f} requests of full length",
                    "longer requests are rejected",
                    3,
                )
            )
    if bpt and kv and tokens and facts.gpu is not None and facts.gpu.fp8_kv_cache:
        fixes.append(
            Fix(
                "vllm",
                "fp8 KV cache",
                vllm_command(base_cmd, model_name, {"--kv-cache-dtype": "fp8"}),
                f"about {fmt_tokens(tokens * 2)} tokens in the same memory",
                "slight quality loss on long contexts",
                3,
            )
        )
    if engine_name == "Aphrodite":
        notes.append("Aphrodite takes vLLM's flags (aphrodite run <model> --max-num-batched-tokens …).")
    if not sentences:
        sentences.append(known_cause(facts))
    picture = _vllm_picture(
        total, util, weights, act, non_torch, kv, f"GPU memory as {engine_name} budgeted it"
    )
    data = {
        "kv_cache_gib": kv,
        "kv_tokens": tokens,
        "kv_bytes_per_token": bpt,
        "max_model_len": mml,
        "max_concurrency": conc,
    }
    return diagnosis_reply(
        title, " ".join(sentences), numbers, fixes, notes, sections=sections, memory=picture, data=data
    )


def _run_label(text: str, pos: int) -> str:
    """The nearest heading before a breakdown line ('Turbomind AWQ:'), else 'run N'."""
    before = text[:pos].rstrip("\n").split("\n")
    for line in reversed(before[-3:]):
        line = line.strip()
        if line.endswith(":") and len(line) < 60:
            return line[:-1]
    return f"run at offset {pos}"


def _vllm_picture(total, util, weights, act, non_torch, kv, title) -> MemoryPicture | None:
    if kv is None or weights is None:
        return None
    segments = [MemorySegment("weights", weights, "log")]
    if act is not None:
        segments.append(MemorySegment("activations", act, "log"))
    if non_torch is not None:
        segments.append(MemorySegment("non-torch", non_torch, "log"))
    segments.append(MemorySegment("kv cache", kv, "log"))
    used = sum(s.gib for s in segments)
    if total and util:
        segments.append(MemorySegment("not used (1-util)", max(0.0, total * (1 - util)), "computed"))
        return MemoryPicture(total_gib=total, segments=segments, title=title)
    return MemoryPicture(total_gib=used, segments=segments, title=title)
