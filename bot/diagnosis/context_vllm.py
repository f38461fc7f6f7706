"""context_exceeded for vLLM: prompt plus max_tokens over max_model_len (or V0's prompt limit)."""

from __future__ import annotations

import re

from bot.diagnosis.common import diagnosis_reply
from bot.diagnosis.context_budget import REPLY_ROOM
from bot.diagnosis.engine_facts import paste_text, vllm_kv_bytes_per_token
from bot.diagnosis.gguf import catalog_model
from bot.diagnosis.numbers import article, fmt_gib_or_mib, round_up_ctx
from bot.facts import PasteFacts
from bot.reply import Fact, Fix, Reply
from calculator.commands import vllm_command
from calculator.units import GIB, KIB, fmt_tokens


def vllm_context(facts: PasteFacts) -> Reply:
    p = facts.params
    sig = facts.root.signature
    prompt = p.get("prompt_tokens")
    limit = p.get("prompt_limit")
    mml = p.get("max_model_len") or facts.context.get("max_model_len")
    max_tokens = p.get("max_tokens")
    requested = p.get("requested_tokens")
    command = facts.context.get("command")
    model_name = facts.context.get("model")
    match = catalog_model(facts)
    text = paste_text(facts)
    trained = None
    m = re.search(r"maximum sequence length for this model \(([0-9]+) > ([0-9]+)\)", text)
    if m:
        trained = int(m.group(2))
    if match is not None:
        trained = trained or match.model.max_position_embeddings
    v0 = sig.endswith("v0_prompt_limit")
    cap = limit if v0 else mml
    numbers: list[Fact] = []
    fixes: list[Fix] = []
    notes: list[str] = []
    if prompt:
        numbers.append(Fact("prompt tokens", fmt_tokens(prompt), "log"))
    if max_tokens:
        numbers.append(Fact("max_tokens asked for", fmt_tokens(max_tokens), "log"))
    if requested:
        numbers.append(Fact("prompt + max_tokens", fmt_tokens(requested), "log"))
    if cap:
        numbers.append(
            Fact(
                "prompt limit" if v0 else "max_model_len",
                fmt_tokens(cap),
                "log" if (v0 or p.get("max_model_len")) else "given",
            )
        )
    if trained and trained != cap:
        numbers.append(Fact("the model's trained context", fmt_tokens(trained), "log" if m else "catalog"))

    room = max_tokens or REPLY_ROOM
    want = round_up_ctx((prompt or 0) + room) if prompt else None
    if want and trained:
        want = min(want, trained)
    allowed = cap - prompt if cap and prompt else None

    if sig.endswith("max_tokens_too_large"):
        title = (
            f"vLLM: max_tokens {fmt_tokens(max_tokens)} does not fit next to the prompt"
            if max_tokens
            else "vLLM: max_tokens is too large"
        )
        if allowed is not None and allowed > 0:
            title += f" (at most {fmt_tokens(allowed)} here)"
        asked = f"max_tokens {fmt_tokens(max_tokens)}" if max_tokens else "a max_tokens"
        sentences = [
            f"The request asks for {asked}, but prompt + max_tokens must fit in max_model_len"
            + (f" {fmt_tokens(mml)}" if mml else "")
            + (f" and the prompt already has {fmt_tokens(prompt)} tokens" if prompt else "")
            + ".",
        ]
        if allowed is not None:
            sentences.append(
                f"So max_tokens can be at most {fmt_tokens(mml)} − {fmt_tokens(prompt)} = {fmt_tokens(allowed)}."
                if allowed > 0
                else f"The prompt alone is {fmt_tokens(prompt - mml)} tokens over: max_tokens cannot help."
            )
        else:
            sentences.append(
                "vLLM checks it per request: max_tokens ≤ max_model_len − prompt tokens. Leave max_tokens unset and "
                "vLLM uses whatever is left."
            )
    elif v0:
        title = (
            f"vLLM (V0): {article(prompt)} {fmt_tokens(prompt)}-token prompt is over the {fmt_tokens(limit)}-token prompt limit"
            if prompt and limit
            else "vLLM (V0): the prompt is over the prompt limit"
        )
        sentences = [
            f"The V0 scheduler skipped a request of {fmt_tokens(prompt)} tokens: its prompt limit is {fmt_tokens(limit)} — "
            "max_model_len, or max_num_batched_tokens when chunked prefill is off, whichever is smaller."
            if prompt and limit
            else "The V0 scheduler skipped the request: it is longer than the prompt limit."
        ]
        if limit == 2560:
            sentences.append("2,560 was the default --max-num-batched-tokens of early vLLM (0.1.x).")
        if trained and prompt and prompt > trained:
            sentences.append(
                f"The tokenizer also says the model was built for {fmt_tokens(trained)} tokens: raising the limit past that "
                "gives garbage, so the prompt must get shorter (or the model longer-context)."
            )
    else:
        title = "vLLM: the request is longer than max_model_len"
        if prompt and mml:
            title = f"vLLM: {article(prompt)} {fmt_tokens(prompt)}-token prompt, max_model_len is {fmt_tokens(mml)}"
        sentences = [
            f"The server runs with max_model_len {fmt_tokens(mml)} and this request needs more"
            + (f": prompt {fmt_tokens(prompt)}" if prompt else "")
            + (f" + max_tokens {fmt_tokens(max_tokens)}" if max_tokens else "")
            + (f" = {fmt_tokens(requested)}" if requested else "")
            + "."
            if mml
            else "The request is longer than the server's max_model_len."
        ]
        if allowed is not None and allowed > 0 and max_tokens and max_tokens > allowed:
            sentences.append(f"The prompt fits: max_tokens ≤ {fmt_tokens(allowed)} makes the request fit.")
        elif allowed is not None and allowed == 0:
            sentences.append(
                f"The prompt alone fills all {fmt_tokens(mml)} tokens: nothing is left for the answer."
            )
        elif allowed is not None and allowed < 0:
            sentences.append(f"The prompt alone is {fmt_tokens(-allowed)} tokens over.")

    # lower max_tokens
    if allowed is not None and allowed > 0 and (max_tokens is None or max_tokens > allowed):
        fixes.append(
            Fix(
                "vllm",
                f"max_tokens ≤ {fmt_tokens(allowed)}",
                f'"max_tokens": {allowed}   # max_model_len {mml} − prompt {prompt}; or leave it unset',
                "the request fits without restarting the server",
                "the answer is capped at that length",
                1,
            )
        )
    elif sig.endswith("max_tokens_too_large"):
        fixes.append(
            Fix(
                "vllm",
                "lower max_tokens (or leave it unset)",
                '# in the request: drop "max_tokens" (vLLM then uses max_model_len − prompt) or set\n'
                f'"max_tokens": <max_model_len − prompt tokens>   # {fmt_tokens(max_tokens or 0)} is more than that',
                "the request fits without restarting the server",
                "the answer is capped",
                1,
            )
        )
    # raise the limit
    if v0 and prompt and limit:
        target = round_up_ctx(prompt + REPLY_ROOM)
        if trained:
            target = min(target, trained)
        if target > limit:
            fixes.append(
                Fix(
                    "vllm",
                    f"--max-num-batched-tokens {target}",
                    vllm_command(
                        command,
                        model_name,
                        {"--max-num-batched-tokens": str(target), "--max-model-len": str(target)},
                    ),
                    f"V0 without chunked prefill accepts prompts up to {fmt_tokens(target)}; the KV check at startup decides whether it fits",
                    "a larger prefill batch: more activation memory",
                    2,
                )
            )
        fixes.append(
            Fix(
                "vllm",
                "upgrade to the V1 engine (vLLM ≥ 0.8)",
                "pip install -U vllm",
                "chunked prefill is on by default: the only prompt limit is max_model_len",
                "a new version to test",
                4,
            )
        )
    elif want and cap and want > cap and not sig.endswith("max_tokens_too_large"):
        bpt = vllm_kv_bytes_per_token(match.model if match is not None else None, facts, facts.get("tp") or 1)
        effect = f"one request of {fmt_tokens(want)} tokens is allowed"
        if bpt:
            effect += (
                f"; it needs {fmt_gib_or_mib(want * bpt / GIB)} of KV cache ({bpt / KIB:,.0f} KiB/token)"
            )
        effect += (
            ". vLLM checks at startup that one full-length request fits the KV cache: that check decides"
        )
        fixes.append(
            Fix(
                "vllm",
                f"--max-model-len {fmt_tokens(want)}",
                vllm_command(command, model_name, {"--max-model-len": str(want)}),
                effect,
                "more KV memory per request"
                + (
                    "; past the model's trained context the output degrades"
                    if not trained or want > trained
                    else ""
                ),
                2,
            )
        )
    elif sig.endswith("max_tokens_too_large") and max_tokens:
        target = round_up_ctx(max_tokens + (prompt or REPLY_ROOM))
        if trained:
            target = min(target, trained)
        fixes.append(
            Fix(
                "vllm",
                f"--max-model-len {fmt_tokens(target)}",
                vllm_command(command, model_name, {"--max-model-len": str(target)}),
                f"room for max_tokens {fmt_tokens(max_tokens)} plus the prompt, if the KV cache can hold one request of "
                f"{fmt_tokens(target)} tokens — vLLM's startup check decides",
                "more KV memory per request",
                2,
            )
        )
    if prompt and cap and prompt >= cap - room:
        eff_cap = min(cap, trained) if trained else cap
        answer = min(room, eff_cap // 4)
        keep = eff_cap - answer
        if prompt > keep:
            fixes.append(
                Fix(
                    "any",
                    f"shorten the prompt by {fmt_tokens(prompt - keep)}+ tokens",
                    f"# keep the prompt under {fmt_tokens(keep)} tokens so {fmt_tokens(answer)} are left for the answer"
                    + (
                        f" (the model's trained context is {fmt_tokens(trained)})"
                        if trained and trained < cap
                        else ""
                    ),
                    "works with the server as it is",
                    "less context for the model",
                    1 if v0 and trained and trained <= cap else 3,
                )
            )
    if not facts.version_known and facts.root.versions:
        notes.append(f"This wording is printed by vLLM {facts.root.versions}.")
    if not command and any(f.command.startswith("vllm serve") for f in fixes):
        notes.append("Your vllm serve command is not in the paste: add the flag to your own command line.")
    data = {
        "prompt_tokens": prompt,
        "max_tokens": max_tokens,
        "max_model_len": mml,
        "prompt_limit": limit,
        "max_tokens_allowed": allowed,
        "wanted_len": want,
    }
    return diagnosis_reply(title, " ".join(sentences), numbers, fixes, notes, data=data)
