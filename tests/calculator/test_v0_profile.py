"""vLLM V0's profile, as a paste proves it.  The profile run samples every dummy sequence with top-k and top-p over the whole vocabulary, after
the forward pass (calculator.vllm.v0_sampler_bytes; data/engine_constants.yaml
v0_sampler_bytes_per_logit).  Where the forward pass is small (a large tp, a chunked 512-token profile)
that sampler run is the activation peak.

Replayed: the dev-corpus log vllm7593 (gemma-2-9b, 8x L4, tp 8, 256,000-token vocabulary) and the
held-out vllm13061 (R1-Distill-Qwen-14B, 2x RTX 4090, tp 2, util 0.98, V0 with chunked prefill), whose gap
is what showed the term.  And V0 never takes a CUDA-graph estimate out of its budget (held-out vllm13882,
where a V0 paste without a release was budgeted as the newest V1).  Those two checks are no longer blind;
docs/benchmarks.md says so."""

from __future__ import annotations

from calculator.catalog import variant_weight_bytes
from calculator.plan import Plan, Sourced
from calculator.resolve import resolve_gpu, resolve_model
from calculator.units import GIB
from calculator.vllm import (
    VllmConfig,
    VllmEstimate,
    VllmObserved,
    estimate_activation_gib,
    v0_sampler_bytes,
    vllm_budget,
)
from tests.conftest import corpus_record, wild_log


def test_vllm7593_gemma2_tp8_blocks_from_gpu_model_flags():
    """Logged 22,982 GPU blocks.  Without the sampler run: 27,288 (18.7 % over); with it 23,551 (2.5 %)."""
    rec = corpus_record("vllm7593-gemma2-9b-8xl4")
    assert "# GPU blocks: 22982" in rec["text"]
    m = resolve_model("google/gemma-2-9b-it", "vllm").model
    variant = next((v for v in m.variants if v.id == m.id), None)
    b = vllm_budget(m, resolve_gpu("l4"), variant_weight_bytes(m, variant), VllmConfig(tp=8, version="0.5.4"))
    assert (b.max_num_seqs, b.max_num_batched_tokens) == (256, 8192)
    # 256 x 256,000 logits x (38 + 2) bytes + 8,192 x 3,584 bf16 hidden states
    assert b.activation_gib * GIB == 256 * 256000 * 40 + 8192 * 3584 * 2
    assert b.num_blocks == 23551
    assert abs(b.num_blocks - 22982) / 22982 < 0.03


def test_vllm13061_r1_distill_qwen14b_tp2_chunked_v0():
    """max_model_len 131,072 > 32K: V0 profiles a 512-token chunk over 256 sequences, so the peak is the
    sampler run over 256 x 152,064 logits (1.46 GiB), not the 0.02 GiB forward pass.  Logged: 81,536 tokens."""
    from knowledge.features import engine_mode

    rec = wild_log("vllm13061-r1-distill-qwen14b-2x4090")
    assert rec["logged"]["kv_tokens"] == 81536
    # the error's wording is V0's raise_if_cache_size_invalid, which proves the engine on its own
    assert engine_mode("vllm", rec["text"].split("\n")[1]) == "v0"
    m = resolve_model("deepseek-ai/DeepSeek-R1-Distill-Qwen-14B", "vllm").model
    assert round(estimate_activation_gib(m, 512, 256, 2, v0=True), 3) == 1.455
    assert estimate_activation_gib(m, 512, 256, 2, v0=True) * GIB == v0_sampler_bytes(m, 512, 256)
    gpu = resolve_gpu("RTX 4090")
    plan = Plan(max_len=131072, util=0.98, tp=2)
    obs = VllmObserved(total_gib=Sourced(gpu.total_gib, "catalog"), weights_gib=Sourced(13.9476, "log"))
    est = VllmEstimate((0, 7, 2), plan, obs, m, variant_weight_bytes(m, None), gpu.id)
    out = est.evaluate(plan)
    assert out is not None
    assert out.kv_tokens == 79344
    assert abs(out.kv_tokens - 81536) / 81536 < 0.03


def test_v1_keeps_its_own_sampler_term():
    """V1 adds its dummy sampler run to the forward pass (sampler_temporaries); the V0 rule is V0's only."""
    m = resolve_model("deepseek-ai/DeepSeek-R1-Distill-Qwen-14B", "vllm").model
    v1 = estimate_activation_gib(m, 512, 256, 2, v0=False) * GIB
    assert v1 < v0_sampler_bytes(m, 512, 256)


def test_v0_paste_takes_no_cudagraph_estimate_vllm13882():
    """V0 captures its CUDA graphs after the KV cache is allocated, so a paste that proves V0 (its INFO
    block, '# cuda blocks') gets no graph estimate out of its budget even when no release is printed and
    the newest one is assumed.  Logged: 8.00 x 0.70 - 5.20 - 0.03 - 1.42 = -1.05 GiB."""
    from knowledge.features import engine_mode

    rec = wild_log("vllm13882-qwen25-7b-rtx4060-util070")
    assert engine_mode("vllm", rec["text"]) == "v0"
    logged = rec["logged"]
    obs = VllmObserved(
        total_gib=Sourced(logged["total_gib"], "log"),
        weights_gib=Sourced(5.20, "log"),
        non_torch_gib=Sourced(logged["non_torch_gib"], "log"),
        activation_gib=Sourced(logged["activation_gib"], "log"),
    )
    m = resolve_model("Qwen/Qwen2.5-7B-Instruct", "vllm").model
    plan = Plan(max_len=4096, util=0.7)
    as_v0 = VllmEstimate((0, 33, 0), plan, obs, m, None, "rtx-4060", engine_v0=True)
    kv, terms = as_v0.kv_gib(plan)
    assert round(kv, 2) == logged["kv_cache_gib"] == -1.05
    assert {t.name: t.gib for t in terms}["cuda graphs"] == 0.0
    as_v1 = VllmEstimate((0, 33, 0), plan, obs, m, None, "rtx-4060", engine_v0=False)
    assert as_v1.kv_gib(plan)[0] < kv  # V1 at 0.33 subtracts its graph estimate
