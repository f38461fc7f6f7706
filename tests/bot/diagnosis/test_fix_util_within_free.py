"""vLLM's free-memory check at start (``Free memory on device ... is less than desired GPU memory
utilization``) with no model in the paste: the utilization that passes the check cannot be sized, so it
comes after what finds the other process and says what must fit in what it asks for.

The paste is vllm#33297 (tests/data/wild_2026.jsonl ``vllm33297-ansi-caret-free-mem``): 1.54 of 22.05 GiB
free, 0.9 asked; 0.05 x 22.05 = 1.10 GiB passes the check and holds no real model."""

from __future__ import annotations

from bot.core import diagnose_safely
from bot.detector import detect

PASTE = (
    "(EngineCore_DP0 pid=738) ERROR 01-26 09:25:37 [core.py:935] ValueError: Free memory on device cuda:0 "
    "(1.54/22.05 GiB) on startup is less than desired GPU memory utilization (0.9, 19.84 GiB). Decrease GPU "
    "memory utilization or reduce GPU memory used by other processes."
)


def test_an_unsized_utilization_comes_after_the_check_for_the_other_process():
    reply = diagnose_safely(detect(PASTE))
    assert reply is not None
    first, util = sorted(reply.fixes, key=lambda f: f.rank)
    assert first.command == "nvidia-smi --query-compute-apps=pid,process_name,used_memory --format=csv"
    assert util.adds == "--gpu-memory-utilization 0.05"
    assert util.verification["starts"] is None  # no model: nothing says it starts
    assert util.effect.endswith("one request's KV cache fit in 1.10 GiB")
