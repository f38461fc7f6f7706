"""The calculator reproduces what the engines printed (records of shared/corpus/dev.jsonl cited by id)."""

from __future__ import annotations

import pytest

from calculator.catalog import models
from calculator.kv import layout, llamacpp_layout, vllm_layout
from calculator.llamacpp import LlamaCppConfig, kv_bytes, llamacpp_budget, pad_ctx
from calculator.ollama import default_num_ctx
from calculator.sglang import default_mem_fraction_static
from calculator.units import GIB, KIB, MIB, round_down_clean
from calculator.vllm import kv_capacity


def model(model_id: str):
    return next(m for m in models() if m.id == model_id)


# ---- vLLM: KV tokens / blocks from the logged KV GiB ----------------------------------------------


@pytest.mark.parametrize(
    ("record", "model_id", "kv_gib", "v0", "blocks", "tokens"),
    [
        ("vllm10517-29k-bad", "meta-llama/Llama-3.1-8B-Instruct", 2.89, True, 1478, 23648),
        ("vllm10517-20k-ok", "meta-llama/Llama-3.1-8B-Instruct", 3.81, True, 1952, 31232),
        ("lmcache1739-qwen3-14b", "Qwen/Qwen3-14B", 6.51, False, 2666, 42656),
        ("repofile-qwen25-15b-t4-colab", "Qwen/Qwen2.5-1.5B-Instruct", 2.36, True, 5517, 88272),
    ],
)
def test_vllm_tokens_from_logged_kv(record, model_id, kv_gib, v0, blocks, tokens):
    num_blocks, kv_tokens, _fit, _conc = kv_capacity(vllm_layout(model(model_id)), kv_gib, 32768, v0=v0)
    # the log prints kv GiB rounded to 2 decimals: within 1%
    assert num_blocks == pytest.approx(blocks, rel=0.01), record
    assert kv_tokens == pytest.approx(tokens, rel=0.01), record


def test_vllm_concurrency_lmcache1739():
    _b, _t, _fit, concurrency = kv_capacity(vllm_layout(model("Qwen/Qwen3-14B")), 6.51, 32768)
    assert concurrency == pytest.approx(1.30, abs=0.01)


def test_vllm5248_mha_model_tp2_per_gpu():
    """deepseek-coder-6.7b (32 KV heads) at TP=2: 256 KiB/token per GPU; 507 blocks = 1.98 GiB per GPU."""
    bpt = vllm_layout(model("deepseek-ai/deepseek-coder-6.7b-instruct"), tp=2).all_attention_bytes_per_token
    assert bpt == 256 * KIB
    assert 507 * 16 * bpt / GIB == pytest.approx(1.98, abs=0.01)


def test_aphrodite1320_kv_for_8192_tokens():
    """Pixtral-12B's text model is Mistral-Nemo's: 1.25 GiB of KV per 8192 tokens (160 KiB/token)."""
    bpt = vllm_layout(model("mistralai/Mistral-Nemo-Instruct-2407")).all_attention_bytes_per_token
    assert bpt * 8192 / GIB == pytest.approx(1.25, abs=0.005)


def test_v1_needed_gib_matches_bytes_per_token():
    """Issue 2's V1 example: 32.0 GiB for 131,072 tokens is 256 KiB/token = Qwen2.5-32B's layout."""
    bpt = vllm_layout(model("Qwen/Qwen2.5-32B-Instruct")).all_attention_bytes_per_token
    assert bpt * 131072 / GIB == pytest.approx(32.0)


def test_mla_is_replicated_across_tp():
    ds = model("deepseek-ai/DeepSeek-V3-0324")
    one = vllm_layout(ds, tp=1).all_attention_bytes_per_token
    assert one / KIB == pytest.approx(68.6, abs=0.1)
    assert vllm_layout(ds, tp=8).all_attention_bytes_per_token == one


def test_kv_heads_replicated_when_tp_exceeds_them():
    qwen = model("Qwen/Qwen2.5-1.5B-Instruct")  # 2 KV heads
    assert (
        vllm_layout(qwen, tp=4).all_attention_bytes_per_token
        == vllm_layout(qwen, tp=2).all_attention_bytes_per_token
    )


def test_fp8_halves_kv():
    m = model("meta-llama/Llama-3.1-8B-Instruct")
    assert (
        vllm_layout(m, "fp8").all_attention_bytes_per_token * 2
        == vllm_layout(m).all_attention_bytes_per_token
    )


def test_sliding_window_caps_usage():
    g = model("google/gemma-3-27b-it")
    lay = vllm_layout(g)
    full_only = lay.growing_bytes_per_token * 131072
    assert lay.seq_bytes(131072, in_flight=2048) < 1.2 * full_only  # SWA layers hold ~window + batch
    naive = layout(g, 2, 2).all_attention_bytes_per_token * 131072
    assert naive / lay.seq_bytes(131072, 2048) > 4  # what a GQA-only calculator overestimates


# ---- llama.cpp and Ollama --------------------------------------------------------------------------


def test_llamacpp_kv_per_layer_xinference1202():
    """Qwen1.5-72B (64 KV heads x 128, no GQA) at n_ctx 32768, f16: 1024 MiB per layer; 41 layers = 41984 MiB."""
    q = model("Qwen/Qwen1.5-72B-Chat")
    lay = llamacpp_layout(q)
    per_layer = lay.growing_bytes_per_token / q.num_hidden_layers * 32768
    assert per_layer == 1024 * MIB
    assert 41 * per_layer / MIB == 41984


def test_ollama_gemma3_12b_kv_608_mib():
    """ollama11819: gemma3:12b at num_ctx 2048 -> memory.required.kv 608 MiB (SWA layers hold 1024 + 512)."""
    g = model("google/gemma-3-12b-it")
    total = kv_bytes(llamacpp_layout(g), 2048, LlamaCppConfig(n_ctx=2048, n_ubatch=512))
    assert total / MIB == pytest.approx(608, abs=0.5)


def test_llamacpp_quantized_cache_bytes():
    m = model("meta-llama/Llama-3.1-8B-Instruct")
    f16 = llamacpp_layout(m).growing_bytes_per_token
    q8 = llamacpp_layout(m, "q8_0", "q8_0").growing_bytes_per_token
    q4 = llamacpp_layout(m, "q4_0", "q4_0").growing_bytes_per_token
    assert f16 == 128 * KIB  # 2 x 32 layers x 1024 x 2 B (shared/reference/llamacpp_ollama.md §1.1)
    assert q8 == pytest.approx(f16 * 34 / 64)
    assert q4 == pytest.approx(f16 * 18 / 64)


def test_llamacpp_ctx_padding_and_fit():
    assert pad_ctx(50000) == 50176  # llamacpp26297: n_ctx_slot = 50176 for -c 50000
    m = model("meta-llama/Llama-3.1-8B-Instruct")
    b = llamacpp_budget(m, int(4.58 * GIB), 23.6, LlamaCppConfig(n_ctx=None))
    assert b.n_ctx_max_fit % 256 == 0 and b.fits
    small = llamacpp_budget(m, int(4.58 * GIB), 8.0, LlamaCppConfig(n_ctx=None))
    assert 0 < small.n_ctx_max_fit < b.n_ctx_max_fit


def test_ollama_default_context_tiers():
    assert default_num_ctx(23.6, 131072) == 32768
    assert default_num_ctx(11.7, 131072) == 4096
    assert default_num_ctx(94, 131072) == 131072  # capped at the model's trained context
    assert default_num_ctx(94, 1 << 20) == 262144


def test_sglang_default_mem_fraction():
    assert default_mem_fraction_static(23.99) == pytest.approx(0.72, abs=0.01)
    assert default_mem_fraction_static(79.1) == pytest.approx(0.83, abs=0.01)


@pytest.mark.parametrize(
    ("n", "clean"),
    [(5728, 5120), (23648, 23552), (42656, 41984), (8300, 8192), (300, 256), (100, 100), (0, 0)],
)
def test_round_down_clean(n, clean):
    assert round_down_clean(n) == clean
    assert round_down_clean(n) <= n
