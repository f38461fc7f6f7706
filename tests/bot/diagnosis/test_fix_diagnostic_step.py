"""Memory errors whose pastes carry no number to size a command get the check that finds the cause, as
a runnable command (knowledge/levers.yaml): what else holds the GPU (vLLM with no KV memory, TensorRT-LLM),
which models Ollama keeps loaded and the context they run with, the Metal wired limit in force (MLX), a device's free memory as llama.cpp sees it (SYCL)."""

from __future__ import annotations

import pytest

from bot.detector import detect
from bot.diagnosis import diagnose
from knowledge.loader import load_builtin

NVIDIA_APPS = "nvidia-smi --query-compute-apps=pid,process_name,used_memory --format=csv"


def _first_example(signature_id: str) -> str:
    for loaded in load_builtin().signatures:
        sig = loaded.signature if hasattr(loaded, "signature") else loaded.spec
        if sig.id == signature_id:
            return next(e.text for e in sig.examples if e.expect == "match")
    raise KeyError(signature_id)


@pytest.mark.parametrize(
    ("signature_id", "command"),
    [
        ("vllm.no_kv_memory.no_cache_blocks", NVIDIA_APPS),
        ("vllm.no_kv_memory.auto_fit", NVIDIA_APPS),
        ("trtllm.kv_cache_too_small", NVIDIA_APPS),
        ("sglang.hybrid_state_no_memory.v0", NVIDIA_APPS),  # memory left after the weights went negative
        ("ollama.gpu_oom.insufficient_memory", "ollama ps"),
        ("ollama.context_exceeded.prompt", "ollama ps"),
        ("mlx.metal_command_buffer_oom", "sysctl iogpu.wired_limit_mb"),
        ("sycl.device_oom", "llama-server --list-devices"),
    ],
)
def test_the_check_that_finds_the_cause(signature_id: str, command: str) -> None:
    reply = diagnose(detect(_first_example(signature_id)))
    assert reply is not None and reply.signature == signature_id
    assert [f.command for f in reply.fixes] == [command]
