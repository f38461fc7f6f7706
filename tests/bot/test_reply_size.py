"""Issue 17: the first message each platform posts for a real paste is sized for chat (median at most
1,500 characters, none over 2,500) and prints no command twice.  Measured by bench/reply_size.py on the
development corpus and the held-out pastes."""

from __future__ import annotations

import pytest

from bench.reply_size import PLATFORMS, Message, first_messages, measure, records
from bot.reply import Fix, Reply

MEDIAN_MAX = 1500
HARD_MAX = 2500


@pytest.fixture(scope="module")
def measured():
    return measure()


def test_every_paste_is_measured(measured):
    summaries, _ = measured
    for platform in PLATFORMS:
        assert len(summaries[platform].sizes) == len(records())


@pytest.mark.parametrize("platform", PLATFORMS)
def test_first_message_median_and_max(measured, platform):
    stats = measured[0][platform].stats()
    assert stats["median"] <= MEDIAN_MAX
    longest = max(measured[1], key=lambda m: m.size if m.platform == platform else -1)
    assert stats["max"] <= HARD_MAX, f"{longest.record}: {longest.size} characters on {platform}"


def test_no_command_printed_twice_in_a_first_message(measured):
    twice = [
        (m.platform, m.record, m.repeated()) for m in measured[1] if m.platform in PLATFORMS and m.repeated()
    ]
    assert twice == []


def test_the_repeat_check_sees_a_command_printed_twice():
    """The check above must be able to fail: the same command as a fix and as another engine's line."""
    command = "vllm serve Qwen/Qwen2.5-7B-Instruct --max-model-len 16384"
    reply = Reply(
        kind="diagnosis",
        title="t",
        summary="s.",
        engine="vllm",
        fixes=[Fix("vllm", "cap", command, "fits"), Fix("sglang", "cap", command, "fits", rank=1)],
    )
    for message in first_messages("synthetic", reply):
        assert message.repeated() == [command], message.platform


def test_commands_are_code_blocks_and_spans_with_a_space():
    text = "use `--max-model-len` or\n```bash\nllama-server -c 4096\n```\n- on Ollama: `OLLAMA_CONTEXT_LENGTH=4096 ollama serve`"
    assert Message("r", "terminal", text, len(text)).commands() == [
        "llama-server -c 4096",
        "OLLAMA_CONTEXT_LENGTH=4096 ollama serve",
    ]
