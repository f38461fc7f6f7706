"""The user's command line: reading a flag's value and writing it back with only the fix changed."""

from __future__ import annotations

import re

from bot.diagnosis.gguf import gguf_file
from bot.facts import PasteFacts
from calculator.commands import llamacpp_command, set_flags, vllm_command

TGI_FLAGS = [
    ("--max-batch-prefill-tokens",),
    ("--max-input-tokens", "--max-input-length"),
    ("--max-total-tokens",),
    ("--max-batch-total-tokens",),
    ("--num-shard",),
    ("--quantize",),
    ("--cuda-memory-fraction",),
]


def swap_model(command: str | None, old: str | None, new: str, default: str) -> str:
    """``command`` with the model ``old`` replaced by ``new``, else ``default`` when the command does not name it."""
    if command and old and old in command:
        return command.replace(old, new)
    return default


def tgi_command(facts: PasteFacts, changes: dict[str, str | None]) -> str:
    """The user's text-generation-launcher command (or a bare one) with only ``changes`` applied."""
    base = facts.context.get("command") or (
        f"text-generation-launcher --model-id {facts.context.get('model') or '<model>'}"
    )
    return set_flags(base, changes, TGI_FLAGS, set())


def flag_argument(command: str | None, *names: str) -> str | None:
    """The first value written after one of ``names`` (``--flag v`` or ``--flag=v``), whatever it looks like."""
    if not command:
        return None
    alternatives = "|".join(re.escape(n) for n in names)
    m = re.search(rf"(?:^|\s)(?:{alternatives})(?:=|\s+)(\S+)", command)
    return m.group(1) if m else None


def llama_cmd(facts: PasteFacts, changes: dict[str, str | None]) -> str:
    """The user's llama.cpp command (or ``llama-server -m <the GGUF>``) with only ``changes`` applied."""
    return llamacpp_command(facts.context.get("command"), gguf_file(facts), changes)


def flag_value(command: str | None, *names: str) -> str | None:
    """The value given to a flag in a command line (last one wins), ``""`` for a bare switch."""
    if not command:
        return None
    tokens = command.replace("\\\n", " ").split()
    found = None
    for i, tok in enumerate(tokens):
        name, _, inline = tok.partition("=")
        if name in names:
            if inline:
                found = inline
            elif i + 1 < len(tokens) and (
                not tokens[i + 1].startswith("-") or re.fullmatch(r"-[0-9.]+", tokens[i + 1])
            ):
                found = tokens[i + 1]
            else:
                found = ""
    return found


def int_flag(command: str | None, *names: str) -> int | None:
    value = flag_value(command, *names)
    if not value:
        return None
    m = re.fullmatch(r"([0-9]+)([kK]?)", value)
    if not m:
        return None
    return int(m.group(1)) * (1024 if m.group(2) else 1)


def served_model_name(facts: PasteFacts) -> str | None:
    """The model as the paste names it, else the catalog label."""
    name = facts.context.get("model")
    if name:
        return str(name)
    return facts.model.label if facts.model else None


def vllm_cmd(facts: PasteFacts, changes: dict[str, str | None]) -> str:
    """The user's own command (or ``vllm serve <model>``) with only ``changes`` applied."""
    return vllm_command(facts.context.get("command"), served_model_name(facts), changes)
