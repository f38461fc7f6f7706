"""llama.cpp: the compute buffer did not fit (or has an absurd size)."""

from __future__ import annotations

from bot.diagnosis.commands import flag_argument, llama_cmd
from bot.diagnosis.common import diagnosis_reply
from bot.diagnosis.engine_facts import evidence_has, model_spec
from bot.diagnosis.llamacpp_facts import alloc_mib, device_total_mib, llama_numbers
from bot.diagnosis.numbers import fmt_gib, fmt_mib
from bot.facts import PasteFacts
from bot.reply import Fact, Fix, Reply
from calculator.catalog import gpus
from calculator.llamacpp import compute_buffer_bytes
from calculator.units import MIB, round_down_clean


def _max_discrete_gib() -> float:
    return max(g.total_gib for g in gpus() if not g.unified_memory)


def llama_compute_oom(facts: PasteFacts) -> Reply:
    p = facts.params
    alloc = alloc_mib(facts) or 0.0
    device = str(p.get("device", "0"))
    command = facts.context.get("command")
    ub = flag_argument(command, "-ub", "--ubatch-size")
    ub = int(ub) if ub and ub.isdigit() else 512
    fa = str(facts.get("flash_attn") or "").lower()
    fa_on = fa in ("on", "enabled", "true", "1")
    n_ctx = facts.get("n_ctx")
    multi = (
        device != "0"
        or flag_argument(command, "-ts", "--tensor-split") is not None
        or evidence_has(facts, "pipeline parallelism")
    )
    retried = bool(facts.context.get("pp_retry")) or evidence_has(
        facts, "retrying without pipeline parallelism"
    )
    kv_dev = p.get("kv_buffer_mib")
    avail, _ = device_total_mib(facts)
    model = model_spec(facts)
    expected = None
    if model is not None and n_ctx:
        expected = compute_buffer_bytes(model, int(n_ctx), ub, fa_on) / MIB * (4 if multi else 1)
    absurd = (
        alloc / 1024 > _max_discrete_gib()
        or (kv_dev is not None and alloc > 100 * kv_dev and alloc > 32 * 1024)
        or (avail is not None and alloc > 4 * avail)
        or (expected is not None and alloc > 20 * expected)
    )

    if absurd:
        title = f"llama.cpp: a {fmt_gib(alloc / 1024)} compute buffer on device {device} is a bug, not your settings"
        summary = (
            f"The compute buffer is scratch space for one micro-batch; it is normally hundreds of MiB to a few GiB. "
            f"{fmt_mib(alloc)} on device {device}"
            + (f" (next to a {fmt_mib(kv_dev)} KV cache on the same GPU)" if kv_dev is not None else "")
            + " is beyond any GPU and any sane graph: the graph was sized wrongly (seen with MLA / fork-specific "
            "attention paths and multi-GPU pipeline copies). Update the build, try without the feature that changes "
            "the graph, and report it with the full log."
        )
        short = "An absurd compute-buffer size: a llama.cpp (fork) bug."
    else:
        size = f" {fmt_gib(alloc / 1024)}" if alloc else ""
        title = f"llama.cpp: the{size} compute buffer did not fit on device {device}"
        if multi:
            title += " (llama.cpp retries without pipeline parallelism)"
        sent = [
            "Weights and KV cache were in place; then the compute buffer"
            + (f" ({fmt_mib(alloc)})" if alloc else "")
            + " failed. It grows with the "
            f"micro-batch (-ub {ub})"
            + (
                ""
                if fa_on
                else " and, without flash attention, with n_ctx x heads (the f32 attention scores)"
            )
            + "."
        ]
        if multi:
            sent.append(
                "With several GPUs and all layers offloaded llama.cpp enables pipeline parallelism, which keeps "
                "n_copies (4) of these buffers; when that fails it logs 'compute buffer allocation failed, retrying "
                "without pipeline parallelism' and tries one copy"
                + (f" (about {fmt_mib(alloc / 4)})." if alloc else ".")
            )
            if retried:
                sent.append(
                    "Your log shows that retry: unless another allocation fails after it, the out-of-memory was "
                    "recovered and non-fatal."
                )
            else:
                sent.append(
                    "If your log continues past that line (slots initialize, the server listens), this OOM was "
                    "recovered and non-fatal; only a second failure stops the load."
                )
        summary = " ".join(sent)
        short = "The compute buffer did not fit" + (
            " (retried without pipeline parallelism)." if multi else "."
        )

    numbers = llama_numbers(facts, alloc or None, "compute buffer that failed")
    numbers.append(
        Fact(
            "micro-batch (-ub)",
            str(ub),
            "log" if flag_argument(command, "-ub", "--ubatch-size") else "estimated",
        )
    )
    numbers.append(Fact("flash attention", fa or "auto/unknown", "log" if fa else "estimated"))
    if expected is not None:
        numbers.append(Fact("expected compute buffer for this model", fmt_mib(expected), "estimated"))

    fixes: list[Fix] = []
    if absurd:
        fixes.append(
            Fix(
                "llama.cpp",
                "rule out automatic fitting",
                llama_cmd(facts, {"-fit": None, "--fit": "off"}),
                "if --fit's dry run sized the graph, this shows it",
                "builds before b7407 have no --fit: skip this one",
                rank=1,
            )
        )
        fixes.append(
            Fix(
                "llama.cpp",
                "a smaller micro-batch to see whether the size tracks it",
                llama_cmd(facts, {"-ub": "256", "-b": "256"}),
                "a real compute graph shrinks in proportion; a bogus size usually does not",
                "slower prompt processing",
                rank=2,
            )
        )
        fixes.append(
            Fix(
                "any",
                "update and report",
                "git pull && cmake --build build --config Release -j   # then re-run; if it persists, open an issue with the full log",
                "the graph-size bug may already be fixed upstream",
                rank=3,
            )
        )
    else:
        for new_ub in (512, 256):
            if ub > new_ub:
                fixes.append(
                    Fix(
                        "llama.cpp",
                        f"smaller micro-batch (-ub {new_ub})",
                        llama_cmd(
                            facts,
                            {"-ub": str(new_ub), "-b": str(max(new_ub, 2048 if new_ub == 512 else new_ub))},
                        ),
                        "the compute buffer scales with -ub: "
                        + (
                            f"about {fmt_mib(alloc * new_ub / ub)} instead of {fmt_mib(alloc)}"
                            if alloc
                            else f"{new_ub / ub:.0%} of its size"
                        ),
                        "slower prompt processing",
                        rank=1 if new_ub == 512 else 2,
                    )
                )
                break
        else:
            fixes.append(
                Fix(
                    "llama.cpp",
                    "smaller micro-batch (-ub 128)",
                    llama_cmd(facts, {"-ub": "128"}),
                    f"about {fmt_mib(alloc * 128 / ub)} instead of {fmt_mib(alloc)}"
                    if alloc
                    else f"{128 / ub:.0%} of its size",
                    "slower prompt processing",
                    rank=1,
                )
            )
        if not fa_on:
            fixes.append(
                Fix(
                    "llama.cpp",
                    "flash attention",
                    llama_cmd(facts, {"-fa": "on"}),
                    "the n_ctx x heads attention-score matrix is never materialized: the buffer stops growing with the context",
                    "needs a GPU with flash-attention support in llama.cpp (most CUDA, Metal, Vulkan)",
                    rank=1,
                )
            )
        if n_ctx:
            new_ctx = round_down_clean(int(n_ctx) // 2)
            fixes.append(
                Fix(
                    "llama.cpp",
                    f"smaller context (-c {new_ctx})",
                    llama_cmd(facts, {"-c": str(new_ctx)}),
                    "the graph covers the full KV length; half the context, a smaller graph and KV cache",
                    "shorter prompts",
                    rank=3,
                )
            )
        if multi:
            fixes.append(
                Fix(
                    "llama.cpp",
                    "shift layers off the GPU that failed",
                    llama_cmd(
                        facts,
                        {"-ngl": None, "-ts": None, "--tensor-split": None, "-fit": None, "--fit": "on"},
                    ),
                    f"device {device} gets fewer layers and so more room for its compute buffer (--fit balances this for you)",
                    "--fit (b7407+) only moves what you did not set explicitly",
                    rank=4,
                )
            )
    notes = []
    if not retried and multi:
        notes.append(
            "Whether the retry succeeded is not in the lines I matched: look for 'retrying without pipeline "
            "parallelism' right after the error and for the server starting after it."
        )
    data = {"absurd": absurd, "multi_gpu": multi}
    return diagnosis_reply(title, summary, numbers, fixes, notes, short, data=data, ranked=True)
