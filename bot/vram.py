"""``/vram``: parse the request as people type it and turn the calculator's answer into a Reply.

Accepted forms: ``gpu:4090 model:qwen-32b-awq context:32k engine:vllm`` (named, any order) and
free order ``4090 qwen-32b-awq`` (each word tried as a GPU, then as a model)."""

from __future__ import annotations

import dataclasses
from collections.abc import Callable
from contextlib import suppress
from typing import Any

import re2

from bot.formatter import ENGINE_LABEL
from bot.model_sources import ModelSourceError, ResolvedModel, resolve_model_arg
from bot.numbers import parse_number, parse_token_count
from bot.reply import Fact, Fix, MemoryPicture, MemorySegment, Reply, Section
from calculator.estimate import EngineName, VramRequest, VramResult, estimate_for
from calculator.kv import LLAMACPP_KV_BYTES
from calculator.matchmaker import DEFAULT_CONTEXT, gpus_for_model, models_for_gpu
from calculator.resolve import NameNotFound, resolve_gpu
from calculator.units import KIB, fmt_tokens
from calculator.vllm import derived_max_model_len

# every spelling of each /vram option, by the request field it sets
_SPELLINGS = {
    "gpu": ("gpu", "card"),
    "model": ("model",),
    "engine": ("engine",),
    "max_model_len": ("context", "ctx", "max_model_len", "max-model-len"),
    "gpus": ("gpus",),
    "tp": ("tp",),
    "gpu_memory_utilization": ("utilization", "util", "gpu_memory_utilization"),
    "kv_cache_dtype": ("kv_cache_dtype", "kv", "kv-cache-dtype"),
    "gpu_memory_gib": ("memory", "vram"),
    "vllm_version": ("version",),
}
KEY_ALIASES = {spelling: key for key, spellings in _SPELLINGS.items() for spelling in spellings}
ENGINE_ALIASES: dict[str, EngineName] = {
    "vllm": "vllm",
    "llama.cpp": "llama.cpp",
    "llamacpp": "llama.cpp",
    "llama-cpp": "llama.cpp",
    "llama": "llama.cpp",
    "ollama": "ollama",
    "sglang": "sglang",
}

USAGE = (
    "usage: /vram gpu:<gpu> model:<model> [context:32k] [engine:vllm|llama.cpp|ollama|sglang] "
    "[gpus:N] [kv:fp8|q8_0] [utilization:0.9]   e.g. /vram gpu:4090 model:qwen-32b-awq"
)


class VramInputError(ValueError):
    """The request cannot be understood; the message says what to type instead."""


def parse_args(args: dict[str, str] | None = None, raw: str = "") -> dict[str, str]:
    """Merge named options (Discord) with ``key:value`` / free-order words (Slack, terminal)."""
    named: dict[str, str] = {}
    loose: list[str] = []
    for key, value in (args or {}).items():
        if value is None or str(value).strip() == "":
            continue
        canon = KEY_ALIASES.get(key.lower().strip())
        if canon is None:
            raise VramInputError(f"unknown option {key!r}. {USAGE}")
        named[canon] = str(value).strip()
    for word in raw.split():
        if ":" in word and not word.lower().startswith(("http:", "https:")):
            key, _, value = word.partition(":")
            canon = KEY_ALIASES.get(key.lower())
            if canon is not None:
                if value:
                    named[canon] = value
                continue
        loose.append(word)
    for word in loose:
        low = word.lower()
        if low in ENGINE_ALIASES and "engine" not in named:
            named["engine"] = low
            continue
        if "gpu" not in named:
            with suppress(NameNotFound):
                resolve_gpu(word)
                named["gpu"] = word
                continue
        if "model" not in named:
            named["model"] = word
            continue
        raise VramInputError(f"I don't know what {word!r} is. {USAGE}")
    return named


def _tokens(key: str, raw: str) -> int:
    tokens = parse_token_count(raw)
    if not tokens:
        raise VramInputError(f"context {raw!r} is not a token count (e.g. 32768 or 32k)")
    return tokens


def _whole(key: str, raw: str) -> int:
    value = parse_number(raw)
    if value is None or value != int(value) or value < 1:
        raise VramInputError(f"{key} must be a whole number, got {raw!r}")
    return int(value)


def _fraction(key: str, raw: str) -> float:
    value = parse_number(raw)
    if value is None or not 0 < value <= 1:
        raise VramInputError("utilization must be between 0 and 1, e.g. 0.9")
    return value


def _gib(key: str, raw: str) -> float:
    value = parse_number(raw.lower().removesuffix("gib").removesuffix("gb"))
    if not value:
        raise VramInputError("memory must be a number of GiB, e.g. memory:22.5")
    return value


# the VramRequest fields a /vram word sets, each with its parser (text fields are taken as typed)
NUMBER_FIELDS = {"max_model_len": _tokens, "gpus": _whole, "tp": _whole,
                 "gpu_memory_utilization": _fraction, "gpu_memory_gib": _gib}  # fmt: skip


def request_fields(named: dict[str, str]) -> dict[str, Any]:
    """Validated ``VramRequest`` keywords from the parsed words (model/gpu may be absent for matchmaking)."""
    fields: dict[str, Any] = {k: named[k] for k in ("model", "gpu", "vllm_version") if k in named}
    engine = named.get("engine", "vllm").lower()
    if engine not in ENGINE_ALIASES:
        raise VramInputError(f"unknown engine {engine!r}; use vllm, llama.cpp, ollama or sglang")
    fields["engine"] = ENGINE_ALIASES[engine]
    fields.update({k: parse(k, named[k]) for k, parse in NUMBER_FIELDS.items() if k in named})
    if "kv_cache_dtype" in named:
        kv = named["kv_cache_dtype"].lower()
        if fields["engine"] in ("llama.cpp", "ollama"):
            kv = "q8_0" if kv in ("fp8", "q8") else kv
            if kv not in LLAMACPP_KV_BYTES:
                raise VramInputError(f"unknown llama.cpp cache type {kv!r}; use f16, q8_0 or q4_0")
            fields["cache_type_k"] = fields["cache_type_v"] = kv
        else:
            fields["kv_cache_dtype"] = kv
    VramRequest(**{"model": "x", "gpu": "x", **fields})  # a value out of its bounds: FieldError
    return fields


def vram_reply(result: VramResult) -> Reply:
    label = result.variant or result.model
    engine = ENGINE_LABEL[result.engine]
    gpus = f"{result.gpus}x " if result.gpus > 1 else ""
    where = f"{label} on {gpus}{result.gpu_name} ({engine})"
    if result.fits:
        title = f"{where}: fits, {fmt_tokens(result.max_model_len)} tokens of context"
        many = f" or about {result.max_concurrency:g} requests of {fmt_tokens(result.max_model_len)}"
        summary = (
            f"The weights take {result.weights_gib:.1f} GiB per GPU; the KV cache gets {result.kv_cache_gib:.2f} GiB, "
            f"room for {fmt_tokens(result.max_model_len_fit)} tokens in one request"
            f"{many if result.max_concurrency >= 1 else ''}."
        )
    elif result.max_model_len_fit > 0:
        title = f"{where}: {fmt_tokens(result.max_model_len)} tokens do not fit; {fmt_tokens(result.max_model_len_fit)} do"
        summary = (
            f"The weights take {result.weights_gib:.1f} GiB per GPU, leaving {result.kv_cache_gib:.2f} GiB of KV cache: "
            f"{fmt_tokens(result.max_model_len_fit)} tokens, short of the {fmt_tokens(result.max_model_len)} asked for."
        )
    else:
        title = f"{where}: does not fit"
        summary = (
            f"The weights take {result.weights_gib:.1f} GiB per GPU and leave no room for a KV cache on a "
            f"{result.total_gib:.1f} GiB card."
        )
    numbers = [
        Fact("GPU memory (per GPU)", f"{result.total_gib:.2f} GiB", "catalog"),
        Fact("weights (per GPU)", f"{result.weights_gib:.2f} GiB", "estimated"),
        Fact("KV per token (per GPU)", f"{result.kv_bytes_per_token / KIB:,.0f} KiB", "computed"),
        Fact("KV cache (per GPU)", f"{result.kv_cache_gib:.2f} GiB", "estimated"),
        Fact("context asked for", fmt_tokens(result.max_model_len), "given"),
        Fact("longest request that fits", fmt_tokens(result.max_model_len_fit), "computed"),
        Fact("concurrency at that context", f"{result.max_concurrency:g}x", "computed"),
    ]
    segments = [MemorySegment(k.replace("_", " "), v, "estimated") for k, v in result.breakdown.items()]
    picture = MemoryPicture(result.total_gib, segments, title=f"{result.gpu_name} memory ({engine})")
    fixes = (
        [Fix(result.engine, "run it", result.command, "the configuration above", rank=0)]
        if result.fits
        else []
    )
    fixes += [
        Fix(r.engine, r.change, r.command, r.effect, r.cost, rank=i + 1)
        for i, r in enumerate(result.remedies)
    ]
    return Reply(
        kind="vram",
        title=title,
        summary=summary,
        sections=[Section("The numbers", facts=numbers)],
        fixes=fixes,
        memory=picture,
        notes=list(result.notes),
        data=dataclasses.asdict(result),
    )


ModelLookup = Callable[[str], ResolvedModel]


catalog_lookup: ModelLookup = resolve_model_arg  # the catalog only: no local files, no Hub


def answer(args: dict[str, str] | None = None, raw: str = "", lookup: ModelLookup = catalog_lookup) -> Reply:
    try:
        if raw.strip().lower() in ("help", "?"):
            return Reply(
                kind="help",
                title="/vram",
                summary=USAGE + ". Give only a GPU or only a model for matchmaking.",
            )
        named = parse_args(args, raw)
        if "model" in named and "gpu" in named:
            request = VramRequest(**request_fields(named))
            found = lookup(request.model)
            reply = vram_reply(estimate_for(found.model, found.variant, resolve_gpu(request.gpu), request))
            reply.notes.extend(found.notes)  # where a model outside the catalog came from
            return reply
        fields = request_fields(named)
        if "model" in named:
            return match_gpus_reply(fields, lookup)
        if "gpu" in named:
            return match_models_reply(fields)
        raise VramInputError(USAGE)
    except (VramInputError, NameNotFound, ModelSourceError, ValueError) as exc:
        return Reply(
            kind="error", title="I could not answer that /vram", summary=unechoed(str(exc), args, raw)
        )


_PLAIN_WORD = re2.compile(r"[A-Za-z][A-Za-z._-]{0,23}")


def unechoed(message: str, args: dict[str, str] | None, raw: str) -> str:
    """An error message that does not say back what the user typed: a token pasted as a model name looks
    like a model id often enough (a UUID, a 14-character id) that no test tells them apart, so every
    quoted word of theirs becomes "(that value)" unless it is a plain word (letters only, like "lots");
    the catalog's suggestions stay."""
    words = [str(v) for v in (args or {}).values() if v is not None] + [str(k) for k in (args or {})]
    for word in raw.split():
        words += [word, *word.partition(":")[::2]]
    for word in sorted({w.strip() for w in words if w.strip()}, key=len, reverse=True):
        if _PLAIN_WORD.fullmatch(word) is None:
            message = message.replace(repr(word), "(that value)")
    from bot.redact import redact  # only here: /vram alone never loads the paste normaliser

    return redact(message).text


def match_gpus_reply(fields: dict[str, Any], lookup: ModelLookup = catalog_lookup) -> Reply:
    """Only a model: which GPUs (and how many) serve it, one card first, least memory first."""
    match = lookup(str(fields["model"]))
    engine = fields.get("engine", "vllm")
    context = fields.get("max_model_len")
    options = gpus_for_model(
        match.model,
        match.variant,
        context=context,
        engine=engine,
        kv_cache_dtype=str(fields.get("kv_cache_dtype", "auto")),
    )
    want = context or min(derived_max_model_len(match.model), DEFAULT_CONTEXT)
    if not options:
        return Reply(
            kind="match",
            title=f"No GPU setup in my catalog serves {match.label} at {fmt_tokens(want)} tokens",
            summary="Try a smaller quantization, a shorter context, or more GPUs with pipeline parallelism.",
        )
    lines = []
    for o in options:
        setup = f"{o.count}x {o.gpu.name}" if o.count > 1 else o.gpu.name
        price = ""
        if o.gpu.price:
            unit = "/h" if o.gpu.price.kind == "cloud_hourly" else ""
            price = f", about ${o.price_usd:,.0f}{unit} ({o.gpu.price.kind} {o.gpu.price.date})"
        lines.append(
            f"- {setup}: {o.total_gib:.0f} GiB, context up to {fmt_tokens(o.result.max_model_len_fit)}, "
            f"{o.result.max_concurrency:g}x at {fmt_tokens(want)}{price}"
        )
    best = options[0]
    return Reply(
        kind="match",
        title=f"GPUs that serve {match.label} at {fmt_tokens(want)} tokens ({ENGINE_LABEL[engine]})",
        summary="Single cards first, then multi-GPU setups, least memory first.",
        sections=[Section("Options", body="\n".join(lines))],
        fixes=[Fix(engine, f"on {best.gpu.name}", best.result.command, "the first option above", rank=0)],
        data={"options": [_row(o, gpu=o.gpu.id, count=o.count, total_gib=o.total_gib) for o in options]},
    )


def _row(option: Any, **fields: Any) -> dict[str, Any]:
    """One option of a match reply's JSON: its fields, then the longest context it serves."""
    return {**fields, "max_model_len_fit": option.result.max_model_len_fit}


def match_models_reply(fields: dict[str, Any]) -> Reply:
    """Only a GPU: the catalog models that fit, best checkpoint each, biggest first."""
    gpu = resolve_gpu(str(fields["gpu"]))
    engine = fields.get("engine", "vllm")
    count = int(fields.get("gpus", 1))
    options = models_for_gpu(gpu, count=count, context=fields.get("max_model_len"), engine=engine)
    setup = f"{count}x {gpu.name}" if count > 1 else gpu.name
    if not options:
        return Reply(
            kind="match", title=f"No catalog model fits {setup} ({ENGINE_LABEL[engine]})", summary=USAGE
        )
    lines = [
        f"- {o.variant.id if o.variant else o.model.id} ({o.model.params_b:g}B): context up to "
        f"{fmt_tokens(o.result.max_model_len_fit)}, weights {o.result.weights_gib:.1f} GiB per GPU"
        for o in options
    ]
    return Reply(
        kind="match",
        title=f"Models that fit {setup} ({ENGINE_LABEL[engine]})",
        summary="Biggest models first, each with the highest-precision checkpoint that fits.",
        sections=[Section("Options", body="\n".join(lines))],
        data={"options": [_row(o, model=o.model.id, variant=o.variant and o.variant.id) for o in options]},
    )
