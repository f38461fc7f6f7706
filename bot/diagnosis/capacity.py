"""Capacity short: the cache (or the served context, or a batch) is smaller than what was asked for.

Covers KV too small (one request of max_model_len does not fit), KV allocation failures, requests
longer than the served context, and batched-token limits below the context.  The key point is the two
numbers; every fix is a plan recomputed on the engine's budget."""

from __future__ import annotations

from typing import Any

from bot.diagnosis.budgets import budget_for
from bot.diagnosis.commands import user_command
from bot.diagnosis.fixes import Candidate, Goal, available, candidates, to_fixes
from bot.diagnosis.parts import (
    advice_fixes,
    env_fixes,
    hardware,
    other_engine_lines,
    picture,
    reply,
    self_fit_fixes,
)
from bot.formatter import ENGINE_LABEL
from bot.reply import Fix, Reply
from bot.situation import Situation
from calculator.units import fmt_tokens, round_up_clean
from knowledge.features import supports
from knowledge.levers import lever, lever_for


def _name(engine: str) -> str:
    return ENGINE_LABEL.get(engine, engine)


def _first(situation: Situation, *keys: str) -> Any:
    """The first of these numbers the paste printed (a zero counts as not printed)."""
    return next((situation.params[k] for k in keys if situation.params.get(k)), None)


def kv_short(situation: Situation) -> Reply:
    budget = budget_for(situation)
    plan0 = budget.plan0 if budget else None
    asked = _first(situation, "max_model_len", "n_ctx", "context_length", "max_total_tokens")
    want = int(asked) if asked else (plan0.max_len if plan0 else None)
    if budget is not None and want and plan0 is not None and plan0.max_len != want:
        budget.plan0 = plan0 = plan0.with_(max_len=want)
    out0 = budget.estimate.evaluate(plan0) if budget and plan0 else None
    logged = _first(situation, "estimated_max_model_len", "kv_tokens")
    fit = int(logged) if logged else (out0.fit_len if out0 else None)
    engine = _name(situation.engine)
    title = f"{engine}: the KV cache holds {fmt_tokens(fit)} tokens, the context asks for {fmt_tokens(want)}"
    if fit is None or want is None:
        title = situation.root.title
    goal = Goal(length=want, may_shorten=True, fit=int(logged) if logged else None)
    found = candidates(situation, budget, situation.root.remedies, goal) if budget else []
    # a lever whose `when` holds names what failed (memory was there): it replaces the budget's fixes
    sure = [r for r in situation.root.remedies if getattr(lever_for(r), "when", None)]
    fixes = env_fixes(situation, sure, situation.engine)
    fixes = fixes or (to_fixes(situation, budget, found, goal) if budget else [])
    if not fixes:  # nothing sized on a budget: a self-sizing flag, else a setting with a fixed value
        fixes = (
            self_fit_fixes(situation)
            or _doubled_blocks(situation)
            or env_fixes(situation, situation.root.remedies, situation.engine)
        )
    serves = any(c.serves_goal for c in found)
    key = _key_point(situation, fit, want, serves, bool(fixes))
    fixes += other_engine_lines(situation, want) + advice_fixes(situation, situation.root.remedies)
    extra = [] if serves else [hardware(situation, want)]
    return reply(situation, title, key, fixes, None, picture(out0, f"GPU memory as {engine} budgets it"), extra,
                 {"fit_tokens": fit, "max_model_len": want})  # fmt: skip


def _doubled_blocks(situation: Situation) -> list[Fix]:
    """vLLM V0 dropped a prompt for the whole cache: at start it checked max_model_len <= the cache's
    tokens (worker.py raise_if_cache_size_invalid) and the prompt is within max_model_len (scheduler.py
    prompt_limit), so the cache holds at least the prompt and only the 1 % watermark of blocks
    (core/block_manager.py) is what it missed.  fp8 KV, which doubles the blocks, holds it for sure."""
    prompt = situation.params.get("prompt_tokens")
    lev = lever("kv_fp8")
    if situation.engine != "vllm" or not prompt or "kv_cache_dtype" not in situation.root.remedies:
        return []
    current = situation.command.flag("--kv-cache-dtype") if situation.command else None
    if not available(lev, "vllm", situation) or (current or "auto").startswith("fp8"):
        return []
    command = user_command(situation, "vllm", {"--kv-cache-dtype": "fp8"})
    return [Fix("vllm", lev.change, command, f"twice the KV blocks: the cache already held at least the {fmt_tokens(prompt)} tokens less its 1 % watermark" + ("" if situation.gpus.gpu else " (fp8 KV needs an Ada, Hopper or Blackwell GPU, or an MI300)"),
                lev.cost, 1, {"kind": "doubled cache", "serves": int(prompt), "needs": "vLLM 0.4.2 or newer"})]  # fmt: skip


def _key_point(
    situation: Situation, fit: int | None, want: int | None, serves: bool, any_fix: bool
) -> str | None:
    if fit is None or want is None:
        return None
    text = f"What is left for the KV cache holds {fmt_tokens(fit)} tokens; one request of {fmt_tokens(want)} does not fit."
    if not serves:
        from calculator.vllm import derived_max_model_len

        text += f" No setting on this hardware holds {fmt_tokens(want)} tokens"
        model = situation.model.model if situation.model else None
        limit = derived_max_model_len(model) if model is not None else None
        if limit and want > limit:
            text += f" (and the model's config stops at {fmt_tokens(limit)})"
        text += "; cap the context." if any_fix else "."
    return text


def request_too_long(situation: Situation) -> Reply:
    p = situation.params
    # the limit the error printed, before the server's settings
    limit = _first(situation, "prompt_limit", "max_model_len", "n_ctx", "context_length", "max_total_tokens")
    prompt = p.get("prompt_tokens")
    asked = p.get("requested_tokens") or ((prompt or 0) + (p.get("max_tokens") or 0)) or None
    engine = _name(situation.engine)
    title = f"{engine}: the request needs {fmt_tokens(asked)} tokens, the server holds {fmt_tokens(limit)}"
    if not asked or not limit:
        title = situation.root.title
    fixes: list[Fix] = []
    if limit and prompt and prompt < limit:
        fixes.append(Fix("any", "ask for fewer new tokens", f'"max_tokens": {int(limit) - int(prompt)}',
                         f"prompt {fmt_tokens(prompt)} + output fits {fmt_tokens(limit)}", "shorter answers", 1, {"kind": "request"}))  # fmt: skip
    elif limit and prompt:  # the prompt alone is over: no output budget helps, the prompt must shrink
        # a prompt-only limit (vLLM V0's min(max_model_len, max_num_batched_tokens)) leaves max_tokens out
        bound = "prompt_tokens" if p.get("prompt_limit") else "prompt_tokens + max_tokens"
        room = "" if p.get("prompt_limit") else ", and the answer needs room too"
        fixes.append(Fix("any", f"send a shorter prompt: `{bound} <= {int(limit)}`", "",
                         f"the prompt is {fmt_tokens(prompt)} tokens, {fmt_tokens(int(prompt) - int(limit))} over the {fmt_tokens(limit)} the server takes{room}",
                         "drop older turns or split the document", 1, {"kind": "request", "max_prompt_tokens": int(limit)}))  # fmt: skip
    budget = budget_for(situation)
    if budget is not None and asked:
        goal = Goal(length=int(asked), may_shorten=False)
        context_levers = ["max_model_len", "ctx_size", "ollama_context_length", "context_length"]
        found = [c for c in candidates(situation, budget, context_levers, goal) if c.serves_goal]
        plan = budget.plan0.with_(max_len=round_up_clean(int(asked)))
        out = budget.estimate.evaluate(plan)
        if out is not None and out.starts:
            found = [Candidate([lever("cap_context")], plan, out, True), *found]
        fixes += to_fixes(situation, budget, found, goal, limit=1)
    if asked and not any(f.engine == situation.engine for f in fixes):
        fixes += _fitted_context(situation, round_up_clean(int(asked)))
    if asked and limit and not prompt and asked > limit:  # the request's split is not shown: all of it
        fixes.append(Fix("any", f"send at most {fmt_tokens(limit)} tokens in one request", "",
                         f"the request is {fmt_tokens(int(asked) - int(limit))} tokens over what the server holds",
                         "a shorter prompt or answer", 3, {"kind": "request", "max_request_tokens": int(limit)}))  # fmt: skip
    key = (
        f"The request is {fmt_tokens(asked)} tokens; the server was started with room for {fmt_tokens(limit)}."
        if asked and limit
        else None
    )
    fixes += advice_fixes(situation, situation.root.remedies)
    return reply(situation, title, key, fixes)


def _fitted_context(situation: Situation, length: int) -> list[Fix]:
    """A longer context the engine itself makes fit, when the paste's numbers cannot size it: llama.cpp
    ``-c N --fit on`` (b7407+: layers move to the CPU so the context fits), Ollama ``OLLAMA_CONTEXT_LENGTH``
    (v0.30+ hands the layer placement to llama.cpp's --fit)."""
    engine, version, fork = situation.engine, situation.version, situation.fork
    trained = situation.get("n_ctx_train") or (
        situation.model.model.max_position_embeddings if situation.model else 0
    )
    if trained and length > trained:  # past the model's own context: no server setting serves it
        return []
    # unsized: layers can move to the CPU, the KV cache of that many tokens must still fit somewhere
    check = {"kind": "auto-fit", "starts": "if the KV cache fits in GPU + CPU memory", "serves": length}
    bound = f"; it starts only if the KV cache of {fmt_tokens(length)} tokens fits in your GPU and CPU memory"
    if engine == "llama.cpp" and supports(version, "llamacpp.fit", fork) is not False:
        # one KV buffer for all slots (--kv-unified, PR #14363, older than --fit): with -np N and split
        # buffers each slot would get -c / N, and the request would not fit in its slot (tools/server)
        # --fit is on by default (tools/server/README.md): it is named only to undo the user's -fit off
        changes = {"-c": str(length), "-ngl": None, "--kv-unified": ""}
        if situation.command is not None and situation.command.flag("--fit", "-fit") == "off":
            changes["--fit"] = "on"
        command = user_command(situation, "llama.cpp", changes)
        return [Fix("llama.cpp", f"serve {fmt_tokens(length)} tokens and let --fit place the layers", command,
                    "llama.cpp b7407+ moves layers to the CPU until the context fits, in one KV buffer any slot can use" + bound, "slower generation if layers move to the CPU", 2,
                    {**check, "needs": "llama.cpp b7407 or newer"})]  # fmt: skip
    if engine == "ollama" and supports(version, "ollama.context_length_env", fork) is not False:
        return [Fix("ollama", f"serve {fmt_tokens(length)} tokens", f"OLLAMA_CONTEXT_LENGTH={length} ollama serve",
                    "Ollama places the layers so the context fits" + bound, "slower generation if layers move to the CPU", 2,
                    {**check, "needs": "Ollama 0.5.13 or newer"})]  # fmt: skip
    return []


def batch_short(situation: Situation) -> Reply:
    """A batch limit (max_num_batched_tokens, -ub, TGI prefill tokens) below one request."""
    p = situation.params
    limit = p.get("max_num_batched_tokens") or p.get("n_ubatch") or p.get("max_batch_prefill_tokens")
    need = p.get("max_model_len") or p.get("requested_tokens") or p.get("max_input_tokens")
    engine = _name(situation.engine)
    title = f"{engine}: one batch holds {fmt_tokens(limit)} tokens, a request needs {fmt_tokens(need)}"
    flag = {"vllm": "--max-num-batched-tokens", "llama.cpp": "-ub", "tgi": "--max-batch-prefill-tokens"}.get(
        situation.engine
    )
    fixes: list[Fix] = []
    if flag and need:
        changes: dict[str, str | None] = {flag: str(int(need))}
        if situation.engine == "llama.cpp":
            changes["-b"] = str(int(need))
        fixes.append(Fix(situation.engine, f"raise the batch limit to {fmt_tokens(need)}",
                         user_command(situation, situation.engine, changes),
                         "one request fits one batch", "a larger activation peak at start", 1, {"kind": "constraint"}))  # fmt: skip
    key = f"The batch limit is {fmt_tokens(limit)} tokens, below the {fmt_tokens(need)} one request needs."
    return reply(situation, title, key, fixes, extra=[])


def state_blocks(situation: Situation) -> Reply:
    """A hybrid model's state blocks (one per running sequence) fewer than max_num_seqs."""
    seqs = situation.params.get("max_num_seqs")
    blocks = situation.params.get("mamba_blocks")
    title, key = situation.root.title, None
    if seqs is not None and blocks is not None:
        title = f"vLLM: {fmt_tokens(blocks)} state blocks, max_num_seqs asks for {fmt_tokens(seqs)}"
        key = (
            f"Each running sequence needs one state block; {fmt_tokens(blocks)} fit, "
            f"max_num_seqs is {fmt_tokens(seqs)}."
        )
    fixes: list[Fix] = []
    if seqs is not None and blocks is not None and 1 <= int(blocks) < int(seqs):
        command = user_command(situation, "vllm", {"--max-num-seqs": str(int(blocks))})
        fixes.append(Fix("vllm", f"run at most {int(blocks)} sequences", command, "one state block per sequence fits",
                         "fewer concurrent requests", 1, {"starts": True, "max_num_seqs": int(blocks)}))  # fmt: skip
    fixes += advice_fixes(situation, situation.root.remedies)
    return reply(situation, title, key, fixes)


def capacity_short(situation: Situation) -> Reply:
    category = situation.root.category
    if "mamba_blocks" in situation.params:
        return state_blocks(situation)
    if category == "context_exceeded":
        return request_too_long(situation)
    if category == "batched_tokens_too_small":
        return batch_short(situation)
    return kv_short(situation)
