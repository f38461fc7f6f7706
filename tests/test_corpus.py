"""Every record of the development corpus (shared/corpus/dev.jsonl) is a test.

- its family's category is the first finding (``negative_*``: no memory category at all);
- the numbers its ``facts`` state, where the excerpt prints them, are extracted exactly.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from bot.detector import detect
from knowledge.schema import MEMORY_CATEGORIES

ROOT = Path(__file__).resolve().parent.parent
_PATHS = [ROOT.parent / "shared" / "corpus" / "dev.jsonl", ROOT / "tests" / "data" / "dev.jsonl"]
CORPUS_PATH = next((p for p in _PATHS if p.is_file()), _PATHS[-1])
CORPUS = [json.loads(line) for line in CORPUS_PATH.read_text(encoding="utf-8").splitlines() if line.strip()]

FAMILY_CATEGORY = {
    "vllm_max_seq_len_kv": "kv_cache_too_small",
    "vllm_v1_kv_insufficient": "kv_cache_too_small",
    "vllm_no_cache_blocks": "no_kv_memory",
    "sglang_not_enough_memory": "no_kv_memory",
    "tgi_warmup_not_enough_memory": "no_kv_memory",
    "vllm_free_mem_less_than_util": "gpu_memory_in_use",
    "torch_cuda_oom": "gpu_oom",
    "llamacpp_cuda_oom": "gpu_oom",
    "llamacpp_metal_oom": "gpu_oom",
    "vllm_cudagraph_oom": "gpu_oom",
    "llamacpp_kv_alloc_failed": "kv_alloc_failed",
    "ollama_system_memory": "host_memory",
    "vllm_tp_divisibility": "tp_divisibility",
    "vllm_bf16_unsupported": "dtype_unsupported",
    "vllm_quant_unsupported": "quantization_unsupported",
    "vllm_max_model_len_gt_derived": "max_len_exceeds_model",
    "vllm_max_num_batched_tokens": "batched_tokens_too_small",
    "llamacpp_context_exceeded": "context_exceeded",
    "vllm_request_context_exceeded": "context_exceeded",
    "vllm_prompt_too_long": "context_exceeded",
    "ollama_runner_terminated": "runner_crashed",
    "vllm_profile_log": "memory_report",
    "llamacpp_kv_buffer_log": "memory_report",
    "ollama_offload_log": "memory_report",
    "sglang_kv_alloc_log": "memory_report",
}

# corpus fact name -> the param name a finding (or the context) carries it under
FACT_PARAMS = {
    "max_seq_len": "max_model_len",
    "kv_tokens": "kv_tokens",
    "kv_needed_gib": "kv_needed_gib",
    "kv_cache_gib": "kv_cache_gib",
    "estimated_max_model_len": "estimated_max_model_len",
    "gpu_blocks": "gpu_blocks",
    "free_gib": "free_gib",
    "gpu_total_gib": "total_gib",
    "requested_gib": "requested_gib",
    "tried_gib": "tried_gib",
    "tried_mib": "tried_mib",
    "alloc_mib": "alloc_mib",
    "required_gib": "required_gib",
    "available_gib": "available_gib",
    "num_attention_heads": "num_attention_heads",
    "compute_capability": "compute_capability",
    "requested_tokens": "requested_tokens",
    "prompt_tokens": "prompt_tokens",
    "prompt_limit": "prompt_limit",
    "max_num_batched_tokens": "max_num_batched_tokens",
    "derived_max_model_len": "derived_max_model_len",
    "weights_gib": "weights_gib",
    "activation_gib": "activation_gib",
    "non_torch_gib": "non_torch_gib",
    "required_kv_mib": "required_kv_mib",
    "kv_buffer_mib": "kv_buffer_mib",
}


def _numbers_printed(record: dict, value: object) -> bool:
    text = record["text"].replace(",", "")
    if isinstance(value, int | float) and not isinstance(value, bool):
        candidates = {f"{value}", f"{value:g}", f"{float(value):.2f}", f"{float(value):.1f}"}
        return any(c in text for c in candidates)
    return False


def _ids(record: dict) -> str:
    return record["id"]


@pytest.mark.parametrize("record", CORPUS, ids=_ids)
def test_corpus_record(record):
    detection = detect(record["text"])
    family = record["family"]
    if family.startswith("negative_"):
        memory = [f.signature for f in detection.findings if f.category in MEMORY_CATEGORIES]
        assert not memory, f"a non-memory error was reported as {memory}"
        return
    expected = FAMILY_CATEGORY[family]
    assert detection.findings, "nothing detected"
    assert detection.findings[0].category == expected, [f.signature for f in detection.findings]
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
