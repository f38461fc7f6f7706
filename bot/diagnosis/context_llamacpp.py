"""context_exceeded for llama-server (slots split -c) and llama-cpp-python (n_ctx 512 by default)."""

from __future__ import annotations

import re

from bot.diagnosis.commands import flag_value, int_flag
from bot.diagnosis.common import diagnosis_reply
from bot.diagnosis.context_budget import REPLY_ROOM, kv_line
from bot.diagnosis.engine_facts import paste_text
from bot.diagnosis.gguf import catalog_model, gguf_file, ollama_tag
from bot.diagnosis.numbers import article, fmt_gib_or_mib, round_up_ctx
from bot.facts import PasteFacts
from bot.reply import Fact, Fix, Reply
from calculator.commands import llamacpp_command, ollama_env_command
from calculator.units import fmt_tokens


def llamacpp_server_context(facts: PasteFacts) -> Reply:
    p = facts.params
    n = p.get("requested_tokens")
    slot = p.get("n_ctx")
    command = facts.context.get("command")
    model_file = gguf_file(facts)
    c = int_flag(command, "-c", "--ctx-size")
    np_ = int_flag(command, "-np", "--parallel")
    kvu = flag_value(command, "-kvu", "--kv-unified") is not None
    max_tokens = facts.get("max_tokens")
    match = catalog_model(facts)
    room = max_tokens or REPLY_ROOM
    want = round_up_ctx(n + room) if n else (round_up_ctx(slot * 2) if slot else 8192)
    if match is not None:
        want = min(want, match.model.max_position_embeddings)

    title = "llama-server: the request is longer than a slot's context"
    if n and slot:
        title = f"llama-server: {article(n)} {fmt_tokens(n)}-token request, but each slot holds {fmt_tokens(slot)} tokens"
    sentences = []
    if n and slot:
        sentences.append(
            f"The prompt has {fmt_tokens(n)} tokens and the slot that got it can hold {fmt_tokens(slot)}."
        )
    else:
        sentences.append("The prompt is longer than the context of the slot that got it.")
    split = bool(np_ and np_ > 1 and not kvu and c and slot and abs(c / np_ - slot) <= 256)
    if split:
        sentences.append(
            f"You start it with -c {fmt_tokens(c)} and -np {np_}: with an explicit -np and no --kv-unified llama-server "
            f"gives each of the {np_} slots -c / {np_} = {fmt_tokens(slot)} tokens, not {fmt_tokens(c)}."
        )
    elif c and slot and c == slot:
        sentences.append(f"-c {fmt_tokens(c)} is the whole context and the request does not fit in it.")
    else:
        sentences.append(
            "With an explicit -np N (and no -kvu) each slot gets -c / N; otherwise the slot context is -c itself."
        )
    sentences.append(
        f"A context of {fmt_tokens(want)} per request leaves about {fmt_tokens(want - (n or 0))} tokens for the answer."
        if n
        else ""
    )
    numbers: list[Fact] = []
    if n:
        numbers.append(Fact("request (prompt tokens)", fmt_tokens(n), "log"))
    if slot:
        numbers.append(Fact("context per slot", fmt_tokens(slot), "log"))
    if c:
        numbers.append(Fact("-c (total)", fmt_tokens(c), "log"))
    if np_:
        numbers.append(Fact("-np (slots)", str(np_), "log"))
    numbers.append(Fact("context wanted per request", fmt_tokens(want), "computed"))

    fixes: list[Fix] = []
    ctk = facts.get("cache_type_k") or "f16"
    ctv = facts.get("cache_type_v") or "f16"

    def kv_effect(total_ctx: int) -> str:
        line = kv_line(match, total_ctx, ctk, ctv)
        return f"; {line[0]}" if line else ""

    if split and np_:
        total = want * np_
        fixes.append(
            Fix(
                "llama.cpp",
                f"-c {fmt_tokens(total)} for {np_} slots",
                llamacpp_command(command, model_file, {"-c": str(total), "-np": str(np_)}),
                f"each of the {np_} slots gets {fmt_tokens(want)} tokens ({fmt_tokens(want)} x {np_}){kv_effect(total)}",
                f"the KV cache grows {total / c:.1f}x; --fit moves layers to the CPU if VRAM runs out",
                1,
            )
        )
        if c >= want:
            fixes.append(
                Fix(
                    "llama.cpp",
                    "one shared KV pool",
                    llamacpp_command(command, model_file, {"-kvu": ""}),
                    f"slots share the {fmt_tokens(c)} cells: one request can use up to {fmt_tokens(c)} tokens, no extra memory",
                    "concurrent long requests compete for the pool",
                    2,
                )
            )
        fixes.append(
            Fix(
                "llama.cpp",
                "one slot",
                llamacpp_command(command, model_file, {"-np": "1", "-c": str(max(c, want))}),
                f"the single slot gets all {fmt_tokens(max(c, want))} tokens",
                "requests are served one at a time",
                3,
            )
        )
    else:
        fixes.append(
            Fix(
                "llama.cpp",
                f"context {fmt_tokens(want)}",
                llamacpp_command(
                    command, model_file, {"-c": str(want * (np_ or 1)) if np_ and not kvu else str(want)}
                ),
                f"a request of {fmt_tokens(n or want)} tokens fits with room for the answer{kv_effect(want)}",
                "more KV memory; --fit moves layers to the CPU if VRAM runs out",
                1,
            )
        )
    if n and slot:
        cut = n - slot + room
        fixes.append(
            Fix(
                "any",
                f"shorten the prompt by {fmt_tokens(cut)} tokens",
                f"# keep prompt + answer under {fmt_tokens(slot)}: at most {fmt_tokens(max(0, slot - room))} prompt tokens "
                f"with {fmt_tokens(room)} left to answer",
                "no server change",
                "less context for the model",
                4,
            )
        )
    fixes.append(
        Fix(
            "ollama",
            "the same in Ollama",
            ollama_env_command({"OLLAMA_CONTEXT_LENGTH": str(want)}, ollama_tag(facts, match)),
            "Ollama gives every parallel slot the full num_ctx",
            "KV memory x OLLAMA_NUM_PARALLEL",
            6,
        )
    )
    notes = []
    if not command:
        notes.append(
            "Your llama-server command is not in the paste: if you pass -np N, multiply -c by N; the current "
            "default (-np auto) is 4 slots sharing one pool (-kvu), where each request can use all of -c."
        )
    if max_tokens is None and n:
        notes.append(
            f"I left {fmt_tokens(REPLY_ROOM)} tokens for the answer; n_predict / max_tokens decides how many it needs."
        )
    data = {"requested_tokens": n, "slot_ctx": slot, "ctx": c, "parallel": np_, "wanted_ctx": want}
    return diagnosis_reply(
        title,
        " ".join(s for s in sentences if s),
        numbers,
        fixes,
        notes,
        f"The request has {fmt_tokens(n)} tokens; a slot holds {fmt_tokens(slot)}." if n and slot else "",
        data=data,
    )


def llamacpp_python_context(facts: PasteFacts) -> Reply:
    p = facts.params
    n = p.get("requested_tokens")
    n_ctx = p.get("n_ctx") or facts.get("n_ctx")
    text = paste_text(facts)
    max_tokens = facts.get("max_tokens")
    if max_tokens is None:
        m = re.search(r"\bmax_tokens\s*=\s*([0-9]+)", text)
        max_tokens = int(m.group(1)) if m else None
    server = bool(re.search(r"llama_cpp[/.]server|llama_cpp\.server", text)) or "[llama-cpp]" in text
    match = catalog_model(facts)
    if n:
        want = round_up_ctx(n)
    elif max_tokens:
        want = round_up_ctx(max_tokens + 512)
    else:
        want = max(4096, round_up_ctx((n_ctx or 512) * 2))
    if match is not None:
        want = min(want, match.model.max_position_embeddings)
    title = "llama-cpp-python: prompt + max_tokens do not fit the context window"
    if n and n_ctx:
        title = (
            f"llama-cpp-python: {fmt_tokens(n)} tokens requested, the context window is {fmt_tokens(n_ctx)}"
        )
    elif n_ctx:
        title = f"llama-cpp-python: prompt + max_tokens exceed the context window of {fmt_tokens(n_ctx)}"
        if max_tokens:
            title = (
                f"llama-cpp-python: max_tokens {fmt_tokens(max_tokens)} alone exceeds the context window of {fmt_tokens(n_ctx)}"
                if max_tokens >= n_ctx
                else title
            )
    sentences = [
        "llama-cpp-python checks prompt tokens + max_tokens against n_ctx before generating"
        + (f": here {fmt_tokens(n)} > {fmt_tokens(n_ctx)}." if n and n_ctx else ".")
    ]
    if n_ctx == 512:
        sentences.append(
            "512 is the default of Llama(...) when n_ctx is not given — whatever the model was trained for."
        )
    elif n_ctx == 2048 and server:
        sentences.append("2,048 is the default of the llama-cpp-python server (--n_ctx) when it is not set.")
    if max_tokens and n_ctx and max_tokens >= n_ctx:
        sentences.append(
            f"max_tokens={fmt_tokens(max_tokens)} alone is already more than {fmt_tokens(n_ctx)}."
        )
    sentences.append(f"Set n_ctx to {fmt_tokens(want)} (or lower max_tokens).")
    numbers: list[Fact] = []
    if n:
        numbers.append(Fact("requested (prompt + max_tokens)", fmt_tokens(n), "log"))
    if n_ctx:
        numbers.append(Fact("context window (n_ctx)", fmt_tokens(n_ctx), "log"))
    if max_tokens:
        numbers.append(Fact("max_tokens", fmt_tokens(max_tokens), "log"))
    numbers.append(Fact("n_ctx wanted", fmt_tokens(want), "computed"))
    kv = kv_line(match, want)
    if kv:
        numbers.append(Fact(f"KV cache at n_ctx {fmt_tokens(want)}", fmt_gib_or_mib(kv[1]), "computed"))
    fixes: list[Fix] = []
    model_path = facts.context.get("model") or "<model>.gguf"
    py = Fix(
        "llama.cpp",
        f"llama-cpp-python: Llama(n_ctx={want})",
        f'llm = Llama(model_path="{model_path}", n_ctx={want})',
        f"room for {fmt_tokens(want)} tokens of prompt + answer" + (f"; {kv[0]}" if kv else ""),
        "more KV memory (n_ctx=0 takes the model's full trained context: often far more)",
        1,
    )
    srv = Fix(
        "llama.cpp",
        f"llama-cpp-python server: --n_ctx {want}",
        f"python -m llama_cpp.server --model {model_path} --n_ctx {want}\n# or in the environment: N_CTX={want}",
        f"every request gets {fmt_tokens(want)} tokens",
        "more KV memory",
        1,
    )
    fixes += (
        [srv, Fix(py.engine, py.change, py.command, py.effect, py.cost, 2)]
        if server
        else [py, Fix(srv.engine, srv.change, srv.command, srv.effect, srv.cost, 2)]
    )
    if n and n_ctx:
        over = n - n_ctx
        cmd = f"# prompt + max_tokens <= {fmt_tokens(n_ctx)}: lower max_tokens by at least {fmt_tokens(over)}"
        if max_tokens:
            cmd = f"max_tokens={max(1, max_tokens - over)}   # was {max_tokens}"
        fixes.append(
            Fix(
                "llama.cpp",
                f"lower max_tokens by {fmt_tokens(over)}",
                cmd,
                f"fits in the current {fmt_tokens(n_ctx)}",
                "shorter answers",
                3,
            )
        )
    elif max_tokens and n_ctx and max_tokens >= n_ctx:
        fixes.append(
            Fix(
                "llama.cpp",
                f"max_tokens below {fmt_tokens(n_ctx)}",
                f"max_tokens={max(16, n_ctx // 2)}   # prompt + max_tokens must stay under n_ctx={n_ctx}",
                f"fits in {fmt_tokens(n_ctx)} with half left for the prompt",
                "shorter answers",
                3,
            )
        )
    fixes.append(
        Fix(
            "llama.cpp",
            "llama-server instead",
            llamacpp_command(None, str(model_path), {"-c": str(want)}),
            "llama-server uses the model's trained context by default (-c 0) and shrinks it to fit VRAM",
            "a different API (OpenAI-compatible HTTP)",
            5,
        )
    )
    notes = []
    if max_tokens is None and not n:
        notes.append("max_tokens is not in the paste: prompt + max_tokens must stay under n_ctx.")
    data = {"requested_tokens": n, "n_ctx": n_ctx, "max_tokens": max_tokens, "wanted_ctx": want}
    return diagnosis_reply(
        title,
        " ".join(sentences),
        numbers,
        fixes,
        notes,
        f"Prompt + max_tokens exceed n_ctx {fmt_tokens(n_ctx)}; set n_ctx={want}." if n_ctx else "",
        data=data,
    )
