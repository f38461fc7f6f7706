"""GGUF checkpoints and Ollama tags of the paste's model: which file, which quant, how big, its KV cache."""

from __future__ import annotations

import re

from bot.diagnosis.engine_facts import paste_text
from bot.facts import PasteFacts
from calculator.catalog import ModelSpec, Variant, quant_formats, variant_weight_bytes
from calculator.kv import LLAMACPP_KV_BYTES, llamacpp_layout
from calculator.llamacpp import LlamaCppConfig, kv_bytes
from calculator.resolve import ModelMatch, NameNotFound, resolve_model
from calculator.units import GIB


def file_stem(name: str) -> str:
    """A model file's name without folder, extension or split suffix (``-00001-of-00003``)."""
    name = name.strip().strip("\"'").rstrip("/\\").replace("\\", "/").split("/")[-1]
    for ext in (".gguf", ".bin", ".safetensors"):
        if name.lower().endswith(ext):
            name = name[: -len(ext)]
    # split GGUFs: model-00001-of-00003
    return re.sub(r"-0*1-of-[0-9]+$", "", name)


QUANT_SUFFIX = re.compile(
    r"[.\-_](?:I?Q[0-9]_[A-Z0-9_]+|Q[0-9]_[0-9]|[BF]?F16|F32|MXFP4(?:_MOE)?)$", re.IGNORECASE
)


def file_quant(facts: PasteFacts) -> str | None:
    """The GGUF type a file name states (``...-Q5_K_M.gguf`` -> ``Q5_K_M``)."""
    m = QUANT_SUFFIX.search(file_stem(str(facts.context.get("model") or "")))
    return m.group(0)[1:].upper() if m else None


def gguf_weights(facts: PasteFacts, match: ModelMatch) -> tuple[float | None, str, str | None]:
    """GiB of the GGUF the paste runs, its source and type: the catalog variant when the file name agrees,
    else the file name's quant at its measured bits per weight."""
    variant = gguf_variant(match)
    quant = file_quant(facts)
    if quant and (variant is None or (variant.gguf_type or "").upper() != quant):
        bpw = gguf_quants_upper().get(quant)
        if bpw:
            return match.model.params_b * 1e9 * bpw / 8 / GIB, "computed", quant
    if variant is None:
        return None, "estimated", None
    return variant_weight_bytes(match.model, variant) / GIB, "catalog", variant.gguf_type


def catalog_model(facts: PasteFacts) -> ModelMatch | None:
    """The catalog model: the facts' own match, else the file name without folder and extension."""
    if facts.model is not None:
        return facts.model
    name = facts.context.get("model")
    if not name:
        m = re.search(r"(?m)^\s*Model:\s*([A-Za-z0-9][^\n]{1,80}?)\s*$", paste_text(facts))
        name = m.group(1) if m else None
    if not name:
        return None
    if "sha256-" in str(name):
        # a blob path from Ollama's runner command line names no model: drop the generic "not in my catalog"
        facts.notes[:] = [n for n in facts.notes if not n.startswith(f"the model {name} ")]
        return None
    base = file_stem(str(name))
    try:
        match = resolve_model(base)
    except NameNotFound:
        # "mistral-7b-instruct-v0.3.Q5_K_M": the catalog may not list that quant; the model is what matters
        stripped = QUANT_SUFFIX.sub("", base)
        if stripped == base:
            return None
        try:
            match = resolve_model(stripped)
        except NameNotFound:
            return None
    # the generic lookup missed a file name this one resolves: its "not in my catalog" note is wrong
    facts.notes[:] = [n for n in facts.notes if not n.startswith(f"the model {name} is not in my catalog")]
    return match


def gguf_variant(match: ModelMatch | None) -> Variant | None:
    """The GGUF checkpoint llama.cpp / Ollama would run: the named one, else Ollama's default tag."""
    if match is None:
        return None
    if match.variant is not None and match.variant.quant == "gguf":
        return match.variant
    return next((v for v in match.model.variants if v.quant == "gguf" and v.ollama), None) or next(
        (v for v in match.model.variants if v.quant == "gguf"), None
    )


def ollama_tag(facts: PasteFacts, match: ModelMatch | None) -> str | None:
    """The tag the paste runs (``name:size``), else the catalog's tag of the GGUF Ollama would run."""
    name = str(facts.context.get("model") or "")
    if ":" in name and "/" not in name and "\\" not in name:
        return name
    v = gguf_variant(match)
    return v.ollama if v is not None else None


def gguf_file(facts: PasteFacts) -> str | None:
    """The paste's model when it is a ``.gguf`` file name."""
    name = facts.context.get("model")
    if name and str(name).lower().endswith(".gguf"):
        return str(name)
    return None


def kv_gguf_gib(model: ModelSpec, n_ctx: int, ctk: str = "f16", ctv: str = "f16", parallel: int = 1) -> float:
    """llama.cpp / Ollama KV cache for ``n_ctx`` tokens per slot (Ollama: unified off, one stream per slot)."""
    ctk = ctk if ctk in LLAMACPP_KV_BYTES else "f16"
    ctv = ctv if ctv in LLAMACPP_KV_BYTES else "f16"
    layout = llamacpp_layout(model, ctk, ctv)
    cfg = LlamaCppConfig(
        n_ctx=n_ctx * max(1, parallel), cache_type_k=ctk, cache_type_v=ctv, n_parallel=max(1, parallel)
    )
    cfg.kv_unified = parallel <= 1
    return kv_bytes(layout, n_ctx * max(1, parallel), cfg) / GIB


def gguf_placeholder(match: ModelMatch | None, variant: Variant | None = None) -> str:
    """``<Llama-3.1-8B-Instruct-Q4_K_M>.gguf``: a file name for a command when the paste has none."""
    if match is None:
        return "<model>.gguf"
    v = variant or gguf_variant(match)
    name = match.model.id.split("/")[-1]
    return f"<{name}-{v.gguf_type}>.gguf" if v is not None and v.gguf_type else f"<{name}>.gguf"


def gguf_quants() -> dict[str, float]:
    """Effective bits per weight of each quant type in the quant table, by its name there."""
    return {q.name: q.effective_bpw for q in quant_formats().weight_formats if q.effective_bpw}


def gguf_quants_upper() -> dict[str, float]:
    """:func:`gguf_quants` keyed by the upper-case name, as file names and ladders write it."""
    return {k.upper(): v for k, v in gguf_quants().items()}


def gguf_bytes(facts: PasteFacts) -> float | None:
    """Weights of the GGUF in use: the named GGUF variant, else the catalog's Q4_K_M, else an estimate."""
    if facts.model is None:
        return None
    model, variant = facts.model.model, facts.model.variant
    if variant is not None and variant.quant == "gguf":
        return float(variant_weight_bytes(model, variant))
    gguf = [v for v in model.variants if v.quant == "gguf"]
    q4 = next((v for v in gguf if (v.gguf_type or "").upper() == "Q4_K_M"), None)
    if q4 is not None:
        return float(variant_weight_bytes(model, q4))
    return model.params_b * 1e9 * 4.89 / 8


def first_ollama_tag(facts: PasteFacts) -> str | None:
    """The first Ollama tag the catalog lists for the paste's model (any variant)."""
    if facts.model is None:
        return None
    return next((v.ollama for v in facts.model.model.variants if v.ollama), None)
