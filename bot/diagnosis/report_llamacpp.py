"""memory_report for llama.cpp's buffer lines: the KV cache for the context, and room for more."""

from __future__ import annotations

from bot.diagnosis.common import diagnosis_reply, known_cause
from bot.diagnosis.gguf import catalog_model, gguf_file
from bot.diagnosis.numbers import article, fmt_gib_or_mib
from bot.facts import PasteFacts
from bot.reply import Fact, Fix, Reply
from calculator.commands import llamacpp_command
from calculator.units import fmt_tokens


def llamacpp_report(facts: PasteFacts) -> Reply:
    p = facts.params
    sig = facts.root.signature
    catalog_model(facts)  # resolves a GGUF file name the generic lookup missed (and drops its wrong note)
    command = facts.context.get("command")
    model_file = gguf_file(facts)
    numbers: list[Fact] = []
    fixes: list[Fix] = []
    notes: list[str] = []
    if sig == "llamacpp.fit_failed":
        reason = str(p.get("reason") or "")
        title = "llama.cpp --fit gave up: " + (reason or "the configuration does not fit")
        summary = (
            f"--fit projected that this configuration does not fit in free device memory and then stopped ({reason}). "
            "It only adjusts what you did not set: an explicit -ngl, -ts or -ot stops it, so the load that follows "
            "will probably run out of memory."
        )
        changes: dict[str, str | None] = {}
        if "n_gpu_layers" in reason:
            changes["-ngl"] = None
        if "tensor_split" in reason:
            changes["-ts"] = None
        if changes:
            fixes.append(
                Fix(
                    "llama.cpp",
                    "let --fit choose",
                    llamacpp_command(command, model_file, changes),
                    "fit moves layers (or experts) to the CPU until 1 GiB stays free",
                    "layers on the CPU are slower",
                    1,
                )
            )
        if p.get("projected_mib") and p.get("free_mib"):
            numbers.append(
                Fact("projected / free", f"{p['projected_mib']:,.0f} / {p['free_mib']:,.0f} MiB", "log")
            )
        return diagnosis_reply(title, summary, numbers, fixes, notes)

    kv = p.get("kv_buffer_mib") or p.get("kv_size_mib") or p.get("kv_self_mib")
    cells = p.get("kv_cells")
    n_ctx = facts.get("n_ctx") or p.get("n_ctx_seq")
    n_ctx_seq = p.get("n_ctx_seq")
    train = p.get("n_ctx_train")
    model_mib = p.get("model_buffer_mib")
    compute = p.get("compute_buffer_mib")
    lo, lm = p.get("layers_offload"), p.get("layers_model")
    free = p.get("free_mib")
    if kv is not None:
        numbers.append(Fact(f"KV cache ({p.get('buffer') or 'device'})", f"{kv:,.2f} MiB", "log"))
    if cells:
        numbers.append(Fact("KV cells", fmt_tokens(cells), "log"))
    if n_ctx:
        numbers.append(Fact("context (n_ctx)", fmt_tokens(n_ctx), "log"))
    if train:
        numbers.append(Fact("trained context (n_ctx_train)", fmt_tokens(train), "log"))
    if model_mib is not None:
        numbers.append(Fact("weights buffer", f"{model_mib:,.2f} MiB", "log"))
    if compute is not None:
        numbers.append(Fact("compute buffer", f"{compute:,.2f} MiB", "log"))
    if lo is not None and lm:
        numbers.append(Fact("layers offloaded", f"{lo}/{lm}", "log"))
    if free is not None:
        numbers.append(Fact("free device memory at load", f"{free:,.0f} MiB", "log"))
    ctk = facts.get("cache_type_k")
    if ctk:
        numbers.append(Fact("KV cache type", f"{ctk}/{facts.get('cache_type_v') or ctk}", "log"))
    sentences: list[str] = []
    title = facts.root.title
    swa = bool(cells and n_ctx and cells < n_ctx)
    if kv is not None:
        per_cell = kv / cells if cells else None
        if per_cell:
            numbers.append(Fact("KV per cell", f"{per_cell * 1024:,.1f} KiB", "computed"))
        title = f"llama.cpp: the KV cache takes {kv:,.2f} MiB" + (
            f" ({fmt_tokens(cells)} cells) for {article(n_ctx)} {fmt_tokens(n_ctx)}-token context"
            if cells and n_ctx
            else ""
        )
        if swa:
            sentences.append(
                f"Only {fmt_tokens(cells)} cells for a {fmt_tokens(n_ctx)}-token context: these are the sliding-window layers, "
                "which keep just the window + one micro-batch of tokens (padded to 256), so this part does not grow "
                "with -c."
            )
            sentences.append(
                "The full-context part of the cache is listed separately (a 0-layer standard cache here: the model "
                "keeps its long-range KV in its own cache type), so the usual 'KV per token x n_ctx' formula does not "
                "apply."
            )
        elif cells and per_cell:
            sentences.append(
                f"That is {per_cell * 1024:,.1f} KiB per token for {fmt_tokens(cells)} tokens; it grows linearly with -c."
            )
        elif n_ctx:
            sentences.append(
                f"For a {fmt_tokens(n_ctx)}-token context that is {kv * 1024 / n_ctx:,.1f} KiB per token (on this device); "
                "it grows linearly with -c."
            )
        else:
            sentences.append(
                f"The KV cache on {p.get('buffer') or 'this device'} takes {kv:,.2f} MiB; it grows linearly with -c "
                "(sliding-window layers excepted)."
            )
    if n_ctx_seq and train and n_ctx_seq < train:
        sentences.append(
            f"'n_ctx_seq ({fmt_tokens(n_ctx_seq)}) < n_ctx_train ({fmt_tokens(train)})' is informational: you run a shorter "
            "context than the model supports, which is fine."
        )
    if lo is not None and lm:
        if lo < lm:
            sentences.append(
                f"{lo} of {lm} layers run on the GPU; the other {lm - lo} run on the CPU, which sets the speed."
            )
        else:
            sentences.append(f"All {lm} layers run on the GPU.")
    if model_mib is not None and kv is not None and compute is not None:
        total = (model_mib + kv + compute) / 1024
        sentences.append(f"Weights + KV + compute on this device: {fmt_gib_or_mib(total)}.")
        if free:
            sentences.append(f"{fmt_gib_or_mib(free / 1024)} was free at load.")
    if not sentences:
        sentences.append(known_cause(facts))
    if not swa and kv is not None and cells and n_ctx and free and model_mib is not None:
        per = kv / cells
        spare = free - model_mib - kv - (compute or 0) - 1024
        if spare > 0:
            more = int(spare / per)
            new_ctx = (n_ctx + more) // 256 * 256
            fixes.append(
                Fix(
                    "llama.cpp",
                    f"room for -c {fmt_tokens(new_ctx)}",
                    llamacpp_command(command, model_file, {"-c": str(new_ctx)}),
                    f"{fmt_gib_or_mib(spare / 1024)} spare after a 1 GiB margin = {fmt_tokens(more)} more tokens",
                    "",
                    1,
                )
            )
    if swa and n_ctx:
        fixes.append(
            Fix(
                "llama.cpp",
                "see the whole budget before raising -c",
                llamacpp_command(command, model_file, {"-lv": "4"}),
                "prints every buffer (model, each KV cache, compute) and the memory breakdown at exit: the "
                "full-context cache is what grows with -c, this SWA part stays at "
                f"{kv:,.2f} MiB"
                if kv is not None
                else "prints every buffer and the memory breakdown at exit",
                "a longer log",
                1,
            )
        )
    notes.append("Recent llama.cpp builds print these buffer lines only with -lv 4 (or -v).")
    data = {"kv_mib": kv, "kv_cells": cells, "n_ctx": n_ctx, "swa": swa}
    return diagnosis_reply(title, " ".join(sentences), numbers, fixes, notes, data=data)
