"""The engines added for issue 14 and the failures that are not about memory: schema rules, the real
examples' discipline, ranking against the older signatures, and the numbers each family extracts."""

from __future__ import annotations

from typing import get_args

import pytest
from pydantic import ValidationError

from bot.detector import detect
from knowledge import load_builtin
from knowledge.schema import CONFIG_CATEGORIES, MEMORY_CATEGORIES, Category, Engine, Signature
from knowledge.validate import validate

NEW_FILES = {
    "lmstudio.yaml",
    "mlx.yaml",
    "tensorrt_llm.yaml",
    "common.yaml",
    "sycl.yaml",
    "exllamav2.yaml",
    "sglang_selfcheck.yaml",
    "llama_cpp_python.yaml",
    "koboldcpp.yaml",
    "vllm_rs.yaml",
    "localai.yaml",
    "tt_metal.yaml",
}
NON_MEMORY = {
    "looks_like_memory",
    "nccl_shared_memory",
    "hub_access",
    "disk_full",
    "permission_denied",
    "port_in_use",
    "driver_mismatch",
    "illegal_memory_access",
    "chat_template",
    "unsupported_architecture",
    "load_failed",
}
NEW_SIGNATURES = [s for s in load_builtin().signatures if s.origin.rsplit("/", 1)[-1] in NEW_FILES]


def _root(text: str):
    return detect(text).root


def _memory(text: str) -> list[str]:
    return [f.signature for f in detect(text).findings if f.category in MEMORY_CATEGORIES]


def test_every_new_file_is_loaded():
    origins = {s.origin.rsplit("/", 1)[-1] for s in NEW_SIGNATURES}
    assert origins == NEW_FILES


def test_non_memory_categories_are_config_categories_and_never_memory():
    assert set(get_args(Category)) >= NON_MEMORY
    assert NON_MEMORY <= CONFIG_CATEGORIES
    assert not NON_MEMORY & MEMORY_CATEGORIES
    assert "gpu_oom" in MEMORY_CATEGORIES and "gpu_oom" not in CONFIG_CATEGORIES


def test_engine_names_cover_the_new_engines():
    engines = set(get_args(Engine))
    for name in ("lmstudio", "mlx", "tensorrt-llm", "exllamav2", "koboldcpp", "llama-cpp-python", "sycl"):
        assert name in engines
    for name in ("vulkan", "vllm.rs", "localai", "aphrodite", "text-generation-webui", "any"):
        assert name in engines


def _signature(**over) -> dict:
    base = {
        "id": "t.x",
        "category": "port_in_use",
        "title": "t",
        "patterns": ["port (?P<port>[0-9]+) busy"],
        "captures": {"port": "count"},
        "cause": "c",
        "examples": [{"text": "port 80 busy"}],
    }
    return base | over


def test_advice_may_name_a_declared_capture():
    sig = validate(Signature, _signature(advice=["stop what listens on :{port}"]))
    assert sig.advice == ["stop what listens on :{port}"]


def test_advice_naming_an_undeclared_capture_is_refused():
    with pytest.raises(ValidationError, match=r"advice names \{host\}"):
        validate(Signature, _signature(advice=["bind {host} instead"]))


def test_advice_defaults_to_empty():
    assert validate(Signature, _signature()).advice == []


@pytest.mark.parametrize("loaded", NEW_SIGNATURES, ids=lambda s: s.signature.id)
def test_each_new_signature_has_two_sourced_examples_and_a_near_miss(loaded):
    examples = loaded.signature.examples
    matches = [e for e in examples if e.expect == "match"]
    assert len(matches) >= 2
    assert all(e.source.startswith("https://github.com/") for e in matches)
    assert any(e.expect == "no_match" for e in examples)


@pytest.mark.parametrize(
    "loaded",
    [s for s in NEW_SIGNATURES if s.signature.category in NON_MEMORY],
    ids=lambda s: s.signature.id,
)
def test_non_memory_signatures_have_advice_and_their_examples_are_answered_by_them(loaded):
    sig = loaded.signature
    assert sig.advice
    for example in sig.examples:
        if example.expect == "match":
            assert detect(example.text).root.signature == sig.id


TRT_TABLE = (
    "RuntimeError: Executor creation failed due to insufficient GPU memory.\n\n"
    "The following component could not be created: KV cache\n"
    "Total GPU memory (GiB): 79.11\n"
    "Free GPU memory before component creation attempt (GiB): 3.05\n\n"
    "Previously created components and free GPU memory before/after creation (GiB):\n"
    "Model: 78.52 / 14.46\n"
)


def test_tensorrt_llm_table_numbers_are_extracted_exactly():
    root = _root(TRT_TABLE)
    assert root.signature == "trtllm.executor_insufficient_memory"
    assert root.params == {
        "component": "KV cache",
        "total_gib": 79.11,
        "free_gib": 3.05,
        "model_before_gib": 78.52,
        "model_after_gib": 14.46,
    }


def test_tensorrt_llm_first_line_alone_is_still_recognised():
    root = _root(
        "[TRT-LLM] [E] Failed to initialize executor on rank 0: Executor creation failed due to insufficient GPU memory."
    )
    assert root.signature == "trtllm.executor_insufficient_memory"
    assert root.params == {}


def test_lm_studio_estimate_keeps_the_printed_figure_and_unit():
    root = _root(
        "Error: Model loading was stopped due to insufficient system resources. Under the current settings, "
        "this model requires approximately 41.07 GB of memory, and continuing to load it would likely overload "
        "your system and cause it to freeze."
    )
    assert root.signature == "lmstudio.guardrail"
    assert root.params == {"estimate_gb": 41.07, "estimate_unit": "GB"}


def test_lm_studio_nan_estimate_is_not_a_memory_diagnosis():
    text = (
        "Error: Model loading was stopped due to insufficient system resources. Under the current settings, "
        "this model requires approximately NaN undefined of memory, and continuing to load it would likely "
        "overload your system and cause it to freeze."
    )
    assert _root(text).signature == "lmstudio.guardrail.nan_estimate"
    assert _memory(text) == []


def test_mlx_command_buffer_oom_is_mlx_not_llama_cpp():
    text = (
        "libc++abi: terminating due to uncaught exception of type std::runtime_error: [METAL] Command buffer "
        "execution failed: Insufficient Memory (00000008:kIOGPUCommandBufferCallbackErrorOutOfMemory)"
    )
    ids = [f.signature for f in detect(text).findings]
    assert ids == ["mlx.metal_command_buffer_oom"]


def test_mlx_single_buffer_limit_is_not_a_memory_diagnosis():
    text = (
        "RuntimeError: [metal::malloc] Attempting to allocate 34359738368 bytes which is greater than the "
        "maximum allowed buffer size of 28991029248 bytes."
    )
    root = _root(text)
    assert root.signature == "mlx.max_buffer_size"
    assert root.params == {"alloc_bytes": 34359738368, "max_buffer_bytes": 28991029248}
    assert _memory(text) == []


def test_mlx_buffer_size_cut_by_a_wrap_is_not_read_short():
    text = "[metal::malloc] Attempting to allocate 4 bytes which is greater than the maximum allowed buffer size of 28\n991029248 bytes."
    root = _root(text)
    assert root.params.get("max_buffer_bytes") == 28991029248


def test_sglang_leak_check_is_answered_as_a_bug():
    text = "ValueError: token_to_kv_pool_allocator memory leak detected! self.max_total_num_tokens=500000, available_size=12, evictable_size=499000"
    root = _root(text)
    assert root.signature == "sglang.kv_pool_leak_check"
    assert root.category == "looks_like_memory"
    assert root.params == {"max_total_tokens": 500000, "available_tokens": 12, "evictable_tokens": 499000}


def test_nccl_failure_inside_vllm_is_not_a_memory_diagnosis():
    text = (
        "(VllmWorker TP1 pid=812) ERROR 03-02 10:11:12 [multiproc_executor.py:520] torch.distributed.DistBackendError: "
        "NCCL error in: /pytorch/torch/csrc/distributed/c10d/NCCLUtils.hpp:317, unhandled system error (run with "
        "NCCL_DEBUG=INFO for details), NCCL version 2.26.2"
    )
    root = _root(text)
    assert root.signature == "common.nccl_system_error"
    assert _memory(text) == []


def test_nccl_shm_attach_failure_outranks_the_system_error_it_raises():
    # NVIDIA/nccl#1589: the attaching rank's WARN, then torch's "unhandled system error" for the same call
    text = (
        "g148:14937:69361 [0] misc/shmutils.cc:129 NCCL WARN Error while attaching to shared memory segment "
        "/dev/shm/nccl-glnlGK (size 14156128), error: No such file or directory (2)\n"
        "torch.distributed.DistBackendError: NCCL error in: /pytorch/torch/csrc/distributed/c10d/NCCLUtils.hpp:317, "
        "unhandled system error (run with NCCL_DEBUG=INFO for details), NCCL version 2.26.2"
    )
    ids = [f.signature for f in detect(text).findings]
    assert ids[0] == "common.nccl_shm_attach_failed"
    assert "common.nccl_system_error" not in ids
    assert _memory(text) == []


def test_the_bare_illegal_address_enum_is_an_illegal_access_not_memory():
    root = _root("fails at capture time on 8xB200 with `CUDA_ERROR_ILLEGAL_ADDRESS`.")
    assert root.signature == "common.illegal_memory_access"
    assert (
        _root("Search for `cudaErrorIllegalAddress' in the CUDA docs").signature
        == "common.illegal_memory_access"
    )


def test_nccl_shm_warning_is_not_read_as_a_full_disk():
    text = "include/shm.h:28 NCCL WARN Call to posix_fallocate failed: [Errno 28] No space left on device"
    ids = [f.signature for f in detect(text).findings]
    assert "common.disk_full" not in ids


def test_port_in_use_reads_host_and_port():
    root = _root(
        "ERROR:    [Errno 98] error while attempting to bind on address ('127.0.0.1', 30000): address already in use"
    )
    assert root.signature == "common.port_in_use"
    assert root.params == {"host": "127.0.0.1", "port": "30000"}


def test_port_in_use_prints_the_port_as_the_shell_needs_it():
    # a port is a name, not a quantity: "grep :30,000" would match nothing
    from bot.diagnosis import diagnose

    reply = diagnose(
        detect(
            "ERROR:    [Errno 98] error while attempting to bind on address ('0.0.0.0', 30000): address already in use"
        )
    )
    assert reply is not None
    steps = "\n".join(section.body for section in reply.sections)
    assert "ss -ltnp | grep :30000 (or lsof -i :30000)" in steps
    assert "30,000" not in reply.summary + steps


def test_gated_repo_outranks_not_found_when_both_print():
    text = (
        "huggingface_hub.errors.GatedRepoError: 401 Client Error.\n"
        "Cannot access gated repo for url https://huggingface.co/meta-llama/Llama-3.1-8B-Instruct/resolve/main/config.json.\n"
        "huggingface_hub.errors.RepositoryNotFoundError"
    )
    ids = [f.signature for f in detect(text).findings]
    assert ids[0] == "common.hub_gated"
    assert "common.hub_repo_not_found" not in ids
    assert detect(text).root.params == {"repo": "meta-llama/Llama-3.1-8B-Instruct"}


def test_a_real_oom_outranks_a_launcher_load_failure():
    text = (
        "ggml_backend_cuda_buffer_type_alloc_buffer: allocating 9216.00 MiB on device 0: cudaMalloc failed: out of memory\n"
        "Error: Could not load text model: /models/big.gguf"
    )
    findings = detect(text).findings
    assert findings[0].category in MEMORY_CATEGORIES
    assert "koboldcpp.could_not_load" in [f.signature for f in findings]


def test_exllama_oom_needs_an_exllama_frame():
    oom = (
        "torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 2.00 GiB. GPU 0 has a total capacity of "
        "23.55 GiB of which 1.02 GiB is free."
    )
    assert "exllamav2.cuda_oom" not in [f.signature for f in detect(oom).findings]
    with_frame = '  File "/opt/venv/lib/python3.11/site-packages/exllamav2/cache.py", line 92\n' + oom
    root = _root(with_frame)
    assert root.signature == "exllamav2.cuda_oom"
    assert root.params == {"tried_mib": 2048.0, "gpu_index": 0, "total_gib": 23.55, "free_mib": 1044.48}


def test_llama_cpp_python_chat_handler_overflow_numbers():
    root = _root("ValueError: Prompt exceeds n_ctx: 4103 > 4096")
    assert root.signature == "llama_cpp_python.prompt_exceeds_n_ctx"
    assert root.params == {"prompt_tokens": 4103, "n_ctx": 4096}


def test_sycl_allocation_bytes():
    root = _root("alloc: can't allocate 889986048 Bytes of memory on device/GPU")
    assert root.signature == "sycl.device_oom"
    assert root.params == {"alloc_bytes": 889986048}


def test_chatter_about_these_errors_stays_silent():
    for text in (
        "has anyone seen NCCL errors in docker? I think it is shm",
        "LM Studio says my model needs too much memory, any tips",
        "the chat template is wrong for this model I think",
    ):
        assert detect(text).findings == []


def test_a_real_oom_outranks_an_incidental_permission_warning():
    text = (
        "Ignored error while writing commit hash to /root/.cache/huggingface/hub/models--x--y/refs/main: "
        "[Errno 13] Permission denied: '/root/.cache/huggingface/hub'.\n"
        "torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 1.00 GiB. GPU 0 has a total capacity of "
        "23.55 GiB of which 512.00 MiB is free."
    )
    findings = detect(text).findings
    assert findings[0].category == "gpu_oom"
    assert "common.permission_denied" in [f.signature for f in findings]
