"""Held-out real pastes (tests/data/wild_*.jsonl): none of them is a signature example.

- every memory/context record is detected with its family's category as the first finding;
- every number its ``facts`` state, where the excerpt prints it, is extracted exactly;
- a ``negative_*`` record gets no memory category at all.

Known misses are marked xfail with the reason, so the file measures what the bot does today.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from bot.detector import detect
from knowledge.schema import MEMORY_CATEGORIES
from tests.test_corpus import FACT_PARAMS, FAMILY_CATEGORY, _numbers_printed

DATA = Path(__file__).resolve().parent / "data"
CALCULATOR_SET = (
    "wild_logs.jsonl"  # the calculator's held-out logs (bench/wild_accuracy.py), not family-labelled
)
RECORDS = [
    json.loads(line)
    for path in sorted(DATA.glob("wild_*.jsonl"))
    if path.name != CALCULATOR_SET
    for line in path.read_text(encoding="utf-8").splitlines()
    if line.strip()
]

# families the development corpus does not have
WILD_FAMILY_CATEGORY = {
    **FAMILY_CATEGORY,
    "sglang_request_too_long": "context_exceeded",
    "llamacpp_fit_log": "memory_report",
    "sglang_decode_retract": "kv_cache_too_small",
    "mlx_metal_oom": "gpu_oom",
    "candle_cuda_oom": "gpu_oom",
    "ollama_memory_layout": "gpu_oom",
    "vllm_sampler_warmup_oom": "gpu_oom",
    "vllm_encoder_cache_exceeded": "context_exceeded",
    "exllamav3_insufficient_vram": "gpu_oom",
    "rocm_hsa_oom": "gpu_oom",
    "llamacpp_host_memory": "host_memory",
    "sglang_prefill_oom": "kv_cache_too_small",
    "llamacpp_kv_quant_needs_fa": "kv_quant_needs_flash_attn",
    # TensorRT-LLM's paged-KV-cache allocation log ("Allocated X GiB for max tokens in paged KV cache (N)")
    "trtllm_kv_cache_log": "memory_report",
    # the kernel's OOM killer ending an engine process ("<process> invoked oom-killer"): host RAM ran out
    "host_oom_killer": "host_memory",
    # SGLang's start-up check that every GPU has about the same free memory ("The memory capacity is unbalanced")
    "sglang_memory_unbalanced": "gpu_memory_in_use",
}

KNOWN_MISSES: dict[str, str] = {
    # SGLang logs a negative KV-pool profile only as a warning; the one failure thread that shows it is
    # this record (the other paste with a negative value, a speculative-decoding draft model, is harmless),
    # so there is no second real example for a signature yet
    "sglang7691-negative-profiled": "a negative 'profiled value' of the KV pool has no signature",
    # wild_2026b.jsonl, as collected (before any fix)
    # wild_2026c.jsonl: the ROCm runtime's out-of-resources abort has one real example only (and the HSA
    # status alone is not memory: queue, signal and thread creation return it too)
    "sglang25797-rocm-hsa-out-of-resources": "ROCm's HSA_STATUS_ERROR_OUT_OF_RESOURCES abort has no signature",
    # wild_2026d.jsonl, as collected (before any fix)
    # the flash-attention assert is the root now; the informational compute-buffer line before it is
    # still a memory_report finding, which the negative rule counts
    "koboldcpp2089-rocm-fattn-assert": "the compute-buffer report before the assert counts as memory",
    "iklcpp1483-sched-reserving-debug": "a compute-buffer report line counts as memory on a paste with no failure",
    # wild_2026f.jsonl, as collected (before any fix)
    "mlxserve66-prompt-exceeds-max-context": "mlx-serve's 'Prompt exceeds maximum context length' has no signature",
    "lmstudio1343-mlock-warning-then-read-bad-address": "the root is the read error now, but the model-buffer report lines before it still count as memory",
    # wild_2026g.jsonl, as collected (before any fix)
    "ascendsglang617-npu-workspace-allocator": "torch_npu's NPUWorkspaceAllocator out-of-memory line has no signature",
    "llmscaler348-level-zero-out-of-resources": "Level Zero's UR_RESULT_ERROR_OUT_OF_RESOURCES has no signature",
    # wild_2026h.jsonl, as collected (before any fix)
    "ollama18531-vulkan-irisxe-pinned-kv-cache": "Ollama's startup-OOM signature outranks the KV-cache one (its text names the KV cache)",
    "negative-iklcpp1344-pinned-no-cuda-device": "the root is the missing GPU now, but the KV/compute buffer report lines still count as memory",
    "llmmllab56-logmonitor-json-exceeds-context": "a log monitor's reworded 'exceeds context size' is not llama-server's wording",
    "negative-llamacpp24168-sycl-could-not-create-memory-object": "a compute-buffer report line counts as memory on a oneDNN failure",
    "llamacpp26208-journald-meta-kv-buffer-rocm714": "a KV buffer line on the meta device Meta() is not read (its name is not sourced from llama.cpp yet)",
    # wild_2026j.jsonl, as collected (before any fix)
    "rapidmlx400-vllm-mlx-safe-prompt-limit": "vllm-mlx's 'Total prompt tokens (N) exceeds safe limit (M)' has no signature",
    "jan8181-title-ggml-backend-cuda-oom": "a bare 'CUDA error: out of memory' after a llama.cpp log prefix, with no 'current device' line, is not read",
    # wild_2026i.jsonl, as collected (before any fix)
    "llmdfma746-wake-up-cuda-error-oom-in-controller-log": "wake_up's 'CUDA Error: out of memory at <path>' inside a controller's JSON log is not read",
    "skyrl624-jax-cumemallocasync-resource-exhausted": "XLA's cuMemAllocAsync RESOURCE_EXHAUSTED out-of-memory line has no signature",
    # wild_2026l.jsonl, as collected (before any fix)
    "negative-ollama14439-vram-based-default-context-info": "Ollama's 'vram-based default context' info line counts as memory on a paste with no failure",
    "llamacpp21801-rpc-fit-log-start-pid-prefix": "the opening lines of --fit output (no numbers yet) are not read as a fit log",
    # wild_2026m.jsonl (pastes quoted on forums, Q&A sites and blogs), as collected (before any fix)
    "errornotes-max-seq-len-without-kv-number": "a max-seq-len message quoted without the KV-cache token count is not read",
    "hfspace-vllm-mixtral-truncated-oom-tail": "a torch OOM message cut before 'CUDA out of memory' (only its allocator tail) is not read",
    "airelien-abbreviated-torch-oom-mtp-buffer": "an abbreviated 'Tried to allocate X GiB. GPU has Y GiB free.' OOM line is found but its sizes are not read",
    "hfspace-allakhazam-gradio-old-format-oom-cut": "an old-format torch OOM cut before 'reserved in total' is found but its total capacity is not read",
    "hfspace-3ck0-gradio-escaped-newline-cuda-oom": "'CUDA error: out of memory' followed by an escaped \\n inside a quoted Python list is not read",
    "negative-hf-phi4-gguf-ollama-n-swa-assert": "Ollama's runner-terminated signature counts a GGML_ASSERT on a model hparam as a memory crash",
}


def _param(record: dict) -> object:
    return pytest.param(
        record,
        id=record["id"],
        marks=[pytest.mark.xfail(reason=KNOWN_MISSES[record["id"]], strict=True)]
        if record["id"] in KNOWN_MISSES
        else [],
    )


def test_wild_records_are_present_and_unique():
    ids = [r["id"] for r in RECORDS]
    assert len(ids) >= 25
    assert len(set(ids)) == len(ids)
    # a GitHub thread, or the address of the forum / Q&A / blog page the paste was quoted on
    assert all(r["source"].startswith(("https://", "http://")) for r in RECORDS)


def test_wild_records_are_not_signature_examples():
    from knowledge import load_builtin

    examples = {e.text.strip() for s in load_builtin().signatures for e in s.signature.examples}
    assert not [r["id"] for r in RECORDS if r["text"].strip() in examples]


@pytest.mark.parametrize("record", [_param(r) for r in RECORDS])
def test_wild_record(record):
    detection = detect(record["text"])
    family = record["family"]
    if family.startswith("negative_"):
        memory = [f.signature for f in detection.findings if f.category in MEMORY_CATEGORIES]
        assert not memory, f"a non-memory failure was reported as {memory}"
        return
    assert detection.findings, "nothing detected"
    assert detection.findings[0].category == WILD_FAMILY_CATEGORY[family], [
        f.signature for f in detection.findings
    ]
    extracted: dict = {}
    for finding in detection.findings:
        for k, v in finding.params.items():
            extracted.setdefault(k, v)
    for k, v in detection.context.fields.items():
        extracted.setdefault(k, v)
    for fact, param in FACT_PARAMS.items():
        value = record["facts"].get(fact)
        if value is None or not _numbers_printed(record, value):
            continue
        assert param in extracted, f"{fact}={value} printed but not extracted"
        assert extracted[param] == pytest.approx(value, rel=1e-3), fact
