"""PyTorch's CUDA allocator message read and classified (absurd request, weights, growth, fragmentation, ...)."""

from __future__ import annotations

from dataclasses import dataclass

from bot.diagnosis.engine_facts import catalog_weights_gib, gpu_total
from bot.diagnosis.numbers import fmt_gib, fmt_size
from bot.facts import PasteFacts
from bot.reply import Fact, MemoryPicture, MemorySegment

EXPANDABLE = "PYTORCH_CUDA_ALLOC_CONF=expandable_segments:True"


@dataclass
class TorchOOM:
    tried: float | None  # GiB
    total: float | None
    total_src: str
    free: float | None
    allocated: float | None
    reserved: float | None
    unallocated: float | None  # reserved by PyTorch but not handed out
    this_process: float | None
    other: float | None
    allowed: float | None
    kind: str  # absurd | weights | growth | fragmentation | other_process | activation | unknown
    weights: float | None = None
    reserved_logged: bool = False

    @property
    def fragmented(self) -> bool:
        return self.kind == "fragmentation"


def read_torch_oom(facts: PasteFacts, shards: int = 1) -> TorchOOM:
    p = facts.params
    # the MiB twin carries more digits for small sizes ("20.00 MiB" is 0.0195 GiB)
    tried = p["tried_mib"] / 1024 if p.get("tried_mib") is not None else p.get("tried_gib")
    total, total_src = gpu_total(facts)
    free = p["free_mib"] / 1024 if p.get("free_mib") is not None else p.get("free_gib")
    allocated = p.get("allocated_gib")
    unallocated = p.get("reserved_unallocated_gib")
    reserved = p.get("reserved_gib")
    if reserved is None and allocated is not None and unallocated is not None:
        reserved = allocated + unallocated
    if unallocated is None and reserved is not None and allocated is not None:
        unallocated = max(0.0, reserved - allocated)
    weights = catalog_weights_gib(facts, shards)
    o = TorchOOM(
        tried, total, total_src, free, allocated, reserved, unallocated, p.get("this_process_gib"),
        p.get("other_process_gib"), p.get("allowed_gib"), "unknown", weights,
    )  # fmt: skip
    o.reserved_logged = p.get("reserved_gib") is not None
    # In a container PyTorch cannot match NVML's host PIDs to itself, so it lists its own memory as
    # "Process N has X in use" (and no "this process" line).  When X and what PyTorch reserved cannot
    # both be on the card at once, that process is this one, not another.
    if (
        o.this_process is None
        and o.other is not None
        and reserved is not None
        and total
        and o.other >= reserved - 0.05
        and o.other + reserved > total + 0.5
    ):
        o.this_process, o.other = o.other, None
    stage = str(facts.context.get("oom_stage") or "")
    if tried is not None and total and tried > 0.95 * total:
        o.kind = "absurd"
    elif stage == "loading" or (weights is not None and total and weights > total - 0.5):
        o.kind = "weights"
    elif o.other is not None and total and o.other >= max(1.0, 0.25 * total):
        o.kind = "other_process"
    elif (
        unallocated is not None
        and reserved
        and tried is not None
        and unallocated >= 0.5
        and unallocated >= 0.15 * reserved
        and unallocated + (free or 0.0) >= tried
    ):
        o.kind = "fragmentation"
    elif stage == "generate" or (
        tried is not None
        and total
        and tried <= max(0.25, 0.01 * total)
        and (free or 0.0) <= max(tried, 0.01 * total)
    ):
        o.kind = "growth"
    elif tried is not None:
        o.kind = "activation"
    return o


def torch_oom_numbers(o: TorchOOM) -> list[Fact]:
    out = []
    if o.tried is not None:
        out.append(Fact("tried to allocate", fmt_size(o.tried), "log"))
    if o.total:
        out.append(Fact("GPU total", fmt_gib(o.total), o.total_src))
    if o.free is not None:
        out.append(Fact("free on the GPU", fmt_size(o.free), "log"))
    if o.allocated is not None:
        out.append(Fact("allocated by PyTorch (live tensors)", fmt_gib(o.allocated), "log"))
    if o.reserved is not None:
        out.append(
            Fact("reserved by PyTorch", fmt_gib(o.reserved), "log" if o.reserved_logged else "computed")
        )
    if o.unallocated is not None:
        out.append(Fact("reserved but unallocated (cached)", fmt_size(o.unallocated), "log"))
    if o.this_process is not None:
        out.append(Fact("this process in total", fmt_gib(o.this_process), "log"))
    if o.other is not None:
        out.append(Fact("another process", fmt_gib(o.other), "log"))
    if o.allowed is not None:
        out.append(Fact("allowed by a memory fraction", fmt_gib(o.allowed), "log"))
    return out


def torch_oom_picture(o: TorchOOM) -> MemoryPicture | None:
    if not o.total or o.allocated is None:
        return None
    segs = [MemorySegment("allocated by PyTorch", o.allocated, "log")]
    if o.unallocated:
        segs.append(MemorySegment("reserved but unallocated", o.unallocated, "log"))
    if o.this_process is not None and o.reserved is not None and o.this_process - o.reserved > 0.01:
        segs.append(MemorySegment("non-torch", o.this_process - o.reserved, "computed"))
    used = sum(s.gib for s in segs)
    free = o.free if o.free is not None else None
    other = o.other
    if other is None and free is not None and o.total - used - free > 0.05:
        other = o.total - used - free
    if other:
        segs.append(
            MemorySegment("other processes / context", other, "log" if o.other is not None else "computed")
        )
    if free is not None:
        segs.append(MemorySegment("free", free, "log"))
    return MemoryPicture(o.total, segs, "GPU memory when the allocation failed")


def torch_oom_summary(o: TorchOOM, facts: PasteFacts) -> tuple[str, str, str]:
    """(title, summary, short) for the allocator message, by kind."""
    tried = fmt_size(o.tried) if o.tried is not None else "an allocation"
    total = fmt_gib(o.total) if o.total else "the GPU"
    free = fmt_size(o.free) if o.free is not None else "?"
    if o.kind == "absurd":
        times = o.tried / o.total if o.tried and o.total else 0
        return (
            f"CUDA OOM: tried to allocate {tried} on a {total} GPU ({times:.1f}x the card)",
            f"One tensor of {tried} was requested: {times:.1f} times everything the GPU has, so no memory "
            "setting, cache flag or smaller batch of the same shape fixes it. Sizes like this come from a "
            "shape bug: sequences padded to max_length / the model's maximum positions (131,072 for Llama 3.x), "
            "a whole dataset in one batch, or attention over a quadratic n x n matrix of a very long input. "
            "Find the tensor and fix its shape (truncate, pad to the longest, batch smaller).",
            f"A {tried} request on a {total} GPU is a shape bug (padding / max_length), not a memory shortage.",
        )
    if o.kind == "weights":
        w = f" (about {fmt_gib(o.weights)})" if o.weights is not None else ""
        return (
            f"CUDA OOM while loading: the weights{w} do not fit in {total}",
            f"The model's weights{w} need more than the {total} GPU, so loading fails whatever the batch or "
            "context. Quantize (8-bit / 4-bit), spread the model over more GPUs or offload part of it to the CPU.",
            "The weights do not fit on this GPU.",
        )
    if o.kind == "other_process":
        return (
            f"CUDA OOM: another process holds {fmt_gib(o.other or 0)} of the {total} GPU",
            f"A different process already uses {fmt_gib(o.other or 0)} of this GPU, so this one had only "
            f"{free} free when it asked for {tried}. Stop or move the other process (nvidia-smi shows it), or "
            "pick another GPU with CUDA_VISIBLE_DEVICES.",
            "Another process holds most of the GPU.",
        )
    if o.kind == "fragmentation":
        return (
            f"CUDA OOM from fragmentation: {fmt_size(o.unallocated or 0)} is cached but {tried} would not fit in it",
            f"PyTorch holds {fmt_size(o.unallocated or 0)} reserved-but-unallocated (cached blocks freed by "
            f"earlier tensors) and the driver has {free} free, together enough for {tried}, but no single piece "
            "is large enough. Expandable segments let the allocator grow and reuse blocks instead of splitting them.",
            "Fragmentation: enough memory is cached, but not in one piece.",
        )
    if o.kind == "growth":
        full = (
            f"{fmt_gib(o.allocated)} of {total} allocated"
            if o.allocated is not None
            else f"{free} free of {total}"
        )
        return (
            f"CUDA OOM during inference: the GPU is full ({full}) and a small {tried} step failed",
            f"The failing request is small ({tried}) and only {free} is free: the working set grew step by "
            "step until the card was full. In generation that is the KV cache (each new token torch.cat's its "
            "keys and values onto past_key_value) and the activations of a long context; the fix is less context, "
            "fewer tokens at once, or smaller weights, not an allocator setting.",
            "The KV cache / activations grew until the GPU was full.",
        )
    if o.kind == "activation" and o.free is None:
        return (
            f"CUDA OOM: a {tried} allocation failed",
            f"One {tried} tensor (an activation of the current batch: attention scores, logits, an MLP "
            "intermediate) did not fit in what the weights and the rest leave. The rest of the message (total, "
            "free, allocated, reserved) is not in the paste; it tells whether the card is full, fragmented or shared. "
            "Halving the batch or sequence length of this step is the first thing to try.",
            f"A {tried} activation did not fit.",
        )
    if o.kind == "activation":
        return (
            f"CUDA OOM: a {tried} allocation does not fit in the {free} left on {total}",
            f"One {tried} tensor (an activation of the current batch: attention scores, logits, an MLP "
            f"intermediate) was needed while only {free} was free. The batch size or sequence length of this "
            "step is too large for what the weights and the rest leave; halve it.",
            f"A {tried} activation does not fit in the {free} left.",
        )
    return (
        "CUDA out of memory",
        "A GPU allocation failed. The full 'Tried to allocate ... GPU N has a total capacity of ...' message tells "
        "how far off it is and whether the card is full, fragmented or shared with another process.",
        "A GPU allocation failed.",
    )


def torch_oom_notes(o: TorchOOM) -> list[str]:
    notes = []
    if o.kind != "fragmentation" and o.unallocated is not None:
        share = f" ({o.unallocated / o.reserved:.0%} of what PyTorch holds)" if o.reserved else ""
        notes.append(
            f"Reserved-but-unallocated memory is only {fmt_size(o.unallocated)}{share}"
            + (f" against a {fmt_size(o.tried)} request" if o.tried is not None else "")
            + ": fragmentation is not the main problem, so PYTORCH_CUDA_ALLOC_CONF (expandable segments) would "
            "at best delay the OOM."
        )
    if o.kind == "growth" and o.tried is not None:
        notes.append(
            "Small requests on a full card mean the working set reached the card's size; an allocator flag "
            "only moves the failure a few tokens later."
        )
    return notes
