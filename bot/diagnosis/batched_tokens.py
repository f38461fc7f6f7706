"""batched_tokens_too_small@vllm: max_num_batched_tokens below max_model_len without chunked prefill."""

from __future__ import annotations

from bot.diagnosis.commands import vllm_cmd
from bot.diagnosis.common import diagnosis_reply, generic
from bot.diagnosis.engine_facts import vllm_version_note
from bot.facts import PasteFacts
from bot.reply import Fact, Fix, Reply
from calculator.units import fmt_tokens
from calculator.versions import vllm_is_v0
from calculator.vllm import estimate_activation_gib


def batched_tokens_too_small(facts: PasteFacts) -> Reply:
    p = facts.params
    mnbt = p.get("max_num_batched_tokens") or facts.context.get("max_num_batched_tokens")
    want = p.get("max_model_len") or facts.context.get("max_model_len")
    if not mnbt or not want:
        return generic(facts)
    version = facts.vllm_version
    v0 = vllm_is_v0(version)
    command = str(facts.context.get("command") or "")
    disabled_flag = "--no-enable-chunked-prefill" in command
    ratio = want / mnbt
    title = (
        f"vLLM: max_num_batched_tokens {fmt_tokens(mnbt)} is below max_model_len {fmt_tokens(want)} "
        "with chunked prefill off"
    )
    summary = (
        "Without chunked prefill a prompt must be prefilled in one step, so one batch has to hold a whole "
        f"max_model_len prompt: {fmt_tokens(want)} tokens, but max_num_batched_tokens is {fmt_tokens(mnbt)}. "
        + (
            "Chunked prefill is on by default since the V1 engine (v0.8), so it was turned off here "
            "(--no-enable-chunked-prefill or enable_chunked_prefill=False). "
            if not v0
            else ""
        )
        + "Turn chunked prefill on; raising max_num_batched_tokens instead costs activation memory."
    )
    numbers = [
        Fact("max_num_batched_tokens", fmt_tokens(mnbt), "log"),
        Fact("max_model_len", fmt_tokens(want), "log"),
        Fact("max_model_len / max_num_batched_tokens", f"{ratio:,.1f}x", "computed"),
    ]
    model = facts.model.model if facts.model else None
    tp = facts.get("tp") or 1
    act_now = act_full = None
    if model is not None:
        seqs = facts.context.get("max_num_seqs") or 256
        act_now = estimate_activation_gib(model, mnbt, seqs, tp, v0)
        act_full = estimate_activation_gib(model, want, seqs, tp, v0)
        numbers.append(
            Fact(f"activation peak at {fmt_tokens(mnbt)} tokens", f"{act_now:.2f} GiB", "estimated")
        )
        numbers.append(
            Fact(f"activation peak at {fmt_tokens(want)} tokens", f"{act_full:.2f} GiB", "estimated")
        )
    fixes = [
        Fix(
            "vllm",
            "turn chunked prefill on",
            vllm_cmd(facts, {"--no-enable-chunked-prefill": None, "--enable-chunked-prefill": ""}),
            f"long prompts are prefilled {fmt_tokens(mnbt)} tokens per step; max_model_len stays "
            f"{fmt_tokens(want)}",
            "a long prompt takes several steps (decodes of other requests interleave)",
            rank=1,
        )
    ]
    if act_full is not None and act_now is not None:
        cost = (
            f"activation peak about {act_full:.1f} GiB instead of {act_now:.1f} GiB, taken from the KV cache"
        )
        if facts.gpu is not None and act_full > facts.gpu.total_gib * 0.5:
            cost += f": impractical on a {facts.gpu.total_gib:.0f} GiB GPU"
    else:
        cost = (
            f"the activation peak grows about linearly with it: {ratio:,.0f}x today's, taken from the KV cache"
            + ("; impractical at this size" if ratio > 16 else "")
        )
    fixes.append(
        Fix(
            "vllm",
            f"raise max_num_batched_tokens to {fmt_tokens(want)}",
            vllm_cmd(facts, {"--max-num-batched-tokens": str(want)}),
            "a whole max_model_len prompt fits in one step",
            cost,
            rank=3 if ratio > 16 else 2,
        )
    )
    fixes.append(
        Fix(
            "vllm",
            f"cap the context at {fmt_tokens(mnbt)} tokens",
            vllm_cmd(facts, {"--max-model-len": str(mnbt)}),
            f"keeps the batch size; requests up to {fmt_tokens(mnbt)} tokens",
            "longer prompts are rejected",
            rank=4,
        )
    )
    notes: list[str] = []
    if disabled_flag:
        notes.append("your command has --no-enable-chunked-prefill: the first fix removes it")
    if v0:
        notes.append("V0 (before v0.8) turned chunked prefill on by itself only for max_model_len above 32K")
    vllm_version_note(facts, notes)
    data = {"max_num_batched_tokens": mnbt, "max_model_len": want}
    return diagnosis_reply(
        title,
        summary,
        numbers,
        fixes,
        notes,
        f"Chunked prefill is off and max_num_batched_tokens {fmt_tokens(mnbt)} < max_model_len {fmt_tokens(want)}.",
        data=data,
        numbers_always=True,
    )


RULES = {"batched_tokens_too_small@vllm": batched_tokens_too_small}
