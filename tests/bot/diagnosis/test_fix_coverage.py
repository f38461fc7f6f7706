"""Every built-in memory-error signature's own examples produce a fix, except the ones pinned here: their
examples print no number that sizes a fix and no number-free lever is sure to remove the failing term
(docs/benchmarks.md, bench/verify_fixes.py).  A signature that loses its fix, or gains one, fails here."""

from __future__ import annotations

from bot.core import GardenBot, Paste
from knowledge.loader import load_builtin
from knowledge.schema import MEMORY_CATEGORIES

# Why each one stays pinned (what was read; a fix here would be a number the paste does not give, or a
# command that could fail as printed):
NO_FIX_YET = {
    # The request table (ReqToTokenPool) has max_num_reqs rows: --max-running-requests (divided by the
    # DP size under DP attention), else min(max(max_total_tokens / context_len * 512, 2048), 4096)
    # (python/sglang/srt/model_executor/model_runner.py; sglang#4090 quotes it), and the scheduler
    # already caps its running requests at that size (managers/tp_worker.py: max_running_requests =
    # min(..., req_to_token_pool.size)).  So the error is rows held by something other
    # than the running batch: a chunked prefill keeps its row, the disaggregation decode pool reserves
    # rows for transfers (PR #6980), a pipeline-parallel profile run (the second example) and leaks.
    # The message gives the free rows, not the limit in force; the engine's own advice is not sure
    # (sglang#10408: 4 running requests at 1 % token usage, and --max-running-requests 1 failed the
    # same way: row 0 is reserved for padding, so a pool of N rows had N - 1 usable ones while the
    # scheduler admitted N, PR #23635, Apr 2026; per-rank sizing under DP attention, PR #14706); PR
    # #24359 (May 2026) caps admission by the free rows, but no release containing these is sourced
    # here, so no upgrade can be named and no --max-running-requests value is sure to clear it.
    "sglang.req_slots_exhausted",
}


def test_memory_errors_without_a_fix_are_only_the_pinned_ones():
    bot = GardenBot()
    without = set()
    for loaded in load_builtin().signatures:
        sig = loaded.signature
        if sig.category not in MEMORY_CATEGORIES or sig.category == "memory_report":
            continue
        replies = [bot.triage(Paste(ex.text, False, [])) for ex in sig.examples if ex.expect == "match"]
        if not any(r is not None and r.kind == "diagnosis" and r.fixes for r in replies):
            without.add(sig.id)
    assert without == NO_FIX_YET
