"""gpu_oom@tgi: a TGI shard ran out of GPU memory."""

from __future__ import annotations

from bot.diagnosis.commands import tgi_command
from bot.diagnosis.common import bigger_hardware, diagnosis_reply
from bot.diagnosis.engine_facts import model_gpu_facts
from bot.diagnosis.fixes import tgi_quantize_fix, tgi_shard_fix
from bot.diagnosis.numbers import fmt_gib, fmt_size
from bot.diagnosis.torch_oom import (
    EXPANDABLE,
    read_torch_oom,
    torch_oom_notes,
    torch_oom_numbers,
    torch_oom_picture,
    torch_oom_summary,
)
from bot.facts import PasteFacts
from bot.reply import Fact, Fix, Reply
from calculator.units import fmt_tokens, round_down_clean


def tgi_gpu_oom(facts: PasteFacts) -> Reply:
    tp = int(facts.get("tp") or 1)
    o = read_torch_oom(facts, tp)
    prefill = facts.get("max_num_batched_tokens")
    loading = o.kind in ("weights",)
    title, summary, short = torch_oom_summary(o, facts)
    title = "TGI shard: " + title
    if o.kind not in ("absurd", "weights", "other_process"):
        summary = (
            "A TGI shard ran out of GPU memory after loading: at warm-up the prefill batch "
            "(--max-batch-prefill-tokens) or, while serving, the requests (--max-total-tokens) need more than "
            "the weights leave. " + summary
        )
    numbers = torch_oom_numbers(o)
    if prefill:
        numbers.append(Fact("--max-batch-prefill-tokens", fmt_tokens(int(prefill)), "log"))
    numbers += model_gpu_facts(facts)
    fixes: list[Fix] = []
    if not loading and o.kind != "absurd":
        target = round_down_clean(int(prefill) // 2) if prefill else 2048
        fixes.append(
            Fix(
                "tgi",
                f"--max-batch-prefill-tokens {target}",
                tgi_command(facts, {"--max-batch-prefill-tokens": str(target)}),
                "halves the prefill activation peak" if prefill else "a smaller prefill activation peak",
                "must stay >= --max-input-tokens",
                rank=1,
            )
        )
    fixes.append(
        tgi_quantize_fix(
            facts,
            "about a quarter of 16-bit weights"
            + (f": {fmt_gib(o.weights)} -> about {fmt_gib(o.weights / 4 + 0.3)}" if o.weights else ""),
            "slower kernels, some quality loss",
            1 if loading else 2,
        )
    )
    fixes.append(tgi_shard_fix(facts, tp, "halves the weights per GPU", 2 if loading else 3))
    if o.kind == "fragmentation":
        fixes.append(
            Fix(
                "any",
                "let the allocator grow segments",
                f"docker run -e {EXPANDABLE} ...   # or export it before text-generation-launcher",
                f"the {fmt_size(o.unallocated or 0)} cached becomes usable",
                rank=1,
            )
        )
    notes = torch_oom_notes(o) if o.unallocated is not None else []
    hw = bigger_hardware(facts, facts.get("max_model_len")) if loading and facts.model is not None else None
    return diagnosis_reply(
        title, summary, numbers, fixes, notes, short, [hw], torch_oom_picture(o), ranked=True
    )


RULES = {"gpu_oom@tgi": tgi_gpu_oom}
