"""Hostile inputs and the checks every reply must pass, shared by the hardening tests and
``scripts/reliability.py`` (which runs the same cases at full size and writes docs/reliability.md).

Nothing here asserts on time: sizes are parameters, so the tests run small and the report runs big.
Secrets are assembled at run time from harmless pieces, so no literal token sits in the repository.
"""

from __future__ import annotations

import math
import random
import re
from collections.abc import Iterable
from dataclasses import dataclass

from bot.reply import Reply

KV_PASTE = (
    "ValueError: The model's max seq len (131072) is larger than the maximum number of tokens that can be "
    "stored in KV cache (5728). Try increasing gpu_memory_utilization or decreasing max_model_len when "
    "initializing the engine."
)
OLLAMA_PASTE = "Error: model requires more system memory (42.1 GiB) than is available (31.2 GiB)"
CUDA_PASTE = (
    "torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 2.00 GiB. GPU 0 has a total capacity "
    "of 23.64 GiB of which 1.20 GiB is free."
)
LLAMA_PASTE = (
    "ggml_backend_cuda_buffer_type_alloc_buffer: allocating 4096.00 MiB on device 0: cudaMalloc failed: "
    "out of memory\nllama_init_from_model: failed to initialize the context: failed to allocate compute buffers"
)
ERRORS = [KV_PASTE, OLLAMA_PASTE, CUDA_PASTE, LLAMA_PASTE]

# ------------------------------------------------------------------------------------------------
# Regex denial of service: each piece alone is built to make a backtracking engine explode.


def _near_misses(examples: Iterable[str], size: int) -> str:
    """Every signature's own example with its last characters cut off and its numbers blown up:
    almost-matches that a backtracking engine retries from every position."""
    out: list[str] = []
    total = 0
    examples = [e for e in examples if e]
    while total < size and examples:
        for text in examples:
            cut = text[: max(1, len(text) - 3)]
            blown = re.sub(r"[0-9]+", lambda m: m.group(0) * 40, cut)
            for piece in (cut, blown, cut.replace(" ", "  " * 8)):
                out.append(piece)
                total += len(piece) + 1
            if total >= size:
                break
    return "\n".join(out)[:size]


def signature_examples() -> list[str]:
    from bot.detector import default_detector

    det = default_detector()
    return [ex.text for loaded in det.kb.signatures for ex in loaded.signature.examples]


def redos_inputs(size: int) -> dict[str, str]:
    """Name -> ``size`` characters of one pathological shape."""

    def rep(unit: str) -> str:
        return (unit * (size // len(unit) + 1))[:size]

    return {
        "digits": rep("9"),
        "spaces": rep(" "),
        "open parens": rep("("),
        "nested number parens": rep("(((1,"),
        "max seq len ( prefix": rep("max seq len ("),
        "almost a KV error, 60-digit number": rep(KV_PASTE[:112] + "1" * 60 + "\n"),
        "allocation stems": rep("allocating 1.0 MiB on device 0: cudaMalloc "),
        "Tried to allocate": rep("Tried to allocate "),
        "one line of 'a'": rep("a"),
        "log prefixes, no message": rep("INFO 04-12 08:21:19 [worker.py:267] " * 4 + "\n"),
        "ANSI without end": rep("\x1b[" + "1;" * 40),
        "tabs and pipes": rep("\t| " * 20 + "\n"),
        "tabs only": rep("\t"),
        "zero-width and bidi characters": rep("\u200b\u202e\u2066\ufeff1"),
        "secret stems": rep("hf_ sk-ant- ghp_ xoxb- AKIA Bearer api_key= -----BEGIN PRIVATE KEY-----"),
        "near-misses of every signature": _near_misses(signature_examples(), size),
    }


# ------------------------------------------------------------------------------------------------
# Secrets: one sample of every kind the redactor knows; assembled here, never written out whole.


def _body(
    seed: str, n: int, alphabet: str = "ABCDEFGHJKLMNPQRSTUVWXYZabcdefghijkmnopqrstuvwxyz23456789"
) -> str:
    rng = random.Random(seed)
    return "".join(rng.choice(alphabet) for _ in range(n))


@dataclass(frozen=True)
class Secret:
    kind: str  # as the reply names it
    text: str  # as it sits in a paste
    value: str  # the part that must never be seen again


def secret_samples() -> list[Secret]:
    """One secret of every kind the redactor knows."""
    key_lines = "\n".join(_body(f"key{i}", 64, "ABCDEFGHabcdefgh0123456789+/") for i in range(6))
    samples = [
        ("Hugging Face token", "HF_TOKEN=", "hf_" + _body("hf", 34)),
        ("OpenAI-style API key", "key: ", "sk-proj-" + _body("openai", 48)),
        ("Anthropic API key", "using ", "sk-ant-api03-" + _body("anthropic", 60)),
        (
            "AWS access key id",
            "AWS_ACCESS_KEY_ID=",
            "AKIA" + _body("aws", 16, "ABCDEFGHJKLMNPQRSTUVWXYZ234567"),
        ),
        ("AWS secret access key", "aws_secret_access_key = ", _body("awssecret", 40)),
        ("GitHub token", "GH_TOKEN=", "ghp_" + _body("github", 36)),
        ("Slack token", "SLACK_BOT_TOKEN=", "xoxb-12345678901-" + _body("slack", 24)),
        ("Slack app token", "SLACK_APP_TOKEN=", "xapp-1-A0001-" + _body("slackapp", 30)),
        (
            "Slack webhook URL",
            "webhook ",
            "https://hooks.slack.com/services/T0000/B0000/" + _body("hook", 24),
        ),
        (
            "Discord token",
            "DISCORD_TOKEN=",
            "M" + _body("dtok", 25) + "." + _body("dts", 6) + "." + _body("dhmac", 38),
        ),
        ("Discord webhook URL", "hook: ", "https://discord.com/api/webhooks/123456789/" + _body("dwh", 60)),
        ("Google API key", "GOOGLE_API_KEY=", "AIza" + _body("google", 35)),
        ("bearer token", "Authorization: Bearer ", _body("bearer", 48)),
        ("API key", "OPENAI_API_KEY=", _body("apikey", 32)),
        (
            "private key",
            "",
            "-----BEGIN OPENSSH PRIVATE KEY-----\n" + key_lines + "\n-----END OPENSSH PRIVATE KEY-----",
        ),
    ]
    return [Secret(kind, prefix + value, value) for kind, prefix, value in samples]


def secret_fragments(value: str) -> list[str]:
    """What must never be seen again: the secret's distinctive runs (16+ characters, the 24 first)."""
    return [run[:24] for run in re.findall(r"[A-Za-z0-9_+-]{16,}", value) if "PRIVATE" not in run]


def leaked(text: str, secrets: Iterable[Secret]) -> list[str]:
    return [frag for s in secrets for frag in secret_fragments(s.value) if frag in text]


# ------------------------------------------------------------------------------------------------
# Sane numbers in fix commands.

MAX_CONTEXT_TOKENS = 1 << 27  # 134M: ten times the longest context any model offers
MAX_MEMORY_GIB = 1 << 16  # 64 TiB: more than any one machine's RAM or GPU memory
MAX_PLAIN_NUMBER = 10**13  # bytes of such a machine, ports, ids: anything else is nonsense

TOKEN_FLAGS = {
    "--max-model-len",
    "-c",
    "--ctx-size",
    "--context-length",
    "OLLAMA_CONTEXT_LENGTH",
    "num_ctx",
    "--max-num-batched-tokens",
    "--max-total-tokens",
    "--max-input-tokens",
    "--max-batch-prefill-tokens",
    "--chunked-prefill-size",
    "max_length",
    "max_new_tokens",
    "--max-num-seqs",
    "--max-running-requests",
    "-ub",
    "-b",
    "--ubatch-size",
    "--batch-size",
    "-np",
    "--parallel",
    "OLLAMA_NUM_PARALLEL",
}
RATIO_FLAGS = {"--gpu-memory-utilization", "--mem-fraction-static", "--cuda-memory-fraction"}
_PAIR = re.compile(
    r"(--?[A-Za-z][\w-]*|\b[A-Za-z_][A-Za-z0-9_]*)(?:\s+|=|:\s*)[\"']?(-?[0-9][0-9.,]*)([A-Za-z]*)"
)
_NUMBER = re.compile(r"(?<![\w.])(-?)([0-9][0-9,]*(?:\.[0-9]+)?(?:[eE][+-]?[0-9]+)?)([A-Za-z]*)")
_NONFINITE = re.compile(r"(?i)(?<![\w.])-?(?:nan|inf|infinity)(?![\w])")
_UNIT_GIB = {"g": 1, "gb": 1, "gib": 1, "t": 1024, "tb": 1024, "tib": 1024, "m": 1 / 1024, "mib": 1 / 1024}


@dataclass(frozen=True)
class BadNumber:
    command: str
    text: str
    why: str


def _value(raw: str) -> float | None:
    try:
        return float(raw.replace(",", ""))
    except ValueError:
        return None


def bad_numbers(reply: Reply | None, paste: str = "") -> list[BadNumber]:
    """Numbers in the reply's fix commands that are negative, not finite, or absurd.

    A flag with its value exactly as the paste wrote it (the user's own command line, kept in the
    fix) is the user's, not our arithmetic, and is not judged.
    """
    if reply is None:
        return []
    from bot.normalize import _ANSI, clean_text

    squashed = " ".join(_ANSI.sub("", clean_text(paste)).split())  # the paste as the detector read it
    out: list[BadNumber] = []
    for fix in reply.fixes:
        cmd = fix.command
        for m in _NONFINITE.finditer(cmd):
            if m.group(0).lower() not in squashed.lower():
                out.append(BadNumber(cmd, m.group(0), "not a finite number"))
        for m in _PAIR.finditer(cmd):
            flag, raw, unit = m.group(1), m.group(2), m.group(3)
            if f"{flag} {raw}{unit}" in squashed or f"{flag}={raw}{unit}" in squashed:
                continue
            value = _value(raw)
            if value is None:
                continue
            if flag in TOKEN_FLAGS and not (1 <= value <= MAX_CONTEXT_TOKENS and value == int(value)):
                out.append(BadNumber(cmd, m.group(0), "token count out of range"))
            if flag in RATIO_FLAGS and not (0 < value <= 1):
                out.append(BadNumber(cmd, m.group(0), "fraction out of (0, 1]"))
        for m in _NUMBER.finditer(cmd):
            sign, raw, unit = m.groups()
            if m.group(0) in squashed:
                continue
            value = _value(raw)
            if value is None or not math.isfinite(value):
                out.append(BadNumber(cmd, m.group(0), "not a finite number"))
                continue
            if sign and cmd[max(0, m.start() - 1)] in " =\"'(:" and m.start() > 0:
                out.append(BadNumber(cmd, m.group(0), "negative"))
            factor = _UNIT_GIB.get(unit.lower())
            if factor is not None and value * factor > MAX_MEMORY_GIB:
                out.append(BadNumber(cmd, m.group(0), "more memory than any machine has"))
            elif value > MAX_PLAIN_NUMBER:
                out.append(BadNumber(cmd, m.group(0), "astronomically large"))
    return out


# ------------------------------------------------------------------------------------------------
# Rendering: every platform's view of a reply, as text a person (or a parser) would read.


def rendered_texts(reply: Reply) -> dict[str, str]:
    """Markdown, Discord embeds (+ reply.md) and Slack blocks (+ overflow file) of one reply."""
    import json

    from adapters.discord.render import render as discord_render
    from adapters.slack.render import render_reply
    from bot.formatter import to_markdown

    discord = discord_render(reply, chart=False)
    slack = render_reply(reply)
    discord_text = json.dumps([e.to_dict() for e in discord.embeds], ensure_ascii=False)
    discord_text += "".join(data.decode("utf-8", "replace") for _name, data in discord.files)
    slack_text = json.dumps(slack.payload(), ensure_ascii=False) + (slack.overflow or "")
    return {"markdown": to_markdown(reply), "discord": discord_text, "slack": slack_text}
