"""llama.cpp and Ollama as the way out when vLLM cannot run the model on this GPU."""

from __future__ import annotations

import re

from bot.diagnosis.gguf import first_ollama_tag
from bot.facts import PasteFacts
from bot.reply import Fix
from calculator.commands import llamacpp_command


def base_model_name(facts: PasteFacts) -> str | None:
    """The model's name without a path or a quantization suffix (``Qwen1.5-32B-Chat-AWQ`` -> ``Qwen1.5-32B-Chat``)."""
    if facts.model is not None:
        return facts.model.model.id.split("/")[-1]
    if not facts.context.get("model"):
        return None
    name = str(facts.context["model"]).rstrip("/\\").replace("\\", "/").split("/")[-1]
    name = re.sub(r"\.gguf$", "", name, flags=re.I)
    return re.sub(
        r"[-_.](?:awq|gptq|fp8|int4|int8|bnb|4bit|8bit|w4a16|w8a8|dynamic)\b.*$", "", name, flags=re.I
    )


def gguf_fallback_fixes(facts: PasteFacts, why: str, rank: int, ctx: int = 8192) -> list[Fix]:
    """llama.cpp and Ollama run GGUF files on any CUDA card from compute capability 5.0."""
    base = base_model_name(facts)
    gguf = f"{base}-Q4_K_M.gguf" if base else "<your-model>-Q4_K_M.gguf"
    tag = first_ollama_tag(facts)
    return [
        Fix(
            "llama.cpp",
            "serve a GGUF quantization with llama.cpp",
            llamacpp_command(None, gguf, {"-ngl": "99", "-c": str(ctx)}),
            f"{why}; -ngl 99 puts every layer on the GPU, -c {ctx} sets the context",
            "a separate GGUF download; lower batch throughput than vLLM",
            rank=rank,
        ),
        Fix(
            "ollama",
            "run it with Ollama",
            f"ollama run {tag}"
            if tag
            else f"ollama run <{base or 'your model'}: tag from ollama.com/library>",
            "Ollama bundles llama.cpp and supports NVIDIA cards from compute capability 5.0 "
            "(5.0-6.2 need driver 570 or newer)",
            "4-bit GGUF by default; less control over batching",
            rank=rank + 1,
        ),
    ]
