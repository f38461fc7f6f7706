"""invalid_argument@vllm: batched tokens below max_num_seqs, an unknown KV-cache dtype."""

from __future__ import annotations

import re

from bot.diagnosis.commands import vllm_cmd
from bot.diagnosis.common import diagnosis_reply, generic
from bot.diagnosis.engine_facts import vllm_version_note
from bot.facts import PasteFacts
from bot.reply import Fact, Fix, Reply
from calculator.units import fmt_tokens

KV_CACHE_DTYPES_OLD = ["auto", "fp8", "fp8_e4m3", "fp8_e5m2"]


_KV_DTYPE_HINTS = {
    "fp16": "auto",
    "float16": "auto",
    "half": "auto",
    "bf16": "auto",
    "bfloat16": "auto",
    "float8": "fp8",
    "fp8_e4m3fn": "fp8_e4m3",
    "e4m3": "fp8_e4m3",
    "e5m2": "fp8_e5m2",
    "int8": "fp8",
    "int4": "fp8",
    "q8_0": "fp8",
    "q4_0": "fp8",
    "uint8": "fp8",
}


def invalid_argument(facts: PasteFacts) -> Reply:
    sig = facts.root.signature
    if sig.endswith("batched_lt_seqs"):
        return _batched_lt_seqs(facts)
    if sig.endswith("kv_cache_dtype"):
        return _bad_kv_dtype(facts)
    return generic(facts)


def _batched_lt_seqs(facts: PasteFacts) -> Reply:
    p = facts.params
    mnbt = p.get("max_num_batched_tokens")
    seqs = p.get("max_num_seqs")
    if not mnbt or not seqs:
        return generic(facts)
    title = f"vLLM: max_num_batched_tokens {fmt_tokens(mnbt)} is below max_num_seqs {fmt_tokens(seqs)}"
    summary = (
        "Every running sequence needs at least one token of each batch, so vLLM requires "
        f"max_num_batched_tokens >= max_num_seqs: {fmt_tokens(mnbt)} < {fmt_tokens(seqs)}. "
        "Lower max_num_seqs to the batch size or raise the batch size to max_num_seqs."
    )
    seqs_given = bool(facts.context.get("max_num_seqs"))
    numbers = [
        Fact("max_num_batched_tokens", fmt_tokens(mnbt), "log"),
        Fact("max_num_seqs", fmt_tokens(seqs), "log"),
    ]
    fixes = [
        Fix(
            "vllm",
            f"cap concurrent sequences at {fmt_tokens(mnbt)}",
            vllm_cmd(facts, {"--max-num-seqs": str(mnbt)}),
            f"at most {fmt_tokens(mnbt)} requests run at once; batch size unchanged",
            "fewer concurrent requests; the rest queue",
            rank=1,
        ),
        Fix(
            "vllm",
            f"raise max_num_batched_tokens to {fmt_tokens(seqs)}",
            vllm_cmd(facts, {"--max-num-batched-tokens": str(seqs)}),
            f"{fmt_tokens(seqs)} sequences can decode together",
            f"the profiled activation peak grows {seqs / mnbt:.1f}x, taken from the KV cache",
            rank=2,
        ),
    ]
    notes = []
    if not seqs_given:
        notes.append(
            f"max_num_seqs {fmt_tokens(seqs)} is vLLM's default: setting --max-num-batched-tokens alone below "
            "it triggers this"
        )
    vllm_version_note(facts, notes)
    data = {"max_num_batched_tokens": mnbt, "max_num_seqs": seqs}
    return diagnosis_reply(title, summary, numbers, fixes, notes, data=data, numbers_always=True)


def _valid_values(facts: PasteFacts) -> list[str]:
    text = " ".join(facts.root.evidence)
    m = re.search(r"Valid values are:?\s*\[([^\]]*)\]", text)
    if not m:
        return []
    return [v.strip().strip("'\"") for v in m.group(1).split(",") if v.strip().strip("'\"")]


def _bad_kv_dtype(facts: PasteFacts) -> Reply:
    bad = str(facts.params.get("kv_cache_dtype") or "?")
    valid = _valid_values(facts)
    valid_src = "log"
    if not valid:
        valid, valid_src = KV_CACHE_DTYPES_OLD, "estimated"
    suggestion = _KV_DTYPE_HINTS.get(bad.lower(), "fp8")
    if suggestion not in valid:
        suggestion = "auto"
    fp8_ok = facts.gpu.fp8_kv_cache if facts.gpu is not None else None
    title = f"vLLM: '{bad}' is not a valid --kv-cache-dtype"
    summary = (
        f"--kv-cache-dtype takes one of a fixed list, and '{bad}' is not in it for this vLLM "
        f"(valid: {', '.join(valid)}). "
        + (
            "For a smaller KV cache use fp8, which stores one byte per value: half of the default 'auto' "
            "(the model's 16-bit dtype)."
            if suggestion.startswith("fp8")
            else "'auto' stores the KV cache in the model's own 16-bit dtype."
        )
    )
    numbers = [
        Fact("--kv-cache-dtype given", bad, "log"),
        Fact("valid values", ", ".join(valid), valid_src),
    ]
    fixes = [
        Fix(
            "vllm",
            f"--kv-cache-dtype {suggestion}",
            vllm_cmd(facts, {"--kv-cache-dtype": suggestion}),
            "halves the KV cache: twice the tokens in the same memory"
            if suggestion.startswith("fp8")
            else "the model's 16-bit KV cache (the default)",
            (
                "slight quality loss on long contexts"
                + ("; best on Ada, Hopper or Blackwell (or MI300)" if fp8_ok is None else "")
                + ("; this GPU has no FP8 units, so it saves memory only" if fp8_ok is False else "")
            )
            if suggestion.startswith("fp8")
            else "",
            rank=1,
        )
    ]
    if suggestion != "auto":
        fixes.append(
            Fix(
                "vllm",
                "--kv-cache-dtype auto",
                vllm_cmd(facts, {"--kv-cache-dtype": "auto"}),
                "the model's 16-bit KV cache (the default)",
                "",
                rank=2,
            )
        )
    notes = []
    if valid_src == "estimated":
        notes.append(
            "the valid list is the common one (v0.4-v0.11); v0.33 also knows float16, bfloat16, fp8_inc, "
            "nvfp4 and per-token-head int8/fp8/int4 formats"
        )
    vllm_version_note(facts, notes)
    data = {"kv_cache_dtype": bad, "suggested": suggestion}
    return diagnosis_reply(title, summary, numbers, fixes, notes, data=data, numbers_always=True)


RULES = {"invalid_argument@vllm": invalid_argument}
