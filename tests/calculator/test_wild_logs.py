"""The held-out real logs (tests/data/wild_logs.jsonl) and the engine quirks replayed from them.

- the set itself: unique records, none from a development-corpus thread, every logged number printed in
  the record's own text;
- each quirk replays the log it came from (exact value, or the tolerance the test states).
"""

from __future__ import annotations

import re

import pytest

from calculator import vllm
from calculator.catalog import variant_weight_bytes
from calculator.from_log import read_log
from calculator.kv import llamacpp_layout, vllm_layout
from calculator.llamacpp import LlamaCppConfig, kv_bytes
from calculator.resolve import resolve_gpu, resolve_model
from calculator.units import GIB, MIB
from calculator.vllm import (
    VllmConfig,
    kv_capacity,
    kv_check_layout,
    kv_needed_bytes,
    longest_len_for,
    reported_kv_tokens,
    v0_chunks_long_context,
    vllm_budget,
)
from tests.conftest import CORPUS
from tests.conftest import WILD_LOGS as RECORDS
from tests.conftest import wild_log as record


def model(name: str):
    return resolve_model(name, "vllm").model


# ---- the set ------------------------------------------------------------------------------------


def test_records_are_unique_and_sourced():
    ids = [r["id"] for r in RECORDS]
    assert len(ids) == len(set(ids))
    for r in RECORDS:
        assert r["source"].startswith("https://github.com/"), r["id"]
        assert r["engine"] in ("vllm", "sglang", "llama.cpp", "ollama", "aphrodite"), r["id"]
        assert r["text"].strip() and r["checks"], r["id"]


def test_no_record_comes_from_a_development_corpus_thread():
    if not CORPUS:
        pytest.skip("development corpus not available")
    dev_ids = {r["id"] for r in CORPUS}
    dev_sources = {r["source"].rstrip("/") for r in CORPUS}
    for r in RECORDS:
        assert r["id"] not in dev_ids, r["id"]
        assert r["source"].rstrip("/") not in dev_sources, r["id"]


def _printed_forms(value: float) -> set[str]:
    forms = {f"{value:g}", f"{value:,.0f}", f"{value:.2f}", f"{value:.1f}", f"{value:.4f}"}
    if float(value).is_integer():
        forms |= {str(int(value)), f"{int(value):,}"}
    return forms


def test_every_logged_number_is_in_the_records_own_text():
    """The numbers a check compares with are the ones the paste prints (never retyped or rounded)."""
    for r in RECORDS:
        for check in r["checks"]:
            forms = _printed_forms(check["logged"])
            assert any(re.search(rf"(?<![0-9.]){re.escape(f)}(?![0-9])", r["text"]) for f in forms), (
                r["id"],
                check["kind"],
                check["logged"],
            )


# ---- vLLM V1 with pipeline parallelism: the whole model's KV is checked on each stage -------------


def test_pp_check_asks_each_stage_for_the_whole_model():
    """vllm#34076 (0.15.2rc1, --pipeline-parallel-size 2, Qwen3-Coder-30B-A3B): "24.0 GiB KV cache is
    needed" at 262,144 and "the estimated maximum model length is 34736" for 3.18 GiB."""
    m = model(record("vllm34076-pp2-qwen3coder30b-fp8")["model"])
    lay = kv_check_layout(m, "auto", 1, 2, (0, 15, 2))
    assert round(kv_needed_bytes(lay, 262144) / GIB, 2) == 24.00
    assert longest_len_for(lay, 3.18 * GIB) == pytest.approx(34736, rel=0.001)  # 3.18 is rounded in the log


def test_pp_check_is_per_stage_after_the_last_logged_release_and_on_v0():
    m = model("Qwen/Qwen3-Coder-30B-A3B-Instruct")
    later = kv_check_layout(m, "auto", 1, 2, (0, 16, 0))
    v0 = kv_check_layout(m, "auto", 1, 2, (0, 7, 2))
    assert round(kv_needed_bytes(later, 262144) / GIB, 2) == 12.00
    assert round(kv_needed_bytes(v0, 262144) / GIB, 2) == 12.00


def test_pp_check_replays_glm47_on_eight_stages():
    """vllm#32105 (January 2026 nightly, -pp 8): 71.16 GiB needed at 202,752; 81,392 from 28.57 GiB."""
    lay = kv_check_layout(model("zai-org/GLM-4.7"), "auto", 1, 8, (0, 8, 0))
    assert round(kv_needed_bytes(lay, 202752) / GIB, 2) == 71.16
    assert longest_len_for(lay, 28.57 * GIB) == pytest.approx(81392, rel=0.001)


# ---- vLLM V0: above 32K tokens chunked prefill is on, the profile is a 512-token chunk -------------


def test_v0_long_context_profiles_a_chunk():
    m = model("deepseek-ai/DeepSeek-R1-Distill-Qwen-14B")
    assert v0_chunks_long_context(m, 131072, (0, 7, 2))
    assert not v0_chunks_long_context(m, 32768, (0, 7, 2))  # "> 32768"
    assert not v0_chunks_long_context(m, 131072, (0, 8, 0))  # V1 batches by GPU tier instead
    assert not v0_chunks_long_context(model("Qwen/Qwen2.5-VL-7B-Instruct"), 131072, (0, 7, 2))  # multimodal


def test_v0_long_context_replays_its_log():
    """vllm#13061 (V0, 2x RTX 4090, TP 2, util 0.98, max seq len 131072): 81,536 KV tokens logged; the
    cache of one rank the thread prints (8.69 GiB) holds 94,912, the engine keeps the smallest rank's.
    Profiling a 131,072-token prefill instead predicts under 30,000; within 20 % now."""
    match = resolve_model("deepseek-ai/DeepSeek-R1-Distill-Qwen-14B", "vllm")
    m = match.model
    cfg = VllmConfig(tp=2, gpu_memory_utilization=0.98, version="0.7.2")
    b = vllm_budget(m, resolve_gpu("RTX 4090"), variant_weight_bytes(m, match.variant), cfg)
    assert (b.max_num_seqs, b.max_num_batched_tokens) == (256, 512)
    assert b.kv_tokens == pytest.approx(81536, rel=0.20)
    lay = vllm_layout(m, "auto", tp=2)
    assert kv_capacity(lay, 8.69, 131072, v0=True)[1] == 94912


# ---- what V1 prints as "GPU KV cache size" ---------------------------------------------------------


def test_reported_tokens_are_blocks_for_attention_only_models():
    lay = vllm_layout(model("Qwen/Qwen3-235B-A22B"), "auto", tp=4)
    blocks, tokens, _fit, conc = kv_capacity(lay, 8.11, 40960)
    assert reported_kv_tokens(lay, tokens, conc, 40960, v0=False) == tokens == blocks * 16


def test_reported_tokens_are_concurrency_times_length_for_hybrids():
    lay = vllm_layout(model("Qwen/Qwen3.6-35B-A3B"), "fp8")
    _blocks, tokens, _fit, conc = kv_capacity(lay, 5.98, 131072)
    assert lay.state_bytes_per_seq > 0
    assert reported_kv_tokens(lay, tokens, conc, 131072, v0=False) == int(conc * 131072)


# ---- llama.cpp 2023 (ggml/ggjt) logs: geometry from llama_model_load_internal -----------------------


def test_2023_ggml_log_gives_geometry_and_the_kv_it_printed():
    """llama-cpp-python#331 (June 2023): LLaMA 7B f16 at n_ctx 8192 printed "kv self size = 4096.00 MB"."""
    found = read_log(record("llamacpppy331-llama7b-f16-ctx8192")["text"])
    assert found is not None and found.spec is not None
    spec = found.spec
    assert (spec.num_hidden_layers, spec.hidden_size, spec.num_key_value_heads, spec.head_dim) == (
        32,
        4096,
        32,
        128,
    )
    assert kv_bytes(llamacpp_layout(spec), 8192, LlamaCppConfig(n_ctx=8192)) / MIB == 4096.0


def test_release_bounds_are_pinned():
    assert vllm.PP_WHOLE_MODEL_CHECK_THROUGH == (0, 15, 2)
    assert vllm.V0_LONG_CONTEXT_CHUNKED_FROM == (0, 6, 4)
    assert (vllm.V0_LONG_CONTEXT_LEN, vllm.V0_CHUNKED_BATCHED_TOKENS) == (32768, 512)


# ---- MXFP4 through Marlin on a GPU without native FP4 (vllm#23278) --------------------------------


def test_mxfp4_marlin_pads_the_experts_on_hopper():
    gptoss = model("openai/gpt-oss-120b")
    # hidden 2880 -> 3072, intermediate 2880 -> 2944, gate+up+down, 128 experts x 36 layers, 4.25 bits
    assert vllm.mxfp4_marlin_padding_bytes(gptoss, "mxfp4", 9.0, 1) == 5_504_827_392
    assert vllm.mxfp4_marlin_padding_bytes(gptoss, "mxfp4", 10.0, 1) == 0  # native FP4 from SM100
    assert vllm.mxfp4_marlin_padding_bytes(gptoss, "bf16", 9.0, 1) == 0
    assert vllm.mxfp4_marlin_padding_bytes(model("Qwen/Qwen2.5-7B-Instruct"), "mxfp4", 9.0, 1) == 0


def test_mxfp4_marlin_replays_gptoss_120b_on_h100():
    rec = record("vllm23278-gptoss120b-h100")
    assert "Marlin kernel" in rec["text"]
    match = resolve_model("openai/gpt-oss-120b", "vllm")
    loaded = variant_weight_bytes(match.model, match.variant) + vllm.mxfp4_marlin_padding_bytes(
        match.model, match.variant.quant, 9.0, 1
    )
    logged = rec["logged"]["weights_gib"]
    assert abs(loaded / GIB - logged) / logged < 0.002  # 65.92 GiB against 65.97 logged


# ---- names the held-out logs use ------------------------------------------------------------------


def test_meta_405b_fp8_is_metas_checkpoint_not_redhats():
    for name in ("meta-llama/Meta-Llama-3.1-405B-Instruct-FP8", "meta-llama/Llama-3.1-405B-Instruct-FP8"):
        match = resolve_model(name, "vllm")
        assert match.variant.id == "meta-llama/Llama-3.1-405B-Instruct-FP8"
        assert match.variant.size_bytes == 487_229_259_776  # attention and edge blocks in 16 bits
    redhat = resolve_model("RedHatAI/Meta-Llama-3.1-405B-Instruct-FP8-dynamic", "vllm")
    assert redhat.variant.id == "RedHatAI/Meta-Llama-3.1-405B-Instruct-FP8-dynamic"


def test_meta_405b_fp8_weights_per_rank_replay_its_log():
    rec = record("vllm6746-llama31-405b-fp8-8xh100")
    match = resolve_model(rec["model"], "vllm")
    per_rank = variant_weight_bytes(match.model, match.variant) / 8 / GIB
    assert round(per_rank, 2) == 56.72
    assert abs(per_rank - rec["logged"]["weights_gib"]) / rec["logged"]["weights_gib"] < 0.02


def test_qwen25_vl_72b_is_in_the_catalog():
    m = resolve_model("Qwen/Qwen2.5-VL-72B-Instruct", "vllm").model
    assert (m.num_hidden_layers, m.hidden_size, m.num_key_value_heads, m.head_dim) == (80, 8192, 8, 128)
    assert m.multimodal
    assert vllm_layout(m, "auto").all_attention_bytes_per_token == 327_680  # 320 KiB per token


# ---- the bot's own path anchors on the figures a paste logs ---------------------------------------


def test_bot_budget_anchors_on_logged_weights_and_terms():
    from dataclasses import replace

    from bot.detector import detect
    from bot.diagnosis.budgets import budget_for
    from bot.situation import read

    rec = record("vllm13882-qwen25-7b-rtx4060-util070")
    found = detect(rec["text"])
    s = read(found, found.root)
    hidden = ("kv_deficit_gib", "kv_cache_gib", "gpu_blocks", "max_concurrency")
    s = replace(
        s,
        params={k: v for k, v in s.params.items() if k not in hidden},
        model=resolve_model("Qwen2.5-7B", "vllm"),
        version=(0, 7, 3),  # the V0 worker that printed this breakdown
    )
    budget = budget_for(s)
    est, plan = budget.estimate, budget.plan0
    weights = est.weights(plan)
    assert (weights.gib, weights.source) == (5.2, "log")  # not the 16-bit checkpoint's 14.19
    out = est.evaluate(plan)
    assert round(out.kv_gib, 2) == -1.05  # 8.00 x 0.70 - 5.20 - 0.03 - 1.42, as logged


# ---- hybrids: V1 pages attention and recurrent state together (club-3090 logs) -------------------


def test_hybrid_page_holds_a_whole_fp32_state():
    lay = vllm_layout(model("Qwen/Qwen3.6-35B-A3B"), "fp8")
    pages = vllm.hybrid_pages(lay)
    # state: conv 49,152 B + SSM 32 x 128 x 128 x 4 B = 2,146,304 B; attention 1,024 B per token and layer
    assert (pages.block, pages.page_bytes) == (2096, 2_146_304)
    assert (pages.group_size, pages.attention_groups, pages.state_groups) == (10, 1, 3)


@pytest.mark.parametrize(
    "record_id",
    [
        "club3090-612-qwen36-35b-a3b-nvfp4-5090",
        "club3090-652-qwen36-35b-a3b-nvfp4-5090",
        "club3090-104-qwen36-27b-autoround-2x3090",
    ],
)
def test_hybrid_pool_replays_the_logged_tokens(record_id):
    rec = record(record_id)
    check = rec["checks"][0]
    lay = vllm_layout(model(rec["model"]), rec["flags"]["kv_cache_dtype"], tp=rec["flags"].get("tp", 1))
    _blocks, tokens, _fit, conc = kv_capacity(lay, check["kv_gib"], check["max_model_len"])
    assert reported_kv_tokens(lay, tokens, conc, check["max_model_len"], False) == check["logged"]
    assert round(conc, 2) == rec["logged"]["max_concurrency"]


def test_hybrid_request_keeps_two_state_pages_per_group_with_prefix_caching():
    lay = vllm_layout(model("Qwen/Qwen3.6-35B-A3B"), "fp8")
    # 299 pages; a 131,072-token request: 63 attention pages + 3 groups x 2 state pages
    blocks, _tokens, fit, conc = vllm.hybrid_capacity(lay, 299 * 10 * 2_146_304, 131072)
    assert (blocks, fit) == (299, (299 - 6) * 2096)
    assert conc == 299 / 69


def test_cross_attention_groups_are_not_paged_as_recurrent_state():
    # Llama 3.2 Vision's cross-attention layers are a fixed per-sequence cost, not a Mamba state
    lay = vllm_layout(model("meta-llama/Llama-3.2-11B-Vision-Instruct"))
    assert lay.state_layers == 0 and lay.state_bytes_per_seq > 0
    assert not vllm.is_paged_hybrid(lay)
    assert vllm.is_paged_hybrid(vllm_layout(model("Qwen/Qwen3.6-27B"), "fp8", tp=2))


@pytest.mark.parametrize(
    ("record_id", "version", "shown"),
    [
        # the source line numbers of their log lines (knowledge/log_lines.yaml) name the releases first
        ("vllm32105-pp8-glm47-fp8-a100", (0, 15, 0), "0.15.0-0.15.1"),
        ("vllm23278-gptoss120b-h100", (0, 10, 1), "0.10.1-0.10.1.1"),
        ("vllm21348-qwen3-235b-fp8-vllm-tp4", (0, 8, 0), ">=0.8.0"),
    ],
)
def test_bot_reads_v1_from_wording_once_prefixes_are_stripped(record_id, version, shown):
    from bot.detector import detect
    from bot.situation import read

    found = detect(record(record_id)["text"])
    s = read(found, found.root)
    assert s.version == version  # V1's KV wording or source paths: V1 is the default from 0.8.0
    assert s.version_src.value == shown


def test_vram_loads_mxfp4_moe_with_the_marlin_padding_a_paste_budget_uses():
    """`/vram gpu:h100 model:gpt-oss-120b` answers with what vLLM loads on Hopper (vllm#23278 logged
    "Model loading took 65.9651 GiB"), not the 60.8 GiB checkpoint; native FP4 (B200) loads the file."""
    from calculator.estimate import VramRequest, estimate

    hopper = estimate(VramRequest(model="openai/gpt-oss-120b", gpu="h100 sxm"))
    blackwell = estimate(VramRequest(model="openai/gpt-oss-120b", gpu="b200"))
    assert round(hopper.weights_gib, 2) == 65.92
    assert round(blackwell.weights_gib, 2) == 60.80
