"""A torch OOM inside a container: PyTorch lists its own memory as "Process N has …" (no "this process"
line). That process is this one when its memory covers what PyTorch reserved — not another process."""

from __future__ import annotations

from bot.detector import detect
from bot.diagnosis import diagnose
from bot.formatter import to_markdown

PASTE = (
    "    key_states = torch.cat([past_key_value[0], key_states], dim=2)\n"
    "torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 128.00 MiB. GPU 0 has a total capacity of "
    "23.55 GiB of which 96.12 MiB is free. Process 3321 has 23.45 GiB memory in use. Of the allocated memory "
    "22.61 GiB is allocated by PyTorch, and 412.77 MiB is reserved by PyTorch but unallocated."
)


def test_own_memory_seen_from_a_container_is_not_another_process():
    reply = diagnose(detect(PASTE))
    assert reply is not None
    assert "another process" not in reply.title
    text = to_markdown(reply)
    assert "this process in total: **23.45 GiB**" in text
    assert "expandable_segments" not in text.split("**Assumptions**")[0]  # not fragmentation either


def test_a_real_other_process_is_still_named():
    other = PASTE.replace("Process 3321 has 23.45 GiB", "Process 3321 has 12.00 GiB").replace(
        "22.61 GiB is", "10.61 GiB is"
    )
    reply = diagnose(detect(other))
    assert reply is not None and "another process" in reply.title
