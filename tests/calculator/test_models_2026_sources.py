"""Entries added in 2026 checked against the config.json they cite: the cache sizes below are worked out by
hand from the config's own fields, not from the catalog."""

from __future__ import annotations

from calculator.kv import vllm_layout
from calculator.resolve import resolve_model


def test_nemotron_3_super_kv_and_mamba_state_by_hand_from_its_config():
    # config.json (NVIDIA-Nemotron-3-Super-120B-A12B-FP8): hybrid_override_pattern has 88 blocks, 40 "M", 8 "*",
    # 40 "E"; num_key_value_heads 2, head_dim 128; mamba_num_heads 128, mamba_head_dim 64, n_groups 8,
    # ssm_state_size 128, conv_kernel 4, mamba_ssm_cache_dtype float32.
    # KV per token: 8 attention blocks x 2 KV heads x 128 x (K + V) x 2 B (bf16) = 8,192 B
    # Mamba2 per sequence and layer: conv (128 x 64 + 2 x 8 x 128 = 10,240) x (4 - 1) x 2 B = 61,440
    #                                ssm 128 x 64 x 128 x 4 B = 4,194,304 -> 4,255,744 B; 40 layers
    model = resolve_model("nvidia/NVIDIA-Nemotron-3-Super-120B-A12B-BF16").model
    layout = vllm_layout(model)
    assert layout.growing_bytes_per_token == 8 * 2 * 128 * 2 * 2 == 8192
    assert layout.state_bytes_per_seq == 40 * (10240 * 3 * 2 + 128 * 64 * 128 * 4) == 170229760
    assert (layout.attention_layers, layout.state_layers) == (8, 40)
    assert sum(g.count for g in model.layer_groups) == model.num_hidden_layers == 88
    # at TP=2 each rank keeps one of the two KV heads and half of every Mamba state
    tp2 = vllm_layout(model, tp=2)
    assert (tp2.growing_bytes_per_token, tp2.state_bytes_per_seq) == (4096, 170229760 / 2)


def test_gemma_4_31b_sliding_and_global_layers_by_hand_from_its_config():
    # text_config: 60 layer_types (50 sliding_attention, 10 full_attention), sliding_window 1024,
    # num_key_value_heads 16 x head_dim 256 on sliding layers, num_global_key_value_heads 4 x global_head_dim 512
    # on full layers. Full: 10 x 4 x 512 x 2 x 2 B = 81,920 B per token; sliding: 50 x 16 x 256 x 2 x 2 B
    # = 819,200 B per token, up to 1,024 tokens.
    layout = vllm_layout(resolve_model("google/gemma-4-31B-it").model)
    assert layout.growing_bytes_per_token == 81920
    assert [(p.bytes_per_token, p.window, p.layers) for p in layout.sliding] == [(819200, 1024, 50)]
    # a 32,768-token sequence: 81,920 x 32,768 + 819,200 x 1,024
    assert layout.seq_bytes(32768) == 81920 * 32768 + 819200 * 1024


def test_glm_5_2_nvfp4_keeps_attention_and_shared_experts_in_bf16():
    # hf_quant_config.json exclude_modules: only the 75 MoE layers' routed experts are NVFP4 (4.5 bits with
    # their FP8 scales); 724,775,731,200 of 743,179,026,432 parameters, the rest 16-bit -> 4.785 bits
    match = resolve_model("nvidia/GLM-5.2-NVFP4")
    experts = 75 * 256 * 3 * 6144 * 2048
    total = 743_179_026_432
    assert experts == 724_775_731_200
    assert match.variant is not None
    assert (
        match.variant.bits_per_weight == round((experts * 4.5 + (total - experts) * 16) / total, 3) == 4.785
    )
