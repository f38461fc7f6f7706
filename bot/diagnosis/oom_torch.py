"""gpu_oom@pytorch: the allocator message by kind, MPS on Apple silicon, and driver-level OOMs."""

from __future__ import annotations

import math

from bot.diagnosis.common import bigger_hardware, diagnosis_reply
from bot.diagnosis.engine_facts import model_gpu_facts, model_spec
from bot.diagnosis.fixes import gpu_processes_fix
from bot.diagnosis.numbers import fmt_gib, fmt_size
from bot.diagnosis.torch_oom import (
    EXPANDABLE,
    TorchOOM,
    read_torch_oom,
    torch_oom_notes,
    torch_oom_numbers,
    torch_oom_picture,
    torch_oom_summary,
)
from bot.facts import PasteFacts
from bot.reply import Fact, Fix, Reply
from calculator.kv import vllm_layout
from calculator.units import GIB, fmt_tokens


def _halve_batch_fix(engine: str, effect: str, rank: int) -> Fix:
    return Fix(
        engine,
        "halve the batch (or the sequence length) of this step",
        "batch_size = batch_size // 2  # and gradient_accumulation_steps *= 2 when training",
        effect,
        "slower; training keeps the same effective batch through accumulation",
        rank=rank,
    )


def _torch_fixes(o: TorchOOM, facts: PasteFacts, engine: str = "transformers") -> list[Fix]:
    fixes: list[Fix] = []
    total = o.total
    if o.kind == "absurd":
        fixes.append(
            Fix(
                engine,
                "tokenize to the longest sequence, with a sane cap",
                'batch = tokenizer(texts, padding="longest", truncation=True, max_length=2048, return_tensors="pt")',
                "no more padding to max_length / model_max_length: tensors shrink to what the data needs",
                "inputs longer than 2,048 tokens are cut (pick your real limit)",
                rank=1,
            )
        )
        fixes.append(
            Fix(
                engine,
                "find the shape that explodes",
                "print({k: tuple(v.shape) for k, v in batch.items()})  # before the forward pass",
                "a sequence dimension of 131,072 or a batch of thousands shows the bug at once",
                rank=2,
            )
        )
        return fixes
    if o.kind == "other_process":
        fixes.append(
            gpu_processes_fix(
                "find and stop the other process", f"frees the {fmt_gib(o.other or 0)} it holds", 1
            )
        )
        fixes.append(
            Fix(
                "any",
                "run on a free GPU",
                "CUDA_VISIBLE_DEVICES=1 python your_script.py",
                "this process sees only the GPU you name",
                rank=2,
            )
        )
    if o.kind == "fragmentation":
        fixes.append(
            Fix(
                "any",
                "let the allocator grow segments instead of splitting them",
                f"{EXPANDABLE} python your_script.py",
                f"the {fmt_size(o.unallocated or 0)} cached becomes usable for the {fmt_size(o.tried or 0)} request",
                "PyTorch 2.1+; on older versions use PYTORCH_CUDA_ALLOC_CONF=max_split_size_mb:128",
                rank=1,
            )
        )
    if o.kind == "fragmentation":
        fixes.append(
            _halve_batch_fix(engine, "a smaller peak also leaves the allocator more room to defragment", 2)
        )
    if o.kind in ("growth", "activation", "weights", "unknown"):
        if total:
            budget = max(1, math.floor(total - max(1.5, 0.1 * total)))
            fixes.append(
                Fix(
                    engine,
                    f"cap the GPU at {budget} GiB and offload the rest to the CPU",
                    f'model = AutoModelForCausalLM.from_pretrained(name, device_map="auto", '
                    f'max_memory={{0: "{budget}GiB", "cpu": "64GiB"}})',
                    f"leaves {total - budget:.1f} GiB of the {fmt_gib(total)} GPU for activations and the KV cache",
                    "layers on the CPU run much slower",
                    rank=3 if o.kind != "weights" else 2,
                )
            )
        fixes.append(
            Fix(
                engine,
                "load the weights in 4-bit",
                "from transformers import BitsAndBytesConfig\nmodel = AutoModelForCausalLM.from_pretrained(name, "
                'device_map="auto", quantization_config=BitsAndBytesConfig(load_in_4bit=True))',
                "about a quarter of 16-bit weights"
                + (
                    f": {fmt_gib(o.weights)} -> about {fmt_gib(o.weights / 4 + 0.3)}"
                    if o.weights is not None
                    else ""
                )
                + ", the rest becomes room for context",
                "needs bitsandbytes; some quality loss; or serve a GGUF / AWQ build with llama.cpp or vLLM",
                rank=1 if o.kind == "weights" else 2,
            )
        )
    if o.kind == "growth":
        model = model_spec(facts)
        left = None
        if model is not None and total and o.weights is not None:
            bpt = vllm_layout(model, "auto").all_attention_bytes_per_token
            left = int((total - o.weights - 1.0) * GIB / bpt) if total - o.weights > 1.0 else 0
        fixes.insert(
            0,
            Fix(
                engine,
                "shorter context: cap the prompt and the new tokens",
                'inputs = tokenizer(prompt, truncation=True, max_length=2048, return_tensors="pt").to(0)\n'
                "out = model.generate(**inputs, max_new_tokens=256)",
                "the KV cache grows with prompt + generated tokens: fewer tokens, less memory"
                + (f"; about {fmt_tokens(left)} tokens of KV fit next to the weights" if left else ""),
                "in text-generation-webui: lower 'truncation_length' and 'max_new_tokens'",
                rank=1,
            ),
        )
    if o.kind == "activation":
        fixes.insert(
            0,
            _halve_batch_fix(engine, f"the {fmt_size(o.tried or 0)} activation halves with it", 1),
        )
        fixes.append(
            Fix(
                engine,
                "no autograd state during inference",
                "with torch.inference_mode():\n    out = model(**batch)",
                "activations are freed layer by layer instead of kept for backward",
                "inference only; for training use gradient checkpointing (model.gradient_checkpointing_enable())",
                rank=2,
            )
        )
    if o.allowed is not None:
        fixes.append(
            Fix(
                engine,
                "raise the per-process memory fraction",
                "torch.cuda.set_per_process_memory_fraction(0.95)",
                f"the process was capped at {fmt_gib(o.allowed)}",
                "only if nothing else needs the GPU",
                rank=2,
            )
        )
    return fixes


def pytorch_gpu_oom(facts: PasteFacts) -> Reply:
    p = facts.params
    if facts.root.signature.startswith("pytorch.mps_oom"):
        return _mps_oom(facts)
    if facts.root.signature.startswith(("pytorch.cuda_error_oom", "pytorch.cublas_alloc_failed")):
        return _driver_oom(facts)
    o = read_torch_oom(facts)
    title, summary, short = torch_oom_summary(o, facts)
    numbers = torch_oom_numbers(o)
    if o.weights is not None:
        numbers.append(Fact("weights of the model (16-bit unless quantized)", fmt_gib(o.weights), "catalog"))
    numbers += model_gpu_facts(facts)
    if p.get("gpu_index") is not None:
        numbers.append(Fact("GPU index", str(p["gpu_index"]), "log"))
    fixes = _torch_fixes(o, facts)
    notes = torch_oom_notes(o)
    hw = bigger_hardware(facts, 8192) if o.kind == "weights" else None
    data = {"oom_kind": o.kind}
    return diagnosis_reply(
        title, summary, numbers, fixes, notes, short, [hw], torch_oom_picture(o), data, ranked=True
    )


def _mps_oom(facts: PasteFacts) -> Reply:
    p = facts.params

    def gib(name: str) -> float | None:
        if p.get(f"{name}_gib") is not None:
            return p[f"{name}_gib"]
        if p.get(f"{name}_mib") is not None:
            return p[f"{name}_mib"] / 1024
        return None

    allocated, other, cap = gib("allocated"), gib("other_allocations"), gib("max_allowed")
    tried = gib("tried") if p.get("tried_bytes") is None else p["tried_bytes"] / GIB
    title = "PyTorch on Apple silicon: the MPS memory cap is reached" + (f" ({fmt_gib(cap)})" if cap else "")
    summary = (
        "On Apple silicon the GPU shares system RAM and PyTorch caps what MPS may take (a watermark of the "
        "recommended working set)"
        + (
            f": {fmt_size(allocated or 0)} of MPS tensors plus {fmt_size(other or 0)} of other allocations reach the {fmt_gib(cap)} cap"
            if cap
            else ""
        )
        + ". PYTORCH_MPS_HIGH_WATERMARK_RATIO=0.0 lifts the cap but can freeze the machine; a smaller model, a "
        "16-bit dtype or a smaller batch is safer."
    )
    numbers = []
    for label, value in (
        ("MPS allocated", allocated),
        ("other allocations", other),
        ("max allowed", cap),
        ("tried to allocate", tried),
    ):
        if value is not None:
            numbers.append(Fact(label, fmt_size(value), "log"))
    fixes = [
        Fix(
            "transformers",
            "16-bit weights",
            "model = model.to(torch.float16)",
            "halves fp32 weights",
            "",
            rank=1,
        ),
        Fix(
            "any",
            "raise the MPS cap a little (not to 0.0)",
            "PYTORCH_MPS_HIGH_WATERMARK_RATIO=1.0 python your_script.py",
            "lets MPS use the whole recommended working set instead of part of it",
            "past the working set macOS swaps; 0.0 (no limit) can freeze the machine",
            rank=2,
        ),
    ]
    return diagnosis_reply(title, summary, numbers, fixes, [], "The MPS memory cap is reached.", ranked=True)


def _driver_oom(facts: PasteFacts) -> Reply:
    title = "CUDA error: out of memory outside PyTorch's allocator"
    summary = (
        "The CUDA runtime itself failed to allocate (a new context, a cuBLAS/cuDNN/NCCL workspace or a kernel's own "
        "buffer), which happens when the GPU is already full, most often because another process or another "
        "rank holds it. Check nvidia-smi before changing model settings."
    )
    fixes = [
        gpu_processes_fix(
            "see who holds the GPU",
            "a leftover process or a second rank on the same GPU is the usual culprit",
            1,
        ),
        Fix(
            "any",
            "one process per GPU",
            "CUDA_VISIBLE_DEVICES=0 python your_script.py",
            "each rank sees only its own GPU",
            rank=2,
        ),
    ]
    return diagnosis_reply(
        title,
        summary,
        model_gpu_facts(facts),
        fixes,
        [],
        "The GPU was already full when CUDA needed memory.",
        ranked=True,
    )


RULES = {"gpu_oom@pytorch": pytorch_gpu_oom}
