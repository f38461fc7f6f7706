"""The chat reply's 'Same model elsewhere' lines are commands: a fix without one is not printed empty."""

from __future__ import annotations

from bot.core import GardenBot, Paste
from bot.formatter import to_markdown
from bot.reply import Fix, Reply

# https://github.com/ollama/ollama/issues/11359: the runner's quoted error is a llama.cpp one, whose fix
# for llama.cpp is flags to add (no llama.cpp command is in the paste)
OLLAMA_RUNNER = (
    "Ollama call failed with status code 500: llama runner process has terminated: "
    "error loading model: unable to allocate CUDA0 buffer"
)


def test_an_other_engine_fix_without_a_command_is_not_a_chat_line():
    reply = Reply(kind="diagnosis", title="t", engine="ollama")
    reply.fixes = [
        Fix("any", "look", "nvidia-smi", "see"),
        Fix("llama.cpp", "fit", "", "fits", adds="--fit on"),
        Fix("vllm", "cap", "vllm serve m --max-model-len 4096", "fits"),
    ]
    own, others = reply.chat_fixes()
    assert [f.change for f in own] == ["look"]
    assert [f.engine for f in others] == ["vllm"]


def test_no_empty_command_in_the_markdown_reply():
    reply = GardenBot().triage(Paste(OLLAMA_RUNNER, False, []))
    assert reply is not None
    lines = to_markdown(reply).splitlines()
    assert not [line for line in lines if line.startswith("- on ") and "``" in line]
    assert "Same model elsewhere:" not in lines
