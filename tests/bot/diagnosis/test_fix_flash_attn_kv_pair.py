"""A quantized V cache refused for want of flash attention on CUDA, with K and V of types llama.cpp's
CUDA build has no flash-attention kernel for (ggml/src/ggml-cuda/fattn.cu, default build): -fa auto
turned it off, and -fa on alone would run attention on the CPU.  The fix sets a pair with a kernel that
stores no more per token."""

from __future__ import annotations

from bot.detector import detect
from bot.diagnosis import diagnose
from calculator.kv import cuda_flash_attn_kv

CUDA = "ggml_cuda_init: found 1 CUDA devices:\n  Device 0: NVIDIA GeForce RTX 4090, compute capability 8.9, VMM: yes\n"
REFUSED = "llama_init_from_model: failed to initialize the context: quantized V cache was requested, but this requires Flash Attention\n"


def _commands(text: str) -> list[str]:
    reply = diagnose(detect(text))
    assert reply is not None and reply.category == "kv_quant_needs_flash_attn"
    return [f.command for f in reply.fixes]


def test_a_v_cache_quantized_alone_gets_a_matching_k_cache():
    text = "$ llama-server -m Qwen3-8B-Q4_K_M.gguf --cache-type-v q4_0 -ngl 99\n" + CUDA + REFUSED
    assert _commands(text) == ["llama-server -m Qwen3-8B-Q4_K_M.gguf -ngl 99 -fa on -ctk q8_0 -ctv q8_0"]


def test_a_pair_over_the_q8_0_budget_gets_q4_0():
    text = "$ llama-server -m Qwen3-8B-Q4_K_M.gguf -ctk q8_0 -ctv q5_0 -ngl 99\n" + CUDA + REFUSED
    assert _commands(text) == ["llama-server -m Qwen3-8B-Q4_K_M.gguf -ngl 99 -fa on -ctk q4_0 -ctv q4_0"]


def test_a_pair_with_a_kernel_is_kept():
    text = "$ llama-server -m Qwen3-8B-Q4_K_M.gguf -ctk q8_0 -ctv q8_0 -ngl 99\n" + CUDA + REFUSED
    assert _commands(text) == ["llama-server -m Qwen3-8B-Q4_K_M.gguf -ctk q8_0 -ctv q8_0 -ngl 99 -fa on"]


def test_without_a_cuda_device_the_types_are_kept():
    text = "$ llama-server -m Qwen3-8B-Q4_K_M.gguf --cache-type-v q4_0 -ngl 99\n" + REFUSED
    assert _commands(text) == ["llama-server -m Qwen3-8B-Q4_K_M.gguf --cache-type-v q4_0 -ngl 99 -fa on"]


def test_the_refusal_is_not_also_reported_as_a_context_failure():
    assert [f.signature for f in detect(CUDA + REFUSED).findings] == ["llamacpp.kv_quant_needs_flash_attn"]


def test_pairs():
    assert cuda_flash_attn_kv("f16", "q4_0") == ("q8_0", "q8_0")  # 2 + 18/32 bytes >= 2 x 34/32
    assert cuda_flash_attn_kv("q8_0", "q4_0") == ("q8_0", "q4_0")  # a default-build kernel
    assert cuda_flash_attn_kv("q4_1", "q4_0") == ("q4_0", "q4_0")
    assert cuda_flash_attn_kv("f32", "f16") == ("f32", "f16")  # f32 runs as f16
    assert cuda_flash_attn_kv("q4_0", "iq4_nl") == ("q4_0", "q4_0")
    assert cuda_flash_attn_kv("q4_0", "tq3_0") is None  # an unknown type: no pair is chosen
