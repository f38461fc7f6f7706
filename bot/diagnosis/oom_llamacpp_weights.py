"""llama.cpp: the weights assigned to a GPU do not fit (how many layers do)."""

from __future__ import annotations

from bot.diagnosis.commands import flag_argument, llama_cmd
from bot.diagnosis.common import bigger_hardware, diagnosis_reply
from bot.diagnosis.engine_facts import model_spec
from bot.diagnosis.gguf import gguf_bytes, gguf_file
from bot.diagnosis.llamacpp_facts import alloc_mib, device_total_mib, llama_kv_per_token, llama_numbers
from bot.diagnosis.numbers import fmt_gib, fmt_mib
from bot.diagnosis.smaller_builds import smaller_gguf
from bot.facts import PasteFacts
from bot.reply import Fact, Fix, Reply
from calculator.llamacpp import FIT_MARGIN_MIB
from calculator.units import MIB


def llama_weights_oom(facts: PasteFacts) -> Reply:
    p = facts.params
    alloc = alloc_mib(facts) or 0.0
    device = p.get("device", "0")
    avail, _ = device_total_mib(facts)
    model = model_spec(facts)
    ngl = facts.get("n_gpu_layers")
    per_layer = None
    layers_total = model.num_hidden_layers + 1 if model is not None else p.get("layers_model")
    if (
        layers_total
        and ngl
        and alloc
        and device in ("0", 0)
        and not flag_argument(facts.context.get("command"), "-ts", "--tensor-split")
    ):
        per_layer = alloc / min(int(ngl), int(layers_total))  # one GPU held every offloaded layer
    elif model is not None:
        gguf = gguf_bytes(facts)
        per_layer = gguf / MIB / (model.num_hidden_layers + 1) if gguf else None
    kv_tok = llama_kv_per_token(facts)
    n_ctx = facts.get("n_ctx")
    kv_per_layer = kv_tok * int(n_ctx) / MIB / model.num_hidden_layers if kv_tok and n_ctx and model else 0.0
    reserve = FIT_MARGIN_MIB + 512.0
    n_fit = None
    if avail and per_layer:
        n_fit = max(0, int((avail - reserve) // (per_layer + kv_per_layer)))
        if layers_total:
            n_fit = min(n_fit, int(layers_total))
    kv_full = kv_tok * int(n_ctx) / MIB if kv_tok and n_ctx else 0.0
    ratio = (avail - reserve - kv_full) / alloc if avail and alloc else None

    title = (
        f"llama.cpp: the weights for device {device}"
        + (f" ({fmt_gib(alloc / 1024)})" if alloc else "")
        + " do not fit in its memory"
    )
    sentences = [
        f"llama.cpp failed to allocate the {fmt_mib(alloc) + ' ' if alloc else ''}weight buffer of the layers assigned to GPU {device} while "
        "loading, before any KV cache or compute buffer existed: -ngl (how many layers go to the GPU) and the "
        "quantization decide this number, not the context size."
    ]
    if avail and n_fit is not None and layers_total:
        sentences.append(
            f"The GPU offers about {fmt_mib(avail)}: {n_fit} of the {int(layers_total)} layers fit once room is kept "
            "for their KV cache and the compute buffers."
        )
    elif avail:
        sentences.append(
            f"The GPU offers about {fmt_mib(avail)}, so roughly {max(0.0, ratio or 0):.0%} of those layers fit once "
            "room is kept for the KV cache and compute buffers."
        )
    elif alloc / 1024 > 100:
        sentences.append(
            f"{fmt_gib(alloc / 1024)} on one device is more than any single consumer or most datacenter GPUs hold: "
            "either the model is too big for this machine at this quant, or -ngl / --tensor-split puts far "
            "too much on one GPU."
        )
    summary = " ".join(sentences)
    numbers = llama_numbers(facts, alloc or None, "weights buffer that failed")
    if per_layer:
        numbers.append(Fact("weights per layer", fmt_mib(per_layer), "computed" if ngl else "estimated"))
    if n_fit is not None:
        numbers.append(Fact("layers that fit on the GPU", str(n_fit), "computed"))

    fixes: list[Fix] = []
    if n_fit is not None and n_fit > 0:
        fixes.append(
            Fix(
                "llama.cpp",
                f"put {n_fit} layers on the GPU (-ngl {n_fit})",
                llama_cmd(facts, {"-ngl": str(n_fit)}),
                f"{n_fit} x {fmt_mib(per_layer or 0)} = {fmt_mib(n_fit * (per_layer or 0))} of weights, leaving "
                f"{fmt_mib((avail or 0) - n_fit * (per_layer or 0))} for the KV cache and compute buffers",
                "the other layers run on the CPU: slower, the more the slower",
                rank=1,
            )
        )
    fixes.append(
        Fix(
            "llama.cpp",
            "let --fit place the layers",
            llama_cmd(facts, {"-ngl": None, "-ts": None, "-fit": None, "--fit": "on"}),
            "llama.cpp (b7407+) measures free memory and offloads only what fits (MoE experts to the CPU first)",
            "it only adjusts what you did not set: no -ngl / -ts / -ot on the command line",
            rank=2 if n_fit else 1,
        )
    )
    if model is None or model.is_moe:
        fixes.append(
            Fix(
                "llama.cpp",
                "keep the MoE experts in system RAM" + (" (MoE models)" if model is None else ""),
                llama_cmd(facts, {"-cmoe": ""}),
                "the expert tensors (most of an MoE model) stay in RAM; attention and shared weights stay on the GPU",
                "needs that much system RAM; slower tokens",
                rank=3,
            )
        )
    file = gguf_file(facts)
    smaller = smaller_gguf(file, ratio) if ratio is not None and 0 < ratio < 1 else None
    if smaller is not None:
        name, quant, bits = smaller
        command = facts.context.get("command") or f"llama-server -m {file}"
        fixes.append(
            Fix(
                "llama.cpp",
                f"the {quant} quant of the same model",
                command.replace(file, name) if file else llama_cmd(facts, {}),  # type: ignore[arg-type]
                f"{bits:.2f} bits per weight: at most {ratio:.0%} of this file, so all layers fit on the GPU",
                "quality drops noticeably below about 4 bits per weight",
                rank=3,
            )
        )
    else:
        fixes.append(
            Fix(
                "llama.cpp",
                "a smaller quant of the same model",
                llama_cmd(facts, {})
                if file
                else "llama-server -m <model>-Q3_K_M.gguf   # the same model, fewer bits per weight",
                (
                    f"the file must shrink to about {ratio:.0%} of its size to fit this GPU"
                    if ratio is not None and 0 < ratio < 1
                    else "fewer bits per weight"
                )
                + " (Q8_0 -> Q4_K_M is about 55% of the size, Q4_K_M -> IQ3_XXS about 67%)",
                "lower quality below about 4 bits per weight",
                rank=4,
            )
        )
    fixes.append(
        Fix(
            "llama.cpp",
            "spread the layers over all GPUs",
            llama_cmd(facts, {"-sm": "layer", "-ts": None, "--tensor-split": None}),
            "without -ts llama.cpp splits layers by each GPU's free memory",
            "only with more than one GPU",
            rank=5,
        )
    )
    notes = [
        "Weights are allocated per device: with several GPUs, -ts / --tensor-split decides each one's share."
    ]
    if avail is None:
        notes.append(
            "The GPU's memory is not in the paste: the 'using device CUDA0 (...) - N MiB free' line (printed with -lv 4 "
            "on recent builds) lets me compute -ngl exactly."
        )
    hw = (
        bigger_hardware(facts, int(n_ctx) if n_ctx else 8192, engine="llama.cpp")
        if model is not None
        else None
    )
    data = {"n_gpu_layers_fit": n_fit}
    return diagnosis_reply(
        title,
        summary,
        numbers,
        fixes,
        notes,
        "The weights assigned to the GPU do not fit.",
        [hw],
        None,
        data,
        ranked=True,
    )
