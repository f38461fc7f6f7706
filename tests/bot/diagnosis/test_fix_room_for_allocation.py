"""An allocation outside SGLang's static share failed: the share is lowered by what the allocation lacked
(tried - free in the message, plus 0.25 GiB) as a fraction of the GPU's total."""

from __future__ import annotations

from bot.detector import detect
from bot.diagnosis import diagnose
from bot.formatter import to_markdown

OOM = (
    "[2025-03-11 08:02:17 TP0] Scheduler hit an exception: Traceback (most recent call last):\n"
    '  File "/sgl-workspace/sglang/python/sglang/srt/managers/scheduler.py", line 1796, in run_scheduler_process\n'
    "torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 3.50 GiB. GPU 0 has a total capacity of "
    "79.10 GiB of which 1.20 GiB is free.\n"
)


def test_the_lowered_fraction_from_the_users_command():
    command = (
        "python -m sglang.launch_server --model-path Qwen/Qwen2.5-72B-Instruct --mem-fraction-static 0.88\n"
    )
    reply = diagnose(detect(command + OOM))
    assert reply is not None
    fix = reply.fixes[0]
    # (3.50 - 1.20 + 0.25) / 79.10 = 0.032 -> 0.04 off 0.88
    assert (
        fix.command
        == "python -m sglang.launch_server --model-path Qwen/Qwen2.5-72B-Instruct --mem-fraction-static 0.84"
    )
    assert fix.verification["step"] == 0.04


def test_without_the_fraction_in_force_the_step_to_take_off_as_an_action_not_a_command():
    reply = diagnose(detect(OOM))
    assert reply is not None
    fix = reply.fixes[0]
    assert fix.command == ""
    assert (
        fix.change
        == "lower `--mem-fraction-static` by 0.04 from the value in force (in the server_args / engine-args line)"
    )
    chat = to_markdown(reply)
    assert "**Fix:** lower `--mem-fraction-static` by 0.04 from the value in force" in chat
    assert "```bash\n\n```" not in chat and "<the value" not in chat


def test_the_step_keeps_the_margin_for_what_moves():
    # (2.00 - 1.30 + 0.25) / 24.00 = 0.0396 -> 0.04 (without the margin it would be 0.03)
    text = OOM.replace("3.50 GiB", "2.00 GiB").replace(
        "79.10 GiB of which 1.20 GiB", "24.00 GiB of which 1.30 GiB"
    )
    reply = diagnose(detect(text))
    assert reply is not None
    assert reply.fixes[0].verification["step"] == 0.04
