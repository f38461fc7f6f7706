"""vLLM configuration and hardware-compatibility errors: the engine refuses a setting before serving.

Families: tensor-parallel size vs attention heads, bfloat16 / quantization / GPU generation vs the card's
compute capability, max_model_len vs the model's config, max_num_batched_tokens vs max_model_len, other
invalid arguments, and free memory at startup below what gpu_memory_utilization asks for.  Version facts
(minimum capabilities, YaRN, the startup check) follow shared/reference/vllm_memory.md §1, §3.3-§3.5, §4.
"""

from __future__ import annotations

import json
import math
import re
from typing import Any

from bot.diagnosis.common import bigger_hardware, generic
from bot.facts import PasteFacts
from bot.reply import Fact, Fix, MemoryPicture, MemorySegment, Reply, Section
from calculator.catalog import GPU, ModelSpec, gpus, variant_weight_bytes
from calculator.commands import llamacpp_command, vllm_command
from calculator.units import GIB, fmt_tokens
from calculator.versions import vllm_default_utilization, vllm_is_v0
from calculator.vllm import derived_max_model_len, estimate_activation_gib

# ------------------------------------------------------------------------------------------------ helpers


def _v(version: tuple[int, int, int]) -> str:
    return ".".join(str(x) for x in version)


def _num(x: float) -> str:
    """0.9 -> '0.9', 19.84 -> '19.84', 4.0 -> '4'."""
    return f"{x:.2f}".rstrip("0").rstrip(".")


def _cap(x: float) -> str:
    """Compute capability as NVIDIA writes it: 7.0, 8.6."""
    return f"{x:.1f}"


def _model_name(facts: PasteFacts) -> str | None:
    name = facts.context.get("model")
    if name:
        return str(name)
    return facts.model.label if facts.model else None


def _cmd(facts: PasteFacts, changes: dict[str, str | None]) -> str:
    """The user's own command (or ``vllm serve <model>``) with only ``changes`` applied."""
    return vllm_command(facts.context.get("command"), _model_name(facts), changes)


def _version_note(facts: PasteFacts, notes: list[str], inferred: str | None = None) -> None:
    if facts.version_known:
        return
    if inferred:
        notes.append(f"vLLM version not in the paste; {inferred}")
    elif facts.root.versions:
        notes.append(
            f"vLLM version not in the paste; this wording is printed by vLLM {facts.root.versions}, "
            f"so the flags suit v{_v(facts.vllm_version)}."
        )
    else:
        notes.append(
            f"vLLM version not in the paste; flags assume a current release (v{_v(facts.vllm_version)})."
        )


def _gpu_name(facts: PasteFacts) -> str | None:
    name = facts.params.get("gpu") or facts.context.get("gpu")
    if name:
        return str(name)
    return facts.gpu.name if facts.gpu else None


def _capability(facts: PasteFacts) -> tuple[float | None, str]:
    cc = facts.params.get("compute_capability")
    if cc is None:
        cc = facts.context.get("compute_capability")
    if cc is not None:
        return float(cc), "log"
    if facts.gpu is not None and facts.gpu.cc is not None:
        return facts.gpu.cc, "catalog"
    return None, "estimated"


_ARCH = [
    (12.0, "Blackwell (RTX 50xx / RTX PRO)"),
    (10.0, "Blackwell"),
    (9.0, "Hopper"),
    (8.9, "Ada Lovelace"),
    (8.0, "Ampere"),
    (7.5, "Turing"),
    (7.0, "Volta"),
    (6.0, "Pascal"),
    (5.0, "Maxwell"),
    (0.0, "Kepler or older"),
]


def _arch(cc: float) -> str:
    return next(name for lo, name in _ARCH if cc >= lo - 1e-9)


# a spread of common cards, cheapest generations first; names and capabilities come from the catalog
_EXAMPLE_GPUS = ["t4", "v100-32gb", "a10g", "l4", "rtx-3090", "rtx-4090", "a100-80gb", "l40s", "h100-sxm"]


def _cards(min_cc: float, max_cc: float | None = None, limit: int = 4) -> list[GPU]:
    by_id = {g.id: g for g in gpus()}
    out = []
    for gid in _EXAMPLE_GPUS:
        g = by_id.get(gid)
        if g is None or g.cc is None or g.cc < min_cc - 1e-9:
            continue
        if max_cc is not None and g.cc >= max_cc - 1e-9:
            continue
        out.append(g)
    return out[:limit]


def _card_list(cards: list[GPU]) -> str:
    return ", ".join(f"{g.name.removeprefix('NVIDIA ')} ({g.compute_capability})" for g in cards)


def _base_name(facts: PasteFacts) -> str | None:
    """The model's name without a path or a quantization suffix (``Qwen1.5-32B-Chat-AWQ`` -> ``Qwen1.5-32B-Chat``)."""
    if facts.model is not None:
        return facts.model.model.id.split("/")[-1]
    if not facts.context.get("model"):
        return None
    name = str(facts.context["model"]).rstrip("/\\").replace("\\", "/").split("/")[-1]
    name = re.sub(r"\.gguf$", "", name, flags=re.I)
    return re.sub(
        r"[-_.](?:awq|gptq|fp8|int4|int8|bnb|4bit|8bit|w4a16|w8a8|dynamic)\b.*$", "", name, flags=re.I
    )


def _ollama_tag(facts: PasteFacts) -> str | None:
    if facts.model is None:
        return None
    return next((v.ollama for v in facts.model.model.variants if v.ollama), None)


def _gguf_fixes(facts: PasteFacts, why: str, rank: int, ctx: int = 8192) -> list[Fix]:
    """llama.cpp and Ollama run GGUF files on any CUDA card from compute capability 5.0."""
    base = _base_name(facts)
    gguf = f"{base}-Q4_K_M.gguf" if base else "<your-model>-Q4_K_M.gguf"
    tag = _ollama_tag(facts)
    return [
        Fix(
            "llama.cpp",
            "serve a GGUF quantization with llama.cpp",
            llamacpp_command(None, gguf, {"-ngl": "99", "-c": str(ctx)}),
            f"{why}; -ngl 99 puts every layer on the GPU, -c {ctx} sets the context",
            "a separate GGUF download; lower batch throughput than vLLM",
            rank=rank,
        ),
        Fix(
            "ollama",
            "run it with Ollama",
            f"ollama run {tag}"
            if tag
            else f"ollama run <{base or 'your model'}: tag from ollama.com/library>",
            "Ollama bundles llama.cpp and supports NVIDIA cards from compute capability 5.0 "
            "(5.0-6.2 need driver 570 or newer)",
            "4-bit GGUF by default; less control over batching",
            rank=rank + 1,
        ),
    ]


def _finish(
    facts: PasteFacts,
    title: str,
    summary: str,
    numbers: list[Fact],
    fixes: list[Fix],
    notes: list[str],
    short: str = "",
    sections: list[Section] | None = None,
    memory: MemoryPicture | None = None,
    data: dict | None = None,
) -> Reply:
    all_sections = [Section("Your numbers", facts=numbers), *(sections or [])]
    return Reply(
        kind="diagnosis",
        title=title,
        summary=summary,
        short=short,
        sections=all_sections,
        fixes=fixes,
        memory=memory,
        notes=notes,
        data=data or {},
    )


# ------------------------------------------------------------------------------------------------ tensor parallel

PIPELINE_PARALLEL_SINCE = (0, 5, 1)  # --pipeline-parallel-size serves online from v0.5.1


def _tp_ok(t: int, heads: int, kv: int | None, widths: list[int]) -> bool:
    """vLLM's checks (§2.4): heads % tp == 0; KV heads split (kv >= tp) or replicate (tp % kv == 0);
    the MLP's column-parallel width splits evenly too."""
    if heads % t:
        return False
    if kv is not None and ((kv >= t and kv % t) or (kv < t and t % kv)):
        return False
    return all(w % t == 0 for w in widths)


def tp_divisibility(facts: PasteFacts) -> Reply:
    p = facts.params
    tp = p.get("tp") or facts.context.get("tp")
    heads = p.get("num_attention_heads")
    heads_src = "log"
    model: ModelSpec | None = facts.model.model if facts.model else None
    notes: list[str] = []
    if heads is None and model is not None:
        heads, heads_src = model.num_attention_heads, "catalog"
    if not heads or not tp:
        return generic(facts)
    if model is not None and model.num_attention_heads != heads:
        notes.append(
            f"my catalog's {model.id} has {model.num_attention_heads} heads, your log says {heads}: "
            "I used the log and ignored the catalog entry"
        )
        model = None
    kv = model.num_key_value_heads if model else None
    widths = [w for w in ((model.intermediate_size, model.moe_intermediate_size) if model else ()) if w]
    pp_now = facts.context.get("pp") or 1
    gpu_count = facts.context.get("gpu_count")
    n_gpus = int(gpu_count or tp * pp_now)
    limit = max(n_gpus, 8)
    valid = [t for t in range(1, limit + 1) if _tp_ok(t, heads, kv, widths)]
    # without the KV-head count, only sizes that also divide any power-of-two KV count are safe
    safe = valid if kv is not None else [t for t in valid if t & (t - 1) == 0]
    usable = [t for t in safe if t <= n_gpus] or [1]
    best = max(usable)
    combo: tuple[int, int] | None = None
    for t in sorted(usable, reverse=True):
        stages = n_gpus // t
        if stages >= 2 and t * stages > best and (combo is None or t * stages > combo[0] * combo[1]):
            combo = (t, stages)
    version = facts.vllm_version
    per_gpu = heads // best

    title = f"vLLM: {heads} attention heads cannot be split over tensor_parallel_size {tp}"
    share = heads / tp
    sentences = [
        "Tensor parallelism gives every GPU an equal share of the attention heads, so tensor_parallel_size "
        f"must divide the head count: {heads} heads over {tp} GPUs would be {_num(share)} heads each.",
        (
            f"Valid sizes for this model are {', '.join(map(str, valid))}."
            if safe == valid
            else f"Sizes that divide {heads} are {', '.join(map(str, valid))}; of those, "
            f"{', '.join(map(str, safe))} also split the KV heads of almost every model."
        ),
    ]
    if combo:
        used = combo[0] * combo[1]
        sentences.append(
            f"Use tensor-parallel {combo[0]}, and pipeline-parallel {combo[1]} to keep all {used} GPUs busy."
        )
    else:
        sentences.append(f"Use tensor-parallel {best} ({per_gpu} heads per GPU).")
    summary = " ".join(sentences)

    numbers = [
        Fact("attention heads", str(heads), heads_src),
        Fact("tensor_parallel_size asked for", str(tp), "log" if "tp" in p else "given"),
    ]
    if kv is not None:
        numbers.append(Fact("KV heads", str(kv), "catalog"))
    if widths:
        numbers.append(Fact("MLP width (intermediate_size)", ", ".join(f"{w:,}" for w in widths), "catalog"))
    numbers.append(
        Fact(
            "GPUs",
            str(n_gpus),
            "log" if gpu_count else "computed",
        )
    )
    numbers.append(Fact(f"valid tensor-parallel sizes up to {limit}", ", ".join(map(str, valid)), "computed"))
    if safe != valid:
        numbers.append(Fact("of those, safe whatever the KV heads", ", ".join(map(str, safe)), "computed"))
    if facts.model is not None and model is not None:
        numbers.append(Fact("model", facts.model.label, "catalog"))

    weights_note = ""
    if model is not None and facts.model is not None:
        weights = variant_weight_bytes(model, facts.model.variant) / GIB
        weights_note = f"; about {weights / best:.1f} GiB of weights per GPU"

    fixes: list[Fix] = [
        Fix(
            "vllm",
            f"tensor-parallel {best}",
            _cmd(facts, {"--tensor-parallel-size": str(best), "--pipeline-parallel-size": None}),
            f"{per_gpu} attention heads per GPU on {best} GPU{'s' if best > 1 else ''}{weights_note}",
            f"{n_gpus - best} of your {n_gpus} GPUs stay idle" if n_gpus > best else "",
            rank=1,
        )
    ]
    if combo:
        t, stages = combo
        cmd = _cmd(facts, {"--tensor-parallel-size": str(t), "--pipeline-parallel-size": str(stages)})
        layers = f" (about {model.num_hidden_layers // stages} layers each)" if model else ""
        change = f"tensor-parallel {t} x pipeline-parallel {stages}"
        cost = "each token passes the stages in turn: a little more latency at low concurrency"
        if facts.version_known and version < PIPELINE_PARALLEL_SINCE:
            cmd = f'pip install -U "vllm>={_v(PIPELINE_PARALLEL_SINCE)}"\n{cmd}'
            change = f"upgrade vLLM, then {change}"
            cost = f"your vLLM {_v(version)} has no pipeline parallelism for serving; " + cost
        fixes.append(
            Fix(
                "vllm",
                change,
                cmd,
                f"uses all {t * stages} GPUs: heads split {t} ways, layers split into {stages} stages{layers}",
                cost,
                rank=2,
            )
        )
    if n_gpus // best >= 2:
        replicas = n_gpus // best
        lines = []
        for i in range(replicas):
            devices = ",".join(str(d) for d in range(i * best, (i + 1) * best))
            run = _cmd(
                facts,
                {
                    "--tensor-parallel-size": str(best),
                    "--pipeline-parallel-size": None,
                    "--port": str(8000 + i),
                },
            )
            lines.append(f"CUDA_VISIBLE_DEVICES={devices} {run}")
        fixes.append(
            Fix(
                "vllm",
                f"{replicas} replicas of tensor-parallel {best}",
                "\n".join(lines),
                f"{replicas} independent servers on {best} GPUs each: more throughput, no pipeline stages",
                "a load balancer in front; every replica holds a full copy of the weights",
                rank=3,
            )
        )

    if kv is None:
        odd = [t for t in valid if t not in safe]
        if odd:
            notes.append(
                f"{', '.join(map(str, odd))} divide{'s' if len(odd) == 1 else ''} the {heads} heads, but vLLM also "
                "splits the KV heads (num_key_value_heads in config.json) and the MLP width evenly; these are "
                "almost always powers of two, so I only suggest power-of-two sizes"
            )
    ctx_tp = facts.context.get("tp")
    if ctx_tp and ctx_tp != tp:
        notes.append(
            f"your log also shows tensor_parallel_size={ctx_tp}: "
            + (
                f"{ctx_tp} divides the heads, but the KV heads and the MLP width must split evenly too, "
                "so odd sizes usually fail a moment later; stick to the sizes above"
                if heads % ctx_tp == 0 and ctx_tp & (ctx_tp - 1)
                else "the same rule applies to it"
            )
        )
    _version_note(facts, notes)
    return _finish(
        facts,
        title,
        summary,
        numbers,
        fixes,
        notes,
        short=f"{heads} heads do not divide over {tp} GPUs; valid tensor-parallel sizes: {', '.join(map(str, valid))}.",
        data={
            "num_attention_heads": heads,
            "tp": tp,
            "valid_tp_sizes": valid,
            "suggested_tp": best,
            "suggested_tp_pp": list(combo) if combo else None,
            "gpus": n_gpus,
        },
    )


# ------------------------------------------------------------------------------------------------ dtype / GPU generation

BF16_MIN_CC = 8.0
OVERFLOW_PRONE_FAMILIES = {"gemma2", "gemma3"}  # activations beyond float16's range (NaN / gibberish)
VLLM_MIN_CC = 7.0
AUTO_FP16_FALLBACK_SINCE = (0, 11, 0)


def dtype_unsupported(facts: PasteFacts) -> Reply:
    sig = facts.root.signature
    if sig.endswith("quant_dtype"):
        return _quant_dtype(facts)
    cc, cc_src = _capability(facts)
    if cc is not None and cc < VLLM_MIN_CC:
        return _below_minimum(facts, via_bf16=True)
    fallback = sig.endswith("bf16_fallback")
    gpu = _gpu_name(facts) or "GPU"
    the_gpu = f"the {gpu}" if _gpu_name(facts) else "your GPU"
    version = facts.vllm_version
    asked = str(facts.context.get("dtype") or "").lower()
    explicit_bf16 = asked in ("bfloat16", "bf16")
    notes: list[str] = []
    cc_text = f"compute capability {_cap(cc)}" if cc is not None else "no reported compute capability"
    arch = f" ({_arch(cc)})" if cc is not None else ""

    if fallback:
        title = f"vLLM: {the_gpu} ({cc_text}) has no bfloat16; vLLM switched to float16 by itself"
        summary = (
            f"bfloat16 needs compute capability {BF16_MIN_CC} (Ampere) or newer and {the_gpu} has {cc_text}{arch}. "
            "Since v0.11 vLLM falls back to float16 on its own when --dtype is auto, so this is a warning, "
            "not the failure. Only if the output turns into NaN or gibberish does the float16 range matter."
        )
    else:
        title = f"vLLM: bfloat16 needs compute capability {BF16_MIN_CC}; {the_gpu} has {_cap(cc) if cc else 'none'}"
        why = (
            "you asked for bfloat16 explicitly"
            if explicit_bf16
            else "the model's config says bfloat16 and this vLLM keeps it under --dtype auto"
        )
        summary = (
            f"bfloat16 arithmetic needs compute capability {BF16_MIN_CC} (Ampere) or newer; {the_gpu} has "
            f"{cc_text}{arch}, and {why}. Run the model in float16 instead: --dtype half."
        )
        if version >= AUTO_FP16_FALLBACK_SINCE:
            summary += " vLLM 0.11 and newer falls back to float16 by itself under --dtype auto."
    numbers = []
    if _gpu_name(facts):
        numbers.append(Fact("GPU", _gpu_name(facts) or "", "log" if "gpu" in facts.params else "catalog"))
    if cc is not None:
        numbers.append(Fact("compute capability", _cap(cc), cc_src))
    numbers.append(Fact("bfloat16 needs", f"compute capability {BF16_MIN_CC}", "log"))
    if asked:
        numbers.append(Fact("--dtype", asked, "log"))
    if facts.model is not None:
        numbers.append(Fact("model", facts.model.label, "catalog"))
        numbers.append(Fact("model trained in", facts.model.model.torch_dtype, "catalog"))
    if facts.gpu is not None:
        numbers.append(Fact("GPU memory", f"{facts.gpu.total_gib:.2f} GiB", "catalog"))

    overflow = (
        "float16's range is far smaller (largest value 65,504): a few bfloat16-trained models (Gemma 2/3, "
        "some large Llama/Qwen fine-tunes) overflow and print NaN or gibberish"
    )
    fixes = [
        Fix(
            "vllm",
            "run in float16",
            _cmd(facts, {"--dtype": "half"}),
            f"float16 runs natively on {the_gpu}; same memory as bfloat16",
            overflow,
            rank=1,
        )
    ]
    if not fallback:
        if version >= AUTO_FP16_FALLBACK_SINCE and explicit_bf16:
            fixes.append(
                Fix(
                    "vllm",
                    "let vLLM pick the dtype",
                    _cmd(facts, {"--dtype": "auto"}),
                    "vLLM >= 0.11 falls back to float16 with a warning on cards without bfloat16",
                    "the same float16 range caveat",
                    rank=2,
                )
            )
        elif facts.version_known and version < AUTO_FP16_FALLBACK_SINCE:
            fixes.append(
                Fix(
                    "vllm",
                    "upgrade vLLM (automatic float16 fallback)",
                    f'pip install -U "vllm>={_v(AUTO_FP16_FALLBACK_SINCE)}"\n'
                    + _cmd(facts, {"--dtype": None}),
                    "from v0.11, --dtype auto switches to float16 by itself on cards without bfloat16",
                    overflow,
                    rank=2,
                )
            )
    if facts.model is not None and facts.model.model.family in OVERFLOW_PRONE_FAMILIES:
        notes.insert(
            0,
            f"{facts.model.model.family} models are known to overflow in float16: check the first answers "
            "for NaN or gibberish before trusting --dtype half",
        )
    if facts.model is not None:
        fp32 = facts.model.model.params_b * 4e9 / GIB
        room = ""
        if facts.gpu is not None:
            fits = "fits" if fp32 < facts.gpu.total_gib * 0.8 else "does not fit"
            room = f", which {fits} in this card's {facts.gpu.total_gib:.1f} GiB"
        notes.append(
            f"if float16 overflows, --dtype float32 is the exact fallback, but it doubles the weights to about "
            f"{fp32:.1f} GiB{room}; otherwise a card with compute capability 8.0+ runs bfloat16 natively: "
            f"{_card_list(_cards(BF16_MIN_CC))}"
        )
    else:
        notes.append(
            "if float16 overflows (NaN or gibberish), use --dtype float32 (twice the weight memory) or a card with "
            f"compute capability 8.0+: {_card_list(_cards(BF16_MIN_CC))}"
        )
    if not fallback and not explicit_bf16 and not facts.version_known:
        notes.append(
            "vLLM version not in the paste; you did not pass --dtype bfloat16 (as far as the paste shows), so "
            "your vLLM is probably older than 0.11, which kept the config's bfloat16 under --dtype auto; "
            "--dtype half works on every version"
        )
    else:
        _version_note(facts, notes)
    return _finish(
        facts,
        title,
        summary,
        numbers,
        fixes,
        notes,
        short=f"bfloat16 needs compute capability {BF16_MIN_CC}; {the_gpu} has {_cap(cc) if cc else 'less'}: use --dtype half.",
        data={"gpu": _gpu_name(facts), "compute_capability": cc, "dtype_fix": "half"},
    )


def _quant_dtype(facts: PasteFacts) -> Reply:
    p = facts.params
    dtype = str(p.get("dtype") or "bfloat16")
    method = str(p.get("quantization") or "this quantization")
    title = f"vLLM: {method} kernels do not take {dtype} activations"
    summary = (
        f"The {method} kernels of this vLLM only accept float16 activations, and the model is set to run in "
        f"{dtype} (the config's dtype or --dtype). Set --dtype half: the quantized weights are the same, only the "
        "activations change."
    )
    numbers = [Fact("quantization", method, "log"), Fact("dtype", dtype, "log")]
    if facts.model is not None:
        numbers.append(Fact("model", facts.model.label, "catalog"))
    fixes = [
        Fix(
            "vllm",
            "run in float16",
            _cmd(facts, {"--dtype": "half"}),
            f"{method} kernels run with float16 activations",
            "rarely, a bfloat16-trained model overflows in float16 (NaN or gibberish)",
            rank=1,
        )
    ]
    notes: list[str] = []
    _version_note(facts, notes)
    return _finish(facts, title, summary, numbers, fixes, notes, data={"dtype_fix": "half"})


def gpu_unsupported(facts: PasteFacts) -> Reply:
    return _below_minimum(facts, via_bf16=False)


def _below_minimum(facts: PasteFacts, via_bf16: bool) -> Reply:
    cc, cc_src = _capability(facts)
    gpu = _gpu_name(facts) or "GPU"
    the_gpu = f"the {gpu}" if _gpu_name(facts) else "your GPU"
    cc_text = _cap(cc) if cc is not None else "below 7.0"
    arch = f" ({_arch(cc)})" if cc is not None else ""
    title = f"vLLM: {the_gpu} (compute capability {cc_text}) is below vLLM's minimum of {VLLM_MIN_CC}"
    sentences = [
        f"vLLM's CUDA kernels are built for compute capability {VLLM_MIN_CC} (Volta) and newer; {the_gpu} has "
        f"{'a compute capability ' if cc is None else ''}{cc_text}{arch}, so no flag makes vLLM run on it."
    ]
    if via_bf16:
        sentences.append(
            "--dtype half would only get past this bfloat16 check; the next check "
            '("GPUs with compute capability below 7.0 are not supported") stops it anyway.'
        )
    sentences.append("llama.cpp and Ollama still support this card; otherwise move to a Volta-or-newer GPU.")
    numbers = []
    if _gpu_name(facts):
        numbers.append(Fact("GPU", gpu, "log" if "gpu" in facts.params else "catalog"))
    if cc is not None:
        numbers.append(Fact("compute capability", cc_text, cc_src))
    numbers.append(Fact("vLLM needs", f"compute capability {VLLM_MIN_CC}+ (bfloat16: {BF16_MIN_CC}+)", "log"))
    if facts.gpu is not None:
        numbers.append(Fact("GPU memory", f"{facts.gpu.total_gib:.2f} GiB", "catalog"))
    if facts.model is not None:
        numbers.append(Fact("model", facts.model.label, "catalog"))
    fixes = _gguf_fixes(facts, f"llama.cpp's CUDA build still supports {the_gpu}", rank=1)
    newer = _cards(VLLM_MIN_CC)
    fixes.append(
        Fix(
            "vllm",
            "move to a compute-capability-7.0+ GPU",
            _cmd(facts, {"--dtype": "half"}),
            f"vLLM runs on Volta and newer: {_card_list(newer)}; --dtype half below 8.0",
            "new hardware or a cloud instance",
            rank=3,
        )
    )
    sections = []
    hardware = bigger_hardware(facts, None)
    if hardware is not None:
        sections.append(hardware)
    notes = [
        "community source builds of vLLM for Pascal exist, but they are not supported and lag behind releases"
    ]
    if facts.model is None:
        notes.append(
            "the GGUF file name is a placeholder: take a Q4_K_M (or Q8_0 if it fits) build of your model"
        )
    return _finish(
        facts,
        title,
        " ".join(sentences),
        numbers,
        fixes,
        notes,
        short=f"vLLM needs compute capability {VLLM_MIN_CC}+; {the_gpu} has {cc_text}: use llama.cpp or Ollama.",
        sections=sections,
        data={"gpu": _gpu_name(facts), "compute_capability": cc, "vllm_min_capability": VLLM_MIN_CC},
    )


# ------------------------------------------------------------------------------------------------ quantization

# get_min_capability per method, by the release it was read from (vllm_memory.md §3.5)
QUANT_MIN_CAPABILITY: dict[tuple[int, int, int], dict[str, float]] = {
    (0, 11, 0): {
        "awq": 7.5,
        "gptq": 6.0,
        "awq_marlin": 8.0,
        "gptq_marlin": 8.0,
        "fp8": 8.0,
        "bitsandbytes": 7.0,
        "gguf": 6.0,
    },
    (0, 33, 0): {"awq": 7.5, "gptq": 6.0, "fp8": 7.5, "mxfp4": 8.0, "compressed-tensors": 7.0},
}
_QUANT_ALIASES = {"auto_awq": "awq", "auto_gptq": "gptq", "compressed_tensors": "compressed-tensors"}
_MARLIN_FALLBACK = {"awq_marlin": "awq", "gptq_marlin": "gptq"}
BITSANDBYTES_SINCE = (0, 5, 0)


def _min_at(method: str, version: tuple[int, int, int]) -> float | None:
    """The minimum capability in the newest checked release not after ``version`` that lists the method."""
    found = None
    for ver in sorted(QUANT_MIN_CAPABILITY):
        if ver <= version and method in QUANT_MIN_CAPABILITY[ver]:
            found = QUANT_MIN_CAPABILITY[ver][method]
    return found


def _variant_id(facts: PasteFacts, quant: str) -> str | None:
    if facts.model is None:
        return None
    return next((v.id for v in facts.model.model.variants if v.quant == quant), None)


def quantization_unsupported(facts: PasteFacts) -> Reply:
    p = facts.params
    raw = str(p.get("quantization") or facts.context.get("quantization") or "")
    if not raw:
        return generic(facts)
    method = _QUANT_ALIASES.get(raw.lower(), raw.lower())
    need = p.get("min_capability")
    cc, cc_src = _capability(facts)
    version = facts.vllm_version
    gpu = _gpu_name(facts)
    notes: list[str] = []
    if need is None:
        need = _min_at(method, version)
    where = gpu or "your GPU"
    cc_text = _cap(cc) if cc is not None else "?"

    # a newer vLLM whose minimum for this method is at or below this GPU's capability
    upgrade: tuple[int, int, int] | None = None
    if cc is not None and need is not None:
        for ver in sorted(QUANT_MIN_CAPABILITY):
            m = QUANT_MIN_CAPABILITY[ver].get(method)
            if m is not None and m <= cc + 1e-9 and m < need - 1e-9:
                if not (facts.version_known and version >= ver):
                    upgrade = ver
                break

    title = f"vLLM: {raw} needs compute capability {_cap(need) if need else '?'}; {where} has {cc_text}"
    sentences = [
        f"vLLM picks kernels per quantization method, and its {raw} kernels need compute capability "
        f"{_cap(need) if need else 'higher'}; {where} has {cc_text}"
        + (f" ({_arch(cc)})" if cc is not None else "")
        + "."
    ]
    if upgrade is not None:
        m = QUANT_MIN_CAPABILITY[upgrade][method]
        sentences.append(
            f"Newer vLLM lowered that minimum to {_cap(m)} (checked in v{_v(upgrade)}), so upgrading runs "
            "this checkpoint as is; otherwise use a quantization whose kernels run here."
        )
    else:
        sentences.append("Use a checkpoint in a quantization whose kernels run on this card, or a newer GPU.")
    summary = " ".join(sentences)

    numbers = [Fact("quantization", raw, "log")]
    if need is not None:
        numbers.append(
            Fact("minimum capability", _cap(need), "log" if "min_capability" in p else "estimated")
        )
    if cc is not None:
        numbers.append(Fact("your GPU's capability", cc_text, cc_src))
    if gpu:
        numbers.append(Fact("GPU", gpu, "log" if "gpu" in p else "catalog"))
    model_name = _model_name(facts)
    if model_name:
        numbers.append(Fact("model", model_name, "catalog" if facts.model else "log"))

    fixes: list[Fix] = []
    dtype_change: dict[str, str | None] = {"--dtype": "half"} if cc is not None and cc < BF16_MIN_CC else {}
    rank = 1
    if method in _MARLIN_FALLBACK and cc is not None:
        plain = _MARLIN_FALLBACK[method]
        plain_min = _min_at(plain, version) or QUANT_MIN_CAPABILITY[(0, 11, 0)][plain]
        if plain_min <= cc + 1e-9:
            fixes.append(
                Fix(
                    "vllm",
                    f"use the plain {plain} kernels",
                    _cmd(facts, {"--quantization": plain, **dtype_change}),
                    f"same checkpoint; {plain} kernels run from compute capability {_cap(plain_min)}",
                    "slower than Marlin at large batch sizes",
                    rank=rank,
                )
            )
            rank += 1
    if upgrade is not None:
        m = QUANT_MIN_CAPABILITY[upgrade][method]
        effect = f"v{_v(upgrade)} runs {raw} from compute capability {_cap(m)}"
        cost = "a vLLM upgrade"
        if method == "fp8" and cc is not None and cc < 8.9:
            effect += " (weight-only FP8 through Marlin kernels: weights stay 8-bit)"
            cost = (
                "no FP8 tensor cores below 8.9: matmuls run in 16-bit, so it saves memory but is not faster"
            )
        fixes.append(
            Fix(
                "vllm",
                f"upgrade vLLM to {_v(upgrade)} or newer",
                f'pip install -U "vllm>={_v(upgrade)}"\n' + _cmd(facts, {}),
                effect,
                cost,
                rank=rank,
            )
        )
        rank += 1
    base = _base_name(facts)
    if cc is not None:
        for alt in ("awq", "gptq"):
            alt_min = _min_at(alt, version) or QUANT_MIN_CAPABILITY[(0, 11, 0)][alt]
            if alt == method or alt == _MARLIN_FALLBACK.get(method) or alt_min > cc + 1e-9:
                continue
            repo = _variant_id(facts, alt)
            target = repo or f"<{alt.upper()} build of {base or 'your model'}>"
            command = vllm_command(
                facts.context.get("command"), target, {"--quantization": alt, **dtype_change}
            )
            if facts.context.get("command") and _model_name(facts):
                command = command.replace(str(_model_name(facts)), target)
            fixes.append(
                Fix(
                    "vllm",
                    f"{'an' if alt == 'awq' else 'a'} {alt.upper()} checkpoint of the same model",
                    command,
                    f"{alt} kernels run from compute capability {_cap(alt_min)}"
                    + ("; --dtype half because this card has no bfloat16" if dtype_change else ""),
                    "a different download; 4-bit quality is close to AWQ/FP8 for most models",
                    rank=rank,
                )
            )
            rank += 1
            break
        bnb_min = _min_at("bitsandbytes", version) or 7.0
        if (
            method != "bitsandbytes"
            and bnb_min <= cc + 1e-9
            and version >= BITSANDBYTES_SINCE
            and not any(f.change.startswith("a GPTQ") for f in fixes)
        ):
            fixes.append(
                Fix(
                    "vllm",
                    "quantize on load with bitsandbytes",
                    vllm_command(
                        None,
                        f"<16-bit {base or 'original model'}>",
                        {"--quantization": "bitsandbytes", **dtype_change},
                    ),
                    f"4-bit in-flight quantization of the original checkpoint; runs from {_cap(bnb_min)}",
                    "slower kernels than AWQ/GPTQ",
                    rank=rank,
                )
            )
            rank += 1
    fixes += _gguf_fixes(
        facts, "GGUF kernels run on every CUDA card from compute capability 5.0", rank=rank + 1
    )
    if need is not None:
        cards = _cards(need)
        if cards:
            fixes.append(
                Fix(
                    "vllm",
                    f"a GPU with compute capability {_cap(need)}+",
                    _cmd(facts, {}),
                    f"runs {raw} as is: {_card_list(cards)}",
                    "new hardware or a cloud instance",
                    rank=rank + 3,
                )
            )
    sections: list[Section] = []
    hardware = bigger_hardware(facts, facts.context.get("max_model_len"))
    if hardware is not None:
        sections.append(hardware)
    if not facts.model and any("<" in f.command for f in fixes if f.engine == "vllm"):
        notes.append(
            f"{base or 'your model'} is not in my catalog: the <...> names are placeholders for the checkpoint "
            "in that format"
        )
    if upgrade is not None and not facts.version_known:
        notes.append(
            f"your log's minimum ({_cap(need) if need else '?'}) is the one older vLLM releases print, so your "
            f"vLLM predates v{_v(upgrade)}"
        )
    _version_note(facts, notes, "the fixes name the version where they need one.")
    return _finish(
        facts,
        title,
        summary,
        numbers,
        fixes,
        notes,
        short=f"{raw} needs compute capability {_cap(need) if need else '?'}, this GPU has {cc_text}.",
        sections=sections,
        data={
            "quantization": raw,
            "min_capability": need,
            "compute_capability": cc,
            "upgrade_to": _v(upgrade) if upgrade else None,
        },
    )


# ------------------------------------------------------------------------------------------------ max_model_len

ALLOW_LONG_ENV = "VLLM_ALLOW_LONG_MAX_MODEL_LEN=1"
HF_OVERRIDES_SINCE = (0, 6, 5)
ROPE_PARAMETERS_SINCE = (0, 12, 0)  # PR #28542: rope_scaling renamed rope_parameters (Transformers v5)
YARN_NOT_SCALED_SINCE = (0, 30, 0)  # PR #56446: YaRN no longer multiplies the derived max_model_len
# rope_theta of the official checkpoints (config.json), needed inside rope_parameters from v0.12
_ROPE_THETA = {"qwen2.5": 1_000_000, "qwen2.5-coder": 1_000_000, "qwq": 1_000_000, "qwen3": 1_000_000}
_ROPE_THETA["qwen3-moe"] = 1_000_000


def _rope_change(
    version: tuple[int, int, int], factor: float, original: int, target: int, theta: int | None
) -> tuple[dict[str, str | None], bool]:
    """The flags that add a YaRN RoPE scaling for this vLLM version, and whether rope_theta is missing."""
    rope: dict[str, Any] = {
        "rope_type": "yarn",
        "factor": factor,
        "original_max_position_embeddings": original,
    }
    if version < HF_OVERRIDES_SINCE:
        return {"--rope-scaling": f"'{json.dumps(rope)}'", "--max-model-len": str(target)}, False
    missing_theta = False
    if version >= ROPE_PARAMETERS_SINCE:
        key = "rope_parameters"
        if theta:
            rope["rope_theta"] = theta
        else:
            missing_theta = True
    else:
        key = "rope_scaling"
    override: dict[str, Any] = {key: rope}
    if version >= YARN_NOT_SCALED_SINCE:
        override = {"max_position_embeddings": target, key: rope}
    return {"--hf-overrides": f"'{json.dumps(override)}'", "--max-model-len": str(target)}, missing_theta


def max_len_exceeds_model(facts: PasteFacts) -> Reply:
    p = facts.params
    want = p.get("max_model_len") or facts.context.get("max_model_len")
    derived = p.get("derived_max_model_len")
    derived_src = "log"
    key = str(p.get("derived_key") or "max_position_embeddings")
    version = facts.vllm_version
    model = facts.model.model if facts.model else None
    catalog_derived = derived_max_model_len(model, _v(version)) if model else None
    if derived is None and catalog_derived:
        derived, derived_src = catalog_derived, "catalog"
    if not want or not derived:
        return generic(facts)
    derived = int(derived)
    notes: list[str] = []
    name = str(facts.context.get("model") or "")
    command = str(facts.context.get("command") or "")
    gguf = "gguf" in (name + " " + command).lower()

    title = f"vLLM: max_model_len {fmt_tokens(want)} is above the model's limit of {fmt_tokens(derived)}"
    sentences = [
        f"vLLM derives the longest context a model supports from its config.json ({key}={fmt_tokens(derived)}, "
        f"after any RoPE scaling it applies), and --max-model-len {fmt_tokens(want)} is "
        f"{want / derived:.1f}x that."
    ]
    rs = model.rope_scaling if model else None
    if rs and rs.type == "yarn" and version >= YARN_NOT_SCALED_SINCE and rs.original_max_position_embeddings:
        sentences.append(
            f"Since v0.30 vLLM no longer multiplies a YaRN factor into that limit (it did up to v0.29: "
            f"{fmt_tokens(int(rs.original_max_position_embeddings * (rs.factor or 1)))})."
        )
    if gguf:
        sentences.append(
            "You serve a GGUF file: vLLM builds that config.json from the GGUF metadata, and the conversion "
            "can get max_position_embeddings wrong."
        )
    else:
        sentences.append(
            "Serve at that limit, or raise it only with a real RoPE scaling the model was trained for; past "
            "the trained positions a RoPE model produces garbage."
        )
    summary = " ".join(sentences)

    numbers = [
        Fact("max_model_len asked for", fmt_tokens(want), "log" if "max_model_len" in p else "given"),
        Fact(f"limit vLLM derived ({key})", fmt_tokens(derived), derived_src),
        Fact("over the limit by", f"{want / derived:.2f}x", "computed"),
    ]
    if model is not None and facts.model is not None:
        numbers.append(Fact("model", facts.model.label, "catalog"))
        numbers.append(Fact("max_position_embeddings", fmt_tokens(model.max_position_embeddings), "catalog"))
        if rs is not None:
            scaling = rs.type + (f" x{_num(rs.factor)}" if rs.factor else "")
            if rs.original_max_position_embeddings:
                scaling += f" (original {fmt_tokens(rs.original_max_position_embeddings)})"
            numbers.append(Fact("rope_scaling", scaling, "catalog"))
        if catalog_derived:
            numbers.append(
                Fact(
                    f"limit vLLM {_v(version)} derives from the official config",
                    fmt_tokens(catalog_derived),
                    "computed",
                )
            )
        if derived_src == "log" and catalog_derived and derived < catalog_derived:
            notes.append(
                f"your config.json gives {fmt_tokens(derived)}, the official {model.id} config gives "
                f"{fmt_tokens(catalog_derived)}: the config vLLM read is not the official one"
            )

    fixes = [
        Fix(
            "vllm",
            f"serve at the model's limit of {fmt_tokens(derived)} tokens",
            _cmd(facts, {"--max-model-len": str(derived)}),
            "starts, with correct outputs up to the trained length",
            f"prompts plus output beyond {fmt_tokens(derived)} tokens are rejected",
            rank=1,
        )
    ]
    if gguf:
        fixes.append(
            Fix(
                "vllm",
                "take the config from the original model",
                _cmd(facts, {"--hf-config-path": "<original HF repo>", "--tokenizer": "<original HF repo>"}),
                "vLLM reads max_position_embeddings and rope_scaling from the original config.json instead of "
                "the GGUF conversion",
                "needs the original repo id (the unquantized model the GGUF was made from)",
                rank=2,
            )
        )
    # a real extension: YaRN on a model without its own scaling (or with YaRN, on >= 0.30)
    can_scale = rs is None or (rs.type == "yarn" and version >= YARN_NOT_SCALED_SINCE)
    if can_scale:
        if rs is not None and rs.original_max_position_embeddings and rs.factor:
            original, target = rs.original_max_position_embeddings, want
            factor = max(float(rs.factor), math.ceil(want / original * 100) / 100)
        else:
            original = derived
            target = want
            factor = math.ceil(want / derived * 100) / 100
        theta = _ROPE_THETA.get(model.family) if model else None
        changes, missing_theta = _rope_change(version, factor, original, target, theta)
        trained = model is not None and model.family in _ROPE_THETA
        fixes.append(
            Fix(
                "vllm",
                f"YaRN RoPE scaling x{_num(factor)} to reach {fmt_tokens(target)}",
                _cmd(facts, changes),
                f"positions stretched {_num(factor)}x from {fmt_tokens(original)}: {fmt_tokens(target)} tokens"
                + (
                    '; first add "rope_theta": <your config.json value> inside rope_parameters'
                    if missing_theta
                    else ""
                ),
                (
                    "Qwen validates YaRN for this model family; short prompts lose a little quality"
                    if trained
                    else "good output only if the model was trained or validated with YaRN at this factor"
                ),
                rank=3,
            )
        )
        if missing_theta:
            notes.append(
                "from v0.12 rope_theta lives inside rope_parameters: copy your config.json's rope_theta into "
                "the --hf-overrides JSON"
            )
        if version >= YARN_NOT_SCALED_SINCE:
            notes.append(
                "on v0.30+ the override also raises max_position_embeddings, because YaRN no longer raises the "
                "derived limit (inferred from the source, vllm_memory.md §4)"
            )
    fixes.append(
        Fix(
            "vllm",
            "override the check",
            f"{ALLOW_LONG_ENV} " + _cmd(facts, {}),
            f"vLLM accepts {fmt_tokens(want)} anyway",
            f"without real RoPE scaling, positions past {fmt_tokens(derived)} produce garbage or NaN "
            "(absolute-position models crash with CUDA out-of-bounds errors)",
            rank=4,
        )
    )
    if not gguf:
        notes.insert(
            0,
            "if you load a GGUF file, vLLM converts its metadata to a config.json and the conversion can be wrong "
            "(transformers#39976: a Qwen3-MoE GGUF came out as 32,768): add --hf-config-path <original repo>",
        )
    _version_note(facts, notes)
    return _finish(
        facts,
        title,
        summary,
        numbers,
        fixes,
        notes,
        short=f"--max-model-len {fmt_tokens(want)} is above the model's {fmt_tokens(derived)}.",
        data={"max_model_len": want, "derived_max_model_len": derived, "gguf": gguf},
    )


# ------------------------------------------------------------------------------------------------ batched tokens


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
            _cmd(facts, {"--no-enable-chunked-prefill": None, "--enable-chunked-prefill": ""}),
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
            _cmd(facts, {"--max-num-batched-tokens": str(want)}),
            "a whole max_model_len prompt fits in one step",
            cost,
            rank=3 if ratio > 16 else 2,
        )
    )
    fixes.append(
        Fix(
            "vllm",
            f"cap the context at {fmt_tokens(mnbt)} tokens",
            _cmd(facts, {"--max-model-len": str(mnbt)}),
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
    _version_note(facts, notes)
    return _finish(
        facts,
        title,
        summary,
        numbers,
        fixes,
        notes,
        short=f"Chunked prefill is off and max_num_batched_tokens {fmt_tokens(mnbt)} < max_model_len {fmt_tokens(want)}.",
        data={"max_num_batched_tokens": mnbt, "max_model_len": want},
    )


# ------------------------------------------------------------------------------------------------ invalid arguments

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
            _cmd(facts, {"--max-num-seqs": str(mnbt)}),
            f"at most {fmt_tokens(mnbt)} requests run at once; batch size unchanged",
            "fewer concurrent requests; the rest queue",
            rank=1,
        ),
        Fix(
            "vllm",
            f"raise max_num_batched_tokens to {fmt_tokens(seqs)}",
            _cmd(facts, {"--max-num-batched-tokens": str(seqs)}),
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
    _version_note(facts, notes)
    return _finish(
        facts,
        title,
        summary,
        numbers,
        fixes,
        notes,
        data={"max_num_batched_tokens": mnbt, "max_num_seqs": seqs},
    )


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
            _cmd(facts, {"--kv-cache-dtype": suggestion}),
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
                _cmd(facts, {"--kv-cache-dtype": "auto"}),
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
    _version_note(facts, notes)
    return _finish(
        facts, title, summary, numbers, fixes, notes, data={"kv_cache_dtype": bad, "suggested": suggestion}
    )


# ------------------------------------------------------------------------------------------------ memory in use

UTIL_MARGIN = 0.01  # of total memory, kept free below what the startup check measured
SHARED_GPU_FRACTION = 0.25  # held by others: more than a CUDA context or a stray tensor
KV_MEMORY_BYTES_SINCE = (0, 11, 0)
NVIDIA_SMI_APPS = "nvidia-smi --query-compute-apps=pid,used_memory --format=csv"


def fitting_utilization(free_gib: float, total_gib: float, margin: float = UTIL_MARGIN) -> float:
    """The largest gpu_memory_utilization (2 decimals, rounded down) whose request fits in what is free."""
    return math.floor((free_gib / total_gib - margin) * 100 + 1e-9) / 100


def gpu_memory_in_use(facts: PasteFacts) -> Reply:
    sig = facts.root.signature
    if sig.endswith("profiling_free_rose"):
        return _free_rose(facts)
    if sig.endswith("external_weights"):
        return _external_weights(facts)
    return _startup_free(facts)


def _find_other_process(rank: int, held: float | None, effect: str | None = None) -> Fix:
    if effect is None:
        effect = (
            f"gives back {held:.2f} GiB; the same gpu_memory_utilization then starts"
            if held is not None
            else "gives the memory back; the same gpu_memory_utilization then starts"
        )
    return Fix(
        "any",
        "find and stop what holds the GPU",
        f"{NVIDIA_SMI_APPS}\nkill <pid>   # the leftover vLLM/python process, if it is yours",
        effect,
        "inside a container nvidia-smi may not list other containers' processes: check the host",
        rank=rank,
    )


def _startup_free(facts: PasteFacts) -> Reply:
    p = facts.params
    free = p.get("free_gib")
    total = p.get("total_gib") or facts.context.get("gpu_total_gib")
    util = p.get("gpu_memory_utilization") or facts.context.get("gpu_memory_utilization")
    requested = p.get("requested_gib")
    if free is None or not total:
        return generic(facts)
    if util is None:
        util = vllm_default_utilization(facts.vllm_version)
    if requested is None:
        requested = util * total
    device = p.get("device")
    version = facts.vllm_version
    held = max(0.0, total - free)
    held_frac = held / total
    fit = fitting_utilization(free, total)
    usable = fit > 0 and fit * total >= 1.0
    notes: list[str] = []
    inferred = None
    if not facts.version_known:
        inferred = (
            "the device name in the message (cuda:N) appears from v0.15, so this is v0.15 or newer."
            if device
            else "this wording without a device name is printed by v0.11-v0.13."
        )
    on = f" on {device}" if device else ""
    title = (
        f"vLLM: only {_num(free)} of {_num(total)} GiB is free{on}; gpu_memory_utilization {_num(util)} "
        f"asks for {_num(requested)} GiB"
    )
    sentences = [
        "gpu_memory_utilization is a fraction of the GPU's *total* memory, and vLLM (v0.11+) checks at startup "
        f"that all of it is free: {_num(util)} x {_num(total)} GiB = {_num(requested)} GiB, but only "
        f"{_num(free)} GiB was free.",
        f"Something else already holds {held:.2f} GiB ({held_frac:.0%} of the GPU): another process, a second "
        "vLLM instance or another stage of the same pipeline, or a process left over from an earlier run.",
    ]
    if usable:
        sentences.append(f"Stop it, or ask for at most {fit:.2f} of the GPU.")
    else:
        sentences.append(
            "Lowering the utilization cannot help with this little free: free the GPU or split it between the "
            "instances on purpose."
        )
    numbers = [
        Fact("total GPU memory", f"{_num(total)} GiB", "log"),
        Fact("free at startup", f"{_num(free)} GiB", "log"),
        Fact("gpu_memory_utilization", _num(util), "log" if "gpu_memory_utilization" in p else "estimated"),
        Fact(
            "requested (util x total)",
            f"{_num(requested)} GiB",
            "log" if "requested_gib" in p else "computed",
        ),
        Fact("held by something else", f"{held:.2f} GiB ({held_frac:.1%})", "computed"),
    ]
    if device:
        numbers.append(Fact("device", str(device), "log"))
    if usable:
        numbers.append(
            Fact("largest utilization that fits", f"{fit:.2f} ({fit * total:.2f} GiB)", "computed")
        )

    fixes: list[Fix] = []
    need_min = None
    weights = None
    tp = facts.get("tp") or 1
    if facts.model is not None:
        weights = variant_weight_bytes(facts.model.model, facts.model.variant) / tp / GIB
        need_min = (weights + 1.5) / total
    if usable:
        effect = f"asks for {fit * total:.2f} GiB, within the {_num(free)} GiB free"
        cost = f"{(util - fit) * total:.2f} GiB less for the KV cache: fewer tokens in flight"
        if need_min is not None and fit < need_min:
            cost += f"; too little for the weights ({weights:.1f} GiB per GPU): free memory first"
        fixes.append(
            Fix(
                "vllm",
                f"lower gpu_memory_utilization to {fit:.2f}",
                _cmd(facts, {"--gpu-memory-utilization": f"{fit:.2f}"}),
                effect,
                cost,
                rank=1 if need_min is None or fit >= need_min else 3,
            )
        )
    fixes.append(_find_other_process(2 if usable else 1, held))
    # stages or instances sharing the GPU on purpose: scale what each asks so the sum stays below 1
    scale = (1 - 2 * UTIL_MARGIN) / (util + held_frac)
    this_share = math.floor(util * scale * 100 + 1e-9) / 100
    others = math.floor(held_frac * scale * 100 + 1e-9) / 100
    # another engine's worth of memory (or nothing left): sharing the GPU is the likely setup
    if this_share > 0 and others > 0 and (not usable or held_frac >= SHARED_GPU_FRACTION):
        snippet = (
            "# vllm-omni stage config: stages on the same device share it, their utilizations must sum below 1\n"
            "stage_args:\n"
            "  - stage_id: 0   # the stage(s) already on this GPU, together\n"
            '    runtime: {devices: "0"}\n'
            f"    engine_args: {{gpu_memory_utilization: {others:.2f}}}\n"
            "  - stage_id: 1   # the stage that failed\n"
            '    runtime: {devices: "0"}\n'
            f"    engine_args: {{gpu_memory_utilization: {this_share:.2f}}}"
        )
        fixes.append(
            Fix(
                "vllm",
                "split the GPU between stages or instances on purpose",
                snippet,
                f"together they ask {util + held_frac:.2f} of the GPU ({_num(util)} here + {held_frac:.2f} held); "
                f"scaled to {others:.2f} + {this_share:.2f} = {others + this_share:.2f}. Or give the failing "
                "stage a GPU of its own (runtime.devices)",
                "each stage gets a smaller KV cache; both must still hold their weights",
                rank=2 if not usable else 3,
            )
        )
    sections: list[Section] = []
    if version >= KV_MEMORY_BYTES_SINCE:
        body = (
            "--kv-cache-memory-bytes (v0.11+) sets the KV cache size directly and ignores "
            "gpu_memory_utilization for it, so the engine takes weights + activations + that KV cache, "
            "not a fraction of the card. The startup check still compares gpu_memory_utilization x total "
            "with free memory, so pair it with a utilization that fits"
            + (f" ({fit:.2f} here)" if usable else "")
            + "."
        )
        sections.append(Section("Sharing a GPU on purpose", body=body))
        if usable and weights is not None:
            kv = fit * total - weights - 1.5
            if kv >= 1:
                kv_g = int(kv)  # whole GiB: "5G" is 5 GiB to vLLM's size parser
                fixes.append(
                    Fix(
                        "vllm",
                        f"pin the KV cache at {kv_g} GiB",
                        _cmd(
                            facts,
                            {
                                "--gpu-memory-utilization": f"{fit:.2f}",
                                "--kv-cache-memory-bytes": f"{kv_g}G",
                            },
                        ),
                        "the KV cache no longer depends on what else is on the GPU",
                        f"estimated from {weights:.1f} GiB of weights and ~1.5 GiB of activations",
                        rank=4,
                    )
                )
    picture = MemoryPicture(
        total_gib=total,
        segments=[
            MemorySegment("held by others", held, "computed"),
            MemorySegment("free", free, "log"),
        ],
        title="GPU memory when vLLM started",
    )
    _version_note(facts, notes, inferred)
    return _finish(
        facts,
        title,
        " ".join(sentences),
        numbers,
        fixes,
        notes,
        short=f"Only {_num(free)} of {_num(total)} GiB is free; utilization {_num(util)} asks for {_num(requested)} GiB.",
        sections=sections,
        memory=picture,
        data={
            "free_gib": free,
            "total_gib": total,
            "gpu_memory_utilization": util,
            "requested_gib": requested,
            "suggested_utilization": fit if usable else None,
            "split_utilizations": [others, this_share] if this_share > 0 and others > 0 else None,
        },
    )


def _free_rose(facts: PasteFacts) -> Reply:
    p = facts.params
    before = p.get("free_gib")
    after = p.get("current_free_gib")
    if before is None and p.get("free_bytes") is not None:
        before = p["free_bytes"] / GIB
        after = p.get("current_free_bytes", 0) / GIB if p.get("current_free_bytes") is not None else None
    title = "vLLM: free GPU memory rose while vLLM was profiling"
    if before is not None and after is not None:
        title = f"vLLM: free GPU memory rose from {before:.2f} to {after:.2f} GiB while vLLM was profiling"
    summary = (
        "vLLM measures its own memory use as the drop in free GPU memory during profiling, so another process "
        "that releases memory at the same time breaks the measurement and vLLM stops. Start one engine at a time "
        "on a GPU, and make sure earlier runs have exited."
    )
    numbers = []
    if before is not None:
        numbers.append(Fact("free when profiling started", f"{before:.2f} GiB", "log"))
    if after is not None:
        numbers.append(Fact("free after profiling", f"{after:.2f} GiB", "log"))
    if before is not None and after is not None:
        numbers.append(Fact("released by another process", f"{after - before:.2f} GiB", "computed"))
    fixes = [
        _find_other_process(
            1, None, "nothing else allocates or frees memory on this GPU while vLLM starts and profiles"
        )
    ]
    notes: list[str] = []
    # the byte-count wording is V1 in v0.8-v0.10, which has no --kv-cache-memory-bytes
    old_wording = "free_bytes" in p
    if old_wording and not facts.version_known:
        notes.append(
            "the byte counts in this message date it to vLLM 0.8-0.10; --kv-cache-memory-bytes, which skips "
            "the measurement, needs v0.11+"
        )
    elif facts.vllm_version >= KV_MEMORY_BYTES_SINCE:
        fixes.append(
            Fix(
                "vllm",
                "size the KV cache yourself",
                _cmd(facts, {"--kv-cache-memory-bytes": "<N>G"}),
                "skips the measured profile, so memory others release no longer matters",
                "you choose N: what is free minus weights and ~1-2 GiB of activations",
                rank=2,
            )
        )
    if not old_wording:
        _version_note(facts, notes)
    return _finish(facts, title, summary, numbers, fixes, notes)


def _external_weights(facts: PasteFacts) -> Reply:
    p = facts.params
    total = p.get("total_gib")
    util = p.get("gpu_memory_utilization")
    if not total or util is None:
        return generic(facts)
    requested = p.get("requested_gib") or util * total
    notes: list[str] = []
    numbers = [
        Fact("total GPU memory", f"{_num(total)} GiB", "log"),
        Fact("gpu_memory_utilization", _num(util), "log"),
    ]
    fixes: list[Fix] = []
    if p.get("external_weights_gib") is not None:
        w = p["external_weights_gib"]
        new = min(0.95, math.ceil((w / total + 0.05) * 100) / 100)
        title = f"vLLM: externally held weights ({_num(w)} GiB) exceed gpu_memory_utilization {_num(util)} ({_num(requested)} GiB)"
        summary = (
            "With weights held by an external loader, they count inside gpu_memory_utilization x total: "
            f"{_num(w)} GiB of weights against {_num(requested)} GiB leaves nothing for activations and the KV "
            f"cache. Raise the utilization to at least {new:.2f}, or shard the weights over more GPUs."
        )
        numbers += [
            Fact("external weights", f"{_num(w)} GiB", "log"),
            Fact("requested (util x total)", f"{_num(requested)} GiB", "log"),
            Fact("utilization that leaves 5% for the rest", f"{new:.2f}", "computed"),
        ]
        fixes.append(
            Fix(
                "vllm",
                f"raise gpu_memory_utilization to {new:.2f}",
                _cmd(facts, {"--gpu-memory-utilization": f"{new:.2f}"}),
                f"{new * total - w:.2f} GiB beside the weights for activations and the KV cache",
                "only if that much is free",
                rank=1,
            )
        )
    else:
        free = p.get("free_gib")
        budget = p.get("budget_gib")
        title = "vLLM: the engine's budget beside the external weights is more than is free"
        summary = (
            "With weights held by an external loader, vLLM needs gpu_memory_utilization x total minus those "
            "weights to be free at startup, and less is free. Lower the utilization or free the GPU."
        )
        if free is not None and budget is not None:
            title = f"vLLM: the engine needs {_num(budget)} GiB beside the external weights, {_num(free)} GiB is free"
            new = math.floor((util - (budget - free) / total - UTIL_MARGIN) * 100 + 1e-9) / 100
            numbers += [
                Fact("free at startup", f"{_num(free)} GiB", "log"),
                Fact("engine budget", f"{_num(budget)} GiB", "log"),
            ]
            if new > 0:
                numbers.append(Fact("utilization that fits", f"{new:.2f}", "computed"))
                fixes.append(
                    Fix(
                        "vllm",
                        f"lower gpu_memory_utilization to {new:.2f}",
                        _cmd(facts, {"--gpu-memory-utilization": f"{new:.2f}"}),
                        f"the engine's budget drops by {(util - new) * total:.2f} GiB, within what is free",
                        "a smaller KV cache",
                        rank=1,
                    )
                )
    fixes.append(_find_other_process(2, None))
    _version_note(facts, notes)
    return _finish(facts, title, summary, numbers, fixes, notes)


RULES = {
    "tp_divisibility@vllm": tp_divisibility,
    "dtype_unsupported@vllm": dtype_unsupported,
    "gpu_unsupported@vllm": gpu_unsupported,
    "quantization_unsupported@vllm": quantization_unsupported,
    "max_len_exceeds_model@vllm": max_len_exceeds_model,
    "batched_tokens_too_small@vllm": batched_tokens_too_small,
    "invalid_argument@vllm": invalid_argument,
    "gpu_memory_in_use@vllm": gpu_memory_in_use,
}
