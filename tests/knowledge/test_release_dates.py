"""A log's date bounds the release it ran (knowledge/features.yaml `releases`): the newest release
tagged by then; no bound outside the table."""

from __future__ import annotations

from knowledge.features import release_at_log_date

OLLAMA_9685 = (  # ollama#9685, the reporter's log as a maintainer quoted it (March 2025)
    "time=2025-03-12T14:42:26.764Z level=INFO source=server.go:138 msg=offload library=cuda layers.model=63\n"
    'time=2025-03-12T14:42:26.819Z level=INFO source=server.go:405 msg="starting llama server"'
)


def test_a_dated_ollama_log_ran_the_newest_release_of_that_day_or_older():
    # v0.6.0 was tagged 2025-03-11, v0.6.1 on 2025-03-14
    assert release_at_log_date("ollama", OLLAMA_9685) == ("0.6.0", "2025-03-12")


def test_the_latest_date_in_the_paste_is_the_bound():
    text = "time=2025-03-12T01:00:00Z a\ntime=2025-03-26T01:00:00Z b"
    assert release_at_log_date("ollama", text) == ("0.6.3", "2025-03-26")


def test_no_bound_without_a_date_or_past_the_table():
    assert release_at_log_date("ollama", 'msg="starting llama server"') is None
    assert release_at_log_date("ollama", "time=2099-01-01T00:00:00Z x") is None
    assert release_at_log_date("ollama", "time=2019-01-01T00:00:00Z x") is None
    assert release_at_log_date("vllm", OLLAMA_9685) is None
