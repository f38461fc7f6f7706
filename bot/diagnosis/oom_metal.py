"""llama.cpp on Apple silicon: the model does not fit the Metal working set."""

from __future__ import annotations

from bot.diagnosis.commands import llama_cmd
from bot.diagnosis.common import diagnosis_reply
from bot.diagnosis.engine_facts import model_gpu_facts, model_spec
from bot.diagnosis.fixes import half_context_fix
from bot.diagnosis.llamacpp_facts import alloc_mib
from bot.diagnosis.numbers import fmt_mib
from bot.facts import PasteFacts
from bot.reply import Fact, Fix, MemoryPicture, MemorySegment, Reply
from calculator.units import MIB

METAL_MIN_OS_RESERVE_MIB = 2048  # what macOS keeps at the very least when the wired limit is raised


def _mac_ram_mib(working_set_mib: float) -> float:
    """Unified memory of the Mac from Metal's recommendedMaxWorkingSetSize (2/3 of RAM up to 36 GB,
    3/4 above), snapped to the sizes Apple sells."""
    guess = working_set_mib / (2 / 3) if working_set_mib < 24 * 1024 else working_set_mib / 0.75
    sizes = [8, 16, 18, 24, 32, 36, 48, 64, 96, 128, 192, 256, 512]
    return min(sizes, key=lambda s: abs(s * 1024 - guess)) * 1024.0


def _wired_limit_mib(ram_mib: float) -> int:
    reserve = max(METAL_MIN_OS_RESERVE_MIB, ram_mib / 8)
    return int((ram_mib - reserve) // 256 * 256)


def metal_oom(facts: PasteFacts) -> Reply:
    p = facts.params
    ws = p.get("working_set_mib")
    kv = p.get("kv_self_mib") or p.get("kv_buffer_mib") or p.get("kv_size_mib")
    compute = p.get("compute_buffer_mib")
    mapped = p.get("metal_allocated_mib")
    alloc = alloc_mib(facts)
    n_ctx = facts.get("n_ctx")
    ram = _mac_ram_mib(ws) if ws else None
    if ram is None and facts.gpu is not None and facts.gpu.unified_memory:
        ram = facts.gpu.memory_bytes / MIB
        ws = ws or facts.gpu.total_gib * 1024
    limit = _wired_limit_mib(ram) if ram else None
    small_ctx = (kv or 0) + (compute or 0)
    weights_room = ws - small_ctx - 256 if ws else None

    title = "llama.cpp on Apple silicon: more is mapped to the GPU than macOS lets it wire"
    if ws:
        title = f"llama.cpp on Apple silicon: the model does not fit the {fmt_mib(ws)} Metal working set"
    sentences = [
        "On Apple silicon the GPU may wire only part of unified memory (recommendedMaxWorkingSetSize, about 2/3 of "
        "RAM on small Macs, 3/4 on large ones); weights + KV cache + compute buffers must fit in it, and past it Metal "
        "command buffers fail (status 5, GGML_ASSERT in ggml-metal)."
    ]
    if ws and kv is not None and compute is not None:
        sentences.append(
            f"Here the KV cache ({fmt_mib(kv)}{f' at n_ctx {int(n_ctx):,}' if n_ctx else ''}) and compute buffers "
            f"({fmt_mib(compute)}) are small, so the weights are what overflow: they must come under about "
            f"{fmt_mib(weights_room or 0)}."
        )
    elif mapped and ws:
        sentences.append(f"{fmt_mib(mapped)} is mapped against {fmt_mib(ws)}.")
    summary = " ".join(sentences)
    numbers = []
    if ws:
        numbers.append(Fact("recommendedMaxWorkingSetSize", fmt_mib(ws), "log"))
    if mapped:
        numbers.append(Fact("mapped to the GPU", fmt_mib(mapped), "log"))
    if alloc:
        numbers.append(Fact("buffer that failed", fmt_mib(alloc), "log"))
    if kv is not None:
        numbers.append(Fact("KV cache", fmt_mib(kv), "log"))
    if compute is not None:
        numbers.append(Fact("compute buffer", fmt_mib(compute), "log"))
    if n_ctx:
        numbers.append(Fact("context (n_ctx)", f"{int(n_ctx):,}", "log"))
    if ram:
        numbers.append(Fact("unified memory (RAM) of this Mac", f"{ram / 1024:.0f} GB", "computed"))
    if weights_room:
        numbers.append(Fact("room left for the weights", fmt_mib(weights_room), "computed"))
    numbers += model_gpu_facts(facts)

    fixes: list[Fix] = []
    if weights_room:
        fixes.append(
            Fix(
                "llama.cpp",
                f"a GGUF of at most about {weights_room / 1024:.1f} GiB",
                llama_cmd(facts, {}),
                f"weights under {fmt_mib(weights_room)} + KV + compute fit the {fmt_mib(ws or 0)} working set "
                "(a 7B model: Q4_K_M is about 4.1 GiB, Q5_K_M 4.8, Q8_0 7.2)",
                "below Q4 quality drops",
                rank=1,
            )
        )
    layers = p.get("layers_model") or (model_spec(facts).num_hidden_layers + 1 if model_spec(facts) else None)
    ngl = facts.get("n_gpu_layers")
    on_gpu = min(int(ngl), int(layers)) if ngl and layers else (int(layers) if layers else None)
    if on_gpu:
        fewer = max(1, on_gpu * 3 // 4)
        fixes.append(
            Fix(
                "llama.cpp",
                f"fewer layers on the GPU (-ngl {fewer} of {layers})",
                llama_cmd(facts, {"-ngl": str(fewer)}),
                "a quarter of the layers stay on the CPU side, unwired: the working set shrinks by about a quarter of the weights",
                "those layers run on the CPU cores: slower",
                rank=2,
            )
        )
    if kv and n_ctx and kv > 512:
        fixes.append(half_context_fix(facts, n_ctx, f"KV cache {fmt_mib(kv)} -> {fmt_mib(kv / 2)}", 2))
    if limit and ram:
        raised = limit - (ws or 0)
        fixes.append(
            Fix(
                "any",
                f"let the GPU wire more memory ({limit:,} MB)",
                f"sudo sysctl iogpu.wired_limit_mb={limit}",
                f"the working set grows from {fmt_mib(ws or 0)} to {limit:,} MiB (+{raised:,.0f} MiB), leaving "
                f"{ram - limit:,.0f} MiB for macOS",
                "macOS 14+ (older: debug.iogpu.wired_limit); resets on reboot; too high a value starves macOS: "
                "swapping, freezes or a kernel panic. Close other apps first",
                rank=3,
            )
        )
        if mapped and mapped > limit:
            fixes[
                -1
            ].effect += f"; still below the {fmt_mib(mapped)} mapped, so a smaller model is needed anyway"
    notes = []
    if not mapped:
        notes.append(
            "The total mapped to the GPU ('( allocated / working set )' at the end of the Metal buffer lines) is not in "
            "what I read; weights = that total minus the KV and compute buffers."
        )
    picture = None
    if ws and kv is not None and compute is not None and weights_room:
        segs = [
            MemorySegment("weights (room)", weights_room, "computed"),
            MemorySegment("kv cache", kv, "log"),
            MemorySegment("compute buffers", compute, "log"),
        ]
        picture = MemoryPicture(
            ws / 1024,
            [MemorySegment(s.label, s.gib / 1024, s.source) for s in segs],
            "Metal working set (what the weights may take)",
        )
    data = {"wired_limit_mb": limit}
    return diagnosis_reply(
        title,
        summary,
        numbers,
        fixes,
        notes,
        "Weights + KV + compute exceed the Metal working set.",
        memory=picture,
        data=data,
        ranked=True,
    )
