"""Held-out pastes (tests/data/wild_*.jsonl, by record id) re-wrapped the way a terminal or a chat user
does it: a hard wrap at the terminal's column, a Markdown list, a quote.  Each keeps the root finding and
the numbers of the plain paste (bench/prefix_recall.py measures it over every paste and wrapper)."""

from __future__ import annotations

import pytest

from bench.recall import extracted_values
from bot.detector import detect
from bot.unwrap import list_markers, unwrap
from tests.conftest import held_out_texts


def hard_wrap(text: str, width: int) -> str:
    """Every line cut at ``width`` columns, mid-word, as a terminal shows it."""
    return "\n".join(
        line[i : i + width] for line in text.split("\n") for i in range(0, max(len(line), 1), width)
    )


def each_line(text: str, marker: str | None, quote: str = "") -> str:
    """Every non-empty line a list item: ``marker``, or ``1. ``, ``2. ``, ... when it is None."""
    rows, n = [], 0
    for line in text.split("\n"):
        n += bool(line.strip())
        rows.append(quote + (marker or f"{n}. ") + line if line.strip() else quote.rstrip())
    return "\n".join(rows)


def _read(record_id: str, wrap) -> tuple[str | None, dict]:
    found = detect(wrap(held_out_texts()[record_id]))
    return (found.root.signature if found.root else None), extracted_values(found)


# --- a context number on a line the wrap cut ---------------------------------------------------------


def test_total_capacity_cut_mid_word_at_80_columns() -> None:
    # "... GPU 0 h" / "as a total capacity of 23.56 GiB": read from the line joined again
    root, values = _read("club3090-58-vllm-oom-title", lambda t: hard_wrap(t, 80))
    assert root == "pytorch.cuda_oom_partial.v0"
    assert values["gpu_total_gib"] == 23.56


def test_total_capacity_cut_at_120_columns() -> None:
    root, values = _read("vllm29049-gcp-logging-torch-oom", lambda t: hard_wrap(t, 120))
    assert root == "pytorch.cuda_oom.v0"
    assert values["gpu_total_gib"] == 79.11


def test_first_utilization_in_reading_order_not_the_uncut_later_one() -> None:
    # "--gpu-memory-utilizatio" / "n=0.9200 is equivalent to --gpu-memory-utilization=0.9129": the paste's
    # first value, as unwrapped, not the later one that happens to sit whole on one physical line
    root, values = _read("club3090-127-cudagraph-profiling", lambda t: hard_wrap(t, 80))
    assert root == "vllm.memory_report.available_kv"
    assert values["gpu_memory_utilization"] == 0.92


def test_a_findings_number_cut_at_the_line_end_is_read_whole() -> None:
    # "... Vulkan0 buffer of size 875352064" / "0": the plain line's match fills every group too, but the
    # joined line reads the number on
    root, values = _read("llamacpp18160-vulkan-buffer-size-limit-compute", lambda t: hard_wrap(t, 80))
    assert root == "llamacpp.gpu_oom.vulkan_buffer_limit"
    assert values["buffer_bytes"] == 8753520640


def test_line_cut_at_a_blank_after_a_colon_continues() -> None:
    # "... allocating 14136.04 MiB on device 0:" (80 columns) / " cudaMalloc failed: out of memory"
    root, values = _read("llamacpp16725-rocm-compute-pp", lambda t: hard_wrap(t, 80))
    assert root == "llamacpp.gpu_oom.compute"
    assert values["alloc_mib"] == 14136.04


def test_line_cut_at_a_blank_after_a_parenthesis_continues() -> None:
    # "... max seq len (131072)" / " is larger than ... KV cache (584" / "96). Try increasing ..."
    root, values = _read("vllm12865-v0-131072-58496", lambda t: hard_wrap(t, 80))
    assert root == "vllm.kv_cache_too_small.v0"
    assert (values["max_model_len"], values["kv_tokens"]) == (131072, 58496)


# --- Markdown lists and quotes -----------------------------------------------------------------------


def test_bulleted_wrapped_paste_keeps_its_numbers() -> None:
    root, values = _read("copilotgw55-request-tokens-wrapped", lambda t: each_line(t, "- "))
    assert root == "llamacpp.context_exceeded.server"
    assert (values["requested_tokens"], values["n_ctx"]) == (124315, 123904)


def test_numbered_paste_keeps_its_root() -> None:
    root, values = _read("glm53spark47-free-desired-split", lambda t: each_line(t, None))
    assert root == "vllm.memory_report.kv_cache_memory_suggestion"
    assert (values["free_gib"], values["gpu_memory_utilization"]) == (110.37, 0.87)


def test_quoted_numbered_paste_keeps_its_root() -> None:
    root, values = _read("vllm36720-rocm-free-mem-wrapped", lambda t: each_line(t, None, "> "))
    assert root == "vllm.gpu_memory_in_use.startup_free"
    assert (values["free_gib"], values["gpu_memory_utilization"]) == (1.33, 0.95)


def test_one_list_item_holding_the_paste_is_dedented() -> None:
    root, values = _read("arcb70-4-wrapped-and-cut", lambda t: "- " + t.replace("\n", "\n  "))
    assert root == "vllm.kv_cache_too_small.v1"
    assert values["max_model_len"] == 100000


def test_quoted_bullets_read_as_the_plain_paste() -> None:
    text = held_out_texts()["sdnext4043-gated-columns"]
    assert detect(each_line(text, "- ", "> ")).root.signature == "common.hub_gated"
    assert _lines(each_line(text, "- ", "> ")) == _lines(text)  # its blank lines lost their blanks


def _lines(text: str) -> list[str]:
    return [line for line in unwrap(text).split("\n") if line.strip()]


def test_multi_line_quote_marker_goes() -> None:
    text = held_out_texts()["vllm12865-v0-131072-58496"]
    assert unwrap(">>> " + text) == unwrap(text)


@pytest.mark.parametrize(
    "text",
    [
        # a "- " on some lines of a run only: part of the log
        "ValueError: bad config\n- max_model_len: 4096\n- gpu_memory_utilization: 0.9",
        "- one\n* two",  # two kinds of bullet
        "- a single item",  # one line: nothing says it is a list
        "1. Run it\n   then\nstop",  # the item's last line is not indented to its text
    ],
)
def test_markers_that_are_not_a_list_stay(text: str) -> None:
    assert list_markers(text) == text


def test_list_markers_stripped_exactly() -> None:
    text = '- INFO start\n-   File "x.py", line 1\n\n- ERROR boom\n\n10. a\n11. b'
    assert list_markers(text) == 'INFO start\n  File "x.py", line 1\n\nERROR boom\n\na\nb'


def test_a_wrap_just_before_a_closing_backtick_is_joined() -> None:
    # messages quote names in backticks (transformers' model type, vLLM's settings); 80 columns can cut
    # right before the closing one, which then opens the next line
    first = "ValueError: The checkpoint you are trying to load has model type `qwen3_omni_moe"
    assert len(first) == 80
    text = first + "\n` but Transformers does not recognize this architecture."
    views = detect(text).normalized.views
    assert [v.data for v in views[1:2]] == [
        first.encode() + b"` but Transformers does not recognize this architecture."
    ]
    assert detect(text).root.signature == "common.transformers_unknown_model_type"
    assert len(detect(first + "\n```log\nINFO start").normalized.views) == 1  # a fence opens a record
