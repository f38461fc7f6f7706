"""A quantized V cache on a model llama.cpp runs without flash attention whatever is asked (its
'forcing off' warnings, src/llama.cpp llama_init_from_model): turning flash attention on fails the same
way, so the fix keeps the V cache f16."""

from __future__ import annotations

from bot.detector import detect
from bot.diagnosis import diagnose

V_QUANT = "llama_init_from_model: V cache quantization requires flash_attn"


def test_llama_cpp_keeps_the_users_command_with_an_f16_v_cache():
    text = (
        "$ llama-server -m DeepSeek-V2-Lite-Q4_K_M.gguf --cache-type-k q8_0 --cache-type-v q8_0 -fa -ngl 99\n"
        "llama_init_from_model: flash_attn requires n_embd_head_k == n_embd_head_v - forcing off\n" + V_QUANT
    )
    reply = diagnose(detect(text))
    assert reply is not None and [f.change for f in reply.fixes] == ["keep the V cache f16"]
    assert (
        reply.fixes[0].command
        == "llama-server -m DeepSeek-V2-Lite-Q4_K_M.gguf --cache-type-k q8_0 -fa -ngl 99 -ctv f16"
    )


def test_ollama_is_told_to_keep_the_kv_cache_f16_not_to_turn_flash_attention_on():
    text = (
        "ollama[311]: llama_init_from_model: flash_attn is not compatible with Grok - forcing off\n"
        "ollama[311]: " + V_QUANT
    )
    reply = diagnose(detect(text))
    assert reply is not None and [f.command for f in reply.fixes] == ["OLLAMA_KV_CACHE_TYPE=f16 ollama serve"]
    assert "which Ollama turns off here (this model or GPU): keep the KV cache f16." in reply.summary


def test_ollama_gpu_without_flash_attention_keeps_the_kv_cache_f16():
    # ollama llm/server.go: FA requested but the GPU has none, so a quantized OLLAMA_KV_CACHE_TYPE is dropped
    text = (
        'time=2025-10-01T10:00:00.000Z level=WARN source=server.go:206 msg="flash attention enabled but not '
        'supported by gpu"\n'
        'time=2025-10-01T10:00:00.000Z level=WARN source=server.go:229 msg="quantized kv cache requested but '
        'flash attention disabled" type=q4_0\n'
    )
    reply = diagnose(detect(text))
    assert reply is not None and [f.command for f in reply.fixes] == ["OLLAMA_KV_CACHE_TYPE=f16 ollama serve"]


def test_a_forks_own_forcing_off_rule_keeps_the_v_cache_f16():
    text = (
        "$ llama-server -m Qwen3-8B-Q4_K_M.gguf -ctk tq3_0 -ctv q8_0 -fa on\n"
        "llama_init_from_model: flash_attn is not supported with TQ3_0 K cache - forcing off\n" + V_QUANT
    )
    reply = diagnose(detect(text))
    assert reply is not None and [f.command for f in reply.fixes] == [
        "llama-server -m Qwen3-8B-Q4_K_M.gguf -ctk tq3_0 -fa on -ctv f16"
    ]


def test_without_the_warning_flash_attention_is_turned_on():
    reply = diagnose(detect("ollama[311]: " + V_QUANT))
    assert reply is not None and [f.command for f in reply.fixes] == ["OLLAMA_FLASH_ATTENTION=1 ollama serve"]
