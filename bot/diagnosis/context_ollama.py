"""context_exceeded for Ollama: the prompt was cut to num_ctx."""

from __future__ import annotations

from bot.diagnosis.common import diagnosis_reply
from bot.diagnosis.context_budget import REPLY_ROOM
from bot.diagnosis.engine_facts import gpu_total_from_context
from bot.diagnosis.gguf import catalog_model, gguf_placeholder, gguf_variant, kv_gguf_gib, ollama_tag
from bot.diagnosis.numbers import article, fmt_gib_or_mib, round_up_ctx
from bot.facts import PasteFacts
from bot.reply import Fact, Fix, Reply
from calculator.catalog import variant_weight_bytes
from calculator.commands import llamacpp_command, ollama_env_command
from calculator.ollama import OllamaConfig, ollama_budget
from calculator.units import fmt_tokens


def ollama_context(facts: PasteFacts) -> Reply:
    p = facts.params
    n_ctx = p.get("n_ctx") or facts.get("n_ctx")
    n = p.get("requested_tokens")
    truncated = facts.root.signature.endswith("truncated")
    match = catalog_model(facts)
    tag = ollama_tag(facts, match)
    if n:
        want = round_up_ctx(n + REPLY_ROOM)
    elif n_ctx:
        want = round_up_ctx(n_ctx * 2)
    else:
        want = 16384
    if match is not None:
        want = min(want, match.model.max_position_embeddings)
    if truncated:
        title = "Ollama: the prompt was cut to fit num_ctx"
        if n and n_ctx:
            title = (
                f"Ollama: {article(n)} {fmt_tokens(n)}-token prompt was cut to num_ctx {fmt_tokens(n_ctx)}"
            )
        first = (
            f"The prompt had {fmt_tokens(n)} tokens but num_ctx is {fmt_tokens(n_ctx)}, so Ollama silently dropped the start of it "
            "— which looks like the model 'forgetting' its instructions."
            if n and n_ctx
            else "Ollama silently dropped the oldest messages to fit num_ctx, which looks like the model forgetting."
        )
    else:
        title = "Ollama: the input is longer than the context length" + (
            f" ({fmt_tokens(n_ctx)})" if n_ctx else ""
        )
        first = (
            "The input does not fit in num_ctx and this endpoint cannot drop older messages to make room, so Ollama "
            "returned an error."
        )
    sentences = [
        first,
        "num_ctx is Ollama's context per request: 2,048 by default before v0.6.7, then 4,096, and from v0.15.5 "
        "4k/32k/256k by total VRAM — and the OpenAI-compatible /v1 endpoints cannot change it per request.",
    ]
    numbers: list[Fact] = []
    if n:
        numbers.append(Fact("prompt tokens", fmt_tokens(n), "log"))
    if n_ctx:
        numbers.append(Fact("num_ctx", fmt_tokens(n_ctx), "log"))
    numbers.append(Fact("num_ctx wanted", fmt_tokens(want), "computed"))
    kv_now = kv_want = None
    if match is not None:
        kv_want = kv_gguf_gib(
            match.model, want, facts.get("cache_type_k") or "f16", facts.get("cache_type_v") or "f16"
        )
        numbers.append(
            Fact(f"KV cache at {fmt_tokens(want)} ({match.label})", fmt_gib_or_mib(kv_want), "computed")
        )
        if n_ctx:
            kv_now = kv_gguf_gib(match.model, n_ctx)
    total, _ = gpu_total_from_context(facts)
    fit_note = ""
    if match is not None and total:
        v = gguf_variant(match)
        if v is not None:
            b = ollama_budget(
                match.model, variant_weight_bytes(match.model, v), total, OllamaConfig(num_ctx=want)
            )
            fit_note = (
                f"; on {fmt_gib_or_mib(total)} everything stays on the GPU"
                if b.fits
                else f"; on {fmt_gib_or_mib(total)} the largest that stays on the GPU is about {fmt_tokens(b.n_ctx_max_fit)} "
                "(beyond it layers move to the CPU)"
            )
    cost = "more KV memory"
    if kv_now is not None and kv_want is not None:
        cost = f"KV cache {fmt_gib_or_mib(kv_now)} -> {fmt_gib_or_mib(kv_want)}"
    fixes = [
        Fix(
            "ollama",
            f"num_ctx {fmt_tokens(want)} for every request (server-wide)",
            ollama_env_command({"OLLAMA_CONTEXT_LENGTH": str(want)}, tag),
            f"every request, including the /v1 OpenAI API, gets {fmt_tokens(want)} tokens{fit_note}",
            cost,
            1,
        ),
        Fix(
            "ollama",
            f"num_ctx {fmt_tokens(want)} per request",
            f"ollama run {tag or '<model>'}\n>>> /set parameter num_ctx {want}\n"
            f'# native API: "options": {{"num_ctx": {want}}}   (ignored by /v1)',
            "only where you set it",
            cost + "; changing num_ctx between requests reloads the model",
            2,
        ),
        Fix(
            "ollama",
            "a model with the larger context built in (for /v1 clients)",
            f"printf 'FROM {tag or '<model>'}\\nPARAMETER num_ctx {want}\\n' > Modelfile\n"
            f"ollama create {(tag or 'model').replace(':', '-')}-{want // 1024}k -f Modelfile",
            "OpenAI-API clients (Continue, Open WebUI in OpenAI mode, LangChain ChatOpenAI) pick it by name",
            cost,
            3,
        ),
        Fix(
            "llama.cpp",
            f"-c {fmt_tokens(want)}",
            llamacpp_command(None, gguf_placeholder(match), {"-c": str(want)}),
            f"llama-server holds {fmt_tokens(want)} tokens per request (current default -np auto shares the pool)",
            "more KV memory",
            5,
        ),
    ]
    notes = ["OLLAMA_CONTEXT_LENGTH exists from Ollama 0.5.13; on older versions use the Modelfile."]
    if n is None:
        notes.append(
            "The paste does not say how long the prompt was; I doubled num_ctx — size it to your longest prompt."
        )
    data = {"n_ctx": n_ctx, "prompt_tokens": n, "wanted_ctx": want, "truncated": truncated}
    return diagnosis_reply(title, " ".join(sentences), numbers, fixes, notes, data=data)
