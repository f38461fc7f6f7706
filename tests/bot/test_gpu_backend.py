"""The GPU stack a paste runs on (bot/gpu_mentions.gpu_backend), and the diagnostic command a reply gives
on it: nvidia-smi only where NVIDIA's tools can answer (knowledge/levers.yaml ``commands_on``)."""

from __future__ import annotations

import pytest

from bot.gpu_mentions import gpu_backend
from tests.bot.diagnosis.helpers import ranked_fixes

# wild_engines strixhalo2-hip-oom (a ROCm build of PyTorch under vLLM on Strix Halo)
HIP_OOM = (
    "(EngineCore_0 pid=3561) ERROR 09-27 14:03:50 [core.py:712] torch.OutOfMemoryError: HIP out of memory. "
    "Tried to allocate 816.00 MiB. GPU 0 has a total capacity of 61.35 GiB of which 655.29 MiB is free. Of the "
    "allocated memory 57.83 GiB is allocated by PyTorch, and 2.53 GiB is reserved by PyTorch but unallocated."
)
# wild_2026 llamacpp15256-vulkan-device-alloc
VULKAN_OOM = (
    "ggml_vulkan: Device memory allocation of size 118497280 failed.\n"
    "ggml_vulkan: vk::Device::allocateMemory: ErrorOutOfDeviceMemory\n"
)
CUDA_OOM = (
    "torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 816.00 MiB. GPU 0 has a total capacity of "
    "23.55 GiB of which 655.29 MiB is free. Of the allocated memory 21.83 GiB is allocated by PyTorch, and "
    "0.53 GiB is reserved by PyTorch but unallocated."
)


@pytest.mark.parametrize(
    ("text", "vendor", "backend"),
    [
        (HIP_OOM, None, "rocm"),
        (VULKAN_OOM, None, "vulkan"),
        (VULKAN_OOM, "nvidia", "cuda"),  # NVIDIA's tools answer whatever backend runs on the card
        ("torch.OutOfMemoryError: XPU out of memory. Tried to allocate 4.66 GiB.", None, "xpu"),
        ("ggml_metal_graph_compute: command buffer 3 failed with status 5", None, "metal"),
        (CUDA_OOM, None, "cuda"),
        ("killed", "amd", "rocm"),
        ("killed", None, None),
    ],
)
def test_the_stack_is_read_from_the_lines_then_the_vendor(text, vendor, backend):
    assert gpu_backend(text, vendor) == backend


def _commands(text: str) -> list[str]:
    return [f.command for f in ranked_fixes(text) if f.command]


def test_a_rocm_paste_is_told_rocm_smi_and_a_cuda_one_nvidia_smi():
    # with 40 GiB of the memory in use held outside the process, so that what else holds it is worth a look
    # (as printed, PyTorch itself holds almost all of it: test_torch_oom_fits.py)
    hip = HIP_OOM.replace("57.83 GiB is allocated", "17.83 GiB is allocated")
    cuda = CUDA_OOM.replace("21.83 GiB is allocated", "11.83 GiB is allocated")
    assert "rocm-smi --showpids" in _commands(hip)
    assert not any("nvidia-smi" in c for c in _commands(hip))
    assert "nvidia-smi --query-compute-apps=pid,process_name,used_memory --format=csv" in _commands(cuda)


def test_a_vulkan_paste_gets_no_vendor_tool():
    assert not any("smi" in c for c in _commands(VULKAN_OOM))


def test_system_memory_on_a_mac_is_listed_with_the_bsd_ps():
    text = (
        "ggml_metal_init: found device: Apple M2\n"
        "Error: model requires more system memory (42.1 GiB) than is available (31.2 GiB)\n"
    )
    assert "ps aux -m | head -n 6" in _commands(text)
    linux = "Error: model requires more system memory (42.1 GiB) than is available (31.2 GiB)\n"
    assert "free -h && ps aux --sort=-rss | head -n 6" in _commands(linux)
