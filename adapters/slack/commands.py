"""``/vram`` as Slack sends it → the neutral command, and the usage text for ``/vram help``."""

from __future__ import annotations

from typing import Any

from adapters.slack.events import slack_to_text
from bot.message import IncomingMessage, SlashCommand
from bot.reply import Reply, Section
from bot.vram import USAGE

HELP_WORDS = {"", "help", "-h", "--help", "?", "usage"}
EXAMPLES = "\n".join(
    [
        "/vram gpu:4090 model:qwen-32b-awq context:32k engine:vllm",
        "/vram 4090 qwen-32b-awq",
        "/vram gpu:h100 model:llama-3.1-70b gpus:2 kv:fp8",
        "/vram gpu:3090 model:qwen2.5-7b engine:llama.cpp context:64k kv:q8_0",
    ]
)


def is_help(text: str) -> bool:
    return text.strip().lower() in HELP_WORDS


def vram_help() -> Reply:
    return Reply(
        kind="help",
        title="/vram: does a model fit on a GPU, with what context and flags",
        summary=USAGE.replace("usage: ", "Usage: ", 1),
        sections=[Section("Examples", body=EXAMPLES)],
        notes=[
            "Options: gpu, model, context (32k or 32768), engine (vllm, llama.cpp, ollama, sglang), gpus, "
            "kv (fp8, q8_0), utilization (0.9), memory (GiB per GPU).",
        ],
    )


def command_text(command: dict[str, Any]) -> str:
    return slack_to_text(str(command.get("text") or "")).strip()


def from_vram_command(command: dict[str, Any]) -> IncomingMessage:
    """The slash command payload (``command``, ``text``, ``user_id``, ``channel_id``, ...)."""
    channel = str(command.get("channel_id") or "unknown")
    return IncomingMessage(
        platform="slack",
        command=SlashCommand(name="vram", raw=command_text(command)),
        user_id=str(command.get("user_id") or "unknown"),
        channel_id=channel,
        is_dm=command.get("channel_name") == "directmessage" or channel.startswith("D"),
        mentioned=True,
    )
