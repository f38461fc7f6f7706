"""Smaller builds of the paste's model: lower-bit GGUFs, quantized checkpoints, smaller siblings."""

from __future__ import annotations

import re
from dataclasses import dataclass

from bot.diagnosis.gguf import gguf_quants, gguf_quants_upper, gguf_variant
from bot.diagnosis.numbers import fmt_gib_or_mib
from bot.facts import PasteFacts
from bot.reply import Fix
from calculator.catalog import ModelSpec, Variant, models, variant_weight_bytes
from calculator.resolve import ModelMatch
from calculator.units import GIB


@dataclass
class QuantOption:
    """A smaller build: its label, size, exact Ollama tag (if the catalog has one) and where the size comes from."""

    label: str
    gib: float
    tag: str | None  # an Ollama tag from the catalog (exact), or None for a computed size
    source: str  # catalog | computed


def smaller_quants(match: ModelMatch, current_gib: float) -> list[QuantOption]:
    """Smaller GGUF builds of the same model: the catalog's own variants first, then the common quant
    types at their measured bits per weight; biggest first."""
    out: list[QuantOption] = []
    for v in match.model.variants:
        if v.quant != "gguf":
            continue
        size = variant_weight_bytes(match.model, v) / GIB
        if size < current_gib - 0.05:
            out.append(QuantOption(f"{v.gguf_type} ({v.ollama or v.id})", size, v.ollama, "catalog"))
    current_type = (gguf_variant(match).gguf_type or "") if gguf_variant(match) else ""
    bpw = gguf_quants()
    for name in ("Q4_K_M", "Q4_K_S", "Q4_0", "Q3_K_L", "Q3_K_M", "Q3_K_S", "Q2_K"):
        if name == current_type or name not in bpw:
            continue
        size = match.model.params_b * 1e9 * bpw[name] / 8 / GIB
        if size < current_gib - 0.05 and not any(o.label.startswith(name + " ") for o in out):
            out.append(QuantOption(name, size, None, "computed"))
    return sorted(out, key=lambda o: -o.gib)


def same_family_smaller(match: ModelMatch, current_gib: float) -> list[QuantOption]:
    """Smaller models of the same family that Ollama serves (catalog tags)."""
    out = []
    for m in models():
        if m.family != match.model.family or m.id == match.model.id:
            continue
        for v in m.variants:
            if v.quant == "gguf" and v.ollama:
                size = variant_weight_bytes(m, v) / GIB
                if size < current_gib:
                    out.append(QuantOption(f"{v.ollama} ({v.gguf_type})", size, v.ollama, "catalog"))
    return sorted(out, key=lambda o: -o.gib)


def library_name(tag: str | None) -> str | None:
    """The library name of an Ollama tag (``llama3.1:8b`` -> ``llama3.1``)."""
    return tag.split(":", 1)[0] if tag else None


def quant_fix(
    match: ModelMatch,
    current_gib: float,
    need_gib: float,
    rank: int,
    tag: str | None,
    what: str = "the part that does not fit",
) -> Fix | None:
    """The largest smaller build that saves at least ``need_gib`` (Ollama command).  With partial offload
    the GPU stays full, so the whole saving comes off the part in RAM."""
    options = smaller_quants(match, current_gib) + same_family_smaller(match, current_gib)
    good = [o for o in options if current_gib - o.gib >= need_gib]
    if not good:
        return None
    best = max(good, key=lambda o: o.gib)
    saved = current_gib - best.gib
    if best.tag:
        command = f"ollama run {best.tag}"
        change = f"switch to {best.tag} ({fmt_gib_or_mib(best.gib)})"
    else:
        lib = library_name(tag) or "<model>"
        base = tag or f"{lib}:<size>"
        suffix = best.label[0].lower() + best.label[1:]
        command = (
            f"# the {suffix} tag of {lib} on https://ollama.com/library/{lib}/tags, e.g.\n"
            f"ollama run {base}-instruct-{suffix}"
        )
        change = f"the {best.label} build ({fmt_gib_or_mib(best.gib)}, computed)"
    shrink = "by about that much (the GPU stays full and holds more of the smaller layers)"
    return Fix(
        "ollama",
        change,
        command,
        f"{fmt_gib_or_mib(saved)} smaller than the {fmt_gib_or_mib(current_gib)} you run: {what} shrinks {shrink}",
        "lower-bit weights lose some quality (small at Q4, noticeable at Q3 and below)"
        if best.source == "computed" or "Q3" in best.label or "Q2" in best.label
        else "a smaller model: less capable",
        rank,
    )


def smaller_checkpoints(facts: PasteFacts, gguf: bool = False, limit: int = 2) -> list[tuple[Variant, float]]:
    """Catalog checkpoints of the paste's model at least 20% smaller than the one in use (bytes)."""
    if facts.model is None:
        return []
    model, current = facts.model.model, facts.model.variant
    now = variant_weight_bytes(model, current)
    order = {"fp8": 0, "gptq-int8": 1, "awq": 2, "gptq": 3, "nvfp4": 4, "mxfp4": 4, "gguf": 5}
    found = []
    for v in model.variants:
        if (v.quant == "gguf") != gguf or (current is not None and v.id == current.id):
            continue
        size = variant_weight_bytes(model, v)
        if size < now * 0.8:
            found.append((v, float(size)))
    found.sort(key=lambda vs: (order.get(vs[0].quant, 9), -vs[1]))
    return found[:limit]


GGUF_LADDER = ["Q8_0", "Q6_K", "Q5_K_M", "Q4_K_M", "IQ4_XS", "Q3_K_M", "IQ3_XXS", "Q2_K", "IQ2_M", "IQ2_XXS"]


def smaller_gguf(filename: str | None, ratio: float) -> tuple[str, str, float] | None:
    """The same GGUF file name at the largest quant whose size is at most ``ratio`` of this one's
    (effective bits per weight from the quant table); None when the name carries no quant or nothing
    above ~2.3 bits per weight is small enough."""
    if not filename:
        return None
    bpw = gguf_quants_upper()
    names = sorted(bpw, key=len, reverse=True)
    m = re.search(
        r"(?i)(?<![A-Za-z0-9])(" + "|".join(re.escape(n) for n in names) + r")(?![A-Za-z0-9])", filename
    )
    if not m:
        return None
    current = m.group(1).upper()
    target = bpw[current] * ratio
    for quant in GGUF_LADDER:
        if bpw.get(quant) and 2.3 <= bpw[quant] <= target and bpw[quant] < bpw[current]:
            return filename[: m.start(1)] + quant + filename[m.end(1) :], quant, bpw[quant]
    return None


def smaller_sibling(facts: PasteFacts) -> tuple[ModelSpec, Variant] | None:
    """The largest catalog model of the same family with at most 3/4 of the parameters and an Ollama tag."""
    if facts.model is None:
        return None
    current = facts.model.model
    found = [
        (m, v)
        for m in models()
        if m.family == current.family and m.params_b <= 0.75 * current.params_b
        for v in m.variants
        if v.ollama
    ]
    return max(found, key=lambda mv: mv[0].params_b) if found else None
