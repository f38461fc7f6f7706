"""The user's command with a fix's flags: every spelling the engine accepts is replaced, not doubled."""

from __future__ import annotations

from bot.shell import find_command, render
from bot.situation import _settings
from calculator.commands import FLAG_GROUPS


def _render(line: str, changes: dict[str, str | None]) -> str:
    command = find_command(line)
    assert command is not None
    groups, switches = FLAG_GROUPS[command.engine]
    return render(command, changes, groups, switches)


def test_vllm_underscore_spelling_is_replaced():
    # vLLM's argument parser reads "_" as "-" in flag names, so --max_model_len is the same setting
    line = "vllm serve Qwen/Qwen2.5-7B-Instruct --max_model_len 32768 --gpu_memory_utilization=0.8"
    out = _render(line, {"--max-model-len": "5120", "--gpu-memory-utilization": "0.95"})
    assert out == "vllm serve Qwen/Qwen2.5-7B-Instruct --max-model-len 5120 --gpu-memory-utilization 0.95"


def test_underscore_spellings_are_read_as_settings():
    command = find_command("vllm serve m --max_model_len 32768 --gpu_memory_utilization=0.8")
    settings = _settings("vllm", command, {})
    assert settings["max_len"].value == 32768
    assert settings["util"].value == 0.8


def test_llamacpp_long_model_flag_is_read():
    command = find_command("llama-server --model /m/qwen2.5-7b-instruct-q4_k_m.gguf -c 8192")
    assert command is not None and command.flag("-m", "--model") == "/m/qwen2.5-7b-instruct-q4_k_m.gguf"
    assert _settings("llama.cpp", command, {})["max_len"].value == 8192
