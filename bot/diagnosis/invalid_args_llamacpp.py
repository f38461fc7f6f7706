"""invalid_argument@llama.cpp: a flag value llama.cpp does not accept."""

from __future__ import annotations

import re

from bot.diagnosis.common import diagnosis_reply
from bot.diagnosis.gguf import gguf_file
from bot.facts import PasteFacts
from bot.reply import Fact, Fix, Reply
from calculator.commands import llamacpp_command, ollama_env_command
from calculator.kv import LLAMACPP_KV_BYTES

VALID_CACHE_TYPES = ("f32", "f16", "bf16", "q8_0", "q4_0", "q4_1", "iq4_nl", "q5_0", "q5_1")


CACHE_ALIASES = {
    "q8": "q8_0",
    "int8": "q8_0",
    "8bit": "q8_0",
    "fp8": "q8_0",
    "q4": "q4_0",
    "int4": "q4_0",
    "4bit": "q4_0",
    "q4_k": "q4_0",
    "q4_k_m": "q4_0",
    "q5": "q5_0",
    "q5_k": "q5_0",
    "fp16": "f16",
    "float16": "f16",
    "half": "f16",
    "fp32": "f32",
    "float32": "f32",
    "bfloat16": "bf16",
}


_FLAG_VALUES = {
    "--flash-attn": "on, off, auto",
    "-fa": "on, off, auto",
    "--split-mode": "none, layer, row (tensor on recent builds)",
    "-sm": "none, layer, row (tensor on recent builds)",
    "--numa": "distribute, isolate, numactl",
    "--fit": "on, off",
    "-fit": "on, off",
}


def invalid_argument_llamacpp(facts: PasteFacts) -> Reply:
    p = facts.params
    command = facts.context.get("command")
    model_file = gguf_file(facts)
    sig = facts.root.signature
    numbers: list[Fact] = []
    fixes: list[Fix] = []
    notes: list[str] = []
    if sig.endswith("flag_value"):
        flag = str(p.get("flag") or "")
        value = str(p.get("arg_value") or "")
        numbers += [Fact("flag", flag, "log"), Fact("value it got", repr(value), "log")]
        if flag in ("--flash-attn", "-fa") and (value.startswith("-") or not value):
            title = f"llama.cpp: the old bare -fa swallowed '{value}' as its value"
            summary = (
                "Since mid-2025 (≈b6325) -fa/--flash-attn takes a value: on, off or auto (the default). The old "
                f"style '-fa' followed by another flag makes llama.cpp read '{value}' as the value, so it stops "
                "before loading anything. Write -fa on (or drop -fa: auto turns it on where supported)."
            )
            fixes.append(
                Fix(
                    "llama.cpp",
                    "-fa on",
                    llamacpp_command(command, model_file, {"-fa": "on"}),
                    "flash attention on, and the next flag is read as a flag again",
                    "none",
                    1,
                )
            )
            fixes.append(
                Fix(
                    "llama.cpp",
                    "drop -fa",
                    llamacpp_command(command, model_file, {"-fa": None}),
                    "the default -fa auto enables it where the GPU supports it",
                    "none",
                    2,
                )
            )
            fixes.append(
                Fix(
                    "ollama",
                    "Ollama equivalent",
                    ollama_env_command({"OLLAMA_FLASH_ATTENTION": "1"}),
                    "Ollama passes --flash-attn itself; ≤ 0.29 it is off unless set (v0.30+: auto)",
                    "",
                    5,
                )
            )
        else:
            valid = _FLAG_VALUES.get(flag)
            title = f"llama.cpp: {flag} does not accept '{value}'"
            summary = f"{flag} was given '{value}', which it does not accept" + (
                f"; valid values are {valid}."
                if valid
                else ". `llama-server --help` lists the values it takes."
            )
            first = valid.split(",")[0].strip() if valid else "<value>"
            fixes.append(
                Fix(
                    "llama.cpp",
                    f"{flag} {first}",
                    llamacpp_command(command, model_file, {flag: first}),
                    f"a value {flag} accepts",
                    "",
                    1,
                )
            )
        return diagnosis_reply(title, summary, numbers, fixes, notes, data={"flag": flag, "value": value})

    bad = str(p.get("cache_type") or "")
    flag = str(p.get("flag") or "")
    evidence = " ".join(facts.root.evidence)
    if "does not divide" in evidence:
        m = re.search(r"n_embd_head_k=([0-9]+)", evidence)
        head = m.group(1) if m else "?"
        title = f"llama.cpp: {bad} cannot store this model's K cache (head size {head})"
        summary = (
            f"Quantized KV types pack 32 values per block, and this model's head size {head} is not a multiple of "
            f"32, so {bad} cannot hold its K cache. Only f16, bf16 or f32 work for it."
        )
        numbers.append(Fact("K head size", head, "log"))
        fixes.append(
            Fix(
                "llama.cpp",
                "f16 K cache",
                llamacpp_command(command, model_file, {"-ctk": "f16"}),
                "the model loads",
                "more KV memory than the quantized type",
                1,
            )
        )
        return diagnosis_reply(title, summary, numbers, fixes, notes, data={"cache_type": bad})
    if "different K" in evidence:
        title = "llama.cpp: this model needs the same K and V cache type"
        same = bad or "q8_0"
        summary = (
            "MLA models (DeepSeek V2/V3/R1, Kimi-K2, DSV4) keep one compressed latent per token instead of separate "
            f"K and V, so since late July 2026 llama.cpp requires -ctk and -ctv to be equal. Set both to {same}."
        )
        fixes.append(
            Fix(
                "llama.cpp",
                f"-ctk {same} -ctv {same}",
                llamacpp_command(command, model_file, {"-ctk": same, "-ctv": same}),
                "the model loads with the cache type you chose",
                "",
                1,
            )
        )
        return diagnosis_reply(title, summary, numbers, fixes, notes, data={"cache_type": bad})
    suggestion = (
        CACHE_ALIASES.get(bad.lower(), "q8_0") if bad.lower() not in VALID_CACHE_TYPES else bad.lower()
    )
    title = f"llama.cpp: '{bad}' is not a KV cache type" if bad else "llama.cpp: KV cache type not supported"
    summary = (
        f"{flag or '-ctk/-ctv'} was given '{bad}'. llama.cpp accepts {', '.join(VALID_CACHE_TYPES)} for the KV "
        f"cache — no K-quants (q4_K) and no fp8. The closest valid type is {suggestion}."
    )
    numbers.append(Fact("cache type given", bad or "?", "log"))
    which = "-ctv" if flag.endswith("-v") else "-ctk"
    changes = {which: suggestion}
    if suggestion not in ("f16", "f32", "bf16") and which == "-ctk":
        changes = {"-ctk": suggestion, "-ctv": suggestion, "-fa": "on"}
    fixes.append(
        Fix(
            "llama.cpp",
            f"{which} {suggestion}",
            llamacpp_command(command, model_file, changes),
            f"{suggestion} takes {LLAMACPP_KV_BYTES.get(suggestion, 2):g} bytes per value instead of 2 (f16)",
            "a quantized V cache needs flash attention (-fa on)"
            if suggestion not in ("f16", "f32", "bf16")
            else "",
            1,
        )
    )
    fixes.append(
        Fix(
            "ollama",
            "Ollama equivalent",
            ollama_env_command({"OLLAMA_KV_CACHE_TYPE": suggestion}),
            "v0.30+ passes the value straight to llama-server (≤ 0.29: f16, q8_0, q4_0 only)",
            "",
            5,
        )
    )
    data = {"cache_type": bad, "suggestion": suggestion}
    return diagnosis_reply(title, summary, numbers, fixes, notes, data=data)


RULES = {"invalid_argument@llama.cpp": invalid_argument_llamacpp}
