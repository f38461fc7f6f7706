"""Capability below: the GPU lacks what the setting needs (bf16, a quantization kernel, flash attention
for a quantized V cache, a minimum compute capability).  Fixes use what this GPU has."""

from __future__ import annotations

from dataclasses import replace

from bot.diagnosis.budgets import budget_for
from bot.diagnosis.capacity import _name
from bot.diagnosis.commands import fa_on, user_command
from bot.diagnosis.parts import cause, env_fixes, hardware, reply
from bot.reply import Fix, Reply
from bot.shell import Command
from bot.situation import Situation, resolve_pasted_model
from calculator.kv import cuda_flash_attn_kv
from calculator.model_names import parse_name
from knowledge.features import feature_table, parse_version, quant_min_capability

_QUANT_ALIASES = {"auto_awq": "awq", "auto_gptq": "gptq", "compressed_tensors": "compressed-tensors"}
# Kernels that read the same checkpoint as a Marlin one: vLLM picks gptq_marlin / awq_marlin for a GPTQ /
# AWQ checkpoint when the GPU allows (vllm/model_executor/layers/quantization/gptq_marlin.py and
# awq_marlin.py, override_quantization_method); --quantization gptq / awq asks for the older kernel.
SAME_CHECKPOINT = {"gptq_marlin": "gptq", "awq_marlin": "awq"}
# the 4-bit checkpoint formats models are most often published in, in order of preference
CHECKPOINT_FORMATS = ("awq", "gptq")


def _cc(situation: Situation) -> float | None:
    cc = situation.get("compute_capability")
    if cc is not None:
        return float(cc)
    return situation.gpus.gpu.cc if situation.gpus.gpu is not None else None


def _quant_fixes(situation: Situation, method: str) -> list[Fix]:
    """The same model in a quantization this GPU runs, if the catalog has it; verified to start."""
    cc = _cc(situation)
    if situation.model is None or cc is None:
        return []
    out: list[Fix] = []
    for variant in situation.model.model.variants:
        need = quant_min_capability(variant.quant, situation.version)
        if variant.quant in (method, "gguf") or need is None or need > cc:
            continue
        swapped = _swap_model(situation, variant.id)
        budget = budget_for(swapped)
        out0 = budget.estimate.evaluate(budget.plan0) if budget else None
        if out0 is None or not out0.starts:
            continue
        command = user_command(swapped, "vllm", {"--quantization": None})
        out.append(Fix("vllm", f"the {variant.quant.upper()} checkpoint", command,
                       f"runs on compute capability {cc:g}; predicted to start", "another checkpoint to download", 1,
                       {"starts": True, "fit_tokens": out0.fit_len}))  # fmt: skip
        if len(out) >= 2:
            break
    return out


def _kernel_fixes(situation: Situation, method: str, cc: float) -> list[Fix]:
    """The same checkpoint on an older kernel this GPU runs (gptq_marlin -> gptq)."""
    base = SAME_CHECKPOINT.get(method)
    need = quant_min_capability(base, situation.version) if base else None
    if base is None or need is None or need > cc:
        return []
    command = user_command(situation, "vllm", {"--quantization": base})
    return [Fix("vllm", f"the {base} kernel on the same checkpoint", command,
                f"vLLM's {base} kernel needs compute capability {need:.1f}; this GPU has {cc:.1f}",
                "slower than the Marlin kernel", 1, {"kind": "setting", "min_capability": need})]  # fmt: skip


def _upgrade_fixes(situation: Situation, method: str, cc: float, need: float) -> list[Fix]:
    """The first listed vLLM release whose kernels for ``method`` run on this GPU, when the paste's
    version (or the minimum it printed) is older."""
    for entry in sorted(feature_table().quant_min_capability, key=lambda e: parse_version(e.release) or (0,)):
        release = parse_version(entry.release)
        newer = release is not None and (situation.version is None or release > situation.version)
        if newer and method in entry.methods and entry.methods[method] / 10 <= cc < need:
            return [Fix("any", f"vLLM {entry.release} or newer", f'pip install -U "vllm>={entry.release}"',
                        f"from {entry.release} its {method} kernels need compute capability {entry.methods[method] / 10:.1f}; this GPU has {cc:.1f}",
                        "an upgrade", 2, {"kind": "upgrade", "min_capability": entry.methods[method] / 10})]  # fmt: skip
    return []


def _hub_search(model_name: str, fmt_: str) -> str | None:
    """A command that lists the Hub repos of ``model_name`` in the ``fmt_`` format (ids containing both)."""
    base = parse_name(model_name).base
    if not base or not all(c.isalnum() or c in "-_." for c in base):
        return None
    return (
        'python -c "from huggingface_hub import list_models; '
        f"print(*[m.id for m in list_models(search='{base}', limit=500) if '{fmt_}' in m.id.lower()], "
        'sep=chr(10))"'
    )


def _format_fixes(situation: Situation, method: str, cc: float) -> list[Fix]:
    """Without a catalogued model to swap: the checkpoint format this GPU's kernels read, and a search
    for that format of the model named in the paste (no fix when the paste names no model)."""
    if not situation.model_name:
        return []
    for fmt_ in CHECKPOINT_FORMATS:
        need = quant_min_capability(fmt_, situation.version)
        if fmt_ in (method, SAME_CHECKPOINT.get(method)) or need is None or need > cc:
            continue
        search = _hub_search(situation.model_name, fmt_)
        if search is None:
            return []
        name = fmt_.upper()
        article = "an" if name[0] in "AEIOU" else "a"
        return [Fix("any", f"{article} {name} checkpoint of the same model (then `--quantization {fmt_}`)", search,
                    f"lists {name} repos of this model on the Hub; vLLM's {fmt_} kernel needs compute capability {need:.1f}, this GPU has {cc:.1f}",
                    "another checkpoint to download", 3, {"kind": "checkpoint", "min_capability": need})]  # fmt: skip
    return []


def _swap_model(situation: Situation, model_id: str) -> Situation:
    command = situation.command
    if command is not None and situation.model_name and situation.model_name in command.argv:
        argv = [model_id if a == situation.model_name else a for a in command.argv]
        command = Command(command.engine, command.interface, command.env, argv, dict(command.kwargs))
    elif command is not None and command.interface == "python":
        command = Command(command.engine, "python", [], [], {**command.kwargs, "model": model_id})
    else:
        command = None  # the model is not spelled out in the command: start from a minimal one
    return replace(situation, command=command, model_name=model_id, model=resolve_pasted_model(model_id))


def quantization(situation: Situation) -> Reply:
    raw = str(situation.get("quantization") or situation.setting("quantization") or "")
    method = _QUANT_ALIASES.get(raw.lower(), raw.lower())
    cc = _cc(situation)
    need = situation.get("min_capability") or quant_min_capability(method, situation.version)
    title, key = situation.root.title, None
    if need and cc:
        needs, has = f"compute capability {need:.1f}", f"this GPU has {cc:.1f}"
        title = f"vLLM: {method or 'this quantization'} needs {needs}, {has}"
        key = f"The {method or 'quantization'} kernels need {needs}; {has}."
    fixes = _quant_fixes(situation, method)
    if cc is not None:
        fixes = _kernel_fixes(situation, method, cc) + fixes
        fixes += _upgrade_fixes(situation, method, cc, float(need)) if need else []
        fixes += [] if fixes else _format_fixes(situation, method, cc)
    return reply(situation, title, key, fixes, extra=[] if fixes else [hardware(situation, None)])


def bf16(situation: Situation) -> Reply:
    cc = _cc(situation)
    name = situation.gpus.gpu.name if situation.gpus.gpu else (situation.get("gpu") or "this GPU")
    title, key = situation.root.title, None
    if cc:
        title = f"vLLM: bfloat16 needs compute capability 8.0, {name} has {cc:.1f}"
        key = f"{name} (compute capability {cc:.1f}) has no bfloat16; load the weights in float16."
    return reply(situation, title, key, env_fixes(situation, situation.root.remedies, "vllm"))


def flash_attn_needed(situation: Situation) -> Reply:
    engine = _name(situation.engine)
    title = f"{engine}: a quantized V cache needs flash attention"
    key = "A quantized V cache (q8_0 / q4_0) only works with flash attention on."
    if situation.context.get("flash_attn_unavailable"):  # llama.cpp turns it off for this model: it stays off
        cache = {"llama.cpp": "V", "ollama": "KV"}.get(situation.engine)  # Ollama's one setting holds K and V
        fixes = [Fix(situation.engine, f"keep the {cache} cache f16", user_command(situation, "llama.cpp", {"-ctv": "f16"}) if cache == "V" else "OLLAMA_KV_CACHE_TYPE=f16 ollama serve",
                     "the context is created without flash attention", "an f16 cache takes more memory than a quantized one", 1, {"kind": "setting"})] if cache else []  # fmt: skip
        key = key[:-4] + f", which {engine} turns off here (this model or GPU): keep the {cache} cache f16."
        return reply(situation, title, key, fixes)
    fixes = [_flash_attn_on(situation)] if situation.engine == "llama.cpp" else []
    if situation.engine == "ollama":
        fixes.append(Fix("ollama", "turn flash attention on", "OLLAMA_FLASH_ATTENTION=1 ollama serve",
                         "OLLAMA_KV_CACHE_TYPE takes effect", "", 1, {"kind": "setting"}))  # fmt: skip
    return reply(situation, title, key, fixes)


def _flash_attn_on(situation: Situation) -> Fix:
    """``-fa on`` (bare before -fa took a value); on CUDA, also a K/V cache pair with a flash-attention kernel
    when the pasted pair has none (storing no more per token: calculator.kv.cuda_flash_attn_kv)."""
    flags: dict[str, str | None] = {"-fa": fa_on(situation)}
    k, v = str(situation.setting("cache_type_k") or "f16"), str(situation.setting("cache_type_v") or "")
    pair = cuda_flash_attn_kv(k, v) if v and situation.gpus.backend in ("cuda", "rocm") else None
    if pair is None or pair == (k, v):
        return Fix("llama.cpp", "turn flash attention on", user_command(situation, "llama.cpp", flags), "the quantized V cache can be used", "", 1, {"kind": "setting"})  # fmt: skip
    command = user_command(situation, "llama.cpp", {**flags, "-ctk": pair[0], "-ctv": pair[1]})
    return Fix("llama.cpp", f"turn flash attention on with a {pair[0]} K and V cache", command,
               f"the quantized V cache can be used; CUDA's flash-attention kernels have no {k}/{v} pair (attention would run on the CPU)",
               f"a {pair[0]}/{pair[1]} cache instead of {k}/{v} (no more memory)", 1, {"kind": "setting"})  # fmt: skip


def capability_below(situation: Situation) -> Reply:
    category = situation.root.category
    if category == "quantization_unsupported":
        return quantization(situation)
    if category == "dtype_unsupported" and "quant" not in situation.root.signature:
        return bf16(situation)
    if category == "kv_quant_needs_flash_attn":
        return flash_attn_needed(situation)
    fixes = env_fixes(situation, situation.root.remedies, situation.engine)
    extra = [] if fixes else [hardware(situation, None)]
    return reply(situation, situation.root.title, cause(situation), fixes, extra=extra)
