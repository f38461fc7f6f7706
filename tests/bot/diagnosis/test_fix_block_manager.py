"""vLLM V0 dropped a prompt for the whole KV cache: the cache holds at least the prompt (start-up check)
and missed it by the 1 % watermark, so fp8 KV (twice the blocks) serves it."""

from __future__ import annotations

from bot.detector import detect
from bot.diagnosis import diagnose

WARNING = (
    "WARNING 05-02 10:11:12 scheduler.py:672] Input prompt (9000 tokens) is too long and exceeds the "
    "capacity of block_manager"
)


def test_prompt_over_the_block_manager_gets_fp8_kv():
    reply = diagnose(detect("vllm serve mistralai/Mistral-7B-Instruct-v0.2 --max-model-len 9000\n" + WARNING))
    assert reply is not None
    fix = reply.fixes[0]
    assert (
        fix.command
        == "vllm serve mistralai/Mistral-7B-Instruct-v0.2 --max-model-len 9000 --kv-cache-dtype fp8"
    )
    assert fix.verification["serves"] == 9000


def test_no_doubling_when_the_cache_is_already_fp8():
    text = "vllm serve mistralai/Mistral-7B-Instruct-v0.2 --kv-cache-dtype fp8\n" + WARNING
    reply = diagnose(detect(text))
    assert reply is not None
    assert all("--kv-cache-dtype fp8 --kv-cache-dtype" not in f.command for f in reply.fixes)
    assert all(f.verification.get("kind") != "doubled cache" for f in reply.fixes)
