"""Build copy-paste commands: the user's own command with only the needed flags changed.

Commands are split on whitespace (not shlex: pasted Windows paths carry backslashes), flags that the
fix sets are removed in every spelling the engine accepts (``-c``/``--ctx-size``, ``--flag=value``),
and the new values are appended.
"""

from __future__ import annotations

import re
from collections.abc import Callable

# each group lists the spellings of one setting; the first is the one we write
VLLM_FLAGS = [
    ("--max-model-len", "--max_model_len"),  # vLLM's parser reads "_" as "-" in flag names
    ("--gpu-memory-utilization", "--gpu_memory_utilization"),
    ("--kv-cache-dtype",),
    ("--tensor-parallel-size", "-tp"),
    ("--pipeline-parallel-size", "-pp"),
    ("--max-num-seqs",),
    ("--max-num-batched-tokens",),
    ("--dtype",),
    ("--quantization", "-q"),
    ("--kv-cache-memory-bytes", "--kv-cache-memory"),
    ("--enable-chunked-prefill",),
    ("--no-enable-chunked-prefill",),
    ("--model",),
]
VLLM_SWITCHES = {"--enforce-eager", "--enable-chunked-prefill", "--no-enable-chunked-prefill"}

LLAMACPP_FLAGS = [
    ("-c", "--ctx-size"),
    ("-ctk", "--cache-type-k"),
    ("-ctv", "--cache-type-v"),
    ("-fa", "--flash-attn"),
    ("-ngl", "--n-gpu-layers", "--gpu-layers"),
    ("-np", "--parallel"),
    ("-ub", "--ubatch-size"),
    ("-b", "--batch-size"),
    ("-ts", "--tensor-split"),
    ("-nkvo", "--no-kv-offload"),
    ("-cmoe", "--cpu-moe"),
    ("-cram", "--cache-ram"),
    ("-kvu", "--kv-unified"),
    ("--no-mmap",),
    ("--mlock",),
    ("--fit", "-fit"),
    ("-m", "--model"),
]
LLAMACPP_SWITCHES = {
    "-nkvo",
    "--no-kv-offload",
    "-cmoe",
    "--cpu-moe",
    "-kvu",
    "--kv-unified",
    "--no-mmap",
    "--mlock",
}

SGLANG_FLAGS = [
    ("--mem-fraction-static",),
    ("--context-length",),
    ("--kv-cache-dtype",),
    ("--tp", "--tp-size", "--tensor-parallel-size"),
    ("--max-running-requests",),
    ("--chunked-prefill-size",),
    ("--model-path", "--model"),
]
TGI_FLAGS: list[tuple[str, ...]] = [
    ("--max-total-tokens",),
    ("--max-batch-prefill-tokens",),
    ("--num-shard",),
    ("--model-id",),
]
# per engine: the spellings of each setting, and the flags that take no value
FLAG_GROUPS: dict[str, tuple[list[tuple[str, ...]], set[str]]] = {
    "vllm": (VLLM_FLAGS, VLLM_SWITCHES),
    "llama.cpp": (LLAMACPP_FLAGS, LLAMACPP_SWITCHES),
    "sglang": (SGLANG_FLAGS, set()),
    "tgi": (TGI_FLAGS, set()),
}

# the flag each engine setting is written with (every spelling: spellings)
SETTING_FLAGS: dict[str, dict[str, str]] = {
    "vllm": {
        "max_len": "--max-model-len", "util": "--gpu-memory-utilization", "kv_dtype": "--kv-cache-dtype",
        "tp": "--tensor-parallel-size", "pp": "--pipeline-parallel-size", "max_seqs": "--max-num-seqs",
        "batched_tokens": "--max-num-batched-tokens", "eager": "--enforce-eager", "model": "--model",
        "quantization": "--quantization", "dtype": "--dtype",
    },
    "llama.cpp": {
        "max_len": "-c", "cache_type_k": "-ctk", "cache_type_v": "-ctv", "flash_attn": "-fa", "gpu_layers": "-ngl",
        "parallel": "-np", "ubatch": "-ub", "model": "-m", "no_kv_offload": "-nkvo",
    },
    "sglang": {
        "max_len": "--context-length", "util": "--mem-fraction-static", "kv_dtype": "--kv-cache-dtype",
        "tp": "--tp", "max_seqs": "--max-running-requests", "model": "--model-path",
    },
    "tgi": {"max_len": "--max-total-tokens", "model": "--model-id", "tp": "--num-shard"},
}  # fmt: skip

_CONTINUATION = re.compile(r"\\\s*\n")


def spellings(engine: str, flag: str) -> tuple[str, ...]:
    """Every spelling ``engine`` accepts for ``flag`` (the one we write first)."""
    return _group(flag, FLAG_GROUPS.get(engine, ([], set()))[0])


def _group(flag: str, groups: list[tuple[str, ...]]) -> tuple[str, ...]:
    return next((g for g in groups if flag in g), (flag,))


def is_value(token: str) -> bool:
    """A token that is a flag's value, not a flag (``-1`` and ``-0.5`` are values)."""
    return not token.startswith("-") or re.fullmatch(r"-[0-9.]+", token) is not None


def drop_flags(argv: list[str], drop: Callable[[str], bool], switches: set[str]) -> list[str]:
    """``argv`` without the flags ``drop`` names, each with its value (a flag of ``switches`` has none)."""
    out: list[str] = []
    i = 0
    while i < len(argv):
        tok = argv[i]
        name = tok.split("=", 1)[0]
        i += 1
        if drop(name):
            if "=" not in tok and name not in switches and i < len(argv) and is_value(argv[i]):
                i += 1
            continue
        out.append(tok)
    return out


def changed_argv(
    argv: list[str], changes: dict[str, str | None], groups: list[tuple[str, ...]], switches: set[str]
) -> list[str]:
    """``argv`` with each flag of ``changes`` set to its value (``""`` = a bare switch, ``None`` =
    removed), every spelling of it replaced."""
    names = {name for flag in changes for name in _group(flag, groups)}
    out = drop_flags(argv, names.__contains__, switches)
    for flag, value in changes.items():
        if value is not None:
            out += [flag] if value == "" else [flag, value]
    return out


def set_flags(
    command: str,
    changes: dict[str, str | None],
    groups: list[tuple[str, ...]],
    switches: set[str],
) -> str:
    """Return ``command`` with each flag of ``changes`` set to its value (``""`` = a bare switch,
    ``None`` = removed)."""
    return " ".join(changed_argv(_CONTINUATION.sub(" ", command).split(), changes, groups, switches))


_ENGINE_MARKERS = {
    "vllm": re.compile(r"\bvllm\b|vllm\.entrypoints|aphrodite"),  # Aphrodite is a vLLM fork: same flags
    "llama.cpp": re.compile(
        r"llama-(?:server|cli|run|bench|mtmd-cli)|llamafile|(?:^|[/\\ ])(?:main|server)(?:\.exe)? "
    ),
    "sglang": re.compile(r"sglang"),
}


def _own(base: str | None, engine: str) -> str | None:
    """The user's command only if it runs this engine: vLLM flags never go onto a llama-server line."""
    if base and _ENGINE_MARKERS[engine].search(base):
        return base
    return None


def vllm_command(base: str | None, model: str | None, changes: dict[str, str | None]) -> str:
    command = _own(base, "vllm") or f"vllm serve {model or '<model>'}"
    return set_flags(command, changes, VLLM_FLAGS, VLLM_SWITCHES)


def llamacpp_command(base: str | None, model_file: str | None, changes: dict[str, str | None]) -> str:
    command = _own(base, "llama.cpp") or f"llama-server -m {model_file or '<model>.gguf'}"
    return set_flags(command, changes, LLAMACPP_FLAGS, LLAMACPP_SWITCHES)


def sglang_command(base: str | None, model: str | None, changes: dict[str, str | None]) -> str:
    command = _own(base, "sglang") or f"python -m sglang.launch_server --model-path {model or '<model>'}"
    return set_flags(command, changes, SGLANG_FLAGS, set())


def ollama_env_command(env: dict[str, str], model_tag: str | None = None) -> str:
    """Server-wide settings: environment variables for ``ollama serve`` (or the systemd unit)."""
    assignments = " ".join(f"{k}={v}" for k, v in env.items())
    lines = [f"{assignments} ollama serve"]
    if model_tag:
        lines.append(f"ollama run {model_tag}")
    return "\n".join(lines)


def ollama_num_gpu_command(num_gpu: int, num_ctx: int, model_tag: str | None = None) -> str:
    """Layers on the GPU (``num_gpu``) and context for one model, inside ``ollama run``."""
    tag = model_tag or "<model>"
    return f"ollama run {tag}\n>>> /set parameter num_gpu {num_gpu}\n>>> /set parameter num_ctx {num_ctx}"


def ollama_num_ctx_command(num_ctx: int, model_tag: str | None = None) -> str:
    """Per-model setting: inside ``ollama run`` or in the API's options."""
    tag = model_tag or "<model>"
    return f"ollama run {tag}\n>>> /set parameter num_ctx {num_ctx}"
