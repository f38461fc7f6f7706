"""quantization_unsupported@vllm: the quantization method needs a newer GPU (or another method)."""

from __future__ import annotations

from bot.diagnosis.commands import served_model_name, vllm_cmd
from bot.diagnosis.common import bigger_hardware, diagnosis_reply, generic
from bot.diagnosis.engine_facts import compute_capability, gpu_name, vllm_version_note
from bot.diagnosis.gguf_fallback import base_model_name, gguf_fallback_fixes
from bot.diagnosis.gpu_generations import BF16_MIN_CC, arch_name, card_list, example_cards
from bot.diagnosis.numbers import fmt_cc, fmt_version
from bot.facts import PasteFacts
from bot.reply import Fact, Fix, Reply, Section
from calculator.commands import vllm_command

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
    cc, cc_src = compute_capability(facts)
    version = facts.vllm_version
    gpu = gpu_name(facts)
    notes: list[str] = []
    if need is None:
        need = _min_at(method, version)
    where = gpu or "your GPU"
    cc_text = fmt_cc(cc) if cc is not None else "?"

    # a newer vLLM whose minimum for this method is at or below this GPU's capability
    upgrade: tuple[int, int, int] | None = None
    if cc is not None and need is not None:
        for ver in sorted(QUANT_MIN_CAPABILITY):
            m = QUANT_MIN_CAPABILITY[ver].get(method)
            if m is not None and m <= cc + 1e-9 and m < need - 1e-9:
                if not (facts.version_known and version >= ver):
                    upgrade = ver
                break

    title = f"vLLM: {raw} needs compute capability {fmt_cc(need) if need else '?'}; {where} has {cc_text}"
    sentences = [
        f"vLLM picks kernels per quantization method, and its {raw} kernels need compute capability "
        f"{fmt_cc(need) if need else 'higher'}; {where} has {cc_text}"
        + (f" ({arch_name(cc)})" if cc is not None else "")
        + "."
    ]
    if upgrade is not None:
        m = QUANT_MIN_CAPABILITY[upgrade][method]
        sentences.append(
            f"Newer vLLM lowered that minimum to {fmt_cc(m)} (checked in v{fmt_version(upgrade)}), so upgrading runs "
            "this checkpoint as is; otherwise use a quantization whose kernels run here."
        )
    else:
        sentences.append("Use a checkpoint in a quantization whose kernels run on this card, or a newer GPU.")
    summary = " ".join(sentences)

    numbers = [Fact("quantization", raw, "log")]
    if need is not None:
        numbers.append(
            Fact("minimum capability", fmt_cc(need), "log" if "min_capability" in p else "estimated")
        )
    if cc is not None:
        numbers.append(Fact("your GPU's capability", cc_text, cc_src))
    if gpu:
        numbers.append(Fact("GPU", gpu, "log" if "gpu" in p else "catalog"))
    model_name = served_model_name(facts)
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
                    vllm_cmd(facts, {"--quantization": plain, **dtype_change}),
                    f"same checkpoint; {plain} kernels run from compute capability {fmt_cc(plain_min)}",
                    "slower than Marlin at large batch sizes",
                    rank=rank,
                )
            )
            rank += 1
    if upgrade is not None:
        m = QUANT_MIN_CAPABILITY[upgrade][method]
        effect = f"v{fmt_version(upgrade)} runs {raw} from compute capability {fmt_cc(m)}"
        cost = "a vLLM upgrade"
        if method == "fp8" and cc is not None and cc < 8.9:
            effect += " (weight-only FP8 through Marlin kernels: weights stay 8-bit)"
            cost = (
                "no FP8 tensor cores below 8.9: matmuls run in 16-bit, so it saves memory but is not faster"
            )
        fixes.append(
            Fix(
                "vllm",
                f"upgrade vLLM to {fmt_version(upgrade)} or newer",
                f'pip install -U "vllm>={fmt_version(upgrade)}"\n' + vllm_cmd(facts, {}),
                effect,
                cost,
                rank=rank,
            )
        )
        rank += 1
    base = base_model_name(facts)
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
            if facts.context.get("command") and served_model_name(facts):
                command = command.replace(str(served_model_name(facts)), target)
            fixes.append(
                Fix(
                    "vllm",
                    f"{'an' if alt == 'awq' else 'a'} {alt.upper()} checkpoint of the same model",
                    command,
                    f"{alt} kernels run from compute capability {fmt_cc(alt_min)}"
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
                    f"4-bit in-flight quantization of the original checkpoint; runs from {fmt_cc(bnb_min)}",
                    "slower kernels than AWQ/GPTQ",
                    rank=rank,
                )
            )
            rank += 1
    fixes += gguf_fallback_fixes(
        facts, "GGUF kernels run on every CUDA card from compute capability 5.0", rank=rank + 1
    )
    if need is not None:
        cards = example_cards(need)
        if cards:
            fixes.append(
                Fix(
                    "vllm",
                    f"a GPU with compute capability {fmt_cc(need)}+",
                    vllm_cmd(facts, {}),
                    f"runs {raw} as is: {card_list(cards)}",
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
            f"your log's minimum ({fmt_cc(need) if need else '?'}) is the one older vLLM releases print, so your "
            f"vLLM predates v{fmt_version(upgrade)}"
        )
    vllm_version_note(facts, notes, "the fixes name the version where they need one.")
    data = {
        "quantization": raw,
        "min_capability": need,
        "compute_capability": cc,
        "upgrade_to": fmt_version(upgrade) if upgrade else None,
    }
    return diagnosis_reply(
        title,
        summary,
        numbers,
        fixes,
        notes,
        f"{raw} needs compute capability {fmt_cc(need) if need else '?'}, this GPU has {cc_text}.",
        sections,
        data=data,
        numbers_always=True,
    )


RULES = {"quantization_unsupported@vllm": quantization_unsupported}
