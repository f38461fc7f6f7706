"""memory_report: informational memory lines, read back with what they mean and what they allow."""

from __future__ import annotations

from bot.diagnosis.common import diagnosis_reply, known_cause
from bot.diagnosis.gguf import catalog_model, ollama_tag
from bot.diagnosis.numbers import fmt_gib_or_mib, fmt_mib_or_gib
from bot.diagnosis.report_llamacpp import llamacpp_report
from bot.diagnosis.report_ollama import ollama_offload_report
from bot.diagnosis.report_sglang import sglang_report
from bot.diagnosis.report_vllm import vllm_report
from bot.facts import PasteFacts
from bot.reply import Fact, Fix, Reply
from calculator.commands import ollama_env_command
from calculator.units import fmt_tokens


def memory_report(facts: PasteFacts) -> Reply:
    engine = facts.root.engine
    sig = facts.root.signature
    if engine == "ollama":
        if facts.params.get("layers_model") is not None and facts.params.get("required_full_gib") is not None:
            return ollama_offload_report(facts)
        return _report_ollama_other(facts)
    if engine == "llama.cpp":
        return llamacpp_report(facts)
    if engine == "sglang":
        return sglang_report(facts)
    if engine == "vllm" or sig.startswith("vllm."):
        return vllm_report(facts)
    return _report_generic(facts)


def _report_generic(facts: PasteFacts) -> Reply:
    numbers = [Fact(k.replace("_", " "), str(v), "log") for k, v in facts.root.params.items()]
    return diagnosis_reply(facts.root.title, known_cause(facts), numbers, [], [])


def _report_ollama_other(facts: PasteFacts) -> Reply:
    p = facts.params
    numbers: list[Fact] = []
    sentences: list[str] = []
    fixes: list[Fix] = []
    tag = ollama_tag(facts, catalog_model(facts))
    title = facts.root.title
    if p.get("model_buffer_mib") is not None or p.get("kv_buffer_mib") is not None:
        dev = p.get("device") or "the GPU"
        for key, label in (
            ("model_buffer_mib", "weights"),
            ("kv_buffer_mib", "KV cache"),
            ("compute_buffer_mib", "compute graph"),
        ):
            if p.get(key) is not None:
                numbers.append(Fact(f"{label} on {dev}", fmt_gib_or_mib(p[key] / 1024), "log"))
        if p.get("total_memory_gib") is not None:
            numbers.append(Fact("total", fmt_gib_or_mib(p["total_memory_gib"]), "log"))
        title = (
            f"Ollama: on {dev} "
            + " + ".join(
                f"{label} {fmt_mib_or_gib(p[k])}"
                for k, label in (
                    ("model_buffer_mib", "weights"),
                    ("kv_buffer_mib", "KV cache"),
                    ("compute_buffer_mib", "graph"),
                )
                if p.get(k) is not None
            )
            + (f" = {fmt_gib_or_mib(p['total_memory_gib'])}" if p.get("total_memory_gib") is not None else "")
        )
        sentences.append(
            "Ollama (v0.12+) measured these buffers by trial allocation: weights, the KV cache for num_ctx x "
            "num_parallel tokens, and the compute graph."
        )
        n_ctx = facts.get("n_ctx")
        if p.get("kv_buffer_mib") and n_ctx:
            per = p["kv_buffer_mib"] / n_ctx
            sentences.append(
                f"The KV cache is {per * 1024:,.0f} KiB per token at num_ctx {fmt_tokens(n_ctx)}."
            )
    elif p.get("system_total_gib") is not None:
        title = f"Ollama: {fmt_gib_or_mib(p['system_total_gib'])} of RAM, {fmt_gib_or_mib(p.get('system_free_gib') or 0)} free"
        numbers += [Fact("system RAM total", fmt_gib_or_mib(p["system_total_gib"]), "log")]
        if p.get("system_free_gib") is not None:
            numbers.append(Fact("free", fmt_gib_or_mib(p["system_free_gib"]), "log"))
        if p.get("swap_free_gib") is not None:
            numbers.append(Fact("swap free", fmt_gib_or_mib(p["swap_free_gib"]), "log"))
        sentences.append(
            "Layers that do not fit on the GPU, and their KV cache, must fit in free RAM + swap (Ollama ≤ v0.29 "
            "refuses to load otherwise)."
        )
    elif p.get("gpu_free_gib") is not None:
        title = f"Ollama: the GPU has {fmt_gib_or_mib(p['gpu_free_gib'])} free, Ollama plans with {fmt_gib_or_mib(p.get('gpu_available_gib') or 0)}"
        numbers += [
            Fact("free", fmt_gib_or_mib(p["gpu_free_gib"]), "log"),
            Fact("available to Ollama", fmt_gib_or_mib(p.get("gpu_available_gib") or 0), "log"),
        ]
        if p.get("gpu_minimum_mib") is not None:
            numbers.append(Fact("reserved minimum", fmt_gib_or_mib(p["gpu_minimum_mib"] / 1024), "log"))
        if p.get("gpu_overhead_mib") is not None:
            numbers.append(Fact("OLLAMA_GPU_OVERHEAD", fmt_gib_or_mib(p["gpu_overhead_mib"] / 1024), "log"))
        sentences.append(
            "Available = free − the reserved minimum − OLLAMA_GPU_OVERHEAD; the layers are planned into that."
        )
    elif p.get("total_vram_gib") is not None or "default_num_ctx" in " ".join(facts.root.evidence):
        n = p.get("n_ctx") or facts.get("n_ctx")
        title = (
            f"Ollama: default num_ctx {fmt_tokens(n)} from {fmt_gib_or_mib(p.get('total_vram_gib') or 0)} of VRAM"
            if n
            else title
        )
        sentences.append(
            "Since v0.15.5 Ollama picks num_ctx from total VRAM: 4,096 below 23 GiB, 32,768 from 23 GiB, 262,144 from "
            "47 GiB (capped at the model's trained context) — unless the request or OLLAMA_CONTEXT_LENGTH sets it."
        )
        if n and n >= 32768:
            fixes.append(
                Fix(
                    "ollama",
                    "a smaller default",
                    ollama_env_command({"OLLAMA_CONTEXT_LENGTH": "8192"}, tag),
                    "a much smaller KV cache, so more layers stay on the GPU",
                    "less context",
                    1,
                )
            )
    else:
        sentences.append(known_cause(facts))
        numbers = [Fact(k.replace("_", " "), str(v), "log") for k, v in facts.root.params.items()]
    return diagnosis_reply(title, " ".join(sentences), numbers, fixes, [])


RULES = {"memory_report": memory_report}
