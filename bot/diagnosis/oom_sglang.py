"""gpu_oom@sglang: the activation / CUDA-graph headroom of SGLang ran out."""

from __future__ import annotations

from bot.diagnosis.common import diagnosis_reply
from bot.diagnosis.engine_facts import model_gpu_facts
from bot.diagnosis.numbers import floor2, fmt_gib, fmt_size
from bot.diagnosis.sglang_fixes import sglang_activation_fixes
from bot.diagnosis.torch_oom import (
    read_torch_oom,
    torch_oom_notes,
    torch_oom_numbers,
    torch_oom_picture,
    torch_oom_summary,
)
from bot.facts import PasteFacts
from bot.reply import Fact, Fix, Reply
from calculator.commands import sglang_command
from calculator.sglang import CUDA_CONTEXT_GIB as SGLANG_CUDA_CONTEXT_GIB
from calculator.sglang import default_mem_fraction_static


def sglang_gpu_oom(facts: PasteFacts) -> Reply:
    command = facts.context.get("command")
    model_name = facts.context.get("model")
    tp = int(facts.get("tp") or 1)
    o = read_torch_oom(facts, tp)
    total = o.total
    f0 = facts.context.get("mem_fraction_static")
    f0_src = "log"
    if f0 is None and total:
        f0, f0_src = default_mem_fraction_static(total, tp), "computed"
    graph = facts.root.signature.startswith("sglang.cuda_graph_oom")
    pre = total - SGLANG_CUDA_CONTEXT_GIB if total else None
    new_f = None
    if f0 is not None:
        need = 1.0
        if o.tried is not None:
            need = max(1.0, o.tried - (o.free or 0.0) + 0.5)
        step = need / pre if pre else 0.05
        new_f = floor2(float(f0) - max(0.02, step))
    title = (
        "SGLang: out of memory while capturing CUDA graphs"
        if graph
        else "SGLang: CUDA out of memory while serving"
    )
    if o.kind == "absurd":
        title, _, _ = torch_oom_summary(o, facts)
    summary = (
        "SGLang keeps 1 - mem_fraction_static of the free memory for activations and CUDA graphs; "
        + (
            "the graphs of the largest captured decode batch did not fit in it"
            if graph
            else "a prefill or decode batch needed more activations than that share"
        )
        + (
            f" ({fmt_size(o.tried)} requested, {fmt_size(o.free)} free)"
            if o.tried is not None and o.free is not None
            else ""
        )
        + ". Here a *lower* --mem-fraction-static helps (a smaller KV pool, more headroom), as do smaller prefill "
        "chunks and fewer captured batch sizes."
    )
    numbers = torch_oom_numbers(o)
    if f0 is not None:
        numbers.insert(0, Fact("--mem-fraction-static", f"{float(f0):g}", f0_src))
    numbers += model_gpu_facts(facts)
    fixes: list[Fix] = []
    if new_f is not None:
        fixes.append(
            Fix(
                "sglang",
                f"lower --mem-fraction-static to {new_f:g}",
                sglang_command(command, model_name, {"--mem-fraction-static": f"{new_f:g}"}),
                f"{float(f0) - new_f:.2f} of the free memory"
                + (f" ({fmt_gib((float(f0) - new_f) * pre)})" if pre else "")
                + " moves from the KV pool to activations and graphs",
                "a smaller KV pool (fewer tokens in flight); if it then says 'Not enough memory', the model is too "
                "tight for this GPU",
                rank=1,
            )
        )
    fixes += sglang_activation_fixes(facts, pre, rank=2, why="it is the activation side that ran out")
    if graph:
        fixes.append(
            Fix(
                "sglang",
                "no CUDA graphs",
                sglang_command(command, model_name, {"--disable-cuda-graph": ""}),
                "nothing to capture",
                "slower decode",
                rank=3,
            )
        )
    notes = torch_oom_notes(o) if o.unallocated is not None else []
    return diagnosis_reply(
        title,
        summary,
        numbers,
        fixes,
        notes,
        "SGLang's activation / graph headroom ran out.",
        memory=torch_oom_picture(o),
        ranked=True,
    )


RULES = {"gpu_oom@sglang": sglang_gpu_oom}
