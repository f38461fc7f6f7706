"""context_exceeded for SGLang: input plus completion over --context-length."""

from __future__ import annotations

from bot.diagnosis.common import diagnosis_reply
from bot.diagnosis.context_budget import REPLY_ROOM
from bot.diagnosis.gguf import catalog_model
from bot.diagnosis.numbers import article, round_up_ctx
from bot.facts import PasteFacts
from bot.reply import Fact, Fix, Reply
from calculator.commands import sglang_command
from calculator.units import fmt_tokens


def sglang_context(facts: PasteFacts) -> Reply:
    p = facts.params
    prompt = p.get("prompt_tokens")
    ctx = p.get("context_length") or facts.context.get("context_length")
    limit = p.get("prompt_limit")
    max_tokens = p.get("max_tokens")
    requested = p.get("requested_tokens") or (prompt + max_tokens if prompt and max_tokens else None)
    command = facts.context.get("command")
    model_name = facts.context.get("model")
    match = catalog_model(facts)
    trained = match.model.max_position_embeddings if match is not None else None
    room = max_tokens or REPLY_ROOM
    want = round_up_ctx((prompt or 0) + room) if prompt else None
    if want and trained:
        want = min(want, trained)
    cap = limit or ctx
    title = "SGLang: the request is longer than the served context"
    if requested and ctx:
        title = (
            f"SGLang: {fmt_tokens(requested)} tokens requested ({fmt_tokens(prompt)} input + {fmt_tokens(max_tokens)} completion), "
            f"the context is {fmt_tokens(ctx)}"
        )
    elif prompt and cap:
        title = f"SGLang: {article(prompt)} {fmt_tokens(prompt)}-token input, the server accepts {fmt_tokens(cap)}"
    sentences = []
    if requested and ctx:
        sentences.append(
            f"Input ({fmt_tokens(prompt)}) plus max_tokens ({fmt_tokens(max_tokens)}) is {fmt_tokens(requested)} tokens, "
            f"{fmt_tokens(requested - ctx)} more than the served context of {fmt_tokens(ctx)}"
            + (
                f"; the input alone fits, so max_tokens ≤ {fmt_tokens(ctx - prompt)} is enough."
                if prompt < ctx
                else "."
            )
        )
    elif prompt and limit and ctx and limit < ctx - 1:
        sentences.append(
            f"The input has {fmt_tokens(prompt)} tokens and the limit is {fmt_tokens(limit)}, below --context-length {fmt_tokens(ctx)}: "
            "SGLang's per-request limit is min(context_len − 1, KV pool tokens − 1), so here the KV pool is what "
            "limits it."
        )
    else:
        sentences.append(
            f"The input has {fmt_tokens(prompt) if prompt else 'more'} tokens"
            + (f" and the server accepts {fmt_tokens(cap)}." if cap else ".")
            + " SGLang's per-request limit is min(context_len − 1, KV pool tokens − 1)."
        )
    if trained and ctx and ctx >= trained:
        sentences.append(
            f"{fmt_tokens(ctx)} is already the model's trained context, so --context-length cannot usefully grow."
        )
    numbers = []
    if prompt:
        numbers.append(Fact("input tokens", fmt_tokens(prompt), "log"))
    if max_tokens:
        numbers.append(Fact("max_tokens", fmt_tokens(max_tokens), "log"))
    if requested:
        numbers.append(
            Fact(
                "requested in total",
                fmt_tokens(requested),
                "log" if p.get("requested_tokens") else "computed",
            )
        )
    if ctx:
        numbers.append(Fact("context length", fmt_tokens(ctx), "log"))
    if limit:
        numbers.append(Fact("maximum allowed input", fmt_tokens(limit), "log"))
    if trained:
        numbers.append(Fact("the model's trained context", fmt_tokens(trained), "catalog"))
    fixes = []
    if max_tokens and ctx and prompt and prompt < ctx:
        fixes.append(
            Fix(
                "sglang",
                f"max_tokens ≤ {fmt_tokens(ctx - prompt)}",
                f'"max_tokens": {ctx - prompt}   # context {ctx} − input {prompt}',
                "the request fits without a restart",
                "shorter answers",
                1,
            )
        )
    if limit and (not ctx or limit < ctx - 1):
        fixes.append(
            Fix(
                "sglang",
                "a bigger KV pool",
                sglang_command(
                    command, model_name, {"--mem-fraction-static": "0.9", "--kv-cache-dtype": "fp8_e4m3"}
                ),
                "the limit here comes from the pool size (max_total_num_tokens), not --context-length",
                "less headroom for activations; fp8 KV needs Hopper/Ada (or MI300)",
                2,
            )
        )
    elif want and cap and want > cap:
        fixes.append(
            Fix(
                "sglang",
                f"--context-length {fmt_tokens(want)}",
                sglang_command(command, model_name, {"--context-length": str(want)}),
                f"requests up to {fmt_tokens(want)} tokens; the KV pool (max_total_num_tokens) must hold at least that",
                "more KV per request"
                + ("" if trained else "; past the model's trained context the output degrades"),
                2,
            )
        )
    if prompt and cap and prompt > cap - room:
        keep = max(0, cap - room)
        fixes.append(
            Fix(
                "any",
                f"shorten the input by {fmt_tokens(prompt - keep)}+ tokens",
                f"# keep the input under {fmt_tokens(keep)} tokens so {fmt_tokens(room)} are left for the answer",
                "no server change",
                "less context",
                3,
            )
        )
    data = {
        "prompt_tokens": prompt,
        "context_length": ctx,
        "prompt_limit": limit,
        "wanted_len": want,
        "max_tokens_allowed": ctx - prompt if ctx and prompt and prompt < ctx else None,
    }
    return diagnosis_reply(title, " ".join(sentences), numbers, fixes, [], data=data)
