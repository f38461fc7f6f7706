"""The log readers search only the lines that hold their literals: the same lines, in the same order,
as filtering every line of ``str.splitlines``, whatever the line ends."""

from __future__ import annotations

import pytest

from calculator.from_log import _following, _lines_with, read_log

LITERALS = ("print_info", "kv_size = ")
BODY = [
    "noise",
    "print_info: arch             = llama",
    "more noise print_info",
    "kv_size = 4096, offload = 1, type_k = 'f16', type_v = 'f16', n_layer = 32",
    "print_info and kv_size = both",
    "",
    "tail",
]


@pytest.mark.parametrize("end", ["\n", "\r\n", "\r", "\x0b", "\u2028", "\n\n"])
def test_lines_with_equals_filtering_splitlines(end):
    text = end.join(BODY * 3)
    expected = [line for line in text.splitlines() if any(x in line for x in LITERALS)]
    assert _lines_with(text, *LITERALS) == expected
    assert len(expected) == 12


def test_no_literal_no_lines():
    assert _lines_with("a\nb\nc", "print_info") == []


def test_following_reads_the_lines_after_the_stretch():
    text = "\n".join(f"line {i}" for i in range(100))
    start = text.index("line 10")
    got = _following(text, start, 2)
    assert got[0] == "line 10" and got[2] == "line 12" and len(got) >= 2 + 40


def test_vllm_config_dump_wrapped_after_many_lines():
    head = "\n".join(f"INFO filler {i}" for i in range(5000))
    dump = (
        "INFO 01-01 00:00:00 llm_engine.py:1] Initializing an LLM engine (v0.6.3) with config: model='org/m"
    )
    text = head + "\n" + dump + "\nodel', max_seq_len=4096, dtype=torch.float16\nINFO next record"
    found = read_log(text)
    assert found is not None and found.settings["model"] == "org/model"
    assert found.settings["max_seq_len"] == 4096 and found.settings["engine_version"] == "0.6.3"
