"""How the SGLang, TGI and PyTorch signatures behave together: ranking, suppression, units, context."""

from __future__ import annotations

import pytest

from bot.detector import detect
from knowledge.schema import MEMORY_CATEGORIES

TORCH_OOM_NEW = (
    "torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 3.50 GiB. GPU 0 has a total capacity of "
    "79.10 GiB of which 1.20 GiB is free. Including non-PyTorch memory, this process has 77.89 GiB memory in use. "
    "Of the allocated memory 74.02 GiB is allocated by PyTorch, and 2.31 GiB is reserved by PyTorch but unallocated."
)


def _ids(text: str) -> list[str]:
    return [f.signature for f in detect(text).findings]


def test_sglang_not_enough_memory_outranks_a_cuda_oom_in_the_same_paste():
    paste = "\n".join(
        [
            "python -m sglang.launch_server --model-path Qwen/Qwen2.5-32B-Instruct --mem-fraction-static 0.85",
            "[2025-03-11 08:02:17 TP0] Scheduler hit an exception: Traceback (most recent call last):",
            TORCH_OOM_NEW,
            "With --mem-fraction-static 0.84 instead:",
            "[2025-03-11 08:10:02 TP0] RuntimeError: Not enough memory. Please try to increase --mem-fraction-static.",
        ]
    )
    detection = detect(paste)
    ids = [f.signature for f in detection.findings]
    assert ids[0] == "sglang.not_enough_memory.v0"
    assert "sglang.runtime_oom.v0" in ids and "pytorch.cuda_oom.v0" in ids
    assert detection.context.get("mem_fraction_static") == pytest.approx(0.85)
    assert detection.context.get("model") == "Qwen/Qwen2.5-32B-Instruct"


def test_weights_leave_no_kv_explains_the_generic_sglang_error():
    paste = (
        "ValueError: Loaded weights leave no GPU memory for the KV cache under --mem-fraction-static=0.8. "
        "Raise --mem-fraction-static above 0.861 (minimum viable = 1 - available/pre = 0.8604).\n"
        "RuntimeError: Not enough memory. Please try to increase --mem-fraction-static."
    )
    ids = _ids(paste)
    assert ids[0] == "sglang.weights_leave_no_kv.v0"
    assert "sglang.not_enough_memory.v0" not in ids


def test_sglang_startup_log_reports_are_info_and_rank_below_an_error():
    log = "\n".join(
        [
            "[2025-08-08 03:34:30 TP0] Load weight begin. avail mem=23.10 GB",
            "[2025-08-08 03:34:37 TP0] Load weight end. type=Qwen3ForCausalLM, dtype=torch.bfloat16, "
            "avail mem=13.91 GB, mem usage=9.19 GB.",
            "[2025-08-08 03:34:38 TP0] KV Cache is allocated. #tokens: 104273, K size: 5.57 GB, V size: 5.57 GB",
            "[2025-08-08 03:34:38 TP0] Memory pool end. avail mem=2.43 GB",
            "[2025-08-08 03:34:40 TP0] max_total_num_tokens=104273, chunked_prefill_size=4096, "
            "max_prefill_tokens=16384, max_running_requests=2048, context_len=40960, available_gpu_mem=1.80 GB",
        ]
    )
    detection = detect(log)
    assert [f.severity for f in detection.findings] == ["info"] * 5
    assert detection.findings[0].signature == "sglang.pool_summary.v0"
    params = {k: v for f in detection.findings for k, v in f.params.items()}
    assert params["weights_gib"] == pytest.approx(9.19)
    assert params["kv_tokens"] == 104273
    assert params["pre_load_avail_gib"] == pytest.approx(23.10)
    with_error = (
        log + "\nException: Capture cuda graph failed: CUDA out of memory. Tried to allocate 512.00 MiB"
    )
    assert detect(with_error).findings[0].signature == "sglang.cuda_graph_oom.v0"


@pytest.mark.parametrize(
    ("text", "tried_gib", "tried_mib"),
    [
        (
            "CUDA out of memory. Tried to allocate 20.00 MiB (GPU 0; 8.00 GiB total capacity; 6.63 GiB already "
            "allocated; 0 bytes free; 7.29 GiB reserved in total by PyTorch)",
            0.019531,
            20.0,
        ),
        (TORCH_OOM_NEW, 3.5, 3584.0),
        (
            "CUDA out of memory. Tried to allocate 512.00 KiB. GPU 0 has a total capacity of 7.79 GiB of which "
            "0 bytes is free.",
            0.000488,  # 512 KiB in GiB, to the millionth: 0.50 MiB when said back (was 0.0005: 0.51 MiB)
            0.5,
        ),
    ],
)
def test_tried_is_reported_in_both_units(text, tried_gib, tried_mib):
    finding = detect(text).findings[0]
    assert finding.category == "gpu_oom"
    assert finding.params["tried_gib"] == tried_gib
    assert finding.params["tried_mib"] == pytest.approx(tried_mib, rel=1e-3)


def test_wrapped_torch_oom_is_read_whole_and_the_partial_forms_are_suppressed():
    wrapped = TORCH_OOM_NEW.replace("this process", "this pro\ncess")
    detection = detect(wrapped)
    ids = [f.signature for f in detection.findings]
    assert ids == ["pytorch.cuda_oom.v0"]
    params = detection.findings[0].params
    assert params["this_process_gib"] == pytest.approx(77.89)
    assert params["reserved_unallocated_gib"] == pytest.approx(2.31)


def test_tgi_warmup_outranks_the_shard_oom_but_keeps_the_torch_numbers():
    paste = "\n".join(
        [
            "2024-05-02T10:00:01.000000Z ERROR warmup{max_input_length=4095 max_prefill_tokens=8192 "
            "max_total_tokens=8192}:warmup: text_generation_client: router/client/src/lib.rs:46: Server error: "
            "Not enough memory to handle 8192 prefill tokens. You need to decrease `--max-batch-prefill-tokens`",
            '  File "/opt/conda/lib/python3.10/site-packages/text_generation_server/models/flash_causal_lm.py"',
            "torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 1.00 GiB. GPU 0 has a total capacity of "
            "23.68 GiB of which 812.00 MiB is free.",
        ]
    )
    detection = detect(paste)
    ids = [f.signature for f in detection.findings]
    assert ids[0] == "tgi.warmup_prefill_oom.v0"
    assert "tgi.shard_cuda_oom.v0" not in ids
    assert "pytorch.cuda_oom_partial.v0" in ids
    assert detection.findings[0].params["max_prefill_tokens"] == 8192
    assert detection.context.get("max_num_batched_tokens") == 8192


def test_tgi_max_total_tokens_is_not_read_from_an_sglang_command_line():
    sglang = "python -m sglang.launch_server --model-path Qwen/Qwen2.5-7B --max-total-tokens 100000 --tp 2"
    fields = detect(sglang).context.fields
    assert "max_model_len" not in fields
    assert fields["tp"] == 2
    tgi = (
        "docker run --gpus all ghcr.io/huggingface/text-generation-inference:2.4.1 --model-id "
        "meta-llama/Llama-3.1-8B-Instruct --num-shard 2 --max-total-tokens 8192 --max-batch-prefill-tokens 4096"
    )
    fields = detect(tgi).context.fields
    assert fields["max_model_len"] == 8192
    assert fields["max_num_batched_tokens"] == 4096
    assert fields["tp"] == 2
    assert fields["model"] == "meta-llama/Llama-3.1-8B-Instruct"
    assert fields["engine_version"] == "2.4.1"


@pytest.mark.parametrize(
    "text",
    [
        "OSError: We couldn't connect to 'https://huggingface.co' to load this file.",
        "Exception: data did not match any variant of untagged enum ModelWrapper at line 1251012 column 3",
        "RuntimeError: CUDA error: device-side assert triggered",
        "ERROR shard-manager: text_generation_launcher: Shard complete standard error output: "
        "ImportError: libcuda.so.1: cannot open shared object file",
        "[2025-07-02 07:41:58] Scheduler hit an exception: KeyError: 'model.layers.0.mlp.gate_proj.weight'",
    ],
)
def test_non_memory_errors_get_no_memory_finding(text):
    memory = [f.signature for f in detect(text).findings if f.category in MEMORY_CATEGORIES]
    assert not memory


def test_custom_allreduce_invalid_argument_is_not_a_capture_oom():
    ipc = detect(
        "Exception: Capture cuda graph failed: Runtime check failed at .../sgl_kernel/distributed/"
        "custom_all_reduce.cuh:37: CUDA error: invalid argument\n"
        "Possible solutions:\n"
        "1. set --mem-fraction-static to a smaller value (e.g., 0.8 or 0.7)\n"
        "2. set --cuda-graph-max-bs to a smaller value (e.g., 16)"
    )
    assert ipc.findings[0].signature == "sglang.custom_allreduce_invalid_argument"
    assert not [f.signature for f in ipc.findings if f.category in MEMORY_CATEGORIES]
    oom = detect("Exception: Capture cuda graph failed: CUDA out of memory. Tried to allocate 448.00 MiB.")
    assert oom.findings and oom.findings[0].category == "gpu_oom"
