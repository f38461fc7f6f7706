"""GPUs named anywhere in a paste: engine device lines (already context fields), ``nvidia-smi`` tables,
llama.cpp device lists, and the user's own words ("dies on my 4090", "2x3090", "four A100 80GB").

Returns what was read and where; resolving a name against the catalog is the situation's job."""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

import re2

if TYPE_CHECKING:
    from knowledge.levers import Backend

_COUNT_WORDS = {"two": 2, "dual": 2, "three": 3, "four": 4, "quad": 4, "six": 6, "eight": 8}

# "|   0  NVIDIA GeForce RTX 4090        Off |   00000000:01:00.0 Off |" and the memory cell
_SMI_ROW = re2.compile(
    r"(?m)^\|\s+([0-9]{1,2})\s+((?:NVIDIA|Tesla|Quadro|GeForce)[A-Za-z0-9 .-]{2,40}?)\s+(?:On|Off)\s+\|"
)
_SMI_MEM = re2.compile(r"(?m)\|\s*([0-9]{1,7})MiB\s*/\s*([0-9]{3,7})MiB\s*\|")
_CUDA_DEVICES = re2.compile(r"found ([0-9]{1,2}) (?:CUDA|ROCm|HIP|SYCL|Vulkan) devices")
_LLAMA_DEVICE = re2.compile(r"(?m)^\s*Device ([0-9]{1,2}): ([^,\n]{3,60}), compute capability")
_GPU_WORDS = (
    r"(?:rtx\s*(?:pro\s*)?[0-9]{4}(?:\s*(?:ti|super))*(?:\s*ada)?|gtx\s*[0-9]{3,4}(?:\s*ti)?"
    r"|(?:geforce\s+)?(?:rtx\s*)?[2345]0[5-9]0(?:\s*(?:ti|super))*"
    r"|a100|h100|h200|h20|b200|b300|gb200|gh200|l40s|l40|l4|a10g|a10|a40|t4|v100|p100|p40"
    r"|a6000|a5000|a4000|rtx\s*a[0-9]{4}|mi300x|mi325x|mi250x?|mi210|rx\s*[0-9]{4}\s*xtx?|[79][0-9]00\s*xtx?"
    r"|arc\s*[ab][0-9]{3}|m[1-4]\s*(?:pro|max|ultra)?|dgx\s*spark|gb10|jetson\s*[a-z ]{0,20}orin)"
)
_PROSE = re2.compile(
    r"(?i)(?:^|[\s(,;:])(?:(?P<n>[0-9])\s*[x×]\s*|(?P<w>two|dual|three|four|quad|six|eight)\s+)?"
    r"(?:(?:my|a|an|the|on|with|using|single|one)\s+)?(?:nvidia\s+)?(?P<name>" + _GPU_WORDS + r")"
    r"(?:\s*(?P<mem>[0-9]{1,3})\s*(?:gb|gib|g)\b)?s?(?P<tail>\s*(?:gpus?|cards?))?(?:$|[\s.,;:!?)])"
)


@dataclass
class GpuMention:
    name: str
    count: int | None
    memory_gib: float | None
    where: str  # nvidia-smi | device list | your words


def _smi(data: bytes) -> GpuMention | None:
    if not any(brand in data for brand in (b"NVIDIA", b"Tesla", b"Quadro", b"GeForce")):
        return None  # a row names one: a memchr-speed test spares the (?m)^ pass over every byte
    rows = [(int(m.group(1)), m.group(2).decode().strip()) for m in _SMI_ROW.finditer(data)]
    if not rows:
        return None
    mems = [int(m.group(2)) for m in _SMI_MEM.finditer(data)]
    names = {name for _i, name in rows}
    count = len({i for i, _n in rows})
    memory = (min(mems) / 1024) if mems else None
    return GpuMention(min(names), count, memory, "nvidia-smi")


def _device_list(data: bytes) -> GpuMention | None:
    listed = _LLAMA_DEVICE.finditer(data) if b"Device " in data else ()
    devices = {int(m.group(1)): m.group(2).decode("utf-8", "replace").strip() for m in listed}
    m = _CUDA_DEVICES.search(data)
    count = int(m.group(1)) if m else (len(devices) or None)
    if not devices:
        return GpuMention("", count, None, "device list") if count else None
    return GpuMention(next(iter(devices.values())), count, None, "device list")


def _prose(text: str) -> GpuMention | None:
    for m in _PROSE.finditer(text[-200_000:]):
        name = " ".join(m.group("name").split())
        count = int(m.group("n")) if m.group("n") else _COUNT_WORDS.get((m.group("w") or "").lower())
        mem = float(m.group("mem")) if m.group("mem") else None
        if (
            name.lower().startswith("m")
            and name[1:2].isdigit()
            and not re2.search(r"(?i)pro|max|ultra|mac", m.group(0) + text[m.end() : m.end() + 20])
        ):
            continue  # "m4" alone is too often something else
        return GpuMention(name, count, mem, "your words")
    return None


def gpu_mentions(text: str) -> list[GpuMention]:
    """Every way the paste names its GPUs, most reliable first (the whole-text passes read its UTF-8
    bytes, encoded once: RE2 encodes a ``str`` on every call and maps match offsets back)."""
    data = text.encode("utf-8", "surrogatepass")
    return [g for g in (_smi(data), _device_list(data), _prose(text)) if g is not None]


# the GPU software stack a paste's lines name, in this order (a ROCm build of PyTorch says "HIP out of
# memory" but also "cuda:0"; llama.cpp names its backend: ggml_vulkan, ggml_metal, ggml_sycl, ROCm0)
_BACKEND_MARKS: dict[Backend, tuple[str, ...]] = {
    "rocm": ("HIP out of memory", "hipMalloc", "hipError", "HIP error", "ROCm", "rocm", "ggml_hip", "amdgpu"),
    "xpu": ("XPU out of memory", "xpu:", "SYCL", "ggml_sycl", "Level Zero", "level_zero", "UR_RESULT_ERROR"),
    "metal": ("ggml_metal", "MPS backend out of memory", "MTLDevice", "Metal"),
    "vulkan": ("ggml_vulkan", "Vulkan", "ErrorOutOfDeviceMemory"),
}
_VENDOR_BACKEND: dict[str, Backend] = {"nvidia": "cuda", "amd": "rocm", "intel": "xpu", "apple": "metal"}


def gpu_backend(text: str, vendor: str | None) -> Backend | None:
    """cuda, rocm, xpu, metal or vulkan: an NVIDIA card's tools answer whatever backend runs on it, else
    the stack the lines name, else the catalog vendor's own; None when nothing says."""
    if vendor == "nvidia":
        return "cuda"
    found = next((stack for stack, marks in _BACKEND_MARKS.items() if any(m in text for m in marks)), None)
    return (
        found or _VENDOR_BACKEND.get(vendor or "") or ("cuda" if "CUDA" in text or "cuda" in text else None)
    )
