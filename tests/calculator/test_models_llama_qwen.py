"""Llama and Qwen catalog entries: KV bytes per token worked out by hand from each config.json,
names people type, and cross-checks against engine logs in the dev corpus."""

from __future__ import annotations

import math

import pytest

from calculator import catalog, kv
from calculator.resolve import resolve_model
from calculator.units import GIB

KIB = 1024


def _model(model_id: str) -> catalog.ModelSpec:
    return next(m for m in catalog.models() if m.id == model_id)


# bytes per token with a 16-bit cache = layers x KV heads x head_dim x 2 (K and V) x 2 B
KV_PER_TOKEN = [
    # 32 layers x 8 KV heads x 128 x 2 x 2 B = 131,072 (128 KiB)
    ("meta-llama/Llama-3.1-8B-Instruct", 32 * 8 * 128 * 2 * 2, 128 * KIB),
    # 80 x 8 x 128 x 2 x 2 = 327,680 (320 KiB)
    ("meta-llama/Llama-3.1-70B-Instruct", 80 * 8 * 128 * 2 * 2, 320 * KIB),
    ("meta-llama/Llama-3.3-70B-Instruct", 80 * 8 * 128 * 2 * 2, 320 * KIB),
    # 126 x 8 x 128 x 2 x 2 = 516,096 (504 KiB)
    ("meta-llama/Llama-3.1-405B-Instruct", 126 * 8 * 128 * 2 * 2, 504 * KIB),
    # head_dim 64: 16 x 8 x 64 x 2 x 2 = 32,768 (32 KiB)
    ("meta-llama/Llama-3.2-1B-Instruct", 16 * 8 * 64 * 2 * 2, 32 * KIB),
    # 28 x 8 x 128 x 2 x 2 = 114,688 (112 KiB)
    ("meta-llama/Llama-3.2-3B-Instruct", 28 * 8 * 128 * 2 * 2, 112 * KIB),
    # no GQA: 32 x 32 x 128 x 2 x 2 = 524,288 (512 KiB)
    ("meta-llama/Llama-2-7b-chat-hf", 32 * 32 * 128 * 2 * 2, 512 * KIB),
    # Llama 4: all 48 layers (36 chunked + 12 global) x 8 x 128 x 2 x 2 = 196,608 (192 KiB)
    ("meta-llama/Llama-4-Scout-17B-16E-Instruct", 48 * 8 * 128 * 2 * 2, 192 * KIB),
    # head_dim 64: 24 x 2 x 64 x 2 x 2 = 12,288 (12 KiB)
    ("Qwen/Qwen2.5-0.5B-Instruct", 24 * 2 * 64 * 2 * 2, 12 * KIB),
    # 28 x 2 x 128 x 2 x 2 = 28,672 (28 KiB)
    ("Qwen/Qwen2.5-1.5B-Instruct", 28 * 2 * 128 * 2 * 2, 28 * KIB),
    # 28 x 4 x 128 x 2 x 2 = 57,344 (56 KiB)
    ("Qwen/Qwen2.5-7B-Instruct", 28 * 4 * 128 * 2 * 2, 56 * KIB),
    # 64 x 8 x 128 x 2 x 2 = 262,144 (256 KiB)
    ("Qwen/Qwen2.5-32B-Instruct", 64 * 8 * 128 * 2 * 2, 256 * KIB),
    ("Qwen/QwQ-32B", 64 * 8 * 128 * 2 * 2, 256 * KIB),
    # 80 x 8 x 128 x 2 x 2 = 327,680 (320 KiB)
    ("Qwen/Qwen2.5-72B-Instruct", 80 * 8 * 128 * 2 * 2, 320 * KIB),
    # Qwen3: explicit head_dim 128. 40 x 8 x 128 x 2 x 2 = 163,840 (160 KiB)
    ("Qwen/Qwen3-14B", 40 * 8 * 128 * 2 * 2, 160 * KIB),
    # 64 x 8 x 128 x 2 x 2 = 262,144 (256 KiB; 64 query heads x 128 > hidden 5120)
    ("Qwen/Qwen3-32B", 64 * 8 * 128 * 2 * 2, 256 * KIB),
    # 28 x 8 x 128 x 2 x 2 = 114,688 (hidden 1024 / 16 heads would wrongly give head_dim 64)
    ("Qwen/Qwen3-0.6B", 28 * 8 * 128 * 2 * 2, 112 * KIB),
    # MoE: 48 x 4 x 128 x 2 x 2 = 98,304 (96 KiB)
    ("Qwen/Qwen3-30B-A3B", 48 * 4 * 128 * 2 * 2, 96 * KIB),
    ("Qwen/Qwen3-Coder-30B-A3B-Instruct", 48 * 4 * 128 * 2 * 2, 96 * KIB),
    # 94 x 4 x 128 x 2 x 2 = 192,512 (188 KiB)
    ("Qwen/Qwen3-235B-A22B", 94 * 4 * 128 * 2 * 2, 188 * KIB),
    # Qwen3-Next: only the 12 full-attention layers: 12 x 2 x 256 x 2 x 2 = 24,576 (24 KiB)
    ("Qwen/Qwen3-Next-80B-A3B-Instruct", 12 * 2 * 256 * 2 * 2, 24 * KIB),
    # no GQA: 80 x 64 x 128 x 2 x 2 = 2,621,440 (2.5 MiB)
    ("Qwen/Qwen1.5-72B-Chat", 80 * 64 * 128 * 2 * 2, 2560 * KIB),
    ("Qwen/Qwen1.5-7B-Chat", 32 * 32 * 128 * 2 * 2, 512 * KIB),
]


@pytest.mark.parametrize(("model_id", "expected", "as_kib"), KV_PER_TOKEN, ids=[r[0] for r in KV_PER_TOKEN])
def test_kv_bytes_per_token(model_id, expected, as_kib):
    assert expected == as_kib
    assert kv.vllm_layout(_model(model_id)).all_attention_bytes_per_token == expected


def test_llama4_only_global_layers_grow():
    layout = kv.vllm_layout(_model("meta-llama/Llama-4-Scout-17B-16E-Instruct"))
    # 12 NoPE global layers keep every token; 36 chunked layers hold at most the 8192-token chunk
    assert layout.growing_bytes_per_token == 12 * 8 * 128 * 2 * 2
    assert [(s.window, s.layers) for s in layout.sliding] == [(8192, 36)]


def test_qwen3_next_deltanet_state():
    model = _model("Qwen/Qwen3-Next-80B-A3B-Instruct")
    conv = (128 * 16 * 2 + 128 * 32) * (4 - 1) * 2  # conv_dim 8192 x (kernel 4 - 1) x bf16 = 49,152
    ssm = 32 * 128 * 128 * 2  # 32 value heads x 128 x 128 x bf16 = 1,048,576
    assert kv.vllm_layout(model).state_bytes_per_seq == 36 * (conv + ssm)
    # vLLM 0.10.2 at TP=2 logged "Setting attention block size to 544 tokens" and "Padding mamba page size
    # by 1.49%": per rank the state is halved and one token of one attention layer is 1 head x 256 x 2 x 2 B.
    per_rank_state = (conv + ssm) // 2
    attn_token = 1 * 256 * 2 * 2
    block = 16 * math.ceil(per_rank_state / (16 * attn_token))
    assert block == 544
    assert round((block * attn_token - per_rank_state) / per_rank_state * 100, 2) == 1.49


def test_dev_corpus_logs_agree():
    # vllm10517: Llama-3.1-8B, 2.89 GiB of KV cache -> 1478 blocks of 16 tokens
    per_token = kv.vllm_layout(_model("meta-llama/Llama-3.1-8B-Instruct")).all_attention_bytes_per_token
    assert int(2.89 * GIB // (16 * per_token)) in range(1470, 1485)
    # lmcache1739-qwen3-14b: 6.51 GiB holds 42,656 tokens
    per_token = kv.vllm_layout(_model("Qwen/Qwen3-14B")).all_attention_bytes_per_token
    assert abs(6.51 * GIB / per_token - 42_656) < 42_656 * 0.005
    # xinference1202: Qwen1.5-72B f16 KV at n_ctx 32768 is 1024 MiB per layer
    per_token = kv.llamacpp_layout(_model("Qwen/Qwen1.5-72B-Chat")).all_attention_bytes_per_token
    assert per_token / 80 * 32768 == 1024 * 1024 * 1024


@pytest.mark.parametrize(
    ("name", "model_id", "variant_id"),
    [
        ("qwen-32b-awq", "Qwen/Qwen2.5-32B-Instruct", "Qwen/Qwen2.5-32B-Instruct-AWQ"),
        ("qwen2.5-coder-32b-awq", "Qwen/Qwen2.5-Coder-32B-Instruct", "Qwen/Qwen2.5-Coder-32B-Instruct-AWQ"),
        ("llama3.1:8b", "meta-llama/Llama-3.1-8B-Instruct", None),
        ("Qwen/Qwen2.5-32B-Instruct-AWQ", "Qwen/Qwen2.5-32B-Instruct", "Qwen/Qwen2.5-32B-Instruct-AWQ"),
        ("qwq", "Qwen/QwQ-32B", None),
        ("qwen3-30b-a3b", "Qwen/Qwen3-30B-A3B", None),
        ("llama-4-scout", "meta-llama/Llama-4-Scout-17B-16E-Instruct", None),
        ("meta-llama/Meta-Llama-3.1-70B-Instruct", "meta-llama/Llama-3.1-70B-Instruct", None),
        ("Qwen/Qwen1.5-7B-Chat-GPTQ-Int4", "Qwen/Qwen1.5-7B-Chat", "Qwen/Qwen1.5-7B-Chat-GPTQ-Int4"),
        ("qwen3-next", "Qwen/Qwen3-Next-80B-A3B-Instruct", None),
        ("llama-3.3-70b-fp4", "meta-llama/Llama-3.3-70B-Instruct", "nvidia/Llama-3.3-70B-Instruct-FP4"),
    ],
)
def test_names_resolve(name, model_id, variant_id):
    match = resolve_model(name)
    assert match.model.id == model_id
    if variant_id is not None:
        assert match.variant is not None and match.variant.id == variant_id


def test_real_sizes_match_parameter_counts():
    # a bf16 checkpoint's total_size is 2 B per parameter (params_b is rounded to 0.01 B)
    for m in catalog.models():
        if m.family.startswith(("llama", "qwen", "qwq")):
            for v in m.variants:
                if v.quant in ("bf16", "fp16") and v.size_bytes is not None:
                    assert v.size_bytes / 2 / 1e9 == pytest.approx(m.params_b, abs=0.01), v.id
