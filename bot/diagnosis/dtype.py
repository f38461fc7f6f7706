"""dtype_unsupported@vllm and gpu_unsupported@vllm: bfloat16 or vLLM itself needs a newer GPU."""

from __future__ import annotations

from bot.diagnosis.commands import vllm_cmd
from bot.diagnosis.common import bigger_hardware, diagnosis_reply
from bot.diagnosis.engine_facts import compute_capability, gpu_name, vllm_version_note
from bot.diagnosis.gguf_fallback import gguf_fallback_fixes
from bot.diagnosis.gpu_generations import BF16_MIN_CC, arch_name, card_list, example_cards
from bot.diagnosis.numbers import fmt_cc, fmt_version
from bot.facts import PasteFacts
from bot.reply import Fact, Fix, Reply
from calculator.units import GIB

OVERFLOW_PRONE_FAMILIES = {"gemma2", "gemma3"}  # activations beyond float16's range (NaN / gibberish)


VLLM_MIN_CC = 7.0


AUTO_FP16_FALLBACK_SINCE = (0, 11, 0)


def dtype_unsupported(facts: PasteFacts) -> Reply:
    sig = facts.root.signature
    if sig.endswith("quant_dtype"):
        return _quant_dtype(facts)
    cc, cc_src = compute_capability(facts)
    if cc is not None and cc < VLLM_MIN_CC:
        return _below_minimum(facts, via_bf16=True)
    fallback = sig.endswith("bf16_fallback")
    gpu = gpu_name(facts) or "GPU"
    the_gpu = f"the {gpu}" if gpu_name(facts) else "your GPU"
    version = facts.vllm_version
    asked = str(facts.context.get("dtype") or "").lower()
    explicit_bf16 = asked in ("bfloat16", "bf16")
    notes: list[str] = []
    cc_text = f"compute capability {fmt_cc(cc)}" if cc is not None else "no reported compute capability"
    arch = f" ({arch_name(cc)})" if cc is not None else ""

    if fallback:
        title = f"vLLM: {the_gpu} ({cc_text}) has no bfloat16; vLLM switched to float16 by itself"
        summary = (
            f"bfloat16 needs compute capability {BF16_MIN_CC} (Ampere) or newer and {the_gpu} has {cc_text}{arch}. "
            "Since v0.11 vLLM falls back to float16 on its own when --dtype is auto, so this is a warning, "
            "not the failure. Only if the output turns into NaN or gibberish does the float16 range matter."
        )
    else:
        title = f"vLLM: bfloat16 needs compute capability {BF16_MIN_CC}; {the_gpu} has {fmt_cc(cc) if cc else 'none'}"
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
    if gpu_name(facts):
        numbers.append(Fact("GPU", gpu_name(facts) or "", "log" if "gpu" in facts.params else "catalog"))
    if cc is not None:
        numbers.append(Fact("compute capability", fmt_cc(cc), cc_src))
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
            vllm_cmd(facts, {"--dtype": "half"}),
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
                    vllm_cmd(facts, {"--dtype": "auto"}),
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
                    f'pip install -U "vllm>={fmt_version(AUTO_FP16_FALLBACK_SINCE)}"\n'
                    + vllm_cmd(facts, {"--dtype": None}),
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
            f"{card_list(example_cards(BF16_MIN_CC))}"
        )
    else:
        notes.append(
            "if float16 overflows (NaN or gibberish), use --dtype float32 (twice the weight memory) or a card with "
            f"compute capability 8.0+: {card_list(example_cards(BF16_MIN_CC))}"
        )
    if not fallback and not explicit_bf16 and not facts.version_known:
        notes.append(
            "vLLM version not in the paste; you did not pass --dtype bfloat16 (as far as the paste shows), so "
            "your vLLM is probably older than 0.11, which kept the config's bfloat16 under --dtype auto; "
            "--dtype half works on every version"
        )
    else:
        vllm_version_note(facts, notes)
    data = {"gpu": gpu_name(facts), "compute_capability": cc, "dtype_fix": "half"}
    return diagnosis_reply(
        title,
        summary,
        numbers,
        fixes,
        notes,
        f"bfloat16 needs compute capability {BF16_MIN_CC}; {the_gpu} has {fmt_cc(cc) if cc else 'less'}: use --dtype half.",
        data=data,
        numbers_always=True,
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
            vllm_cmd(facts, {"--dtype": "half"}),
            f"{method} kernels run with float16 activations",
            "rarely, a bfloat16-trained model overflows in float16 (NaN or gibberish)",
            rank=1,
        )
    ]
    notes: list[str] = []
    vllm_version_note(facts, notes)
    data = {"dtype_fix": "half"}
    return diagnosis_reply(title, summary, numbers, fixes, notes, data=data, numbers_always=True)


def gpu_unsupported(facts: PasteFacts) -> Reply:
    return _below_minimum(facts, via_bf16=False)


def _below_minimum(facts: PasteFacts, via_bf16: bool) -> Reply:
    cc, cc_src = compute_capability(facts)
    gpu = gpu_name(facts) or "GPU"
    the_gpu = f"the {gpu}" if gpu_name(facts) else "your GPU"
    cc_text = fmt_cc(cc) if cc is not None else "below 7.0"
    arch = f" ({arch_name(cc)})" if cc is not None else ""
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
    if gpu_name(facts):
        numbers.append(Fact("GPU", gpu, "log" if "gpu" in facts.params else "catalog"))
    if cc is not None:
        numbers.append(Fact("compute capability", cc_text, cc_src))
    numbers.append(Fact("vLLM needs", f"compute capability {VLLM_MIN_CC}+ (bfloat16: {BF16_MIN_CC}+)", "log"))
    if facts.gpu is not None:
        numbers.append(Fact("GPU memory", f"{facts.gpu.total_gib:.2f} GiB", "catalog"))
    if facts.model is not None:
        numbers.append(Fact("model", facts.model.label, "catalog"))
    fixes = gguf_fallback_fixes(facts, f"llama.cpp's CUDA build still supports {the_gpu}", rank=1)
    newer = example_cards(VLLM_MIN_CC)
    fixes.append(
        Fix(
            "vllm",
            "move to a compute-capability-7.0+ GPU",
            vllm_cmd(facts, {"--dtype": "half"}),
            f"vLLM runs on Volta and newer: {card_list(newer)}; --dtype half below 8.0",
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
    data = {"gpu": gpu_name(facts), "compute_capability": cc, "vllm_min_capability": VLLM_MIN_CC}
    return diagnosis_reply(
        title,
        " ".join(sentences),
        numbers,
        fixes,
        notes,
        f"vLLM needs compute capability {VLLM_MIN_CC}+; {the_gpu} has {cc_text}: use llama.cpp or Ollama.",
        sections,
        data=data,
        numbers_always=True,
    )


RULES = {
    "dtype_unsupported@vllm": dtype_unsupported,
    "gpu_unsupported@vllm": gpu_unsupported,
}
