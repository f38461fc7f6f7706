"""Turn the names people type (``4090``, ``a100-80g``, ``qwen-32b-awq``, ``llama3.1:8b``) into catalog entries.

Models: exact matches on normalised keys first, then fuzzy matching (rapidfuzz); an ambiguous or
unknown name raises :class:`NameNotFound` carrying the closest known names. GPUs: see
:func:`resolve_gpu`; fuzzy matching only suggests there, it never picks a card.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from functools import cache

import re2
from rapidfuzz import fuzz, process

from calculator.catalog import GPU, ModelSpec, Variant, gpus, models

_QUANT_TOKENS: dict[str, tuple[str, ...]] = {
    "awq": ("awq", "awq-int4", "int4-awq"),
    "gptq": ("gptq", "gptq-int4", "int4", "gptq-4bit"),
    "gptq-int8": ("gptq-int8", "int8"),
    "fp8": ("fp8", "fp8-dynamic"),
    "nvfp4": ("nvfp4", "fp4"),
    "mxfp4": ("mxfp4",),
    "bnb-4bit": ("bnb-4bit", "bnb"),
    "bf16": ("bf16",),
    "fp16": ("fp16",),
}
_SUFFIXES = ("instruct", "chat", "it", "hf")


class NameNotFound(LookupError):
    """A name matched nothing, or several entries equally well."""

    def __init__(self, kind: str, query: str, candidates: list[str], ambiguous: bool = False, hint: str = ""):
        self.kind = kind
        self.query = query
        self.candidates = candidates
        self.ambiguous = ambiguous
        self.hint = hint
        if ambiguous:
            msg = f"{kind} name {query!r} is ambiguous; did you mean one of: {', '.join(candidates)}?"
        elif candidates:
            msg = f"unknown {kind} {query!r}; closest known: {', '.join(candidates)}"
        else:
            msg = f"unknown {kind} {query!r}"
        if hint:
            msg += f" ({hint})"
        super().__init__(msg)


def normalise(name: str) -> str:
    """Lower-case and drop every separator: ``Qwen/Qwen2.5-32B`` and ``qwen2.5 32b`` meet at ``qwen2532b``."""
    return "".join(ch for ch in name.lower() if ch.isalnum())


def _strip_org(name: str) -> str:
    return name.split("/", 1)[1] if "/" in name else name


def _key_variants(name: str) -> set[str]:
    keys = {normalise(name), normalise(_strip_org(name))}
    for k in list(keys):
        for suffix in _SUFFIXES:
            if k.endswith(suffix) and len(k) > len(suffix) + 2:
                keys.add(k[: -len(suffix)])
    keys.discard("")
    return keys


@dataclass(frozen=True)
class ModelMatch:
    model: ModelSpec
    variant: Variant | None

    @property
    def label(self) -> str:
        return self.variant.id if self.variant else self.model.id


# Words that name a vendor, a brand line or a machine, not a card: "NVIDIA GeForce RTX 4090",
# "AMD Radeon RX 7900 XTX", "MacBook Pro M4 Max" all meet the catalog at the card's own name.
_GPU_MACHINE = re2.compile(r"\b(?:macbook (?:pro|air)|mac (?:studio|mini|pro)|imac)\b")
_GPU_NOISE = re2.compile(
    r"\b(?:nvidia|geforce|tesla|amd|radeon|instinct|intel|apple|graphics|gpu|card|vram|memory|founders edition)\b"
)
# core counts people add to Apple chips ("M2 Max 38-core GPU"): the memory size is what matters
_GPU_CORES = re2.compile(r"\b\d+[- ]?core(?: gpu| cpu)?\b")
_GPU_BRAND_GLUED = re2.compile(r"\b(?:rtx|gtx|rx)(\d)")
_GPU_BRAND = re2.compile(r"\b(?:rtx|gtx|rx|arc)\b")
# a memory size typed after the name: "24GB", "24 GB", "40g", "141 GiB"; the number must start a word,
# so "a10g" (a card) is not "10 GB"
_GPU_SIZE = re2.compile(r"(^|[^a-z0-9.])(\d+(?:\.\d+)?)\s*(?:gib|gb|g)\b")
# form factors of one product: the same chip and memory in another package ("h100" = PCIe or SXM)
_FORM_FACTORS = ("pcie", "sxm", "sxm2", "sxm4", "sxm5", "sxm6", "hbm2", "hbm2e", "hbm3", "hbm3e", "oam")


@dataclass(frozen=True)
class _GpuQuery:
    base: str  # normalised name without vendor words and without the size
    sizes: tuple[float, ...]  # memory sizes typed with the name, in GB


def _gpu_words(name: str) -> str:
    text = _GPU_MACHINE.sub(" ", name.lower())
    text = _GPU_NOISE.sub(" ", _GPU_CORES.sub(" ", text))
    text = _GPU_BRAND_GLUED.sub(r"\1", text)
    return _GPU_BRAND.sub(" ", text)


def _gpu_query(name: str) -> _GpuQuery:
    text = _gpu_words(name)
    sizes = tuple(float(m[1]) for m in _GPU_SIZE.findall(text))
    return _GpuQuery(normalise(_GPU_SIZE.sub(r"\1 ", text)), sizes)


@cache
def _gpu_index() -> dict[str, tuple[str, ...]]:
    """Name key (no vendor words, no size) -> ids of every entry that name covers, in catalog order."""
    index: dict[str, list[str]] = {}
    for g in gpus():
        for name in (g.id, g.name, *g.aliases):
            key = _gpu_query(name).base
            if key and g.id not in index.setdefault(key, []):
                index[key].append(g.id)
    return {k: tuple(v) for k, v in index.items()}


@cache
def _gpu_by_id() -> dict[str, GPU]:
    return {g.id: g for g in gpus()}


def _gpu_family(base: str) -> list[GPU]:
    """Entries a name covers: that name, or that name in another form factor ("h100" -> PCIe, SXM)."""
    index = _gpu_index()
    ids: list[str] = []
    for key in (base, *(base + ff for ff in _FORM_FACTORS)):
        ids.extend(i for i in index.get(key, ()) if i not in ids)
    if not ids:
        # a form factor the catalog does not spell out ("l40s pcie"): the card itself
        ff = next((f for f in sorted(_FORM_FACTORS, key=len, reverse=True) if base.endswith(f)), None)
        if ff and len(base) > len(ff):
            return _gpu_family(base[: -len(ff)])
    by_id = _gpu_by_id()
    return [by_id[i] for i in ids]


def _gb(g: GPU) -> str:
    return f"{g.memory_gb:g} GB"


def _gpu_pick(query: str, found: list[GPU]) -> GPU:
    """One card, or several with the same memory (answer, saying which was assumed), or ask."""
    if len(found) == 1:
        return found[0]
    if len({g.memory_bytes for g in found}) > 1:
        found = sorted(found, key=lambda g: g.memory_bytes)
        sizes = sorted({g.memory_gb for g in found})
        hint = "these differ in memory: " + ", ".join(f"{g.id} ({_gb(g)})" for g in found)
        hint += f"; add the size, e.g. '{query.strip()} {sizes[-1]:g}gb'"
        raise NameNotFound("GPU", query, [g.id for g in found], ambiguous=True, hint=hint)
    # same memory: the answer does not depend on the choice. Prefer a card whose usable total comes
    # from a real log over one whose total is estimated.
    chosen = next((g for g in found if g.usable_gib is not None), found[0])
    others = ", ".join(g.name for g in found if g is not chosen)
    note = f"{query.strip()!r} taken as {chosen.name}; {others} has the same {_gb(chosen)}"
    return chosen.model_copy(update={"assumed": note})


def _gpu_size_mismatch(query: str, q: _GpuQuery, found: list[GPU], size: float) -> NameNotFound:
    have = " or ".join(f"{gb:g} GB" for gb in sorted({g.memory_gb for g in found}))
    index = _gpu_index()
    by_id = _gpu_by_id()
    # another card of that name with that memory ("h100 94gb" -> the H100 NVL), offered, never picked
    near = [i for k, ids in index.items() if k.startswith(q.base) for i in ids if by_id[i].memory_gb == size]
    verb = "comes" if len(found) == 1 else "come"
    hint = f"{', '.join(g.id for g in found)} {verb} with {have}, not {size:g} GB"
    return NameNotFound("GPU", query, list(dict.fromkeys(near))[:5], hint=hint)


def _gpu_suggestions(query: str, base: str) -> NameNotFound:
    """Unknown name: the closest catalog names, offered, never substituted ("5070" is not "5070 Ti")."""
    scored = process.extract(base, list(_gpu_index()), scorer=fuzz.WRatio, limit=15) if base else []
    names: list[str] = []
    for key, score, _ in scored:
        for gpu_id in _gpu_index()[key]:
            if score >= 60 and gpu_id not in names:
                names.append(gpu_id)
    return NameNotFound("GPU", query, names[:5])


def resolve_gpu(query: str) -> GPU:
    """The catalog card a typed name means.

    The result's ``assumed`` says which card was taken when the name covers several with the same
    memory (``h100``: PCIe or SXM, both 80 GB). Names covering different memory sizes (``a100``: 40 or
    80 GB) and unknown names raise :class:`NameNotFound` with the candidates; a typed size picks the
    variant with that memory, and a size the card does not come in is an error.
    """
    q = query.strip()
    if not q or len(q) > 200:
        raise NameNotFound("GPU", q[:60], [])
    parsed = _gpu_query(q)
    found = _gpu_family(parsed.base) if parsed.base else []
    if not found:
        raise _gpu_suggestions(q, parsed.base)
    if len(set(parsed.sizes)) > 1:
        raise NameNotFound("GPU", q, [g.id for g in found], hint="two different memory sizes given")
    if parsed.sizes:
        size = parsed.sizes[0]
        sized = [g for g in found if abs(g.memory_gb - size) < 0.5]
        if not sized:
            raise _gpu_size_mismatch(q, parsed, found, size)
        found = sized
    return _gpu_pick(q, found)


@cache
def _model_index() -> dict[str, tuple[str, str | None]]:
    index: dict[str, tuple[str, str | None]] = {}
    for m in models():
        base_names = (m.id, *m.aliases)
        for name in base_names:
            for key in _key_variants(name):
                index.setdefault(key, (m.id, None))
        for v in m.variants:
            for name in (v.id, *v.aliases, *([v.ollama] if v.ollama else [])):
                for key in _key_variants(name):
                    index.setdefault(key, (m.id, v.id))
            for token in _QUANT_TOKENS.get(v.quant, ()):
                for name in base_names:
                    for key in _key_variants(name):
                        index.setdefault(key + normalise(token), (m.id, v.id))
            if v.gguf_type:
                for name in base_names:
                    for key in _key_variants(name):
                        index.setdefault(key + normalise(v.gguf_type), (m.id, v.id))
    return index


@cache
def _ollama_index() -> dict[str, tuple[str, str]]:
    """Ollama tags exactly as typed (``gemma3:27b``): they name a GGUF variant, not the base model."""
    index: dict[str, tuple[str, str]] = {}
    for m in models():
        for v in m.variants:
            if v.ollama:
                index.setdefault(v.ollama.lower(), (m.id, v.id))
    return index


@cache
def _model_by_id() -> dict[str, ModelSpec]:
    return {m.id: m for m in models()}


def resolve_model(query: str) -> ModelMatch:
    q = query.strip()
    if not q:
        raise NameNotFound("model", query, [])
    if ":" in q:
        tag = q.lower().removesuffix(":latest")
        tags = _ollama_index()
        hit_tag = tags.get(tag) or tags.get(q.lower())
        if hit_tag is not None:
            model = _model_by_id()[hit_tag[0]]
            return ModelMatch(model, next(v for v in model.variants if v.id == hit_tag[1]))
    index = _model_index()
    keys = [normalise(q), normalise(_strip_org(q))]
    if ":" in q and q.endswith(":latest"):
        keys.append(normalise(q[: -len(":latest")]))
    hit = next((index[k] for k in keys if k in index), None)
    if hit is None:
        hit = index[_fuzzy("model", q, keys[1], index)]
    model = _model_by_id()[hit[0]]
    # the base name means the official checkpoint (FP8 for DeepSeek-V3, MXFP4 for gpt-oss, ...)
    wanted = hit[1] or model.id
    variant = next((v for v in model.variants if v.id == wanted), None)
    return ModelMatch(model, variant)


def _numbers(key: str) -> list[str]:
    return re.findall(r"[0-9]+", key)


def _fuzzy(kind: str, query: str, key: str, index: dict) -> str:
    """Best fuzzy key, or NameNotFound with the closest distinct entries."""
    if not key:
        raise NameNotFound(kind, query, [])
    scored = process.extract(key, list(index), scorer=fuzz.WRatio, limit=25)

    def label(k: str) -> str:
        t = index[k]
        return (t[1] or t[0]) if isinstance(t, tuple) else t

    distinct: list[tuple[str, float]] = []
    seen: set[str] = set()
    for k, score, _ in scored:
        if label(k) in seen:
            continue
        seen.add(label(k))
        distinct.append((k, score))
    if not distinct:
        raise NameNotFound(kind, query, [])

    best_key, best = distinct[0]
    runner_up = distinct[1][1] if len(distinct) > 1 else 0.0
    # never let a typo change a number: "33b" is not "32b", "a100-40" is not "a100-80"
    candidate_numbers = _numbers(best_key)
    same_numbers = all(n in candidate_numbers for n in _numbers(key))
    if best >= 90 and best - runner_up >= 4 and same_numbers:
        return best_key
    names = [label(k) for k, s in distinct[:5] if s >= 50]
    ambiguous = best >= 80 and len(names) > 1
    raise NameNotFound(kind, query, names, ambiguous=ambiguous)


def gpu_names() -> list[str]:
    return [g.id for g in gpus()]


def model_names() -> list[str]:
    names = []
    for m in models():
        names.append(m.id)
        names.extend(v.id for v in m.variants)
    return names


def suggest_gpus(text: str, limit: int = 25) -> list[tuple[str, str]]:
    """(display name, id) for autocomplete: prefix/substring matches first, then fuzzy."""
    entries = [(f"{g.name} ({g.memory_gb:g} GB)", g.id, [g.id, g.name, *g.aliases]) for g in gpus()]
    return _suggest(entries, text, limit)


def suggest_models(text: str, limit: int = 25) -> list[tuple[str, str]]:
    """(display name, name to pass back) for autocomplete over models and their variants."""
    entries: list[tuple[str, str, list[str]]] = []
    for m in models():
        entries.append((m.id, m.id, [m.id, *m.aliases]))
        for v in m.variants:
            if v.id != m.id:
                entries.append((v.id, v.id, [v.id, *v.aliases, *([v.ollama] if v.ollama else [])]))
    return _suggest(entries, text, limit)


def _suggest(entries: list[tuple[str, str, list[str]]], text: str, limit: int) -> list[tuple[str, str]]:
    key = normalise(text)
    if not key:
        return [(label[:100], value[:100]) for label, value, _ in entries[:limit]]
    prefix, contains, rest = [], [], []
    for label, value, names in entries:
        keys = [normalise(n) for n in names] + [normalise(_strip_org(n)) for n in names]
        if any(k.startswith(key) for k in keys):
            prefix.append((label, value))
        elif any(key in k for k in keys):
            contains.append((label, value))
        else:
            rest.append((label, value, max(fuzz.partial_ratio(key, k) for k in keys)))
    rest.sort(key=lambda r: -r[2])
    ranked = prefix + contains + [(label, value) for label, value, score in rest if score >= 75]
    return [(label[:100], value[:100]) for label, value in ranked[:limit]]
