"""invalid_argument@ollama: an environment variable Ollama ignored."""

from __future__ import annotations

import re

from bot.diagnosis.common import diagnosis_reply
from bot.diagnosis.engine_facts import ollama_version
from bot.diagnosis.gguf import catalog_model, ollama_tag
from bot.diagnosis.invalid_args_llamacpp import CACHE_ALIASES, VALID_CACHE_TYPES
from bot.diagnosis.numbers import fmt_gib_or_mib, size_to_bytes
from bot.facts import PasteFacts
from bot.reply import Fact, Fix, Reply
from calculator.commands import ollama_env_command
from calculator.units import GIB, MIB

_OLLAMA_BYTES_VARS = {"OLLAMA_GPU_OVERHEAD", "OLLAMA_MAX_VRAM"}


_OLLAMA_INT_VARS = {
    "OLLAMA_NUM_PARALLEL",
    "OLLAMA_MAX_LOADED_MODELS",
    "OLLAMA_MAX_QUEUE",
    "OLLAMA_CONTEXT_LENGTH",
}


_OLLAMA_BOOL_VARS = {
    "OLLAMA_FLASH_ATTENTION",
    "OLLAMA_DEBUG",
    "OLLAMA_SCHED_SPREAD",
    "OLLAMA_NOPRUNE",
    "OLLAMA_NOHISTORY",
    "OLLAMA_MULTIUSER_CACHE",
    "OLLAMA_NEW_ENGINE",
    "OLLAMA_INTEL_GPU",
    "OLLAMA_NO_CLOUD",
}


_OLLAMA_DURATION_VARS = {"OLLAMA_KEEP_ALIVE", "OLLAMA_LOAD_TIMEOUT"}


def invalid_argument_ollama(facts: PasteFacts) -> Reply:
    p = facts.params
    sig = facts.root.signature
    numbers: list[Fact] = []
    fixes: list[Fix] = []
    notes: list[str] = []
    tag = ollama_tag(facts, catalog_model(facts))
    if sig.endswith("kv_cache_type"):
        bad = str(p.get("cache_type") or facts.get("cache_type_k") or "")
        version = ollama_version(facts)
        suggestion = CACHE_ALIASES.get(bad.lower(), "q8_0") if bad else "q8_0"
        if suggestion not in ("f16", "q8_0", "q4_0"):
            suggestion = "q8_0"
        title = (
            f"Ollama: OLLAMA_KV_CACHE_TYPE={bad} is not supported"
            if bad
            else "Ollama: unsupported OLLAMA_KV_CACHE_TYPE"
        )
        summary = (
            "Up to v0.29 Ollama's own engine accepts only f16, q8_0 and q4_0 for OLLAMA_KV_CACHE_TYPE and falls back "
            "to f16 for anything else, so the memory you planned to save is not saved. v0.30+ passes the value to "
            f"llama-server, which takes {', '.join(VALID_CACHE_TYPES)}."
        )
        if bad:
            numbers.append(Fact("OLLAMA_KV_CACHE_TYPE", bad, "log"))
        if version:
            numbers.append(Fact("Ollama version", ".".join(map(str, version)), "log"))
        fixes.append(
            Fix(
                "ollama",
                f"OLLAMA_KV_CACHE_TYPE={suggestion}",
                ollama_env_command({"OLLAMA_FLASH_ATTENTION": "1", "OLLAMA_KV_CACHE_TYPE": suggestion}, tag),
                f"{suggestion} is accepted on every version; it halves the KV cache vs f16 (q8_0) or quarters it (q4_0)",
                "≤ v0.29 also needs flash attention on (set here)",
                1,
            )
        )
        data = {"cache_type": bad, "suggestion": suggestion}
        return diagnosis_reply(title, summary, numbers, fixes, notes, data=data)

    key = str(p.get("env_key") or "")
    value = str(p.get("env_value") or "").strip('"')
    default = p.get("env_default")
    numbers += [Fact("variable", key, "log"), Fact("value given", value, "log")]
    if default is not None:
        numbers.append(Fact("value used instead", str(default), "log"))
    fixed = None
    explain = ""
    if key in _OLLAMA_BYTES_VARS:
        b = size_to_bytes(value)
        if b is not None:
            fixed = str(b)
            explain = f"{key} is a plain number of bytes: {value} = {b:,} bytes ({fmt_gib_or_mib(b / GIB)})."
        else:
            explain = f"{key} is a plain number of bytes (8 GiB = 8589934592)."
    elif key in _OLLAMA_INT_VARS:
        m = re.fullmatch(r"([0-9]+)\s*([kK])?", value)
        words = {"one": 1, "two": 2, "three": 3, "four": 4, "five": 5, "six": 6, "eight": 8, "sixteen": 16}
        if m:
            fixed = str(int(m.group(1)) * (1024 if m.group(2) else 1))
        elif value.lower() in words:
            fixed = str(words[value.lower()])
        explain = f"{key} takes a plain integer" + (f": {fixed}." if fixed else ".")
    elif key in _OLLAMA_BOOL_VARS:
        fixed = (
            "1"
            if value.lower() in ("on", "yes", "y", "enable", "enabled", "true")
            else "0"
            if value.lower() in ("off", "no", "n", "disable", "disabled")
            else "1"
        )
        explain = f"{key} takes 1/0 or true/false."
    elif key in _OLLAMA_DURATION_VARS:
        m = re.fullmatch(r"([0-9]+)\s*(s|sec|secs|m|min|mins|h|hr|hrs|hours?)", value.lower())
        if m:
            unit = m.group(2)[0]
            fixed = f"{m.group(1)}{unit}"
        explain = f"{key} takes a Go duration (30s, 10m, 1h; -1 = forever) or a number of seconds."
    title = f"Ollama ignored {key}={value}" + (f" — write {key}={fixed}" if fixed else "")
    summary = (
        f"Ollama could not parse {key}={value} and used the default ({default if default is not None else 'unset'}) "
        f"instead, so the setting had no effect. {explain}"
    )
    if key == "OLLAMA_GPU_OVERHEAD":
        summary += (
            " With the value ignored, Ollama reserved no extra VRAM and planned the layers right up to the free "
            "memory it measured."
        )
    if fixed is None:
        fixes.append(
            Fix(
                "ollama",
                f"a valid {key}",
                ollama_env_command({key: "<value>"}, tag),
                explain or "see ollama serve --help for the variable's format",
                "",
                1,
            )
        )
    else:
        fixes.append(
            Fix(
                "ollama",
                f"{key}={fixed}",
                ollama_env_command({key: fixed}, tag) + f"\n# docker compose: environment: - {key}={fixed}\n"
                f'# systemd: systemctl edit ollama  ->  [Service] Environment="{key}={fixed}"',
                "the setting takes effect at the next ollama serve",
                "",
                1,
            )
        )
    if key == "OLLAMA_GPU_OVERHEAD":
        mib = int(int(fixed) / MIB) if fixed else 8192
        fixes.append(
            Fix(
                "llama.cpp",
                f"the same headroom in llama.cpp: --fit-target {mib}",
                f"LLAMA_ARG_FIT_TARGET={mib} llama-server -m <model>.gguf",
                f"--fit keeps {mib} MiB free per GPU (default 1024)",
                "fewer layers on the GPU",
                3,
            )
        )
        notes.append(
            "From Ollama v0.30 OLLAMA_GPU_OVERHEAD only feeds Ollama's own estimate; llama-server's margin is "
            "LLAMA_ARG_FIT_TARGET (MiB, default 1024), which Ollama passes through."
        )
    data = {"env_key": key, "env_value": value, "fixed": fixed}
    return diagnosis_reply(title, summary, numbers, fixes, notes, data=data)


RULES = {"invalid_argument@ollama": invalid_argument_ollama}
