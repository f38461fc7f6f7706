"""The reply's sentences on real held-out pastes (tests/data/wild_*.jsonl), on the path of
``gpu-garden triage``: redact, triage, ``to_markdown``.  Each test names a wording defect a maintainer
found in bench/reply_review.py's output and asserts the corrected sentence, or the defect's absence."""

from __future__ import annotations

from functools import cache

import pytest

from bot.core import GardenBot, Paste
from bot.formatter import to_markdown
from bot.redact import redact, with_notice
from tests.conftest import held_out_texts


@cache
def _bot() -> GardenBot:
    return GardenBot()


def reply_lines(record_id: str, full: bool = False) -> list[str]:
    cleaned = redact(held_out_texts()[record_id])
    reply = with_notice(
        _bot().triage(Paste(cleaned.text, False, 0, cleaned.prefix_cuts), addressed=True), cleaned.kinds
    )
    assert reply is not None
    return to_markdown(reply, full=full).split("\n")


OTHER_PROCESSES = (
    "find what else holds GPU memory: lists the processes on the GPU; stop the ones that are not this "
    "engine, or size the engine to what is left."
)


@pytest.mark.parametrize("record_id", ["genesis1-vllm-turboquant-oom", "strixhalo2-hip-oom"])
def test_expandable_segments_fix_says_what_it_does_instead_of_repeating_itself(record_id: str) -> None:
    lines = reply_lines(record_id)
    assert (
        "**Fix:** let PyTorch's allocator grow segments instead of fragmenting: the memory PyTorch reserved "
        "but left unallocated can serve a larger block instead of staying in pieces. Cost: none measurable."
    ) in lines
    assert not any("fragmenting: let PyTorch's allocator" in line for line in lines)


def test_allow_long_max_model_len_has_its_own_effect_and_the_engines_cost() -> None:
    lines = reply_lines("aiperf1449-derived-max-len-wrapped")
    assert (
        "**Or:** allow a max_model_len above the model's config (set `VLLM_ALLOW_LONG_MAX_MODEL_LEN=1` to "
        "your vLLM command): vLLM starts with the longer --max-model-len and only warns. Cost: positions past "
        "the model's trained length give NaN (RoPE models) or a CUDA out-of-bounds error (absolute positions)."
    ) in lines


def test_the_other_processes_diagnostic_reads_as_one_sentence() -> None:
    lines = reply_lines("vllm33297-ansi-caret-free-mem")
    assert f"**Fix:** {OTHER_PROCESSES}" in lines
    assert not any("is not this engine's to use" in line for line in lines)


def test_the_system_ram_diagnostic_says_what_it_lists() -> None:
    assert (
        "**Fix:** see what holds system RAM: lists the five processes holding the most RAM; closing one frees "
        "room for the model."
    ) in reply_lines("continue12689-system-memory")


def test_the_metal_wired_limit_step_reads_in_order() -> None:
    assert (
        "**Fix:** see the GPU wired limit in force (0 = macOS's default share): shows how much unified memory "
        "Metal may wire for the GPU; raise it below your RAM with `sudo sysctl iogpu.wired_limit_mb=<MiB>`. "
        "Cost: less RAM left for macOS and other apps."
    ) in reply_lines("mtplx194-command-buffer")


def test_a_port_error_without_its_port_keeps_a_cause_and_no_orphan_or() -> None:
    lines = reply_lines("vllm9763-port")
    assert lines[:3] == [
        "## The server's port is already in use",
        "",
        "The port is usually held by an earlier instance of the server that did not exit, another server, "
        "or (for torch.distributed's rendezvous) a second engine on the same machine.",
    ]
    assert "- start on another port (--port)" in lines
    assert not any(line.startswith("- or ") for line in lines)


def test_a_port_error_with_its_port_names_it_in_cause_and_advice() -> None:
    lines = reply_lines("ollamacopilot36-listen-tcp")
    assert lines[2].startswith("Another process already listens on port 11435. The port is usually held by")
    assert "- find it: ss -ltnp | grep :11435 (or lsof -i :11435) and stop it" in lines


def test_a_llamacpp_runtime_oom_without_its_device_line_still_says_what_to_change() -> None:
    lines = reply_lines("koboldcpp544-ggml-cuda")
    assert lines[2] == (
        "Memory that llama.cpp does not reserve up front (cuBLAS workspace, the CUDA memory pool, other "
        "processes on the same GPU) pushed it over: fewer layers on the GPU, a smaller context or a smaller "
        "micro-batch (-ub) leave room for it."
    )
    assert "Leave more headroom." not in " ".join(lines)


def test_weights_that_do_not_fit_name_ollamas_num_gpu_next_to_ngl() -> None:
    lines = reply_lines("ollama9260-journald-81656")
    assert lines[2] == (
        "The weights assigned to the GPU did not fit in its free memory, so loading stopped before any KV "
        "cache was made. The buffer that failed was CUDA0: 81,656.95 MiB on device 0. The number of layers "
        "on the GPU (-ngl in llama.cpp, num_gpu in Ollama) or the quantization decides the size of the "
        "weights there; the context size does not."
    )


def test_weights_cause_without_its_numbers_still_says_they_did_not_fit() -> None:
    assert reply_lines("ollama11359-unable-cuda0")[2].startswith(
        "The weights assigned to the GPU did not fit in its free memory, so loading stopped before any KV "
        "cache was made. The number of layers on the GPU (-ngl in llama.cpp, num_gpu in Ollama)"
    )


@pytest.mark.parametrize("record_id", ["ollama15546-gemma4-arch", "llamafile711-gemma3"])
def test_the_architecture_cause_names_no_vllm_on_another_engine(record_id: str) -> None:
    text = "\n".join(reply_lines(record_id))
    assert "vLLM" not in text  # a GGUF's unknown architecture is llama.cpp's own answer
    assert text.startswith("## llama.cpp: this build does not know the GGUF's model architecture\n")


def test_vllm_capacity_line_explains_a_concurrency_above_tokens_over_length() -> None:
    assert reply_lines("vllm37972-pp8-healthy-graph-pool")[2] == (
        "The KV cache holds 821,632 tokens. vLLM counts room for 3.22 requests of 1,010,000 tokens at once "
        "(more than tokens / length when sliding-window or Mamba layers keep only part of each request)."
    )


def test_the_startup_summary_title_promises_no_suggestion_the_paste_lacks() -> None:
    lines = reply_lines("glm53spark47-free-desired-split")
    assert lines[0] == "## vLLM: free memory at startup and what gpu_memory_utilization asks for"


def test_the_full_reply_leaves_unknown_verification_values_out() -> None:
    lines = reply_lines("vllm8933-worker-131072-86432", full=True)
    assert "  _checked on the budget: starts True, fit_tokens 86432, serves 86016_" in lines
    assert not any("None" in line for line in lines)


def test_the_no_finding_reply_lists_no_internal_engine_id() -> None:
    summary = reply_lines("llamacppwinmgr4-port-8081")[2]
    assert summary.startswith("I looked for the memory and context errors of exllamav2, koboldcpp, ")
    assert "any," not in summary


def test_a_compute_buffer_cause_without_its_size_starts_with_what_failed() -> None:
    assert reply_lines("llamacpp14752-nemotron-compute-pp")[2].startswith(
        "Weights and KV cache were allocated, then the compute buffer failed. The compute buffer grows with "
        "the micro-batch (-ub in llama.cpp, num_batch in Ollama), and without flash attention"
    )


def test_a_compute_buffer_cause_on_ollama_names_its_own_batch_setting() -> None:
    assert reply_lines("ollama13235-journald-cudamalloc")[2].startswith(
        "Weights and KV cache were allocated, then the compute buffer failed. It needed 9,220.57 MiB on "
        "device 1. The compute buffer grows with the micro-batch (-ub in llama.cpp, num_batch in Ollama)"
    )


def test_the_metal_buffer_cause_without_the_requested_size_keeps_its_subject() -> None:
    assert reply_lines("mlx3327-overflow-buffer")[2] == (
        "Metal caps one buffer at 86,586,540,032 bytes (MTLDevice.maxBufferLength), however much unified "
        "memory is free. The usual culprit is the attention scores of a long prompt prefilled in one step; "
        "a size near 2^64 is an overflow in the size arithmetic (an MLX bug), not a real request."
    )


def test_the_vulkan_cause_names_the_per_buffer_limit_it_means() -> None:
    assert reply_lines("llamacpp15256-vulkan-device-alloc")[2] == (
        "The Vulkan driver refused a 118,497,280-byte allocation. Vulkan reports ErrorOutOfDeviceMemory when "
        "the GPU is out of device memory, or when one buffer is larger than the driver allows for a single "
        "buffer (maxBufferSize / maxMemoryAllocationSize, 2 or 4 GiB on some drivers)."
    )


@pytest.mark.parametrize("record_id", ["llamacpp16748-pp-copies-compute", "ollama11359-unable-cuda0"])
def test_also_in_the_paste_names_no_second_reading_of_the_same_failure(record_id: str) -> None:
    # the cudaMalloc line and the buffer it was for are one failure; a same-titled finding is the title again
    assert not any(line.startswith("_Also in the paste") for line in reply_lines(record_id))


def test_also_in_the_paste_leaves_out_general_readings_of_the_roots_own_lines() -> None:
    # the KV buffer's cudaMalloc line is the root's first line: the generic GPU-allocation signatures that
    # match it tell the same failure
    text = (
        "ggml_backend_cuda_buffer_type_alloc_buffer: allocating 12288.00 MiB on device 0: cudaMalloc failed: "
        "out of memory\nalloc_tensor_range: failed to allocate CUDA0 buffer of size 12884901888\n"
        "llama_init_from_model: failed to initialize the context: failed to allocate buffer for kv cache"
    )
    reply = _bot().triage(Paste(text, False, 0), addressed=True)
    assert reply is not None and reply.signature == "llamacpp.kv_alloc_failed"
    assert [n for n in reply.notes if n.startswith("Also in the paste")] == []


def test_also_in_the_paste_still_names_another_failure() -> None:
    # a failure of another category in the same paste is still named: a port clash after the OOM
    text = (
        "torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 2.00 GiB. GPU 0 has a total capacity of "
        "23.65 GiB of which 1.06 GiB is free.\nOSError: [Errno 98] Address already in use"
    )
    reply = _bot().triage(Paste(text, False, 0), addressed=True)
    assert reply is not None and reply.title == "CUDA out of memory: tried 2.00 GiB with 1.06 GiB free"
    assert [n for n in reply.notes if n.startswith("Also in the paste")] == [
        "Also in the paste: The server's port is already in use"
    ]
