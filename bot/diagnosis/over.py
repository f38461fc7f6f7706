"""Budget over: what the engine needs is more than the memory it has — nothing left for the KV cache,
an allocation that failed, system RAM too small, or memory already held by something else.

The key point says what holds the memory and by how much it is short; fixes are recomputed plans."""

from __future__ import annotations

import math

from bot.diagnosis.budgets import Budget, budget_for
from bot.diagnosis.capacity import _name
from bot.diagnosis.commands import user_command
from bot.diagnosis.fixes import MOVES_GIB, Goal, candidates, to_fixes
from bot.diagnosis.parts import advice_fixes, env_fixes, hardware, picture, reply, self_fit_fixes
from bot.reply import Fix, Reply
from bot.situation import Situation
from calculator.plan import Outcome
from calculator.units import fmt_mem, fmt_tokens
from knowledge.levers import lever

FRAGMENTED = 0.5  # reserved-but-unallocated at least half of what was asked: the allocator, not the model


def _gib(situation: Situation, *names: str) -> float | None:
    for name in names:
        value = situation.params.get(name)
        if value is not None:
            return float(value) / (1024 if name.endswith("_mib") else 1)
    return None


def in_use(situation: Situation) -> Reply:
    """vLLM asked for utilization x total while less was free: another process holds the difference."""
    free = _gib(situation, "free_gib", "current_free_gib")
    total = _gib(situation, "total_gib") or (
        situation.gpus.per_device_gib.value if situation.gpus.per_device_gib else None
    )
    util = situation.params.get("gpu_memory_utilization") or situation.setting("util")
    asked = _gib(situation, "requested_gib") or (total * util if total and util else None)
    held = total - free if total is not None and free is not None else None
    title = (
        f"vLLM: {free:.2f} GiB free, it asks for {asked:.2f} GiB"
        if free is not None and asked
        else situation.root.title
    )
    key = None
    if held is not None and total:
        key = f"{held:.2f} GiB of the {total:.2f} GiB are already in use by another process (or a previous vLLM that did not exit)."
        if asked:
            key += f" vLLM asks for {asked:.2f} GiB (gpu_memory_utilization x total)."
    fixes = advice_fixes(situation, situation.root.remedies)
    budget = budget_for(situation)
    if budget is not None and free is not None:
        fixes += _verified(situation, budget, free) or _util_within_free(situation, free, total, util)
    out0 = budget.estimate.evaluate(budget.plan0) if budget else None
    return reply(situation, title, key, fixes, memory=picture(out0, "GPU memory"))


def _util_within_free(
    situation: Situation, free: float, total: float | None, util: float | None
) -> list[Fix]:
    """Without a model to size the KV cache: a utilization whose request fits what is free (the check
    vLLM makes), and what it costs the KV cache."""
    if not total or not util or "lower_gpu_memory_utilization" not in situation.root.remedies:
        return []
    lowered = int((free - MOVES_GIB) / total * 100) / 100
    if not 0.05 <= lowered < util:
        return []
    command = user_command(situation, "vllm", {"--gpu-memory-utilization": f"{lowered:.2f}"})
    asks = lowered * total  # the weights, activations and KV cache must fit in it: unchecked without a model
    effect = (f"asks for {asks:.2f} GiB of the {free:.2f} GiB free; the KV cache gets {(util - lowered) * total:.2f} GiB "
              f"less, so this starts only if your model's weights, activations and one request's KV cache fit in {asks:.2f} GiB")  # fmt: skip
    # unchecked, so after what finds the other process (rank 5 or 50)
    return [Fix("vllm", f"gpu memory utilization {lowered:.2f}", command, effect, "a smaller KV cache", 60,
                {"starts": None, "asks_gib": round(asks, 2), "free_gib": free})]  # fmt: skip


def _verified(situation: Situation, budget: Budget | None, free_gib: float | None = None) -> list[Fix]:
    """The signature's levers as fixes recomputed on the budget (nothing when it cannot be built);
    ``free_gib``: the free memory the engine may ask for (utilization errors)."""
    if budget is None:
        return []
    goal = Goal(length=budget.plan0.max_len, may_shorten=True, free_gib=free_gib)
    return to_fixes(situation, budget, candidates(situation, budget, situation.root.remedies, goal), goal)


def _budget_reply(situation: Situation, title: str, key: str | None, fixes: list[Fix],
                  out0: Outcome | None, budget: Budget | None, hardware_ok: bool = True) -> Reply:  # fmt: skip
    """The reply of a budget-over form: its fixes, what holds the memory, hardware when nothing else works."""
    extra = [] if fixes or not hardware_ok else [hardware(situation, budget.plan0.max_len if budget else None)]  # fmt: skip
    engine = _name(situation.engine)
    return reply(situation, title, key, fixes + advice_fixes(situation, situation.root.remedies),
                 None, picture(out0, f"GPU memory as {engine} budgets it"), extra)  # fmt: skip


def no_kv(situation: Situation) -> Reply:
    budget = budget_for(situation)
    engine = _name(situation.engine)
    out0 = budget.estimate.evaluate(budget.plan0) if budget else None
    title = situation.root.title
    key = None
    if out0 is not None and out0.target_gib:
        used = sum(t.gib for t in out0.terms if t.name != "kv cache")
        key = f"Weights, activations and graphs take {used:.2f} GiB of the {out0.target_gib:.2f} GiB {engine} may use; the KV cache gets {max(0.0, out0.kv_gib):.2f} GiB."
    if out0 is not None and out0.starts and out0.kv_gib > 0:
        # the paste says these settings left no KV memory; a budget that gives them some misses a term
        # (another process's memory counted in the profile, a term the paste does not show): a command
        # recomputed on it is not verified, so none is printed
        key = f"At these settings the budget leaves {out0.kv_gib:.2f} GiB for the KV cache, yet {engine} found none: something the paste does not show holds that memory, often another process on the GPU."
        if situation.engine == "vllm":
            key += " vLLM's memory profile counted other processes' memory against this instance until vLLM PR #10511 (V0) and PR #18974 (V1)."
        fixes = env_fixes(situation, situation.root.remedies, situation.engine)
        return _budget_reply(situation, title, key, fixes, out0, None, hardware_ok=False)
    fixes = _verified(situation, budget) or env_fixes(situation, situation.root.remedies, situation.engine)
    return _budget_reply(situation, title, key, fixes, out0, budget)


def torch_oom(situation: Situation) -> Reply:
    tried = _gib(situation, "tried_mib", "tried_gib")  # MiB first: GiB params keep 4 decimals, 0.1 MiB
    free = _gib(situation, "free_mib", "free_gib")
    total = _gib(situation, "total_gib")
    mine = _gib(situation, "this_process_gib", "allocated_gib")
    unalloc = _gib(situation, "reserved_unallocated_gib")
    other = _gib(situation, "other_process_gib")
    api = situation.get("device_api") or "CUDA"  # PyTorch names its backend: CUDA, HIP, XPU, MUSA
    title = (
        f"{api} out of memory: tried {fmt_mem(tried)} with {fmt_mem(free)} free"
        if tried is not None and free is not None
        else situation.root.title
    )
    # the request under what was free on a mostly free card: no shortage (on a nearly full one the
    # driver's page granularity can refuse a request just under the free figure)
    fits = (
        tried is not None and free is not None and total is not None and tried <= free and free >= total / 2
    )
    parts = [f"PyTorch asked for {fmt_mem(tried)} more"] if tried is not None else []
    if free is not None and total is not None:  # "only" when the request was larger than what was free
        short = tried is not None and tried > free
        parts.append(f"{'only ' * short}{fmt_mem(free)} of {total:.2f} GiB were free" + ("" if fits or short else " (most of the GPU was in use)"))  # fmt: skip
    key = (", ".join(parts) + ".") if parts else None
    if key and tried is not None and total is not None and tried > total:
        key += f" That one allocation is larger than the whole GPU ({total:.2f} GiB): the batch or sequence is far too large for it."
    remedies = list(situation.root.remedies)
    if key and fits:  # nothing else took the memory: another process is not the answer
        key += (" The request fits in what was free, so this is no shortage: one allocation that large was "
                "refused (a limit on a single allocation in the driver or runtime, or free memory in pieces).")  # fmt: skip
        remedies = [r for r in remedies if r != "check_other_processes"]
    if key and unalloc is not None and tried is not None and unalloc >= FRAGMENTED * tried:
        key += f" {fmt_mem(unalloc)} is reserved by PyTorch but unallocated: fragmentation."
    elif "expandable_segments" in remedies:
        remedies.remove("expandable_segments")
    # torch lists every process in turn and only the first is read: a small first one leaves the rest to "used"
    named = other is not None and mine is not None and other > 0.5 and (total is None or other + mine <= total * 1.02)  # fmt: skip
    if key and named and other is not None:  # "other is not None" again for the type checker
        key += f" Another process holds {fmt_mem(other)}."
    elif key and mine:
        key += f" This process holds {fmt_mem(mine)}."
    used = total - free if key and mine and not named and total and free is not None else 0.0
    rest = used - mine if used and mine else 0.0  # in use outside this process, the message names no other
    outside = rest >= max(used / 2, 0.5)
    if outside:
        key = f"{key} The other {fmt_mem(rest)} in use is held outside it: other processes, the driver, or the system where the GPU shares its RAM."
    elif used and mine and mine >= 0.9 * used and not fits:  # nothing else to find: its own work is too big
        key = f"{key} That is almost all in use: its own work (model, cache, batch, sequence length) is too large for this GPU."
        remedies = [r for r in remedies if r != "check_other_processes"]
    engine = "vllm" if situation.engine == "vllm" else "pytorch"
    fixes = env_fixes(situation, remedies, engine) + advice_fixes(situation, remedies)
    for fix in [f for f in fixes if outside and f.verification.get("kind") == "diagnostic"]:
        fix.rank = 0  # what holds the rest comes before tuning this process
    return reply(situation, title, key, fixes)


def alloc_failed(situation: Situation) -> Reply:
    """llama.cpp / Ollama / Metal / Vulkan: a buffer allocation failed."""
    engine = _name(situation.engine)
    size = _gib(situation, "alloc_mib", "tried_mib")
    buffer = situation.params.get("buffer")
    title = (
        f"{engine}: could not allocate {size * 1024:,.0f} MiB"
        + (f" for the {buffer} buffer" if buffer else "")
        if size
        else situation.root.title
    )
    budget = budget_for(situation)
    out0 = budget.estimate.evaluate(budget.plan0) if budget else None
    key = None
    if out0 is not None and out0.total_gib:
        key = f"The weights, KV cache and compute buffers need about {sum(t.gib for t in out0.terms):.1f} GiB; the GPU has {out0.total_gib:.1f} GiB."
    fixes = _verified(situation, budget)
    if not fixes and situation.engine == "llama.cpp":
        fixes = self_fit_fixes(situation)
    return _budget_reply(situation, title, key, fixes, out0, budget)


def host_short(situation: Situation) -> Reply:
    need = _gib(situation, "required_gib")
    have = _gib(situation, "available_gib")
    title = "Not enough system memory" + (
        f": needs {need:.1f} GiB, {have:.1f} GiB available" if need and have else ""
    )
    fixes = advice_fixes(situation, [r for r in situation.root.remedies if r != "check_other_processes"])
    if situation.engine == "llama.cpp":
        fixes = _verified(situation, budget_for(situation)) + fixes
    # the numbers are in the title; the summary is the cause, which says what the need counts
    return reply(situation, title, None, fixes, extra=[] if fixes else [hardware(situation, None)])


def budget_over(situation: Situation) -> Reply:
    category, engine = situation.root.category, situation.engine
    if category == "gpu_memory_in_use":
        return in_use(situation)
    if category == "no_kv_memory":
        return no_kv(situation)
    if category == "host_memory":
        return host_short(situation)
    if engine in ("pytorch", "tgi") or (
        engine == "vllm"
        and situation.params.get("tried_gib") is not None
        and situation.root.signature.startswith("pytorch")
    ):
        return torch_oom(situation)
    if engine in ("vllm", "sglang"):
        return _engine_oom(situation)
    return alloc_failed(situation)


def _room_for_allocation(situation: Situation) -> list[Fix]:
    """An allocation outside the engine's share failed with ``tried`` asked and ``free`` left (both in
    the message): lower the share by what it lacked, as a fraction of the GPU's total.  With the share
    in force known (the user's command, the log) the lowered value; else the step to take off it."""
    tried, free = _gib(situation, "tried_mib", "tried_gib"), _gib(situation, "free_mib", "free_gib")
    total = _gib(situation, "total_gib") or situation.get("gpu_total_gib")
    spelling = lever("lower_util").engines.get(situation.engine)
    if "lower_gpu_memory_utilization" not in situation.root.remedies or spelling is None or not spelling.flag:
        return []
    if tried is None or free is None or not total or tried <= free:
        return []
    step = math.ceil((tried - free + MOVES_GIB) / float(total) * 100) / 100
    flag, util = spelling.flag, situation.setting("util")
    check = {"kind": "room", "step": step, "lacked_gib": round(tried - free, 2)}
    effect = f"{step * float(total):.2f} GiB more outside the {_name(situation.engine)} share for the {tried:.2f} GiB allocation that found {free:.2f} GiB free"
    if util is not None:
        lowered = round(float(util) - step, 2)
        if lowered < 0.05:
            return []
        command = user_command(situation, situation.engine, {flag: f"{lowered:.2f}"})
        return [Fix(situation.engine, f"{flag} {lowered:.2f}", command, effect, "a smaller KV cache", 1, {**check, "util": lowered})]  # fmt: skip
    return [Fix("any", f"lower `{flag}` by {step:.2f} from the value in force (in the server_args / engine-args line)",
                "", effect, "a smaller KV cache", 1, check)]  # fmt: skip


def _engine_oom(situation: Situation) -> Reply:
    """vLLM / SGLang OOM after the KV cache was sized (CUDA-graph capture, runtime): leave more room."""
    from calculator.vllm import VllmEstimate

    engine = _name(situation.engine)
    tried = _gib(situation, "tried_mib", "tried_gib")
    free = _gib(situation, "free_mib", "free_gib")
    key = f"{engine} filled its share of the GPU, then a later allocation ({fmt_tokens(int(tried * 1024)) + ' MiB' if tried else 'CUDA graphs or activations'}) found no room."
    budget = budget_for(situation)
    room = None
    if budget is not None:
        est = budget.estimate
        total = est.obs.total_gib.value if isinstance(est, VllmEstimate) and est.obs.total_gib else None
        util = budget.plan0.util or 0.9
        if total and tried is not None:
            room = total * util - max(0.0, tried - (free or 0.0)) - MOVES_GIB
    fixes = _verified(situation, budget, room)
    # settings that remove the failing term whatever the numbers (no CUDA graphs for a capture OOM)
    settings = env_fixes(situation, situation.root.remedies, situation.engine)
    for fix in settings:
        fix.rank = 0  # sure to remove the failing term: first
    if not fixes and not settings:  # one allocation failed (not a capture of many): make room for it
        fixes = _room_for_allocation(situation)
    fixes = settings + [f for f in fixes if f.command not in {s.command for s in settings}]
    fixes += advice_fixes(situation, situation.root.remedies)
    return reply(situation, situation.root.title, key, fixes)
