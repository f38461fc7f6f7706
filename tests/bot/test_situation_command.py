"""The user's command the fixes are built on is the run that failed, not a look at the machine."""

from __future__ import annotations

from bot.core import GardenBot, Paste
from bot.formatter import to_markdown
from tests.conftest import situation_of

OOM = "ggml_backend_cuda_buffer_type_alloc_buffer: allocating 98988.40 MiB on device 0: cudaMalloc failed: out of memory\n"


def test_a_list_devices_query_is_not_the_command_that_failed():
    # https://github.com/ggml-org/llama.cpp/issues/19764: the paste shows --list-devices run after the OOM
    text = OOM + ".\\llama-cli.exe --list-devices\nggml_cuda_init: found 1 ROCm devices:\n"
    assert situation_of(text).command is None
    reply = GardenBot().triage(Paste(text, False, []))
    assert reply is not None
    assert "--list-devices" not in to_markdown(reply)


def test_a_launch_command_is_still_read():
    text = "llama-server -m /models/qwen3-235b-q3.gguf -ngl 99 -c 32768\n" + OOM
    command = situation_of(text).command
    assert command is not None
    assert command.argv == ["llama-server", "-m", "/models/qwen3-235b-q3.gguf", "-ngl", "99", "-c", "32768"]
