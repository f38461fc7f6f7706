"""``/vram``: parse the request as people type it and turn the calculator's answer into a Reply.

Accepted forms: ``gpu:4090 model:qwen-32b-awq context:32k engine:vllm`` (named, any order) and
free order ``4090 qwen-32b-awq`` (each word tried as a GPU, then as a model).
"""

from __future__ import annotations

from pydantic import ValidationError

from bot.numbers import parse_number, parse_token_count
from bot.reply import Fact, Fix, MemoryPicture, MemorySegment, Reply, Section
from calculator.estimate import VramRequest, VramResult, estimate
from calculator.resolve import NameNotFound, resolve_gpu, resolve_model
from calculator.units import KIB, fmt_tokens

KEY_ALIASES = {
    "gpu": "gpu",
    "card": "gpu",
    "model": "model",
    "engine": "engine",
    "context": "max_model_len",
    "ctx": "max_model_len",
    "max_model_len": "max_model_len",
    "max-model-len": "max_model_len",
    "gpus": "gpus",
    "tp": "tp",
    "utilization": "gpu_memory_utilization",
    "util": "gpu_memory_utilization",
    "gpu_memory_utilization": "gpu_memory_utilization",
    "kv_cache_dtype": "kv_cache_dtype",
    "kv": "kv_cache_dtype",
    "kv-cache-dtype": "kv_cache_dtype",
    "memory": "gpu_memory_gib",
    "vram": "gpu_memory_gib",
    "version": "vllm_version",
}
ENGINE_ALIASES = {
    "vllm": "vllm",
    "llama.cpp": "llama.cpp",
    "llamacpp": "llama.cpp",
    "llama-cpp": "llama.cpp",
    "llama": "llama.cpp",
    "ollama": "ollama",
    "sglang": "sglang",
}
LLAMA_KV = {"f16", "bf16", "q8_0", "q4_0", "q4_1", "q5_0", "q5_1", "iq4_nl", "f32"}

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
            try:
                resolve_gpu(word)
                named["gpu"] = word
                continue
            except NameNotFound:
                pass
        if "model" not in named:
            named["model"] = word
            continue
        raise VramInputError(f"I don't know what {word!r} is. {USAGE}")
    return named


def build_request(named: dict[str, str]) -> VramRequest:
    if "model" not in named or "gpu" not in named:
        raise VramInputError(USAGE)
    fields: dict[str, object] = {"model": named["model"], "gpu": named["gpu"]}
    engine = named.get("engine", "vllm").lower()
    if engine not in ENGINE_ALIASES:
        raise VramInputError(f"unknown engine {engine!r}; use vllm, llama.cpp, ollama or sglang")
    fields["engine"] = ENGINE_ALIASES[engine]
    if "max_model_len" in named:
        tokens = parse_token_count(named["max_model_len"])
        if not tokens:
            raise VramInputError(
                f"context {named['max_model_len']!r} is not a token count (e.g. 32768 or 32k)"
            )
        fields["max_model_len"] = tokens
    for key in ("gpus", "tp"):
        if key in named:
            value = parse_number(named[key])
            if value is None or value != int(value) or value < 1:
                raise VramInputError(f"{key} must be a whole number, got {named[key]!r}")
            fields[key] = int(value)
    if "gpu_memory_utilization" in named:
        value = parse_number(named["gpu_memory_utilization"])
        if value is None or not 0 < value <= 1:
            raise VramInputError("utilization must be between 0 and 1, e.g. 0.9")
        fields["gpu_memory_utilization"] = value
    if "gpu_memory_gib" in named:
        value = parse_number(named["gpu_memory_gib"].lower().removesuffix("gib").removesuffix("gb"))
        if not value:
            raise VramInputError("memory must be a number of GiB, e.g. memory:22.5")
        fields["gpu_memory_gib"] = value
    if "vllm_version" in named:
        fields["vllm_version"] = named["vllm_version"]
    if "kv_cache_dtype" in named:
        kv = named["kv_cache_dtype"].lower()
        if fields["engine"] in ("llama.cpp", "ollama"):
            if kv in ("fp8", "q8"):
                kv = "q8_0"
            if kv not in LLAMA_KV:
                raise VramInputError(f"unknown llama.cpp cache type {kv!r}; use f16, q8_0 or q4_0")
            fields["cache_type_k"] = kv
            fields["cache_type_v"] = kv
        else:
            fields["kv_cache_dtype"] = kv
    try:
        return VramRequest(**fields)
    except ValidationError as exc:
        first = exc.errors()[0]
        raise VramInputError(f"{'.'.join(str(x) for x in first['loc'])}: {first['msg']}") from exc


def vram_reply(result: VramResult) -> Reply:
    label = result.variant or result.model
    engine = {"vllm": "vLLM", "llama.cpp": "llama.cpp", "ollama": "Ollama", "sglang": "SGLang"}[result.engine]
    gpus = f"{result.gpus}x " if result.gpus > 1 else ""
    where = f"{label} on {gpus}{result.gpu_name} ({engine})"
    if result.fits:
        title = f"{where}: fits, {fmt_tokens(result.max_model_len)} tokens of context"
        summary = (
            f"The weights take {result.weights_gib:.1f} GiB per GPU; the KV cache gets {result.kv_cache_gib:.2f} GiB, "
            f"room for {fmt_tokens(result.max_model_len_fit)} tokens in one request"
            + (
                f" or about {result.max_concurrency:g} requests of {fmt_tokens(result.max_model_len)}"
                if result.max_concurrency >= 1
                else ""
            )
            + "."
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
        data=result.model_dump(),
    )


def answer(args: dict[str, str] | None = None, raw: str = "") -> Reply:
    try:
        request = build_request(parse_args(args, raw))
        return vram_reply(estimate(request))
    except (VramInputError, NameNotFound, ValueError) as exc:
        return Reply(kind="error", title="I could not answer that /vram", summary=str(exc))


def resolve_names(named: dict[str, str]) -> tuple[str, str]:
    """(model id, gpu id) for the names in a request; raises NameNotFound with suggestions."""
    return resolve_model(named["model"]).label, resolve_gpu(named["gpu"]).id
