"""Verified fixes: every lever a signature names is applied to the engine's budget, recomputed, and
printed only when the budget predicts the command starts and serves what the fix claims.  When one lever
is not enough, levers are combined (fp8 KV + utilization + a context that then fits)."""

from __future__ import annotations

import itertools
from dataclasses import dataclass

from bot.diagnosis.budgets import Budget
from bot.diagnosis.commands import command_for
from bot.reply import Fix
from bot.situation import Situation
from calculator.plan import Outcome, Plan
from calculator.units import fmt_tokens, round_down_clean
from knowledge.features import supports
from knowledge.levers import Lever, lever, lever_for

MAX_UTIL = 0.95  # never suggest more: non-torch memory and fragmentation need the rest
UTIL_STEP = 0.01
MIN_CONTEXT = 256  # a context below this is not worth a command
MOVES_GIB = 0.25  # memory that moves between vLLM's start-up check and a later allocation: kept free


@dataclass
class Goal:
    """What a fix must achieve: start, and (for capacity errors) serve ``length`` tokens."""

    length: int | None = None
    may_shorten: bool = True  # a shorter context is an acceptable fix
    free_gib: float | None = None  # free memory the engine may ask for (utilization errors)
    fit: int | None = None  # the longest context the engine itself printed for the unchanged plan


@dataclass
class Candidate:
    levers: list[Lever]
    plan: Plan
    outcome: Outcome
    serves_goal: bool


def available(lever: Lever, engine: str, situation: Situation) -> bool:
    spelling = lever.engines.get(engine)
    if spelling is None or not lever.holds(situation.get):  # its `when` conditions on the paste's numbers
        return False
    for feature_id in spelling.requires:
        if supports(situation.version, feature_id, situation.fork) is False:
            return False
    if spelling.hardware != "fp8_kv":
        return True
    if situation.gpus.gpu is not None:
        return situation.gpus.gpu.fp8_kv_cache
    cc = situation.get("compute_capability")
    return cc is None or float(cc) >= 8.9  # unknown GPU: offered with the hardware it needs


def _evaluate(budget: Budget, plan: Plan) -> Outcome | None:
    try:
        return budget.estimate.evaluate(plan)
    except (ValueError, ZeroDivisionError, OverflowError):
        return None


# -- how each knob moves a plan (one proposal per lever; None: nothing sensible to try) ---------
def _util(budget: Budget, plan: Plan, goal: Goal, raise_it: bool) -> Plan | None:
    est = budget.estimate
    total = est.total() if hasattr(est, "total") else None
    current = plan.util or (est.default_util() if hasattr(est, "default_util") else 0.9)
    if raise_it:
        top = MAX_UTIL
        if goal.free_gib is not None and total:
            top = min(top, int(goal.free_gib / total * 100) / 100)
        steps = [round(current + UTIL_STEP * i, 2) for i in range(1, 100)]
        for u in (s for s in steps if s <= top):
            if _fits(_evaluate(budget, plan.with_(util=u)), goal):
                return plan.with_(util=u)
        return plan.with_(util=top) if top > current else None
    if goal.free_gib is None or not total:
        return None
    lowered = int((goal.free_gib - MOVES_GIB) / total * 100) / 100
    return plan.with_(util=lowered) if 0.05 <= lowered < current else None


def _tp(plan: Plan, situation: Situation) -> Plan | None:
    model = situation.model.model if situation.model else None
    heads = model.num_attention_heads if model else situation.get("num_attention_heads")
    for tp in range(plan.tp + 1, min(situation.gpus.n, 16) + 1):
        if heads and heads % tp == 0:
            return plan.with_(tp=tp)
    return None


def _layers(budget: Budget, plan: Plan, situation: Situation) -> Plan | None:
    if situation.model is None:
        return None
    for layers in range(situation.model.model.num_hidden_layers, 0, -1):
        out = _evaluate(budget, plan.with_(gpu_layers=layers))
        if out is not None and out.starts:
            return plan.with_(gpu_layers=layers)
    return None


def _halve(value: int | None, default: int, floor: int) -> int | None:
    current = value or default
    return current // 2 if current // 2 >= floor else None


def propose(lever: Lever, budget: Budget, plan: Plan, goal: Goal, situation: Situation) -> Plan | None:
    knob = lever.knob
    if knob == "kv_dtype":
        target = "fp8" if budget.engine in ("vllm", "sglang") else "q8_0"
        return plan.with_(kv_dtype=target) if plan.kv_dtype in ("auto", "f16", "bf16") else None
    if knob == "util":
        return _util(budget, plan, goal, raise_it=lever.id == "raise_util")
    if knob == "eager":
        return None if plan.eager else plan.with_(eager=True)
    if knob == "cudagraph_estimate":
        return plan.with_(cudagraph_estimate=False) if plan.cudagraph_estimate and not plan.eager else None
    if knob == "tp":
        return _tp(plan, situation)
    if knob == "max_seqs":
        seqs = _halve(plan.max_seqs, 256, 8) if budget.engine in ("vllm", "sglang") else None
        return plan.with_(max_seqs=seqs) if seqs else None
    if knob == "batched_tokens" and budget.engine == "vllm":
        tokens = _halve(plan.batched_tokens, 2048, 512)
        return plan.with_(batched_tokens=tokens) if tokens else None
    if knob == "gpu_layers":
        return _layers(budget, plan, situation)
    if knob == "kv_offload":
        on_gpu = plan.kv_offload and situation.get("buffer", "CUDA") != "CPU"
        return plan.with_(kv_offload=False) if on_gpu else None
    return None


def _fits(out: Outcome | None, goal: Goal) -> bool:
    return out is not None and out.serves(goal.length)


def _holding(budget: Budget, plan: Plan, length: int) -> Outcome | None:
    out = _evaluate(budget, plan.with_(max_len=length))
    return out if out is not None and out.serves(length) else None


def _capped(budget: Budget, plan: Plan, out: Outcome | None, goal: Goal) -> Candidate | None:
    """``plan`` with the context cut to the longest it holds, never past the engine's own estimate (hybrid
    pages are not linear in it); where the fit does not hold itself (V0 below 32K) it is searched."""
    if out is None or not goal.may_shorten or out.fit_len < MIN_CONTEXT:
        return None
    hi = min(out.fit_len, goal.length or out.fit_len, (plan == budget.plan0 and goal.fit) or out.fit_len)
    length = round_down_clean(hi)
    capped_out = _holding(budget, plan, length)
    if capped_out is None:  # the fit does not hold itself: the longest context that does
        lo = MIN_CONTEXT - 1
        while lo < hi:
            mid = (lo + hi + 1) // 2
            lo, hi = (mid, hi) if _holding(budget, plan, mid) else (lo, mid - 1)
        length = round_down_clean(hi)
        capped_out = _holding(budget, plan, length) if length >= MIN_CONTEXT else None
    if capped_out is None:
        return None
    return Candidate([lever("cap_context")], plan.with_(max_len=length), capped_out, False)


MIN_GAIN = 1.10  # a lever joins a combination only if it buys at least 10 % more tokens


def _gainful(budget: Budget, plan0: Plan, single: list[tuple[Lever, Plan]]) -> list[tuple[Lever, Plan]]:
    """Greedy, in the signature's order: keep a lever only when it adds capacity to what is kept."""
    kept: list[tuple[Lever, Plan]] = []
    best = _evaluate(budget, plan0)
    for lev, moved in single:
        trial = _merge(plan0, [p for _l, p in kept] + [moved])
        out = _evaluate(budget, trial)
        if out is None:
            continue
        if best is None or out.fit_len >= max(1, best.fit_len) * MIN_GAIN or (out.starts and not best.starts):
            kept.append((lev, moved))
            best = out
    return kept


def candidates(situation: Situation, budget: Budget, remedies: list[str], goal: Goal) -> list[Candidate]:
    """Verified plans: the ones that serve the goal first (fewest levers), then the best capped ones."""
    plan0 = budget.plan0
    levers = _levers(remedies, budget.engine, situation)
    single: list[tuple[Lever, Plan]] = []
    for lev in levers:
        if lev.knob in ("none", "max_len"):
            continue
        moved = propose(lev, budget, plan0, goal, situation)
        if moved is not None and moved != plan0:
            single.append((lev, moved))
    useful = _gainful(budget, plan0, single)
    out: list[Candidate] = []
    for size in (1, 2, 3):
        for combo in itertools.combinations(useful if size > 1 else single, size):
            plan = _merge(plan0, [p for _l, p in combo])
            result = _evaluate(budget, plan)
            if result is not None and _fits(result, goal):
                out.append(Candidate([lev for lev, _p in combo], plan, result, True))
        if out:
            break
    if goal.may_shorten and any(lev.knob == "max_len" for lev in levers):
        capped = _capped(budget, plan0, _evaluate(budget, plan0), goal)
        if capped is not None:
            out.append(capped)
        if useful and not any(c.serves_goal for c in out):
            plan = _merge(plan0, [p for _l, p in useful])
            best = _capped(budget, plan, _evaluate(budget, plan), goal)
            if best is not None and (capped is None or (best.plan.max_len or 0) > (capped.plan.max_len or 0)):
                best.levers = [lev for lev, _p in useful] + best.levers
                out.append(best)
    return out


def _merge(plan0: Plan, plans: list[Plan]) -> Plan:
    changes: dict[str, object] = {}
    for plan in plans:
        for name in plan0.__dataclass_fields__:
            if getattr(plan, name) != getattr(plan0, name):
                changes[name] = getattr(plan, name)
    return plan0.with_(**changes)


def _levers(remedies: list[str], engine: str, situation: Situation) -> list[Lever]:
    seen: list[Lever] = []
    for name in remedies:
        lev = lever_for(name)
        if lev is not None and lev not in seen and available(lev, engine, situation):
            seen.append(lev)
    return seen


def effect(c: Candidate, goal: Goal) -> str:
    out = c.outcome
    if c.serves_goal and goal.length:
        return f"predicted to start and serve {fmt_tokens(goal.length)} tokens (about {fmt_tokens(out.fit_len)} fit)"
    if c.serves_goal:
        return f"predicted to start with {out.kv_gib:.2f} GiB for the KV cache"
    return f"predicted to start; requests up to {fmt_tokens(c.plan.max_len)} tokens"


def to_fixes(
    situation: Situation, budget: Budget, found: list[Candidate], goal: Goal, limit: int = 3
) -> list[Fix]:
    fixes: list[Fix] = []
    seen: set[str] = set()
    for rank, c in enumerate(found):
        command = command_for(situation, budget.engine, budget.plan0, c.plan)
        if command is None or command in seen:
            continue
        seen.add(command)
        change = " + ".join(_change_text(lev, c.plan) for lev in c.levers)
        cost = "; ".join(dict.fromkeys(lev.cost for lev in c.levers if lev.cost))
        verification = {
            "starts": c.outcome.starts,
            "fit_tokens": c.outcome.fit_len,
            "kv_cache_gib": round(c.outcome.kv_gib, 2) if c.outcome.kv_gib > 0 else None,
            "serves": goal.length if c.serves_goal else c.plan.max_len,
        }
        said = effect(c, goal)
        if (
            any(_needs_fp8_hardware(lev, budget.engine) for lev in c.levers)
            and situation.gpus.gpu is None
            and situation.get("compute_capability") is None
        ):
            said += " (fp8 KV needs an Ada, Hopper or Blackwell GPU, or an MI300)"
        fixes.append(Fix(budget.engine, change, command, said, cost, rank, verification))
        if len(fixes) >= limit:
            break
    return fixes


def _needs_fp8_hardware(lev: Lever, engine: str) -> bool:
    spelling = lev.engines.get(engine)
    return spelling is not None and spelling.hardware == "fp8_kv"


def _change_text(lev: Lever, plan: Plan) -> str:
    value: object = getattr(plan, lev.knob) if lev.knob in ("max_len", "tp", "pp", "gpu_layers") else ""
    if lev.knob == "max_len" and isinstance(value, int):
        value = fmt_tokens(value)
    if lev.knob == "util" and plan.util:
        return f"gpu memory utilization {plan.util:g}"
    return lev.change.format(value=value)
