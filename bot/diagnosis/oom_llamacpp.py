"""gpu_oom@llama.cpp: the failed allocation by stage; runtime, Vulkan and unattributed allocations here."""

from __future__ import annotations

from bot.diagnosis.commands import llama_cmd
from bot.diagnosis.common import diagnosis_reply
from bot.diagnosis.engine_facts import evidence_has, model_spec
from bot.diagnosis.fixes import gpu_processes_fix, half_context_fix, q8_kv_fix, ubatch_256_fix
from bot.diagnosis.gguf import gguf_bytes
from bot.diagnosis.kv_alloc import llamacpp_kv_alloc_failed
from bot.diagnosis.llamacpp_facts import alloc_mib, device_total_mib, llama_kv_per_token, llama_numbers
from bot.diagnosis.numbers import fmt_mib
from bot.diagnosis.oom_llamacpp_compute import llama_compute_oom
from bot.diagnosis.oom_llamacpp_weights import llama_weights_oom
from bot.diagnosis.oom_metal import metal_oom
from bot.facts import PasteFacts
from bot.reply import Fix, Reply
from calculator.units import MIB, round_down_clean


def llamacpp_gpu_oom(facts: PasteFacts) -> Reply:
    sig = facts.root.signature
    if sig.startswith("llamacpp.gpu_oom.metal") or (
        sig == "llamacpp.gpu_oom.alloc" and facts.params.get("working_set_mib")
    ):
        return metal_oom(facts)
    if sig == "llamacpp.gpu_oom.weights":
        return llama_weights_oom(facts)
    if sig == "llamacpp.gpu_oom.compute":
        return llama_compute_oom(facts)
    if sig == "llamacpp.gpu_oom.vulkan":
        return _llama_vulkan(facts)
    if sig == "llamacpp.gpu_oom.cuda_runtime":
        return _llama_runtime(facts)
    return _llama_alloc(facts)


def _llama_runtime(facts: PasteFacts) -> Reply:
    p = facts.params
    fn = p.get("function") or "a CUDA call"
    title = f"llama.cpp: the GPU ran out of memory while running (in {fn})"
    summary = (
        f"Everything was allocated, then a later allocation in {fn} on device {p.get('device', '?')} failed: memory "
        "llama.cpp does not reserve up front (cuBLAS workspace, the CUDA memory pool, another process on the GPU) "
        "pushed it over. Leave more headroom: fewer layers or a smaller context or micro-batch."
    )
    n_ctx = facts.get("n_ctx")
    ngl = facts.get("n_gpu_layers")
    fixes = [
        Fix(
            "llama.cpp",
            "keep more memory free (--fit-target 2048)",
            llama_cmd(facts, {"--fit-target": "2048"}),
            "--fit (b7407+) leaves 2 GiB free per GPU instead of 1",
            "a little less on the GPU",
            rank=1,
        ),
        ubatch_256_fix(facts, {"-ub": "256"}, "smaller runtime buffers", 2),
    ]
    if ngl and int(ngl) > 2 and int(ngl) < 999:
        fixes.append(
            Fix(
                "llama.cpp",
                f"one or two layers fewer (-ngl {int(ngl) - 2})",
                llama_cmd(facts, {"-ngl": str(int(ngl) - 2)}),
                "frees two layers of weights and KV",
                "slightly slower",
                rank=3,
            )
        )
    if n_ctx:
        fixes.append(
            Fix(
                "llama.cpp",
                f"-c {round_down_clean(int(n_ctx) * 3 // 4)}",
                llama_cmd(facts, {"-c": str(round_down_clean(int(n_ctx) * 3 // 4))}),
                "a quarter less KV cache",
                "shorter prompts",
                rank=4,
            )
        )
    fixes.append(
        gpu_processes_fix("check for other processes", "another process on the GPU takes the headroom", 5)
    )
    return diagnosis_reply(
        title,
        summary,
        llama_numbers(facts, None, ""),
        fixes,
        [],
        "Out of memory after loading: too little headroom.",
        ranked=True,
    )


def _llama_vulkan(facts: PasteFacts) -> Reply:
    alloc = alloc_mib(facts)
    limit = evidence_has(facts, "exceeds device")
    title = (
        "llama.cpp (Vulkan): device memory allocation"
        + (f" of {fmt_mib(alloc)}" if alloc else "")
        + " failed"
    )
    if limit:
        summary = (
            "The single buffer is larger than the device's maximum allocation size (often 2-4 GiB on integrated and "
            "older GPUs), even if there is free memory in total: make each buffer smaller (micro-batch, context, "
            "layers per device)."
        )
    else:
        summary = (
            "The Vulkan driver has no device memory left for this buffer. Weights (-ngl), the KV cache (-c, cache "
            "type) and the compute buffer (-ub) must come down together to what the GPU holds; on integrated GPUs "
            "the usable share of system RAM is set by the driver/BIOS."
        )
    n_ctx = facts.get("n_ctx")
    fixes = [
        ubatch_256_fix(
            facts, {"-ub": "256", "-b": "256"}, "halves the compute buffer of the default -ub 512", 1
        ),
        q8_kv_fix(facts, 3),
        Fix(
            "llama.cpp",
            "let --fit place the layers",
            llama_cmd(facts, {"-ngl": None, "-fit": None, "--fit": "on"}),
            "only what fits goes to the GPU (b7407+)",
            "the rest runs on the CPU",
            rank=2,
        ),
    ]
    if n_ctx:
        fixes.append(half_context_fix(facts, n_ctx, "half the KV cache", 2))
    return diagnosis_reply(
        title,
        summary,
        llama_numbers(facts, alloc, "allocation that failed"),
        fixes,
        [],
        "Vulkan could not allocate device memory.",
        ranked=True,
    )


def _llama_alloc(facts: PasteFacts) -> Reply:
    """A cudaMalloc failure whose next lines (which buffer) are not in the paste."""
    p = facts.params
    alloc = alloc_mib(facts) or 0.0
    device = p.get("device", "0")
    model = model_spec(facts)
    n_ctx = facts.get("n_ctx")
    kv_tok = llama_kv_per_token(facts)
    stage = "unknown"
    kv_full = kv_tok * int(n_ctx) / MIB if kv_tok and n_ctx else None
    gguf = gguf_bytes(facts)
    if kv_full and abs(alloc - kv_full) / kv_full < 0.1:
        stage = "kv"
    elif gguf and alloc > 0.3 * gguf / MIB:
        stage = "weights"
    if stage == "weights":
        return llama_weights_oom(facts)
    if stage == "kv":
        return llamacpp_kv_alloc_failed(facts)
    avail, _ = device_total_mib(facts)
    title = f"llama.cpp: a {fmt_mib(alloc)} buffer could not be allocated on GPU {device}"
    summary = (
        f"cudaMalloc refused {fmt_mib(alloc)} on GPU {device}"
        + (f", which offers about {fmt_mib(avail)}" if avail else "")
        + ". The line after it says which buffer: 'error loading model' = weights (lower -ngl), 'kv cache' = the "
        "KV cache (lower -c or quantize it), 'compute buffers' = the compute graph (lower -ub). Paste a few more "
        "lines for an exact fix; the likely ones are below."
    )
    fixes = [
        Fix(
            "llama.cpp",
            "let --fit place layers and context",
            llama_cmd(facts, {"-ngl": None, "-c": None, "-fit": None, "--fit": "on"}),
            "llama.cpp (b7407+) fits layers and context to free memory",
            "only adjusts what you did not set",
            rank=1,
        ),
        q8_kv_fix(facts, 2),
        ubatch_256_fix(facts, {"-ub": "256"}, "smaller compute buffer", 3),
    ]
    if model is None:
        fixes.append(
            Fix(
                "llama.cpp",
                "a smaller quant",
                llama_cmd(facts, {}),
                "smaller weights",
                "lower quality",
                rank=4,
            )
        )
    return diagnosis_reply(
        title,
        summary,
        llama_numbers(facts, alloc, "allocation that failed"),
        fixes,
        [],
        "A GPU buffer did not fit.",
        ranked=True,
    )


RULES = {"gpu_oom@llama.cpp": llamacpp_gpu_oom}
