"""context_exceeded: a request longer than the context window, by engine."""

from __future__ import annotations

from bot.diagnosis.context_llamacpp import llamacpp_python_context, llamacpp_server_context
from bot.diagnosis.context_ollama import ollama_context
from bot.diagnosis.context_sglang import sglang_context
from bot.diagnosis.context_vllm import vllm_context
from bot.facts import PasteFacts
from bot.reply import Reply


def context_exceeded(facts: PasteFacts) -> Reply:
    engine = facts.root.engine
    if engine == "llama.cpp":
        if facts.root.signature.endswith("python"):
            return llamacpp_python_context(facts)
        return llamacpp_server_context(facts)
    if engine == "ollama":
        return ollama_context(facts)
    if engine == "sglang":
        return sglang_context(facts)
    return vllm_context(facts)


RULES = {
    "context_exceeded@llama.cpp": context_exceeded,
    "context_exceeded@ollama": context_exceeded,
    "context_exceeded@vllm": context_exceeded,
    "context_exceeded@sglang": context_exceeded,
}
