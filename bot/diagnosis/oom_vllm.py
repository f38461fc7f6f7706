"""gpu_oom@vllm: out of memory while capturing CUDA graphs."""

from __future__ import annotations

from bot.diagnosis.common import diagnosis_reply
from bot.diagnosis.engine_facts import (
    gpu_total,
    model_gpu_facts,
    model_spec,
    paste_vllm_version,
    vllm_utilization,
)
from bot.diagnosis.fixes import no_cuda_graphs_fix
from bot.diagnosis.numbers import floor2, fmt_gib, fmt_mib, fmt_size
from bot.diagnosis.vllm_budget import CUDAGRAPH_ENV
from bot.facts import PasteFacts
from bot.reply import Fact, Fix, MemoryPicture, MemorySegment, Reply
from calculator.commands import vllm_command
from calculator.units import fmt_tokens
from calculator.versions import vllm_subtracts_cudagraph_estimate
from calculator.vllm import estimate_cudagraph_gib

GRAPH_ROOM_GIB = 2.0  # what to leave outside gpu_memory_utilization for CUDA graphs, NCCL and spikes


def vllm_gpu_oom(facts: PasteFacts) -> Reply:
    p = facts.params
    version = paste_vllm_version(facts)
    command = facts.context.get("command")
    model_name = facts.context.get("model")
    tp = int(facts.get("tp") or 1)
    total, total_src = gpu_total(facts)
    util, util_src = vllm_utilization(facts, version)
    free_mib = p.get("free_mib")
    tried_mib = p.get("tried_mib")
    model = model_spec(facts)
    graphs = estimate_cudagraph_gib(model, tp, int(facts.get("pp") or 1)) if model is not None else None
    room_needed = max(GRAPH_ROOM_GIB, (graphs or 0.0) + 1.0)
    room_now = total * (1 - util) if total else None
    if total:
        new_util = floor2((total - room_needed) / total)
        new_util = min(new_util, floor2(util - 0.02))
    else:
        new_util = floor2(util - 0.05)
    new_util = max(new_util, 0.5)
    kv = p.get("kv_cache_gib")
    blocks = p.get("gpu_blocks")
    stops = facts.root.signature.endswith("cudagraph_log_stops")

    title = "vLLM: out of memory while capturing CUDA graphs"
    if util_src == "log" and room_now is not None:
        title += f" (util {util:g} leaves {fmt_size(room_now)})"
    elif stops:
        title = "vLLM: the log stops during CUDA-graph capture (most likely out of memory)"
    sentences = [
        "vLLM captures CUDA graphs after the KV cache is allocated; before v0.21 they (with NCCL buffers and "
        "the CUDA context's growth) must fit in the memory gpu_memory_utilization leaves outside its budget, "
        "and from v0.21 an estimate of them is reserved, which can be too low."
    ]
    if room_now is not None:
        sentences.append(
            f"At {util:g} of {fmt_gib(total)} that is {fmt_size(room_now)}"
            + (
                f"; only {fmt_mib(free_mib)} was free when {fmt_mib(tried_mib)} was requested"
                if free_mib is not None and tried_mib is not None
                else ""
            )
            + ", and graphs typically take 0.5-3 GiB per GPU."
        )
    elif stops:
        sentences.append(
            "No error is shown; a capture that dies at this point is usually out of memory because the "
            "utilization leaves no slack (vLLM's own hint: graphs take an extra 1-3 GiB per GPU)."
        )
    else:
        sentences.append("The utilization leaves no slack for the graphs.")
    summary = " ".join(sentences)
    short = "No room outside gpu_memory_utilization for the CUDA graphs."

    numbers: list[Fact] = []
    if total:
        numbers.append(Fact("GPU memory", fmt_gib(total), total_src))
    numbers.append(Fact("gpu_memory_utilization", f"{util:g}", util_src))
    if room_now is not None:
        numbers.append(Fact("left outside the budget (1-util)", fmt_size(room_now), "computed"))
    if tried_mib is not None:
        numbers.append(Fact("tried to allocate", fmt_mib(tried_mib), "log"))
    if free_mib is not None:
        numbers.append(Fact("free at that moment", fmt_mib(free_mib), "log"))
    for name, label in (
        ("weights_gib", "weights (per GPU)"),
        ("activation_gib", "activation peak"),
        ("kv_cache_gib", "KV cache"),
    ):
        if p.get(name) is not None:
            numbers.append(Fact(label, fmt_gib(p[name]), "log"))
    if blocks:
        numbers.append(
            Fact("KV blocks", f"{blocks:,} (= {fmt_tokens(blocks * 16)} tokens at 16 per block)", "log")
        )
    if graphs:
        numbers.append(Fact("CUDA graphs (rough estimate)", fmt_gib(graphs), "estimated"))
    if p.get("gpu_index") is not None:
        numbers.append(Fact("GPU index", str(p["gpu_index"]), "log"))
    numbers += model_gpu_facts(facts)

    fixes: list[Fix] = []
    if new_util < util:
        if total:
            room_after = total * (1 - new_util)
            effect = f"leaves {fmt_gib(room_after)} outside the budget for graphs and NCCL"
            if kv is not None:
                effect += f"; the KV cache shrinks by {fmt_gib((util - new_util) * total)} to about {fmt_gib(kv - (util - new_util) * total)}"
        else:
            effect = (
                f"moves {util - new_util:.0%} of the GPU's memory out of the KV cache into graph headroom"
            )
            if blocks:
                effect += f"; the {blocks:,} KV blocks shrink a little (the cache stays large)"
        fixes.append(
            Fix(
                "vllm",
                f"lower gpu_memory_utilization to {new_util:g}",
                vllm_command(command, model_name, {"--gpu-memory-utilization": f"{new_util:g}"}),
                effect,
                "a slightly smaller KV cache (fewer concurrent tokens)",
                rank=1,
            )
        )
    fixes.append(
        no_cuda_graphs_fix(
            command,
            model_name,
            "nothing is captured, so nothing can run out here",
            "decode is roughly 10-30% slower",
            2,
        )
    )
    seqs = facts.get("max_num_seqs")
    target = max(16, int(seqs) // 4) if seqs else 64
    fixes.append(
        Fix(
            "vllm",
            f"capture fewer graphs (--max-num-seqs {target})",
            vllm_command(command, model_name, {"--max-num-seqs": str(target)}),
            "one graph per batch size up to max_num_seqs (V1: up to 2 x max_num_seqs, at most 512): fewer sizes, less graph memory",
            f"at most {target} requests decode at once",
            rank=3,
        )
    )
    fixes.append(
        Fix(
            "vllm",
            "cap the captured batch sizes (V1)",
            vllm_command(command, model_name, {})
            + " --compilation-config '{\"cudagraph_capture_sizes\": [1, 2, 4, 8, 16, 32, 64]}'",
            "graphs only for batches up to 64; larger batches run without them",
            "V1 engine only (V0: lower --max-num-seqs); slower decode above 64 concurrent requests",
            rank=4,
        )
    )
    notes = []
    if vllm_subtracts_cudagraph_estimate(version):
        notes.append(
            f"From v0.21 keep {CUDAGRAPH_ENV} at its default (1): with it set to 0 the graphs are not "
            "budgeted at all, which is exactly this failure."
        )
    notes.append("Other processes on the same GPU (nvidia-smi) eat the same headroom.")
    if p.get("gpu_index") is not None and int(p["gpu_index"]) > 0:
        notes.append(
            f"The OOM is on GPU {p['gpu_index']}: with tensor/pipeline parallelism every GPU needs the headroom."
        )
    picture = None
    if total and p.get("weights_gib") is not None and kv is not None:
        segs = [MemorySegment("weights", p["weights_gib"], "log")]
        if p.get("non_torch_gib") is not None:
            segs.append(MemorySegment("non-torch", p["non_torch_gib"], "log"))
        if p.get("activation_gib") is not None:
            segs.append(MemorySegment("activations", p["activation_gib"], "log"))
        segs.append(MemorySegment("kv cache", kv, "log"))
        segs.append(MemorySegment("not used (1-util)", total * (1 - util), "computed"))
        picture = MemoryPicture(total, segs, "GPU memory when capture started")
    data = {"suggested_util": new_util}
    return diagnosis_reply(
        title, summary, numbers, fixes, notes, short, memory=picture, data=data, ranked=True
    )


RULES = {"gpu_oom@vllm": vllm_gpu_oom}
