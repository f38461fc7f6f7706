"""The engine constants of calculator/data/engine_constants.yaml, pinned.

- Fitted constants: the logs they were fitted on (dev-corpus records, issue threads) are replayed through
  the calculator and the prediction must land within the tolerance the YAML states.
- Exact constants: the value the engine's source or docs give, asserted exactly.
- Every YAML entry is read by the code, and no budget module keeps a bare numeric constant of its own.
"""

from __future__ import annotations

import ast
import statistics
from pathlib import Path

import pytest

from calculator import llamacpp, ollama, sglang, vllm
from calculator.catalog import models
from calculator.constants import EngineConstant, constant, engine_constants, table
from calculator.plan import Plan, Sourced
from calculator.units import GIB
from tests.conftest import CORPUS, corpus_record

CALCULATOR = Path(vllm.__file__).resolve().parent
ENGINE_MODULES = (vllm, llamacpp, sglang, ollama)


def model(model_id: str):
    return next(m for m in models() if m.id == model_id)


def printed(record_id: str, *numbers: str) -> None:
    """The numbers a test replays are the ones the record's paste prints."""
    text = corpus_record(record_id)["text"]
    for number in numbers:
        assert number in text, (record_id, number)


# ---- the file itself --------------------------------------------------------------------------------


def test_every_entry_is_validated_and_sourced():
    entries = [(e, n, c) for e, names in engine_constants().items() for n, c in names.items()]
    assert len(entries) >= 30
    for engine, name, c in entries:
        assert isinstance(c, EngineConstant), (engine, name)
        assert c.unit and len(c.source) >= 10, (engine, name)


def test_fitted_constants_name_real_logs():
    ids = {r["id"] for r in CORPUS}
    for engine, names in engine_constants().items():
        for name, c in names.items():
            if c.kind != "fitted":
                continue
            for log in c.fitted_on:
                assert log.startswith("https://github.com/") or not ids or log in ids, (engine, name, log)


def test_a_fitted_constant_without_logs_is_rejected():
    with pytest.raises(ValueError, match="fitted on"):
        EngineConstant(value=1.0, unit="GiB", kind="fitted", source="a log somewhere, trust me")
    with pytest.raises(ValueError, match="exactly one"):
        EngineConstant(unit="GiB", kind="exact", source="engine source at a release")


# ---- vLLM: fitted on logs -------------------------------------------------------------------------

# (record, model, version, total GiB, util, max_model_len, weights GiB, non-torch GiB, activation GiB
#  as printed (V0: peak_torch - weights), KV GiB printed)
V0_PROFILES = [
    ("vllm10517-20k-ok", "meta-llama/Llama-3.1-8B-Instruct", (0, 6, 4), 23.58, 0.90, 20000, 14.9888, 0.35, 17.06 - 14.9888, 3.81),
    ("vllm10517-29k-bad", "meta-llama/Llama-3.1-8B-Instruct", (0, 6, 4), 23.58, 0.90, 29000, 14.9888, 0.35, 17.98 - 14.9888, 2.89),
    ("repofile-qwen25-15b-t4-colab", "Qwen/Qwen2.5-1.5B-Instruct", (0, 7, 2), 14.56, 0.50, 32768, 2.89, 0.01, 2.02, 2.36),
]  # fmt: skip


@pytest.mark.parametrize(("record", "model_id", "version", "total", "util", "max_len", "weights", "non_torch", "activation", "kv"), V0_PROFILES)  # fmt: skip
def test_activation_factor_replays_its_profiles(record, model_id, version, total, util, max_len, weights, non_torch, activation, kv):  # fmt: skip
    """V0 profiles a forward pass of max(max_model_len, 2048) tokens: the fitted factor gives the printed
    activation peak within 6 %, and the KV budget built on it the printed KV GiB within 0.15 GiB."""
    printed(record, f"{total:.2f}GiB", f"{kv:.2f}GiB", str(max_len))
    m = model(model_id)
    predicted = vllm.estimate_activation_gib(m, max(max_len, 2048), 256, tp=1, v0=True)
    assert predicted == pytest.approx(activation, rel=0.06)
    obs = vllm.VllmObserved(
        total_gib=Sourced(total), weights_gib=Sourced(weights), non_torch_gib=Sourced(non_torch)
    )
    plan = Plan(max_len=max_len, util=util)
    est = vllm.VllmEstimate(version, plan, obs, m, None)
    kv_gib, _terms = est.kv_gib(plan)
    assert kv_gib == pytest.approx(kv, abs=0.15)


# single-GPU non-torch lines: (record, printed value)
NON_TORCH_LOGS = [
    ("vllm10517-29k-bad", 0.35),
    ("vllm10517-20k-ok", 0.35),
    ("repofile-qwen25-15b-t4-colab", 0.01),
    ("turbomind14-awq-v100-nontorch", 0.23),
]


def test_non_torch_single_gpu_replays_its_logs():
    """Every logged single-GPU non-torch figure within 0.25 GiB of the estimate, their median within 0.05."""
    values = []
    for record, value in NON_TORCH_LOGS:
        sep = "=" if record.startswith("vllm10517") else " takes "
        printed(record, f"non_torch_memory{sep}{value:.2f}GiB")
        values.append(value)
    assert all(abs(v - vllm.NON_TORCH_GIB_SINGLE) <= 0.25 for v in values)
    assert statistics.median(values) == pytest.approx(vllm.NON_TORCH_GIB_SINGLE, abs=0.05)
    assert set(constant_entry("vllm", "non_torch_gib_single").fitted_on) == {r for r, _ in NON_TORCH_LOGS}


def test_non_torch_estimate_for_one_and_several_ranks():
    est = vllm.VllmEstimate((0, 33, 0), Plan(), vllm.VllmObserved())
    assert est.non_torch(Plan()).gib == pytest.approx(0.25)
    assert est.non_torch(Plan(tp=2)).gib == pytest.approx(0.50)


def test_cudagraph_estimate_replays_the_logged_captures():
    """v0.7.2 Qwen2.5-1.5B: `Graph capturing finished in 49 secs, took 0.17 GiB` (the reference, within
    0.01 GiB); Llama-3.2-1B `took 0.21 GiB` (https://github.com/vllm-project/vllm/pull/11349) within 35 %."""
    printed("repofile-qwen25-15b-t4-colab", "took 0.17 GiB")
    qwen = model("Qwen/Qwen2.5-1.5B-Instruct")
    assert (qwen.num_hidden_layers, qwen.hidden_size) == (
        vllm.CUDAGRAPH_REFERENCE_LAYERS,
        vllm.CUDAGRAPH_REFERENCE_HIDDEN,
    )
    assert vllm.estimate_cudagraph_gib(qwen, 1, 1) == pytest.approx(0.17, abs=0.01)
    llama1b = model("meta-llama/Llama-3.2-1B-Instruct")
    assert vllm.estimate_cudagraph_gib(llama1b, 1, 1) == pytest.approx(0.21, rel=0.35)


def test_cudagraph_estimate_scales_with_the_square_root_and_has_a_floor():
    qwen = model("Qwen/Qwen2.5-1.5B-Instruct")
    assert vllm.estimate_cudagraph_gib(qwen, 4, 1) == pytest.approx(0.17 * 0.5)
    assert vllm.estimate_cudagraph_gib(qwen, 64, 1) == pytest.approx(0.17 * 0.05**0.5)


# ---- vLLM: exact from source -----------------------------------------------------------------------


@pytest.mark.parametrize(
    ("total", "gpu_id", "expected"),
    [
        (79.19, "h100-80gb-sxm", (1024, 8192)),  # >= 70 GiB, not an A100
        (79.15, "a100-80gb-sxm", (256, 2048)),  # A100s keep the small tier
        (178.4, "b200", (1024, 16384)),  # >= 160 GiB
        (69.9, "h100-nvl", (256, 2048)),
        (23.6, "rtx-4090", (256, 2048)),
    ],
)
def test_default_batching_tiers(total, gpu_id, expected):
    """EngineArgs.get_batch_defaults (OpenAI server), vLLM 0.29-0.33."""
    assert vllm.default_batching(total, gpu_id, False, 32768) == expected


def test_default_batching_v0():
    assert vllm.default_batching(23.6, "rtx-3090", True, 29000) == (256, 29000)
    assert vllm.default_batching(23.6, "rtx-3090", True, 1024) == (256, 2048)


def test_sampler_temporaries_is_logits_plus_one():
    assert vllm.SAMPLER_TEMPORARIES == 2
    m = model("Qwen/Qwen2.5-1.5B-Instruct")
    forward = 2048 * vllm.ACTIVATION_FACTOR * m.intermediate_size * m.dtype_bytes
    sampler = vllm.estimate_activation_gib(m, 2048, 256, 1, v0=False) * GIB - forward
    assert sampler == pytest.approx(256 * m.vocab_size * 4 * 2)


def test_v0_sampler_is_the_top_k_top_p_live_set():
    """V0's sampler of the profile run: 38 bytes per logit beside the model-dtype logits (sampler.py)."""
    assert vllm.V0_SAMPLER_BYTES_PER_LOGIT == 4 + 4 + 8 + 1 + 4 + 4 + 1 + 8 + 4
    m = model("google/gemma-2-9b-it")
    # 512 tokens over 256 sequences at tp 8: the sampler, not the forward pass, is the peak
    expected = 256 * 256000 * (38 + 2) + 512 * 3584 * 2
    assert vllm.estimate_activation_gib(m, 512, 256, 8, v0=True) * GIB == pytest.approx(expected)
    # 20,000 tokens of Llama-3.1-8B: the forward pass is larger, and V0 takes the larger, not the sum
    llama = model("meta-llama/Llama-3.1-8B-Instruct")
    forward = 20000 * vllm.ACTIVATION_FACTOR * llama.intermediate_size * llama.dtype_bytes
    assert vllm.estimate_activation_gib(llama, 20000, 256, 1, v0=True) * GIB == pytest.approx(forward)


# ---- llama.cpp, SGLang, Ollama: exact from source -------------------------------------------------


def test_llamacpp_exact_constants():
    assert llamacpp.FIT_MARGIN_MIB == 1024  # --fit-target default
    assert llamacpp.CTX_PAD == 256  # n_ctx padded to a multiple of 256
    assert llamacpp.DEFAULT_UBATCH == 512  # -ub default
    assert llamacpp.pad_ctx(4097) == 4352
    assert llamacpp.LlamaCppConfig().n_ubatch == 512


def test_sglang_tiers_and_reserve_formula():
    """memory_hook.py (0.5.23): reserved = 512 + 1.5*max(chunk, 2048) + tp*pp/8*1024 + 2*max_bs."""
    tiers = sglang._TIERS
    assert tiers == [
        (20, 2048, 8, 8),
        (35, 4096, 48, 160),
        (60, 4096, 32, 160),
        (90, 8192, 256, 512),
        (160, 8192, 256, 512),
        (float("inf"), 16384, 512, 512),
    ]
    # 24 GiB = 25.8 GB: chunk 4096, max_bs 48 -> reserved 512 + 6144 + 128 + 96 = 6880 MiB of 24576
    assert sglang.default_mem_fraction_static(24.0) == round((24576 - 6880) / 24576, 3) == 0.72
    # 80 GiB = 85.9 GB: chunk 8192, max_bs 256 (512 at tp 4): 13440 / 14336 MiB, above the 10 GiB floor
    assert sglang.default_mem_fraction_static(80.0) == round((81920 - 13440) / 81920, 3) == 0.836
    assert sglang.default_mem_fraction_static(80.0, tp=4) == round((81920 - 14336) / 81920, 3) == 0.825
    assert (sglang.RESERVED_FLOOR_ABOVE_GB, sglang.RESERVED_FLOOR_MIB) == (60, 10240)


@pytest.mark.parametrize(
    ("vram", "expected"), [(47.0, 262144), (46.9, 32768), (23.0, 32768), (22.9, 4096), (8.0, 4096)]
)
def test_ollama_default_num_ctx_tiers(vram, expected):
    assert ollama.default_num_ctx(vram, 1 << 20) == expected


@pytest.mark.parametrize(
    ("num_ctx", "expected"), [(2048, 512), (4096, 512), (4097, 1024), (32768, 1024), (32769, 2048)]
)
def test_ollama_auto_batch_tiers(num_ctx, expected):
    assert ollama.auto_batch(num_ctx) == expected


# ---- the code reads the file, and only the file ---------------------------------------------------


def constant_entry(engine: str, name: str) -> EngineConstant:
    return engine_constants()[engine][name]


def _is_read(node: ast.AST) -> bool:
    """A ``constant(...)`` or ``table(...)`` call."""
    return (
        isinstance(node, ast.Call)
        and isinstance(node.func, ast.Name)
        and node.func.id in ("constant", "table")
    )


def _reads(tree: ast.AST) -> set[tuple[str, str]]:
    """(engine, name) of every ``constant("engine", "name")`` / ``table(...)`` call in a module."""
    found = set()
    for node in ast.walk(tree):
        if _is_read(node):
            args = [a.value for a in node.args if isinstance(a, ast.Constant) and isinstance(a.value, str)]
            if len(args) == 2:
                found.add((args[0], args[1]))
    return found


def _trees() -> dict[str, ast.Module]:
    return {p.name: ast.parse(p.read_text(encoding="utf-8")) for p in sorted(CALCULATOR.glob("*.py"))}


def test_every_yaml_entry_is_read_by_the_code():
    read = set().union(*(_reads(t) for t in _trees().values()))
    in_file = {(e, n) for e, names in engine_constants().items() for n in names}
    assert in_file - read == set(), "entries no module reads"
    assert read - in_file == set(), "reads of entries the file does not have"


def test_tables_are_read_as_tables_and_scalars_as_scalars():
    for engine, names in engine_constants().items():
        for name, c in names.items():
            if c.table is not None:
                assert table(engine, name) == c.table
            else:
                assert constant(engine, name) == c.value


def _bare_numbers(node: ast.AST) -> list[object]:
    """Numeric literals in ``node`` outside constant()/table() calls (int() around them is fine)."""
    if _is_read(node):
        return []
    if isinstance(node, ast.Constant) and type(node.value) in (int, float):
        return [node.value]
    return [n for child in ast.iter_child_nodes(node) for n in _bare_numbers(child)]


@pytest.mark.parametrize("module", ENGINE_MODULES, ids=lambda m: m.__name__)
def test_no_module_level_numeric_constant_outside_the_yaml(module):
    """A module-level ``NAME = <number>`` (or a table of numbers) in a budget module fails here: put it in
    data/engine_constants.yaml with its source instead."""
    tree = ast.parse(Path(module.__file__).read_text(encoding="utf-8"))
    for node in tree.body:
        targets = node.targets if isinstance(node, ast.Assign) else [node.target] if isinstance(node, ast.AnnAssign) else []  # fmt: skip
        names = [t.id for t in targets if isinstance(t, ast.Name)]
        value = getattr(node, "value", None)
        if value is None or not any(n.lstrip("_").isupper() for n in names):
            continue
        assert _bare_numbers(value) == [], f"{module.__name__}.{names[0]} is a bare literal"


# The tier and scaling functions: the only literals left are units, indices and guards; anything else
# is a budget number that belongs in the YAML.
_ALLOWED_LITERALS = {
    (vllm, "default_batching"): {1},  # [-1]
    (vllm, "estimate_cudagraph_gib"): {1},  # max(1, tp)
    (sglang, "default_mem_fraction_static"): {1024, 1e9, 4, 8, 3},  # GiB->MiB, GB, tp>=4, per 8 ranks, round
    (ollama, "default_num_ctx"): {1},  # [-1][1]
    (ollama, "auto_batch"): {1},  # [-1][1]
}


@pytest.mark.parametrize(
    ("module", "function"), list(_ALLOWED_LITERALS), ids=lambda x: getattr(x, "__name__", x)
)
def test_tier_functions_take_their_numbers_from_the_yaml(module, function):
    tree = ast.parse(Path(module.__file__).read_text(encoding="utf-8"))
    fn = next(n for n in tree.body if isinstance(n, ast.FunctionDef) and n.name == function)
    body = fn.body[1:] if isinstance(fn.body[0], ast.Expr) else fn.body  # skip the docstring
    literals = {n for stmt in body for n in _bare_numbers(stmt)}
    assert literals <= _ALLOWED_LITERALS[(module, function)], f"{function} has bare numbers {literals}"


# ---- estimates: no log isolates them yet (kind: estimate), so their effect is pinned exactly -------


def _llamacpp_from_log(max_len: int):
    """A log with a 4000 MiB model buffer and 512 MiB of KV at n_ctx 4096, no compute buffer line."""
    obs = llamacpp.LlamaCppObserved(
        device_gib=Sourced(24.0), model_buffer_mib=Sourced(4000.0), kv_buffer_mib=Sourced(512.0)
    )
    est = llamacpp.LlamaCppEstimate(Plan(max_len=4096, kv_dtype="f16"), obs)
    return est.evaluate(Plan(max_len=max_len, kv_dtype="f16"))


def test_llamacpp_log_budget_pins_context_fallback_compute_and_margin():
    """room = 24 - 4000/1024 (weights) - 0.5 (compute, not printed) - 0.4 (CUDA context) - 1024/1024
    (fit margin) = 18.19375 GiB at 0.5/4096 GiB per token -> 149,043 tokens, 148,992 padded to 256."""
    out = _llamacpp_from_log(4096)
    assert {t.name: t.gib for t in out.terms} == {
        "weights": 4000 / 1024,
        "compute buffers": 0.5,
        "cuda context": 0.4,
        "kv cache": 0.5,
    }
    assert out.fit_len == 148992


def test_llamacpp_start_headroom():
    """A fixed -c starts while weights + compute + context + KV + 0.25 GiB fit in 24 GiB:
    (24 - 4.80625 - 0.25) x 8192 tokens/GiB = 155,187 tokens."""
    assert _llamacpp_from_log(155136).starts
    assert not _llamacpp_from_log(155392).starts


def test_sglang_context_and_pool_threshold():
    """pre_model_load free = total - 0.5 GiB: 11.75 GiB of weights in 24 GiB is a fraction of 0.5."""
    assert sglang.mem_fraction_for_tokens(0, 1.0, 11.75, 24.0) == 0.5
    assert sglang.MIN_POOL_TOKENS == 1024  # a reply threshold, not an engine number
    # every tier's chunked_prefill_size is at least the formula's floor, so pin the floor itself
    assert sglang.RESERVED_MIN_CHUNK == 2048
    assert min(chunk for _limit, chunk, _bs, _bs4 in sglang._TIERS) >= sglang.RESERVED_MIN_CHUNK


def test_block_size_replays_a_v0_log():
    """vllm#10517: `# GPU blocks: 1478` and `... stored in KV cache (23648)`: 16 tokens a block."""
    printed("vllm10517-29k-bad", "# GPU blocks: 1478", "(23648)")
    assert 1478 * vllm.BLOCK_SIZE == 23648
    layout = vllm.vllm_layout(model("meta-llama/Llama-3.1-8B-Instruct"))
    blocks, tokens, _fit, _conc = vllm.kv_capacity(layout, 2.89, 29000, v0=True)
    assert tokens == blocks * 16


def test_mla_models_use_64_token_blocks():
    from calculator.catalog import gpus

    h200 = next(g for g in gpus() if g.id.startswith("h200"))
    dsv3 = model("deepseek-ai/DeepSeek-V3")
    budget = vllm.vllm_budget(dsv3, h200, dsv3.native_weight_bytes, vllm.VllmConfig(tp=8))
    assert budget.block_size == 64
    assert budget.kv_tokens % 64 == 0


def test_unknown_card_gets_the_small_batching_tier():
    """Without a total, batching defaults are the < 70 GiB tier's (256 seqs, 2048 tokens)."""
    est = vllm.VllmEstimate((0, 33, 0), Plan(), vllm.VllmObserved())
    assert est.batching(Plan()) == (256, 2048)
    assert vllm.UNKNOWN_TOTAL_GIB == 24.0
