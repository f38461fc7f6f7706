"""/vram words people type wrong get a specific error that says what to type, never a crash."""

from __future__ import annotations

import pytest

from bot.vram import answer, request_fields


@pytest.mark.parametrize(
    ("raw", "message"),
    [
        ("gpu:4090 model:qwen2.5-7b util:1.5", "utilization must be between 0 and 1, e.g. 0.9"),
        (
            "gpu:4090 model:qwen2.5-7b gpus:2.5",
            "gpus must be a whole number, got (that value)",
        ),  # 2.5: not echoed, not a plain word
        ("gpu:4090 model:qwen2.5-7b context:lots", "context 'lots' is not a token count (e.g. 32768 or 32k)"),
        ("gpu:4090 model:qwen2.5-7b memory:none", "memory must be a number of GiB, e.g. memory:22.5"),
        (
            "gpu:4090 model:qwen2.5-7b engine:tgi",
            "unknown engine 'tgi'; use vllm, llama.cpp, ollama or sglang",
        ),
    ],
)
def test_a_wrong_value_says_what_to_type(raw: str, message: str):
    reply = answer(raw=raw)
    assert reply.kind == "error" and reply.summary == message


def test_numbers_and_cache_types_as_people_type_them():
    named = {"model": "m", "gpu": "g", "max_model_len": "32k", "tp": "2", "gpu_memory_gib": "22.5GB"}
    assert request_fields({**named, "engine": "llama.cpp", "kv_cache_dtype": "fp8"}) == {
        "model": "m",
        "gpu": "g",
        "engine": "llama.cpp",
        "max_model_len": 32000,
        "tp": 2,
        "gpu_memory_gib": 22.5,
        "cache_type_k": "q8_0",
        "cache_type_v": "q8_0",
    }
