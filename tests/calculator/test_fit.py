"""The fit solver: every remedy is recomputed, so what it claims is what the calculator says."""

from __future__ import annotations

import re

from calculator.estimate import VramRequest, estimate


def _flag(command: str, flag: str) -> int | None:
    m = re.search(rf"{re.escape(flag)} (\d+)", command)
    return int(m.group(1)) if m else None


def test_weights_that_do_not_fit_get_no_kv_levers():
    r = estimate(VramRequest(model="Qwen/Qwen2.5-32B-Instruct", gpu="4090"))
    assert not r.fits and r.max_model_len_fit == 0
    changes = [x.change for x in r.remedies]
    assert not any("fp8" in c or "utilization" in c or "CUDA graphs" in c for c in changes), changes
    smaller = next(x for x in r.remedies if x.change.startswith("a smaller checkpoint"))
    assert "GPTQ" in smaller.command or "AWQ" in smaller.command
    tp = next(x for x in r.remedies if x.change.startswith("tensor parallel"))
    assert _flag(tp.command, "--tensor-parallel-size") == 4  # 61 GiB of bf16 weights need 4 cards
    assert any(x.change.startswith("a bigger GPU") for x in r.remedies)


def test_kv_remedies_are_consistent():
    r = estimate(VramRequest(model="qwen2.5-coder-32b-awq", gpu="4090"))
    cap = r.remedies[0]
    assert _flag(cap.command, "--max-model-len") <= r.max_model_len_fit
    fp8 = next(x for x in r.remedies if "fp8" in x.change)
    assert _flag(fp8.command, "--max-model-len") <= 2 * r.max_model_len_fit
    tp2 = next(x for x in r.remedies if x.change.startswith("tensor parallel"))
    assert _flag(tp2.command, "--tensor-parallel-size") == 2
    # every suggested length fits what the remedy itself computed
    for x in r.remedies:
        n = _flag(x.command, "--max-model-len")
        assert n is None or 0 < n <= 131072


def test_no_fp8_kv_on_ampere():
    r = estimate(VramRequest(model="qwen2.5-coder-32b-awq", gpu="3090"))
    assert not any("fp8" in x.change for x in r.remedies)


def test_partial_offload_for_gguf_engines():
    r = estimate(VramRequest(model="gemma3:27b", gpu="3060 12gb", engine="ollama"))
    assert not r.fits
    offload = next(x for x in r.remedies if "system RAM" in x.change)
    layers = int(re.search(r"num_gpu (\d+)", offload.command).group(1))
    assert 0 < layers < 63
    assert "slower" in offload.cost


def test_a_contradictory_paste_never_gets_a_longer_context_than_asked():
    from calculator.fit import KVSituation, vllm_kv_remedies

    remedies = vllm_kv_remedies(KVSituation(fit_len=8000, max_model_len=5000))
    lens = [_flag(r.command, "--max-model-len") for r in remedies]
    assert all(n is None or n <= 5000 for n in lens), lens
