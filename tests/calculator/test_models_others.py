"""KV-cache geometry of the DeepSeek / Mistral / Gemma / gpt-oss / Phi / GLM / Kimi catalog entries.

Every expected number is worked out by hand from the checkpoint's config.json (arithmetic in the
comments): bytes per token = layers x kv_heads x head_dim x 2 (K and V) x 2 B (bf16), except MLA, which
stores one latent of kv_lora_rank + qk_rope_head_dim elements per layer and no V.
"""

from __future__ import annotations

from collections import defaultdict

import pytest

from calculator import catalog
from calculator.kv import llamacpp_layout, vllm_layout
from calculator.model_names import model_key
from calculator.resolve import exact_keys, resolve_model, same_memory
from calculator.units import KIB, MIB


def _model(model_id: str) -> catalog.ModelSpec:
    return next(m for m in catalog.models() if m.id == model_id)


# (model id, all-attention bytes per token at bf16, hand arithmetic)
PER_TOKEN = [
    # MLA: (512 + 64) x 2 B x 61 layers = 70,272 B = 68.6 KiB (vllm_memory.md 2.1)
    ("deepseek-ai/DeepSeek-V3-0324", 70_272),
    ("deepseek-ai/DeepSeek-R1-0528", 70_272),
    # Kimi K2: same latent, same 61 layers (64 heads do not change the latent) = 70,272
    ("moonshotai/Kimi-K2-Instruct", 70_272),
    # Qwen2 distill 32B: 64 x 8 x 128 x 2 x 2 = 262,144
    ("deepseek-ai/DeepSeek-R1-Distill-Qwen-32B", 262_144),
    # Llama distill 70B: 80 x 8 x 128 x 4 = 327,680
    ("deepseek-ai/DeepSeek-R1-Distill-Llama-70B", 327_680),
    # deepseek-coder-6.7b is MHA: 32 x 32 x 128 x 4 = 524,288 (512 KiB)
    ("deepseek-ai/deepseek-coder-6.7b-instruct", 524_288),
    # Mixtral 8x7B: 32 x 8 x 128 x 4 = 131,072
    ("mistralai/Mixtral-8x7B-Instruct-v0.1", 131_072),
    # Mistral Nemo: head_dim 128 (not 5120/32 = 160): 40 x 8 x 128 x 4 = 163,840
    ("mistralai/Mistral-Nemo-Instruct-2407", 163_840),
    # Mistral Small 3.1 text: 40 x 8 x 128 x 4 = 163,840
    ("mistralai/Mistral-Small-3.1-24B-Instruct-2503", 163_840),
    # Gemma 2 9B: 42 x 8 x 256 x 4 = 344,064
    ("google/gemma-2-9b-it", 344_064),
    # Gemma 3 12B: 48 x 8 x 256 x 4 = 393,216
    ("google/gemma-3-12b-it", 393_216),
    # Gemma 3 27B: 62 x 16 x 128 x 4 = 507,904
    ("google/gemma-3-27b-it", 507_904),
    # Gemma 3 1B: 26 x 1 x 256 x 4 = 26,624
    ("google/gemma-3-1b-it", 26_624),
    # gpt-oss-20b: 24 x 8 x 64 x 4 = 49,152
    ("openai/gpt-oss-20b", 49_152),
    # gpt-oss-120b: 36 x 8 x 64 x 4 = 73,728
    ("openai/gpt-oss-120b", 73_728),
    # Phi-3-mini-4k: MHA, head_dim 3072/32 = 96: 32 x 32 x 96 x 4 = 393,216 (all full, see phi.yaml)
    ("microsoft/Phi-3-mini-4k-instruct", 393_216),
    # Phi-4: 40 x 10 x 128 x 4 = 204,800
    ("microsoft/phi-4", 204_800),
    # GLM-4.5-Air: plain GQA, 46 x 8 x 128 x 4 = 188,416
    ("zai-org/GLM-4.5-Air", 188_416),
    # GLM-4.5: 92 x 8 x 128 x 4 = 376,832
    ("zai-org/GLM-4.5", 376_832),
    # GLM-4-9B-chat: multi_query_group_num 2: 40 x 2 x 128 x 4 = 40,960
    ("THUDM/glm-4-9b-chat", 40_960),
]


@pytest.mark.parametrize(("model_id", "expected"), PER_TOKEN, ids=[p[0] for p in PER_TOKEN])
def test_kv_bytes_per_token(model_id, expected):
    assert vllm_layout(_model(model_id)).all_attention_bytes_per_token == expected


# (model id, seq_bytes(8192), hand arithmetic) for the sliding-window models; window caps the local layers
SEQ_8192 = [
    # gemma-2-9b: per layer 8 x 256 x 4 = 8192 B; 21 global x 8192 x 8192 + 21 local x 8192 x 4096
    #   = 1,409,286,144 + 704,643,072
    ("google/gemma-2-9b-it", 2_113_929_216),
    # gemma-3-12b: 8 global x 8192 B x 8192 + 40 local x 8192 B x 1024 = 536,870,912 + 335,544,320
    ("google/gemma-3-12b-it", 872_415_232),
    # gemma-3-27b: per layer 16 x 128 x 4 = 8192 B; 10 x 8192 x 8192 + 52 x 8192 x 1024
    #   = 671,088,640 + 436,207,616
    ("google/gemma-3-27b-it", 1_107_296_256),
    # gemma-3-1b: per layer 1 x 256 x 4 = 1024 B; 4 x 1024 x 8192 + 22 x 1024 x 512 (window 512)
    #   = 33,554,432 + 11,534,336
    ("google/gemma-3-1b-it", 45_088_768),
    # gpt-oss-20b: per layer 8 x 64 x 4 = 2048 B; 12 x 2048 x 8192 + 12 x 2048 x 128
    #   = 201,326,592 + 3,145,728
    ("openai/gpt-oss-20b", 204_472_320),
    # gpt-oss-120b: 18 x 2048 x 8192 + 18 x 2048 x 128 = 301,989,888 + 4,718,592
    ("openai/gpt-oss-120b", 306_708_480),
]


@pytest.mark.parametrize(("model_id", "expected"), SEQ_8192, ids=[s[0] for s in SEQ_8192])
def test_sliding_window_caps_sequence_bytes(model_id, expected):
    layout = vllm_layout(_model(model_id))
    assert layout.seq_bytes(8192) == expected
    assert layout.seq_bytes(8192) < layout.all_attention_bytes_per_token * 8192


def test_deepseek_v3_matches_vllm_reference():
    # shared/reference/vllm_memory.md 2.1: DeepSeek-V3 (61 layers) ~ 68.6 KiB per token at bf16
    per_token = vllm_layout(_model("deepseek-ai/DeepSeek-V3-0324")).all_attention_bytes_per_token
    assert per_token / KIB == pytest.approx(68.6, abs=0.05)


def test_mla_latent_is_replicated_across_tp_ranks():
    model = _model("moonshotai/Kimi-K2-Instruct")
    assert vllm_layout(model, tp=8).all_attention_bytes_per_token == 70_272
    assert vllm_layout(model, kv_cache_dtype="fp8").all_attention_bytes_per_token == 576 * 61


def test_deepseek_coder_tp2_matches_corpus():
    # dev.jsonl vllm5248-dscoder67b-2xt4-blocks: "256 KiB/tok/GPU" at TP 2 (32 KV heads split 16/16)
    model = _model("deepseek-ai/deepseek-coder-6.7b-instruct")
    assert vllm_layout(model, tp=2).all_attention_bytes_per_token == 256 * KIB


def test_gemma3_12b_ollama_kv_matches_corpus():
    # dev.jsonl ollama11819-ctx2048-kv608: gemma3:12b, --ctx-size 2048 --batch-size 512 -> 608 MiB KV.
    # 8 global x 8192 B x 2048 = 128 MiB; 40 local x 8192 B x min(2048, 1024 + 512) = 480 MiB.
    layout = llamacpp_layout(_model("google/gemma-3-12b-it"))
    assert layout.seq_bytes(2048, in_flight=512) == 608 * MIB


@pytest.mark.parametrize(
    ("model_id", "globals_", "window"),
    [
        ("google/gemma-3-1b-it", 4, 512),
        ("google/gemma-3-4b-it", 5, 1024),
        ("google/gemma-3-12b-it", 8, 1024),
        ("google/gemma-3-27b-it", 10, 1024),
    ],
)
def test_gemma3_global_layer_count_follows_pattern_6(model_id, globals_, window):
    model = _model(model_id)
    # layer i is global when (i + 1) % 6 == 0
    assert sum(1 for i in range(model.num_hidden_layers) if (i + 1) % 6 == 0) == globals_
    kinds = {g.kind: g for g in model.layer_groups}
    assert kinds["full"].count == globals_
    assert kinds["sliding"].window == window


@pytest.mark.parametrize(
    ("query", "model_id"),
    [
        ("deepseek-r1:32b", "deepseek-ai/DeepSeek-R1-Distill-Qwen-32B"),
        ("gemma3:27b", "google/gemma-3-27b-it"),
        ("gpt-oss-20b", "openai/gpt-oss-20b"),
        ("mixtral-8x7b", "mistralai/Mixtral-8x7B-Instruct-v0.1"),
        ("phi-4", "microsoft/phi-4"),
        ("phi4", "microsoft/phi-4"),
        ("kimi-k2", "moonshotai/Kimi-K2-Instruct"),
        ("glm-4.5-air", "zai-org/GLM-4.5-Air"),
        ("mistral-small", "mistralai/Mistral-Small-3.1-24B-Instruct-2503"),
        ("deepseek-r1", "deepseek-ai/DeepSeek-R1-0528"),
        ("deepseek-v3", "deepseek-ai/DeepSeek-V3-0324"),
        ("r1-distill-qwen-7b", "deepseek-ai/DeepSeek-R1-Distill-Qwen-7B"),
        ("deepseek-r1-distill-llama-8b", "deepseek-ai/DeepSeek-R1-Distill-Llama-8B"),
        ("gpt-oss:20b", "openai/gpt-oss-20b"),
        ("mistral-7b", "mistralai/Mistral-7B-Instruct-v0.3"),
        ("mistral-nemo", "mistralai/Mistral-Nemo-Instruct-2407"),
        ("gemma-3-27b", "google/gemma-3-27b-it"),
    ],
)
def test_names_resolve(query, model_id):
    assert resolve_model(query).model.id == model_id


def test_ollama_r1_32b_tag_is_the_qwen_distill_gguf():
    match = resolve_model("deepseek-r1:32b")
    assert match.variant is not None
    assert match.variant.quant == "gguf"
    assert match.variant.ollama == "deepseek-r1:32b"


def test_no_name_maps_to_two_models():
    owners: dict[str, set[str]] = defaultdict(set)
    for m in catalog.models():
        for key, _variant in exact_keys(m):
            owners[key].add(m.id)
    clashes = {k: sorted(v) for k, v in owners.items() if len(v) > 1}
    assert not clashes


def test_a_short_name_shared_by_two_entries_means_the_same_memory():
    """``Llama-3.1-8B`` (base) and the alias ``llama-3.1-8b`` (Instruct) may meet only when a memory
    estimate cannot tell them apart."""
    by_id = {m.id: m for m in catalog.models()}
    owners: dict[str, set[str]] = defaultdict(set)
    for m in catalog.models():
        owners[model_key(m.id.split("/")[-1])].add(m.id)
        for key, _variant in exact_keys(m):
            owners[key].add(m.id)
    for key, ids in owners.items():
        first, *rest = sorted(ids)
        for other in rest:
            assert same_memory(by_id[first], by_id[other]), (key, first, other)
