"""host_memory for llama.cpp: a CPU buffer or pinned host memory could not be allocated."""

from __future__ import annotations

import re

from bot.diagnosis.commands import flag_value
from bot.diagnosis.common import diagnosis_reply
from bot.diagnosis.engine_facts import paste_text
from bot.diagnosis.gguf import catalog_model, gguf_file, gguf_weights, kv_gguf_gib, ollama_tag
from bot.diagnosis.numbers import fmt_gib_or_mib, fmt_number, pow2_floor
from bot.diagnosis.smaller_builds import smaller_quants
from bot.facts import PasteFacts
from bot.reply import Fact, Fix, Reply
from calculator.commands import llamacpp_command, ollama_env_command
from calculator.units import GIB, fmt_tokens


def llamacpp_host_memory(facts: PasteFacts) -> Reply:
    p = facts.params
    command = facts.context.get("command")
    text = paste_text(facts)
    match = catalog_model(facts)
    model_file = gguf_file(facts)
    pinned = facts.root.signature.endswith("pinned")
    numbers: list[Fact] = []
    fixes: list[Fix] = []
    notes: list[str] = []
    no_mmap = flag_value(command, "--no-mmap") is not None
    mlock = flag_value(command, "--mlock") is not None
    nkvo = flag_value(command, "-nkvo", "--no-kv-offload") is not None
    n_ctx = facts.get("n_ctx")
    ngl = facts.get("n_gpu_layers")

    if pinned:
        mib = p.get("pinned_mib")
        title = "llama.cpp: pinned host memory could not be allocated (not fatal)"
        if mib:
            title = f"llama.cpp: {fmt_number(mib, 0)} MiB of pinned host memory could not be allocated (not fatal)"
        summary = (
            "CUDA builds ask for the host-side buffers (weights of layers kept on the CPU, a KV cache moved "
            "to RAM with -nkvo) as pinned, page-locked memory because copies to the GPU are faster from it. "
            f"That request failed ({p.get('reason') or 'no reason given'}), so llama.cpp fell back to ordinary "
            "memory and kept going: this line alone does not stop the model. If the run then died, the error "
            "that stopped it is further down the log."
        )
        if mib:
            numbers.append(
                Fact("pinned request", f"{fmt_number(mib, 0)} MiB ({fmt_gib_or_mib(mib / 1024)})", "log")
            )
        fixes.append(
            Fix(
                "llama.cpp",
                "skip the pinned allocation",
                "GGML_CUDA_NO_PINNED=1 " + (command or "llama-server -m <model>.gguf"),
                "no page-locked request at all, so nothing to fail (and no RAM locked)",
                "host-to-GPU copies of CPU-side tensors are somewhat slower",
                1,
            )
        )
        fixes.append(
            Fix(
                "llama.cpp",
                "keep less on the host",
                llamacpp_command(
                    command, model_file, {"-ngl": "99", "-nkvo": None} if nkvo else {"-ngl": "99"}
                ),
                "more layers (and the KV cache) on the GPU means a smaller host buffer to pin",
                "needs the VRAM; --fit (default) moves layers back if it does not fit, unless -ngl is set",
                2,
            )
        )
        data = {"pinned_mib": mib}
        return diagnosis_reply(title, summary, numbers, fixes, notes, data=data)

    size = p.get("alloc_bytes")
    buffer = p.get("buffer") or "CPU"
    what = "a buffer"
    if re.search(r"buffer for kv cache|KV buffer", text):
        what = "the KV cache"
    elif re.search(r"compute (?:pp |tg )?buffers|gallocr", text + " ".join(facts.root.evidence)):
        what = "the compute buffer"
    elif re.search(r"error loading model|model buffer|load_tensors", text):
        what = "the weights kept on the CPU"
    title = "llama.cpp: a buffer in system RAM could not be allocated"
    if size:
        title = f"llama.cpp: {fmt_gib_or_mib(size / GIB)} for {what} in system RAM could not be allocated"
    sentences = [
        f"llama.cpp asked the OS for {fmt_gib_or_mib(size / GIB) if size else 'a buffer'} of ordinary RAM ({buffer} "
        f"buffer) for {what} and did not get it: the layers, KV cache and compute buffer that stay on the "
        "CPU need more RAM than is free (on Windows: more than RAM + page file can commit)."
    ]
    if no_mmap or mlock:
        flags = " and ".join(f for f, on in (("--no-mmap", no_mmap), ("--mlock", mlock)) if on)
        sentences.append(
            f"Your command uses {flags}: the whole file is copied into (and with --mlock pinned in) RAM "
            "instead of being mapped, which is the usual way this fails."
        )
    else:
        sentences.append(
            "Less on the CPU (more layers on the GPU, a shorter context) or a smaller file fixes it."
        )
    if size:
        numbers.append(
            Fact("allocation that failed", f"{size:,} bytes ({fmt_gib_or_mib(size / GIB)})", "log")
        )
    if n_ctx:
        numbers.append(Fact("context (-c)", fmt_tokens(n_ctx), "log"))
    if ngl is not None:
        numbers.append(Fact("layers on the GPU (-ngl)", str(ngl), "log"))
    weights, w_src, w_type = gguf_weights(facts, match) if match is not None else (None, "estimated", None)
    if weights is not None:
        numbers.append(Fact(f"model file ({w_type or 'GGUF'})", fmt_gib_or_mib(weights), w_src))
    rank = 1
    if no_mmap or mlock:
        dropped = " and ".join(f for f, on in (("--no-mmap", no_mmap), ("--mlock", mlock)) if on)
        fixes.append(
            Fix(
                "llama.cpp",
                f"drop {dropped}",
                llamacpp_command(command, model_file, {"--no-mmap": None, "--mlock": None}),
                "the weights on the CPU are mapped from the file and served from the page cache, which the OS can "
                "evict under pressure, instead of a private (locked) copy that must fit in free RAM"
                + ("; --mlock also needs ulimit -l" if mlock else ""),
                "first tokens can be slower while pages are read from disk",
                rank,
            )
        )
        rank += 1
    if nkvo:
        fixes.append(
            Fix(
                "llama.cpp",
                "put the KV cache back on the GPU",
                llamacpp_command(command, model_file, {"-nkvo": None}),
                "-nkvo keeps the whole KV cache in RAM; without it each layer's KV sits with the layer",
                "needs the VRAM for it",
                rank,
            )
        )
        rank += 1
    if n_ctx and n_ctx > 2048:
        new_ctx = max(2048, pow2_floor(n_ctx // 2))
        effect = (
            f"the KV cache and compute buffer for {fmt_tokens(new_ctx)} tokens instead of {fmt_tokens(n_ctx)}"
        )
        if match is not None:
            ctk = facts.get("cache_type_k") or "f16"
            ctv = facts.get("cache_type_v") or "f16"
            saved = kv_gguf_gib(match.model, n_ctx, ctk, ctv) - kv_gguf_gib(match.model, new_ctx, ctk, ctv)
            layers = match.model.num_hidden_layers + 1
            if nkvo:
                effect += f": {fmt_gib_or_mib(saved)} less KV, all of it in RAM (-nkvo)"
            elif ngl is not None and ngl < layers:
                share = (layers - ngl) / layers
                effect += f": {fmt_gib_or_mib(saved)} less KV, {fmt_gib_or_mib(saved * share)} of it in RAM ({layers - ngl} CPU layers)"
            else:
                effect += f": {fmt_gib_or_mib(saved)} less KV (the CPU layers' share of it is RAM)"
        fixes.append(
            Fix(
                "llama.cpp",
                f"context {fmt_tokens(new_ctx)}",
                llamacpp_command(command, model_file, {"-c": str(new_ctx)}),
                effect,
                "longer prompts are cut or rejected",
                rank,
            )
        )
        rank += 1
    if ngl is not None and match is not None and ngl < match.model.num_hidden_layers + 1:
        fixes.append(
            Fix(
                "llama.cpp",
                "let --fit place the layers",
                llamacpp_command(command, model_file, {"-ngl": None}),
                f"-ngl {ngl} keeps {match.model.num_hidden_layers + 1 - ngl} of "
                f"{match.model.num_hidden_layers + 1} layers in RAM; without -ngl, --fit (b7407+) moves as many as "
                "fit onto the GPU",
                "none if the VRAM is free",
                rank,
            )
        )
        rank += 1
    fixes.append(
        Fix(
            "llama.cpp",
            "cap the host prompt cache",
            llamacpp_command(command, model_file, {"-cram": "0"}),
            "current llama-server keeps up to 8192 MiB of saved prompt states in RAM (--cache-ram); "
            "-cram 0 turns that off, -cram 2048 caps it",
            "a prompt that was cached is processed again",
            rank + 2,
        )
    )
    if match is not None and weights is not None and size:
        options = [o for o in smaller_quants(match, weights) if weights - o.gib >= size / GIB]
        if options:
            best = max(options, key=lambda o: o.gib)
            qname = best.label.split()[0]
            fixes.append(
                Fix(
                    "llama.cpp",
                    f"a {qname} file ({fmt_gib_or_mib(best.gib)})",
                    llamacpp_command(command, f"<{match.model.id.split('/')[-1]}-{qname}>.gguf", {}),
                    f"{fmt_gib_or_mib(weights - best.gib)} smaller than your {fmt_gib_or_mib(weights)} file: at least the failed "
                    f"{fmt_gib_or_mib(size / GIB)}",
                    "lower-bit weights lose some quality",
                    rank + 1,
                )
            )
    fixes.append(
        Fix(
            "ollama",
            "the same model in Ollama",
            ollama_env_command({"OLLAMA_CONTEXT_LENGTH": "4096"}, ollama_tag(facts, match)),
            "Ollama memory-maps the file too and places layers itself",
            "same RAM arithmetic: the CPU layers still have to fit",
            9,
        )
    )
    if not command:
        notes.append("Your command line is not in the paste; the commands show only the flags to change.")
    data = {"alloc_bytes": size, "buffer": buffer}
    return diagnosis_reply(title, " ".join(sentences), numbers, fixes, notes, data=data)
