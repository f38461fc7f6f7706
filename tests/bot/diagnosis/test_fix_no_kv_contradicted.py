"""A budget that gives the failing settings KV memory contradicts the paste ("No available memory for the
cache blocks"): it misses a term, so no command recomputed on it is printed as verified.

The command and error lines are vllm-project/vllm#17431 (Qwen3-8B at --gpu-memory-utilization 0.4); the
GPU line is added so the budget can be built (the thread's A800 is not in the catalog)."""

from __future__ import annotations

from bot.detector import detect
from bot.diagnosis import diagnose

PASTE = (
    "same on one A100 80GB\n"
    "python -m vllm.entrypoints.openai.api_server --model /root/yjpzmodel/basemodel/Qwen3-8B "
    "--served-model-name Qwen3-8B --gpu-memory-utilization 0.4 --port 8001\n"
    "ERROR 04-30 10:20:36 [core.py:396] EngineCore failed to start.\n"
    "ERROR 04-30 10:20:36 [core.py:396] ValueError: No available memory for the cache blocks. "
    "Try increasing `gpu_memory_utilization` when initializing the engine.\n"
)


def test_no_command_is_sized_on_a_budget_the_paste_contradicts():
    reply = diagnose(detect(PASTE))
    assert reply is not None
    assert reply.signature == "vllm.no_kv_memory.no_cache_blocks"
    assert not [f for f in reply.fixes if "--gpu-memory-utilization" in f.command]
    # [core.py:396] "EngineCore failed to start." is 0.8.5's line (knowledge/log_lines.yaml): its budget
    assert reply.summary.startswith(
        "At these settings the budget leaves 15.76 GiB for the KV cache, yet vLLM found none"
    )
    assert not any(s.heading.startswith("Hardware") for s in reply.sections)


def test_a_budget_that_agrees_with_the_paste_still_sizes_the_fix():
    # weights of 15.26 GiB (catalog) do not fit 0.15 x 79.32 GiB: the budget agrees that nothing is left
    reply = diagnose(detect(PASTE.replace("0.4", "0.15")))
    assert reply is not None
    assert reply.fixes[0].command == (
        "python -m vllm.entrypoints.openai.api_server --model /root/yjpzmodel/basemodel/Qwen3-8B "
        "--served-model-name Qwen3-8B --port 8001 --gpu-memory-utilization 0.28"
    )
