"""Fixes several rules offer in the same words and with the same command; each rule supplies what it
computed for its own paste (the effect, the cost where it differs, the rank)."""

from __future__ import annotations

from bot.diagnosis.commands import llama_cmd, tgi_command
from bot.facts import PasteFacts
from bot.reply import Fix
from calculator.commands import ollama_env_command, vllm_command
from calculator.units import fmt_tokens, round_down_clean

NVIDIA_SMI_PROCESSES = "nvidia-smi --query-compute-apps=pid,process_name,used_memory --format=csv"


def gpu_processes_fix(change: str, effect: str, rank: int) -> Fix:
    """Look for what else holds the GPU (nvidia-smi's process list)."""
    return Fix("any", change, NVIDIA_SMI_PROCESSES, effect, rank=rank)


def shard_fix(engine: str, gpus: int, command: str, effect: str, rank: int) -> Fix:
    return Fix(engine, f"shard over {gpus} GPUs", command, effect, f"needs {gpus} GPUs", rank=rank)


# ------------------------------------------------------------------------------------------ TGI


def tgi_quantize_fix(facts: PasteFacts, effect: str, cost: str, rank: int) -> Fix:
    return Fix(
        "tgi",
        "quantize the weights (4-bit)",
        tgi_command(facts, {"--quantize": "bitsandbytes-nf4"}),
        effect,
        cost,
        rank=rank,
    )


def tgi_shard_fix(facts: PasteFacts, tp: int, effect: str, rank: int) -> Fix:
    return shard_fix("tgi", tp * 2, tgi_command(facts, {"--num-shard": str(tp * 2)}), effect, rank)


# ------------------------------------------------------------------------------------------ vLLM


def no_cuda_graphs_fix(command: str | None, model_name: str | None, effect: str, cost: str, rank: int) -> Fix:
    return Fix(
        "vllm",
        "run without CUDA graphs",
        vllm_command(command, model_name, {"--enforce-eager": ""}),
        effect,
        cost,
        rank=rank,
    )


# ------------------------------------------------------------------------------------------ llama.cpp


def q8_kv_fix(facts: PasteFacts, rank: int) -> Fix:
    return Fix(
        "llama.cpp",
        "q8_0 KV cache",
        llama_cmd(facts, {"-ctk": "q8_0", "-ctv": "q8_0", "-fa": "on"}),
        "about half the KV cache",
        "negligible quality loss",
        rank=rank,
    )


def ubatch_256_fix(facts: PasteFacts, changes: dict[str, str | None], effect: str, rank: int) -> Fix:
    """``-ub 256`` (``changes`` may set ``-b`` with it)."""
    return Fix(
        "llama.cpp",
        "smaller micro-batch (-ub 256)",
        llama_cmd(facts, changes),
        effect,
        "slower prompt processing",
        rank=rank,
    )


def half_context_fix(facts: PasteFacts, n_ctx: int, effect: str, rank: int) -> Fix:
    new = round_down_clean(int(n_ctx) // 2)
    return Fix(
        "llama.cpp", f"-c {new}", llama_cmd(facts, {"-c": str(new)}), effect, "shorter prompts", rank=rank
    )


# ------------------------------------------------------------------------------------------ Ollama


def num_ctx_fix(
    new_ctx: int, tag: str | None, effect: str, cost: str, rank: int, per_session: str = ""
) -> Fix:
    """A smaller context for every model (``OLLAMA_CONTEXT_LENGTH``); ``per_session`` labels a comment
    that shows the ``/set parameter num_ctx`` way too."""
    command = ollama_env_command({"OLLAMA_CONTEXT_LENGTH": str(new_ctx)}, tag)
    if per_session:
        command += f"\n# {per_session}: /set parameter num_ctx {new_ctx}"
    return Fix("ollama", f"num_ctx {fmt_tokens(new_ctx)}", command, effect, cost, rank)


def one_slot_fix(change: str, tag: str | None, effect: str, cost: str, rank: int) -> Fix:
    """One parallel slot (``OLLAMA_NUM_PARALLEL=1``): every slot has its own KV cache."""
    return Fix("ollama", change, ollama_env_command({"OLLAMA_NUM_PARALLEL": "1"}, tag), effect, cost, rank)
