"""SGLang's request table ran out during the pipeline-parallel dynamic-chunking profile: the fix is to
start without --enable-dynamic-chunking, the only path that runs that profile (scheduler.py
init_chunked_prefill: enable_dynamic_chunking and pp_size > 1).

The other paths to `alloc_req_slots runs out of memory` get no fix: the table (ReqToTokenPool) has
max_num_reqs rows (--max-running-requests, per DP rank under DP attention, else min(max(max_total_tokens
/ context_len * 512, 2048), 4096): model_executor/model_runner.py) and the scheduler already caps its
running requests at that size (managers/tp_worker.py), so the error is rows held by something else (a
chunked prefill keeps its row, the disaggregation decode pool reserves rows, PR #6980; row 0 reserved for
padding, PR #23635; per-rank sizing, PR #14706).  The message gives the free rows, not the limit in
force, and the engine's own advice is not sure: in sglang#10408 --max-running-requests 1 failed the same
way.  PR #24359 (May 2026) caps admission by free rows, but no release containing it is sourced here."""

from __future__ import annotations

from bot.detector import detect
from bot.diagnosis import diagnose

PP_PROFILE = (  # the PP-rank profiling warning quoted in a public SGLang deployment note (hard-wrapped)
    "[PP0] [PP Dynamic Chunk] Failed to profile prefill latency:\n"
    "alloc_req_slots runs out of memory. Please set a smaller number for\n"
    "`--max-running-requests`. req_to_token_pool.available_size()=4"
)
COMMAND = (
    "python3 -m sglang.launch_server --model-path Qwen/Qwen3-32B --pp-size 3 --max-running-requests 4 "
    "--enable-dynamic-chunking\n"
)


def test_the_profile_failure_is_fixed_by_not_profiling():
    reply = diagnose(detect(PP_PROFILE))
    assert reply is not None and reply.signature == "sglang.req_slots_exhausted"
    fix = reply.fixes[0]
    assert (fix.engine, fix.change, fix.command, fix.adds) == (
        "sglang",
        "start without --enable-dynamic-chunking",
        "",
        "",
    )
    assert "than were free (4)" in fix.effect


def test_the_users_command_loses_the_flag():
    reply = diagnose(detect(COMMAND + PP_PROFILE))
    assert reply is not None
    assert reply.fixes[0].command == (
        "python3 -m sglang.launch_server --model-path Qwen/Qwen3-32B --pp-size 3 --max-running-requests 4"
    )


def test_without_the_profile_line_no_fix_is_printed():
    # sglang#10408: the same error while serving, with no cause the paste shows
    text = (
        "RuntimeError: alloc_req_slots runs out of memory. Please set a smaller number for "
        "`--max-running-requests`. self.req_to_token_pool.available_size()=1, num_reqs=2,"
    )
    reply = diagnose(detect(text))
    assert reply is not None and reply.signature == "sglang.req_slots_exhausted"
    assert reply.fixes == []
    assert reply.summary.startswith("SGLang keeps one row per running request in its request-to-token table.")
