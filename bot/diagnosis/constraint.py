"""Constraint violated: a setting breaks a rule the engine checks at start (TP must divide the heads,
max length within the model's config, a flag's valid values).  The fix satisfies the rule."""

from __future__ import annotations

from bot.diagnosis.budgets import budget_for
from bot.diagnosis.capacity import _name
from bot.diagnosis.commands import user_command
from bot.diagnosis.parts import cause, env_fixes, reply
from bot.reply import Fix, Reply
from bot.situation import Situation
from calculator.units import fmt_tokens
from calculator.vllm import valid_tp_sizes


def tp_sizes(situation: Situation) -> Reply:
    tp = situation.get("tp") or situation.setting("tp")
    model = situation.model.model if situation.model else None
    heads = situation.get("num_attention_heads") or (model.num_attention_heads if model else None)
    kv = model.num_key_value_heads if model else None
    title = (
        f"vLLM: {heads} attention heads do not split over {tp} GPUs"
        if heads and tp
        else "vLLM: the tensor-parallel size does not divide the model"
    )
    fixes: list[Fix] = []
    valid: list[int] = []
    if heads:
        gpus = max(situation.gpus.n, int(tp or 1))
        widths = tuple(w for w in ((model.intermediate_size,) if model is not None else ()) if w)
        valid = valid_tp_sizes(int(heads), kv, gpus, widths)
        budget = budget_for(situation)
        # KV heads unknown: a power of two is the size most likely to divide them too
        pick = [v for v in valid if v > 1 and (kv is not None or v & (v - 1) == 0)]
        for size in sorted(pick, reverse=True)[:1]:
            out = budget.estimate.evaluate(budget.plan0.with_(tp=size)) if budget else None
            if out is not None and not out.starts:
                continue  # the budget says it would not fit on that many GPUs
            command = user_command(situation, "vllm", {"--tensor-parallel-size": str(size)})
            fixes.append(
                Fix(
                    "vllm",
                    f"use {size} GPUs",
                    command,
                    f"{heads} heads split evenly over {size}",
                    "",
                    1,
                    {"starts": True},
                )
            )
    key = f"Tensor parallelism gives each GPU heads/tp heads; {heads} is not divisible by {tp}."
    if valid:
        key += f" Sizes that work: {', '.join(map(str, valid))}."
    return reply(situation, title, key, fixes)


def max_len(situation: Situation) -> Reply:
    asked = situation.get("max_model_len") or situation.get("n_ctx")
    derived = situation.get("derived_max_model_len") or situation.get("n_ctx_train")
    engine = _name(situation.engine)
    title = (
        f"{engine}: {fmt_tokens(asked)} tokens is more than the model's {fmt_tokens(derived)}"
        if asked and derived
        else situation.root.title
    )
    key = f"The model's config allows {fmt_tokens(derived)} tokens; {fmt_tokens(asked)} was asked for."
    fixes: list[Fix] = []
    flag = {"vllm": "--max-model-len", "sglang": "--context-length", "llama.cpp": "-c"}.get(situation.engine)
    if flag and derived:
        length = int(derived)
        budget = budget_for(situation)
        out = budget.estimate.evaluate(budget.plan0.with_(max_len=length)) if budget else None
        if out is None or out.starts:
            fixes.append(Fix(situation.engine, f"use the model's {fmt_tokens(length)}", user_command(situation, situation.engine, {flag: str(length)}),
                             "within what the model was trained for", "", 1, {"starts": out.starts if out else None}))  # fmt: skip
    fixes += env_fixes(situation, situation.root.remedies, situation.engine)
    return reply(situation, title, key, fixes)


def constraint_violated(situation: Situation) -> Reply:
    category = situation.root.category
    if category == "tp_divisibility":
        return tp_sizes(situation)
    if category == "max_len_exceeds_model":
        return max_len(situation)
    fixes = env_fixes(situation, situation.root.remedies, situation.engine)
    return reply(situation, situation.root.title, cause(situation), fixes)
