"""The 2025 hybrids and multimodal models added for issue 13: each typed name resolves to its own entry
(or asks), and the per-token KV and per-sequence state are what the config's fields give by hand."""

from __future__ import annotations

import pytest

from calculator.kv import vllm_layout
from calculator.resolve import NameNotFound, resolve_model

# (typed name, catalog model id, checkpoint label)
RESOLVES: list[tuple[str, str, str]] = [
    ("Qwen/Qwen3-Coder-Next", "Qwen/Qwen3-Coder-Next", "Qwen/Qwen3-Coder-Next"),
    ("qwen3-coder-next", "Qwen/Qwen3-Coder-Next", "Qwen/Qwen3-Coder-Next"),
    ("Qwen/Qwen3-Coder-Next-FP8", "Qwen/Qwen3-Coder-Next", "Qwen/Qwen3-Coder-Next-FP8"),
    (
        "nvidia/NVIDIA-Nemotron-Nano-9B-v2",
        "nvidia/NVIDIA-Nemotron-Nano-9B-v2",
        "nvidia/NVIDIA-Nemotron-Nano-9B-v2",
    ),
    (
        "nvidia/NVIDIA-Nemotron-Nano-12B-v2",
        "nvidia/NVIDIA-Nemotron-Nano-12B-v2",
        "nvidia/NVIDIA-Nemotron-Nano-12B-v2",
    ),
    ("nvidia/Nemotron-H-8B-Base-8K", "nvidia/Nemotron-H-8B-Base-8K", "nvidia/Nemotron-H-8B-Base-8K"),
    ("nvidia/Nemotron-H-47B-Base-8K", "nvidia/Nemotron-H-47B-Base-8K", "nvidia/Nemotron-H-47B-Base-8K"),
    ("nvidia/Nemotron-H-56B-Base-8K", "nvidia/Nemotron-H-56B-Base-8K", "nvidia/Nemotron-H-56B-Base-8K"),
    ("ibm-granite/granite-4.0-h-small", "ibm-granite/granite-4.0-h-small", "ibm-granite/granite-4.0-h-small"),
    ("ibm-granite/granite-4.0-h-tiny", "ibm-granite/granite-4.0-h-tiny", "ibm-granite/granite-4.0-h-tiny"),
    ("ibm-granite/granite-4.0-h-micro", "ibm-granite/granite-4.0-h-micro", "ibm-granite/granite-4.0-h-micro"),
    (
        "meta-llama/Llama-3.2-11B-Vision-Instruct",
        "meta-llama/Llama-3.2-11B-Vision-Instruct",
        "meta-llama/Llama-3.2-11B-Vision-Instruct",
    ),
    ("meta-llama/Llama-3.2-11B-Vision", "meta-llama/Llama-3.2-11B-Vision", "meta-llama/Llama-3.2-11B-Vision"),
    (
        "meta-llama/Llama-3.2-90B-Vision-Instruct",
        "meta-llama/Llama-3.2-90B-Vision-Instruct",
        "meta-llama/Llama-3.2-90B-Vision-Instruct",
    ),
    ("mistralai/Magistral-Small-2506", "mistralai/Magistral-Small-2506", "mistralai/Magistral-Small-2506"),
    ("MiniMaxAI/MiniMax-M2", "MiniMaxAI/MiniMax-M2", "MiniMaxAI/MiniMax-M2"),
    ("minimax-m2", "MiniMaxAI/MiniMax-M2", "MiniMaxAI/MiniMax-M2"),
    ("MiniMaxAI/MiniMax-M2.1", "MiniMaxAI/MiniMax-M2.1", "MiniMaxAI/MiniMax-M2.1"),
    ("tencent/Hunyuan-A13B-Instruct", "tencent/Hunyuan-A13B-Instruct", "tencent/Hunyuan-A13B-Instruct"),
    ("baidu/ERNIE-4.5-21B-A3B-PT", "baidu/ERNIE-4.5-21B-A3B-PT", "baidu/ERNIE-4.5-21B-A3B-PT"),
    ("google/gemma-3n-E2B-it", "google/gemma-3n-E2B-it", "google/gemma-3n-E2B-it"),
    ("google/gemma-3n-E4B-it", "google/gemma-3n-E4B-it", "google/gemma-3n-E4B-it"),
]

# Not catalogued (no public copy of their config found): they must ask, never answer for a neighbour.
ASKS = [
    "gemma3n",
    "mistralai/Pixtral-12B-2409",
    "OpenGVLab/InternVL3-8B",
    "OpenGVLab/InternVL2_5-78B",
    "tiiuae/Falcon-H1-7B-Instruct",
    "baidu/ERNIE-4.5-300B-A47B-PT",
    "LiquidAI/LFM2-1.2B",
    "llama3.2-vision",
]


@pytest.mark.parametrize(("name", "model_id", "label"), RESOLVES)
def test_name_resolves_to_its_own_entry_without_a_note(name: str, model_id: str, label: str):
    match = resolve_model(name)
    assert (match.model.id, match.label, match.note) == (model_id, label, "")


@pytest.mark.parametrize("name", ASKS)
def test_a_model_not_catalogued_asks(name: str):
    with pytest.raises(NameNotFound):
        resolve_model(name)


def test_a_later_release_of_the_same_geometry_says_what_was_assumed():
    match = resolve_model("mistralai/Magistral-Small-2507")
    assert match.model.id == "mistralai/Magistral-Small-2506"
    assert "Magistral-Small-2507 is not catalogued" in match.note


@pytest.mark.parametrize(
    ("name", "candidates"),
    [
        ("qwen3.6", ["Qwen/Qwen3.6-27B", "Qwen/Qwen3.6-35B-A3B"]),
        ("nemotron-nano-v2", ["nvidia/NVIDIA-Nemotron-Nano-9B-v2", "nvidia/NVIDIA-Nemotron-Nano-12B-v2"]),
    ],
)
def test_a_family_name_asks_between_its_real_sizes(name: str, candidates: list[str]):
    with pytest.raises(NameNotFound) as err:
        resolve_model(name)
    assert err.value.ambiguous
    assert err.value.candidates == candidates
    assert "did you mean" in str(err.value)


def test_nemotron_nano_9b_v2_kv_and_state_by_hand():
    # 4 attention blocks x 8 KV heads x 128 x (K+V) x 2 B = 16,384 B per token (the 52 others keep none)
    # Mamba2: conv (128 x 80 + 2 x 8 x 128 = 12,288) x (4 - 1) x 2 B = 73,728
    #         ssm 128 heads x 80 x 128 state x 4 B (float32) = 5,242,880 -> 5,316,608 B per layer, 27 layers
    layout = vllm_layout(resolve_model("nvidia/NVIDIA-Nemotron-Nano-9B-v2").model)
    assert layout.growing_bytes_per_token == 16384
    assert layout.state_bytes_per_seq == 27 * 5316608
    assert layout.attention_layers == 4


def test_qwen3_coder_next_kv_and_state_by_hand():
    # 12 gated-attention layers x 2 KV heads x 256 x 2 x 2 B = 24,576 B per token
    # 36 Gated DeltaNet layers: conv (128 x 16 x 2 + 128 x 32 = 8,192) x 3 x 2 B = 49,152
    #                           recurrent 32 x 128 x 128 x 2 B = 1,048,576 -> 1,097,728 B per layer
    layout = vllm_layout(resolve_model("qwen3-coder-next").model)
    assert layout.growing_bytes_per_token == 24576
    assert layout.state_bytes_per_seq == 36 * 1097728
    # TP=2 halves the state and the two KV heads
    layout_tp2 = vllm_layout(resolve_model("qwen3-coder-next").model, tp=2)
    assert (layout_tp2.growing_bytes_per_token, layout_tp2.state_bytes_per_seq) == (12288, 18 * 1097728)


def test_nemotron_h_56b_state_uses_vllm_float32_ssm_default():
    # conv (256 x 64 + 2 x 8 x 256 = 20,480) x 3 x 2 B + ssm 256 x 64 x 256 x 4 B = 16,900,096 B, 54 layers
    layout = vllm_layout(resolve_model("nvidia/Nemotron-H-56B-Base-8K").model)
    assert layout.state_bytes_per_seq == 54 * 16900096
    assert layout.growing_bytes_per_token == 10 * 8 * 128 * 2 * 2


def test_granite_4_h_small_kv_and_state_by_hand():
    # 4 attention layers x 8 KV heads x 128 x 2 x 2 B = 16,384 B per token
    # Mamba2 (n_groups 1, expand 2): conv (8192 + 2 x 128 = 8,448) x 3 x 2 B = 50,688
    #                                ssm 128 heads x 64 x 128 x 2 B = 2,097,152 -> 2,147,840 B, 36 layers
    model = resolve_model("ibm-granite/granite-4.0-h-small").model
    layout = vllm_layout(model)
    assert layout.growing_bytes_per_token == 16384
    assert layout.state_bytes_per_seq == 36 * 2147840
    assert (model.num_experts, model.experts_per_token, model.params_b) == (72, 10, 32.206)


def test_llama_3_2_vision_cross_attention_holds_one_image_per_sequence():
    # 32 self-attention layers x 8 x 128 x 2 x 2 B = 131,072 B per token; 8 cross-attention layers hold
    # 4 tiles x 1601 tokens x 8 x 128 x 2 x 2 B = 26,230,784 B each, whatever the context
    model = resolve_model("meta-llama/Llama-3.2-11B-Vision-Instruct").model
    layout = vllm_layout(model)
    assert layout.growing_bytes_per_token == 131072
    assert layout.state_bytes_per_seq == 8 * 26230784
    assert model.multimodal


def test_minimax_m2_keeps_full_attention_and_its_fp8_checkpoint():
    # 62 layers x 8 KV heads x 128 x 2 x 2 B = 253,952 B per token; the official checkpoint is FP8
    match = resolve_model("MiniMaxAI/MiniMax-M2")
    assert vllm_layout(match.model).growing_bytes_per_token == 253952
    assert match.variant is not None and match.variant.quant == "fp8"
    assert match.model.max_position_embeddings == 196608


def test_gemma_3n_shared_kv_layers_keep_no_cache():
    # of 35 layers only the first 20 cache: 4 global x 2 KV heads x 256 x 2 x 2 B = 8,192 B per token, and
    # 16 sliding layers (window 512) x 2,048 B = 32,768 B per token up to the window; the 15 others reuse them
    layout = vllm_layout(resolve_model("google/gemma-3n-E4B-it").model)
    assert layout.growing_bytes_per_token == 8192
    assert [(p.bytes_per_token, p.window, p.layers) for p in layout.sliding] == [(32768, 512, 16)]
    assert layout.state_bytes_per_seq == 0
    assert layout.attention_layers == 20
