"""gpu_memory_in_use@vllm: less memory free at startup than gpu_memory_utilization asks for."""

from __future__ import annotations

import math

from bot.diagnosis.commands import vllm_cmd
from bot.diagnosis.common import diagnosis_reply, generic
from bot.diagnosis.engine_facts import vllm_version_note
from bot.diagnosis.numbers import fmt_plain
from bot.facts import PasteFacts
from bot.reply import Fact, Fix, MemoryPicture, MemorySegment, Reply, Section
from calculator.catalog import variant_weight_bytes
from calculator.units import GIB
from calculator.versions import vllm_default_utilization

UTIL_MARGIN = 0.01  # of total memory, kept free below what the startup check measured


SHARED_GPU_FRACTION = 0.25  # held by others: more than a CUDA context or a stray tensor


KV_MEMORY_BYTES_SINCE = (0, 11, 0)


NVIDIA_SMI_APPS = "nvidia-smi --query-compute-apps=pid,used_memory --format=csv"


def fitting_utilization(free_gib: float, total_gib: float, margin: float = UTIL_MARGIN) -> float:
    """The largest gpu_memory_utilization (2 decimals, rounded down) whose request fits in what is free."""
    return math.floor((free_gib / total_gib - margin) * 100 + 1e-9) / 100


def gpu_memory_in_use(facts: PasteFacts) -> Reply:
    sig = facts.root.signature
    if sig.endswith("profiling_free_rose"):
        return _free_rose(facts)
    if sig.endswith("external_weights"):
        return _external_weights(facts)
    return _startup_free(facts)


def _find_other_process(rank: int, held: float | None, effect: str | None = None) -> Fix:
    if effect is None:
        effect = (
            f"gives back {held:.2f} GiB; the same gpu_memory_utilization then starts"
            if held is not None
            else "gives the memory back; the same gpu_memory_utilization then starts"
        )
    return Fix(
        "any",
        "find and stop what holds the GPU",
        f"{NVIDIA_SMI_APPS}\nkill <pid>   # the leftover vLLM/python process, if it is yours",
        effect,
        "inside a container nvidia-smi may not list other containers' processes: check the host",
        rank=rank,
    )


def _startup_free(facts: PasteFacts) -> Reply:
    p = facts.params
    free = p.get("free_gib")
    total = p.get("total_gib") or facts.context.get("gpu_total_gib")
    util = p.get("gpu_memory_utilization") or facts.context.get("gpu_memory_utilization")
    requested = p.get("requested_gib")
    if free is None or not total:
        return generic(facts)
    if util is None:
        util = vllm_default_utilization(facts.vllm_version)
    if requested is None:
        requested = util * total
    device = p.get("device")
    version = facts.vllm_version
    held = max(0.0, total - free)
    held_frac = held / total
    fit = fitting_utilization(free, total)
    usable = fit > 0 and fit * total >= 1.0
    notes: list[str] = []
    inferred = None
    if not facts.version_known:
        inferred = (
            "the device name in the message (cuda:N) appears from v0.15, so this is v0.15 or newer."
            if device
            else "this wording without a device name is printed by v0.11-v0.13."
        )
    on = f" on {device}" if device else ""
    title = (
        f"vLLM: only {fmt_plain(free)} of {fmt_plain(total)} GiB is free{on}; gpu_memory_utilization {fmt_plain(util)} "
        f"asks for {fmt_plain(requested)} GiB"
    )
    sentences = [
        "gpu_memory_utilization is a fraction of the GPU's *total* memory, and vLLM (v0.11+) checks at startup "
        f"that all of it is free: {fmt_plain(util)} x {fmt_plain(total)} GiB = {fmt_plain(requested)} GiB, but only "
        f"{fmt_plain(free)} GiB was free.",
        f"Something else already holds {held:.2f} GiB ({held_frac:.0%} of the GPU): another process, a second "
        "vLLM instance or another stage of the same pipeline, or a process left over from an earlier run.",
    ]
    if usable:
        sentences.append(f"Stop it, or ask for at most {fit:.2f} of the GPU.")
    else:
        sentences.append(
            "Lowering the utilization cannot help with this little free: free the GPU or split it between the "
            "instances on purpose."
        )
    numbers = [
        Fact("total GPU memory", f"{fmt_plain(total)} GiB", "log"),
        Fact("free at startup", f"{fmt_plain(free)} GiB", "log"),
        Fact(
            "gpu_memory_utilization", fmt_plain(util), "log" if "gpu_memory_utilization" in p else "estimated"
        ),
        Fact(
            "requested (util x total)",
            f"{fmt_plain(requested)} GiB",
            "log" if "requested_gib" in p else "computed",
        ),
        Fact("held by something else", f"{held:.2f} GiB ({held_frac:.1%})", "computed"),
    ]
    if device:
        numbers.append(Fact("device", str(device), "log"))
    if usable:
        numbers.append(
            Fact("largest utilization that fits", f"{fit:.2f} ({fit * total:.2f} GiB)", "computed")
        )

    fixes: list[Fix] = []
    need_min = None
    weights = None
    tp = facts.get("tp") or 1
    if facts.model is not None:
        weights = variant_weight_bytes(facts.model.model, facts.model.variant) / tp / GIB
        need_min = (weights + 1.5) / total
    if usable:
        effect = f"asks for {fit * total:.2f} GiB, within the {fmt_plain(free)} GiB free"
        cost = f"{(util - fit) * total:.2f} GiB less for the KV cache: fewer tokens in flight"
        if need_min is not None and fit < need_min:
            cost += f"; too little for the weights ({weights:.1f} GiB per GPU): free memory first"
        fixes.append(
            Fix(
                "vllm",
                f"lower gpu_memory_utilization to {fit:.2f}",
                vllm_cmd(facts, {"--gpu-memory-utilization": f"{fit:.2f}"}),
                effect,
                cost,
                rank=1 if need_min is None or fit >= need_min else 3,
            )
        )
    fixes.append(_find_other_process(2 if usable else 1, held))
    # stages or instances sharing the GPU on purpose: scale what each asks so the sum stays below 1
    scale = (1 - 2 * UTIL_MARGIN) / (util + held_frac)
    this_share = math.floor(util * scale * 100 + 1e-9) / 100
    others = math.floor(held_frac * scale * 100 + 1e-9) / 100
    # another engine's worth of memory (or nothing left): sharing the GPU is the likely setup
    if this_share > 0 and others > 0 and (not usable or held_frac >= SHARED_GPU_FRACTION):
        snippet = (
            "# vllm-omni stage config: stages on the same device share it, their utilizations must sum below 1\n"
            "stage_args:\n"
            "  - stage_id: 0   # the stage(s) already on this GPU, together\n"
            '    runtime: {devices: "0"}\n'
            f"    engine_args: {{gpu_memory_utilization: {others:.2f}}}\n"
            "  - stage_id: 1   # the stage that failed\n"
            '    runtime: {devices: "0"}\n'
            f"    engine_args: {{gpu_memory_utilization: {this_share:.2f}}}"
        )
        fixes.append(
            Fix(
                "vllm",
                "split the GPU between stages or instances on purpose",
                snippet,
                f"together they ask {util + held_frac:.2f} of the GPU ({fmt_plain(util)} here + {held_frac:.2f} held); "
                f"scaled to {others:.2f} + {this_share:.2f} = {others + this_share:.2f}. Or give the failing "
                "stage a GPU of its own (runtime.devices)",
                "each stage gets a smaller KV cache; both must still hold their weights",
                rank=2 if not usable else 3,
            )
        )
    sections: list[Section] = []
    if version >= KV_MEMORY_BYTES_SINCE:
        body = (
            "--kv-cache-memory-bytes (v0.11+) sets the KV cache size directly and ignores "
            "gpu_memory_utilization for it, so the engine takes weights + activations + that KV cache, "
            "not a fraction of the card. The startup check still compares gpu_memory_utilization x total "
            "with free memory, so pair it with a utilization that fits"
            + (f" ({fit:.2f} here)" if usable else "")
            + "."
        )
        sections.append(Section("Sharing a GPU on purpose", body=body))
        if usable and weights is not None:
            kv = fit * total - weights - 1.5
            if kv >= 1:
                kv_g = int(kv)  # whole GiB: "5G" is 5 GiB to vLLM's size parser
                fixes.append(
                    Fix(
                        "vllm",
                        f"pin the KV cache at {kv_g} GiB",
                        vllm_cmd(
                            facts,
                            {
                                "--gpu-memory-utilization": f"{fit:.2f}",
                                "--kv-cache-memory-bytes": f"{kv_g}G",
                            },
                        ),
                        "the KV cache no longer depends on what else is on the GPU",
                        f"estimated from {weights:.1f} GiB of weights and ~1.5 GiB of activations",
                        rank=4,
                    )
                )
    picture = MemoryPicture(
        total_gib=total,
        segments=[
            MemorySegment("held by others", held, "computed"),
            MemorySegment("free", free, "log"),
        ],
        title="GPU memory when vLLM started",
    )
    vllm_version_note(facts, notes, inferred)
    data = {
        "free_gib": free,
        "total_gib": total,
        "gpu_memory_utilization": util,
        "requested_gib": requested,
        "suggested_utilization": fit if usable else None,
        "split_utilizations": [others, this_share] if this_share > 0 and others > 0 else None,
    }
    return diagnosis_reply(
        title,
        " ".join(sentences),
        numbers,
        fixes,
        notes,
        f"Only {fmt_plain(free)} of {fmt_plain(total)} GiB is free; utilization {fmt_plain(util)} asks for {fmt_plain(requested)} GiB.",
        sections,
        picture,
        data,
        numbers_always=True,
    )


def _free_rose(facts: PasteFacts) -> Reply:
    p = facts.params
    before = p.get("free_gib")
    after = p.get("current_free_gib")
    if before is None and p.get("free_bytes") is not None:
        before = p["free_bytes"] / GIB
        after = p.get("current_free_bytes", 0) / GIB if p.get("current_free_bytes") is not None else None
    title = "vLLM: free GPU memory rose while vLLM was profiling"
    if before is not None and after is not None:
        title = f"vLLM: free GPU memory rose from {before:.2f} to {after:.2f} GiB while vLLM was profiling"
    summary = (
        "vLLM measures its own memory use as the drop in free GPU memory during profiling, so another process "
        "that releases memory at the same time breaks the measurement and vLLM stops. Start one engine at a time "
        "on a GPU, and make sure earlier runs have exited."
    )
    numbers = []
    if before is not None:
        numbers.append(Fact("free when profiling started", f"{before:.2f} GiB", "log"))
    if after is not None:
        numbers.append(Fact("free after profiling", f"{after:.2f} GiB", "log"))
    if before is not None and after is not None:
        numbers.append(Fact("released by another process", f"{after - before:.2f} GiB", "computed"))
    fixes = [
        _find_other_process(
            1, None, "nothing else allocates or frees memory on this GPU while vLLM starts and profiles"
        )
    ]
    notes: list[str] = []
    # the byte-count wording is V1 in v0.8-v0.10, which has no --kv-cache-memory-bytes
    old_wording = "free_bytes" in p
    if old_wording and not facts.version_known:
        notes.append(
            "the byte counts in this message date it to vLLM 0.8-0.10; --kv-cache-memory-bytes, which skips "
            "the measurement, needs v0.11+"
        )
    elif facts.vllm_version >= KV_MEMORY_BYTES_SINCE:
        fixes.append(
            Fix(
                "vllm",
                "size the KV cache yourself",
                vllm_cmd(facts, {"--kv-cache-memory-bytes": "<N>G"}),
                "skips the measured profile, so memory others release no longer matters",
                "you choose N: what is free minus weights and ~1-2 GiB of activations",
                rank=2,
            )
        )
    if not old_wording:
        vllm_version_note(facts, notes)
    return diagnosis_reply(title, summary, numbers, fixes, notes, numbers_always=True)


def _external_weights(facts: PasteFacts) -> Reply:
    p = facts.params
    total = p.get("total_gib")
    util = p.get("gpu_memory_utilization")
    if not total or util is None:
        return generic(facts)
    requested = p.get("requested_gib") or util * total
    notes: list[str] = []
    numbers = [
        Fact("total GPU memory", f"{fmt_plain(total)} GiB", "log"),
        Fact("gpu_memory_utilization", fmt_plain(util), "log"),
    ]
    fixes: list[Fix] = []
    if p.get("external_weights_gib") is not None:
        w = p["external_weights_gib"]
        new = min(0.95, math.ceil((w / total + 0.05) * 100) / 100)
        title = f"vLLM: externally held weights ({fmt_plain(w)} GiB) exceed gpu_memory_utilization {fmt_plain(util)} ({fmt_plain(requested)} GiB)"
        summary = (
            "With weights held by an external loader, they count inside gpu_memory_utilization x total: "
            f"{fmt_plain(w)} GiB of weights against {fmt_plain(requested)} GiB leaves nothing for activations and the KV "
            f"cache. Raise the utilization to at least {new:.2f}, or shard the weights over more GPUs."
        )
        numbers += [
            Fact("external weights", f"{fmt_plain(w)} GiB", "log"),
            Fact("requested (util x total)", f"{fmt_plain(requested)} GiB", "log"),
            Fact("utilization that leaves 5% for the rest", f"{new:.2f}", "computed"),
        ]
        fixes.append(
            Fix(
                "vllm",
                f"raise gpu_memory_utilization to {new:.2f}",
                vllm_cmd(facts, {"--gpu-memory-utilization": f"{new:.2f}"}),
                f"{new * total - w:.2f} GiB beside the weights for activations and the KV cache",
                "only if that much is free",
                rank=1,
            )
        )
    else:
        free = p.get("free_gib")
        budget = p.get("budget_gib")
        title = "vLLM: the engine's budget beside the external weights is more than is free"
        summary = (
            "With weights held by an external loader, vLLM needs gpu_memory_utilization x total minus those "
            "weights to be free at startup, and less is free. Lower the utilization or free the GPU."
        )
        if free is not None and budget is not None:
            title = f"vLLM: the engine needs {fmt_plain(budget)} GiB beside the external weights, {fmt_plain(free)} GiB is free"
            new = math.floor((util - (budget - free) / total - UTIL_MARGIN) * 100 + 1e-9) / 100
            numbers += [
                Fact("free at startup", f"{fmt_plain(free)} GiB", "log"),
                Fact("engine budget", f"{fmt_plain(budget)} GiB", "log"),
            ]
            if new > 0:
                numbers.append(Fact("utilization that fits", f"{new:.2f}", "computed"))
                fixes.append(
                    Fix(
                        "vllm",
                        f"lower gpu_memory_utilization to {new:.2f}",
                        vllm_cmd(facts, {"--gpu-memory-utilization": f"{new:.2f}"}),
                        f"the engine's budget drops by {(util - new) * total:.2f} GiB, within what is free",
                        "a smaller KV cache",
                        rank=1,
                    )
                )
    fixes.append(_find_other_process(2, None))
    vllm_version_note(facts, notes)
    return diagnosis_reply(title, summary, numbers, fixes, notes, numbers_always=True)


RULES = {"gpu_memory_in_use@vllm": gpu_memory_in_use}
