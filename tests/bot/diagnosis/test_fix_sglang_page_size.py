"""SGLang's "Decode out of memory" with more tokens available than the step asked for: the paged
allocator's new-page estimate failed, not the pool.  The fix is the user's own command with
``--page-size 1`` (the one-token decode path), and only where the paste shows a page size above 1 that
the engine did not force; a pool that really ran out keeps the budget's fixes."""

from __future__ import annotations

import pytest

from knowledge.levers import Lever
from knowledge.loader import load_builtin
from tests.bot.diagnosis.helpers import ranked_fixes

COMMAND = (
    "python3 -m sglang.launch_server --model-path meta-llama/Llama-3.1-8B-Instruct --host 0.0.0.0"
    " --port 40000 --mem-fraction-static=0.5 --page-size 32"
)
ERROR = (
    "RuntimeError: Decode out of memory. Try to lower your batch size.\n"
    "Try to allocate 127 tokens.\n"
    "Available tokens: {available} (available_size={available} + evictable_size=0)\n"
)


def _paste(available: int, command: str = COMMAND) -> str:
    return f"{command}\nGPU 0: NVIDIA H100 80GB HBM3\n{ERROR.format(available=available)}"


def test_the_4602_example_gets_its_own_command_with_page_size_one():
    example = next(
        ex
        for s in load_builtin().signatures
        if s.signature.id == "sglang.decode_oom.crash"
        for ex in s.signature.examples
        if "--page-size 64" in ex.text
    )
    first = ranked_fixes(example.text)[0]
    assert first.command == (
        "python -m sglang.launch_server --mem-fraction-static 0.90 --model-path '<deepseek-v3/deeseek-r1>'"
        " --trust-remote-code --tp-size 8 --disable-cuda-graph --page-size 1"
    )
    assert first.change == "run with one token per KV page (--page-size 1)"


def test_memory_free_and_pages_above_one_gives_page_size_one_first():
    fixes = ranked_fixes(_paste(5248))
    assert fixes[0].command == (
        "python3 -m sglang.launch_server --model-path meta-llama/Llama-3.1-8B-Instruct --host 0.0.0.0"
        " --port 40000 --mem-fraction-static=0.5 --page-size 1"
    )
    assert "5,248 tokens free" in fixes[0].effect
    assert not any("--max-running-requests" in f.command for f in fixes)


def test_a_pool_that_really_ran_out_keeps_the_budget_fixes():
    commands = [f.command for f in ranked_fixes(_paste(100))]
    assert not any(c.endswith("--page-size 1") for c in commands)
    assert commands[0].endswith("--page-size 32 --max-running-requests 128")


def test_no_page_size_in_the_paste_gives_no_page_size_fix():
    plain = COMMAND.removesuffix(" --page-size 32")
    assert not any("--page-size" in f.command for f in ranked_fixes(_paste(5248, plain)))


def test_a_backend_that_forces_pages_gives_no_page_size_fix():
    forced = COMMAND + " --attention-backend flashmla"
    assert not any("--page-size 1" in f.command for f in ranked_fixes(_paste(5248, forced)))


def test_sglang_jax_is_not_given_an_sglang_command():
    jax = (
        "python3 -u -m sgl_jax.launch_server --model-path Qwen/Qwen3-8B --tp-size=4 --device=tpu --page-size 32\n"
        + ERROR.format(available=8064)
        + '  File "/opt/venv/lib/python3.12/site-packages/sgl_jax/srt/managers/scheduler.py", line 1056\n'
    )
    assert not any("--page-size 1" in f.command for f in ranked_fixes(jax))


def test_a_lever_condition_is_read_strictly():
    spec = {"id": "x", "remedies": ["x"], "knob": "none", "change": "c", "cost": ""}
    lever = Lever(**spec, when=["page_size > 1", "available_tokens > alloc_tokens", "not page_size_forced"])
    values = {"page_size": "64", "available_tokens": 2048, "alloc_tokens": 148}
    assert lever.holds(values.get) is True
    assert lever.holds({**values, "page_size": "1"}.get) is False
    assert lever.holds({**values, "page_size_forced": "1"}.get) is False
    assert lever.holds({"page_size": "64", "available_tokens": 2048}.get) is False  # a missing number
    with pytest.raises(ValueError, match="is not 'a > b' or 'not a'"):
        Lever(**spec, when=["page_size >= 1"])
