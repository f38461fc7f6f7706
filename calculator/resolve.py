"""Turn the names people type (``4090``, ``a100-80g``, ``qwen-32b-awq``, ``llama3.1:8b``) into catalog entries.

Models: exact matches on normalised keys first, then fuzzy matching (rapidfuzz); an ambiguous or
unknown name raises :class:`NameNotFound` carrying the closest known names. GPUs: see
:func:`resolve_gpu`; fuzzy matching only suggests there, it never picks a card.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass, replace
from functools import cache, wraps
from pathlib import Path
from types import ModuleType
from typing import TypeVar

from calculator import catalog
from calculator import model_names as names_module
from calculator.catalog import GPU, ModelSpec, Variant, catalog_digests, gpus, models, quant_formats
from calculator.lazy_re import LazyPattern
from calculator.model_names import ParsedName, key_numbers, model_key, parse_name, spellings
from knowledge.cache import cached, code_digest, content_key

_Index = TypeVar("_Index")
# the code an index is built by: an edit to any of these rebuilds the cached indexes
_INDEX_CODE = code_digest(*(Path(f).resolve() for f in (__file__, names_module.__file__, catalog.__file__)))


def _rapidfuzz() -> tuple[ModuleType, ModuleType]:
    """rapidfuzz's ``fuzz`` and ``process``, imported when a name needs fuzzy matching (not on an exact
    hit: 15 ms of a cold start)."""
    from rapidfuzz import fuzz, process

    return fuzz, process


def _catalog_index(build: Callable[[], _Index]) -> Callable[[], _Index]:
    """Build a name index once per catalog content: kept in the validated-data cache, keyed by every
    catalog data file and the code that builds it, so a start with an unchanged catalog reads the
    index back instead of re-normalising every name."""

    @cache
    @wraps(build)
    def index() -> _Index:
        files = catalog_digests("gpus.yaml", "models", "quants.yaml")
        return cached(content_key(f"index-{build.__name__.strip('_')}", files, _INDEX_CODE), build, dict)

    return index


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
    """A catalog model and checkpoint; ``note`` says what was assumed, for the caller to print."""

    model: ModelSpec
    variant: Variant | None
    note: str = ""

    @property
    def label(self) -> str:
        return self.variant.id if self.variant else self.model.id

    @property
    def assumed(self) -> bool:
        return bool(self.note)


# Words that name a vendor, a brand line or a machine, not a card: "NVIDIA GeForce RTX 4090",
# "AMD Radeon RX 7900 XTX", "MacBook Pro M4 Max" all meet the catalog at the card's own name.
_GPU_MACHINE = LazyPattern(r"\b(?:macbook (?:pro|air)|mac (?:studio|mini|pro)|imac)\b")
_GPU_NOISE = LazyPattern(
    r"\b(?:nvidia|geforce|tesla|amd|radeon|instinct|intel|apple|graphics|gpu|card|vram|memory|founders edition)\b"
)
# core counts people add to Apple chips ("M2 Max 38-core GPU"): the memory size is what matters
_GPU_CORES = LazyPattern(r"\b\d+[- ]?core(?: gpu| cpu)?\b")
# trademark marks in driver-reported names: "Intel(R) Arc(TM) B580 Graphics" (SYCL / xpu-smi)
_GPU_MARKS = LazyPattern(r"\((?:r|tm)\)")
_GPU_BRAND_GLUED = LazyPattern(r"\b(?:rtx|gtx|rx)(\d)")
_GPU_BRAND = LazyPattern(r"\b(?:rtx|gtx|rx|arc)\b")
# a memory size typed after the name: "24GB", "24 GB", "40g", "141 GiB"; the number must start a word,
# so "a10g" (a card) is not "10 GB"
_GPU_SIZE = LazyPattern(r"(^|[^a-z0-9.])(\d+(?:\.\d+)?)\s*(?:gib|gb|g)\b")
# form factors of one product: the same chip and memory in another package ("h100" = PCIe or SXM).
# "Workstation Edition" / "Server Edition" close the names nvidia-smi prints for RTX PRO Blackwell cards
# ("NVIDIA RTX PRO 6000 Blackwell Workstation Edition"); Max-Q is not one: a laptop Max-Q card differs.
_FORM_FACTORS = (
    "pcie",
    "sxm",
    "sxm2",
    "sxm4",
    "sxm5",
    "sxm6",
    "hbm2",
    "hbm2e",
    "hbm3",
    "hbm3e",
    "oam",
    "workstationedition",
    "serveredition",
)


@dataclass(frozen=True)
class _GpuQuery:
    """A typed GPU name split into its words and the memory sizes typed with it."""

    base: str  # normalised name without vendor words and without the size
    sizes: tuple[float, ...]  # memory sizes typed with the name, in GB


def _gpu_words(name: str) -> str:
    text = _GPU_MACHINE.sub(" ", _GPU_MARKS.sub(" ", name.lower()))
    text = _GPU_NOISE.sub(" ", _GPU_CORES.sub(" ", text))
    text = _GPU_BRAND_GLUED.sub(r"\1", text)
    return _GPU_BRAND.sub(" ", text)


def _gpu_query(name: str) -> _GpuQuery:
    text = _gpu_words(name)
    sizes = tuple(float(m[1]) for m in _GPU_SIZE.findall(text))
    return _GpuQuery(normalise(_GPU_SIZE.sub(r"\1 ", text)), sizes)


@_catalog_index
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
    return replace(chosen, assumed=note)


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
    scored = (
        _rapidfuzz()[1].extract(base, list(_gpu_index()), scorer=_rapidfuzz()[0].WRatio, limit=15)
        if base
        else []
    )
    names: list[str] = []
    for key, score, _ in scored:
        for gpu_id in _gpu_index()[key]:
            if score >= 60 and gpu_id not in names:
                names.append(gpu_id)
    return NameNotFound("GPU", query, names[:5])


# nvidia-smi cuts a long name to its column and ends it with "...": "NVIDIA RTX PRO 6000 Blac..."
_TRUNCATION_MARKS = ("...", "\u2026")
# a second name in brackets: "DGX Spark (GB10)"
_GPU_ASIDE = LazyPattern(r"\(([^()]*)\)")


def _gpu_by_prefix(base: str) -> list[GPU]:
    """Every card a cut-off name can be the start of; the caller asks when their memory differs."""
    stem = base.rstrip(".\u2026")
    if len(stem) < 3:
        return []
    by_id = _gpu_by_id()
    ids = [i for key, found in _gpu_index().items() if key.startswith(stem) for i in found]
    return [by_id[i] for i in dict.fromkeys(ids)]


# memory a bracket reports ("(Used: 1.57 GB, Total: 8.59 GB, ...)" from LM Studio, "(32108 MiB, 28410 MiB free)"
# from llama.cpp's device list); GB there is decimal, as LM Studio prints 8 GiB as "8.59 GB"
_ASIDE_SIZE = LazyPattern(r"(?i)(\d+(?:\.\d+)?)\s*(gib|gb|mib|mb)\b")
_ASIDE_UNITS = {"gib": 2**30, "gb": 10**9, "mib": 2**20, "mb": 10**6}


def _gpu_with_aside(query: str) -> GPU:
    """``DGX Spark (GB10)``: the name outside the brackets, when the bracketed one names no other card and
    reports no more memory than the card has (a modded 48 GB "4090" is not the 24 GB card)."""
    outer = _GPU_ASIDE.sub(" ", query).strip()
    if not outer or outer == query.strip():
        raise _gpu_suggestions(query, _gpu_query(query).base)
    card = resolve_gpu(outer)
    reported = [
        float(n) * _ASIDE_UNITS[u.lower()]
        for n, u in _ASIDE_SIZE.findall(" ".join(_GPU_ASIDE.findall(query)))
    ]
    if reported and max(reported) > 1.02 * card.memory_bytes:
        hint = f"{card.id} has {_gb(card)}; the brackets report {max(reported) / 10**9:.2f} GB"
        raise NameNotFound("GPU", query, [], hint=hint)
    for inner in _GPU_ASIDE.findall(query):
        try:
            other = resolve_gpu(inner)
        except NameNotFound:
            continue
        if other.id != card.id:
            raise NameNotFound(
                "GPU", query, [card.id, other.id], ambiguous=True, hint="the two names are two cards"
            )
    return card


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
    if not found and q.endswith(_TRUNCATION_MARKS):
        found = _gpu_by_prefix(parsed.base)
    if not found and _GPU_ASIDE.search(q):
        return _gpu_with_aside(q)
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


# --- models ------------------------------------------------------------------------------------------

# Words that name a release of the same architecture (chat / instruct tune, HF-format copy): dropping
# them never changes the memory geometry. "thinking" and a release date (2507, 0905) also keep the
# geometry, but the context limit or the checkpoint can differ, so those matches carry a note.
# "qat" (quantization-aware trained, Google's Gemma releases) keeps the shapes too: the file type sets the size.
_SAME_WEIGHTS_WORDS = frozenset({"instruct", "chat", "it", "hf", "base", "qat"})
_RELEASE_WORDS = frozenset({"thinking", "reasoning", "latest"})
_WORD = LazyPattern(r"[A-Za-z]+|[0-9]+(?:\.[0-9]+)*[A-Za-z]*")
_DATE = LazyPattern(r"^(?:2[3-9]|0[1-9]|1[0-2])[0-9]{2}$")

# Weight bits of third-party builds where the catalog has no real size: bits on the linear layers,
# embeddings and head kept 16-bit (conventions in data/models/qwen.yaml). AWQ / GPTQ g128: int4 weight +
# fp16 scale + int4 zero per 128 (GPTQ's int32 g_idx adds < 0.01 bit); GPTQ int8: int8 + fp16 scale +
# int8 zero per 128; FP8: 1 B per weight (per-channel scales); NVFP4: 4 bits + FP8 scale per 16;
# MXFP4: 4 bits + e8m0 scale per 32 (ggml-common.h block_mxfp4); bitsandbytes NF4: 4 bits + fp8 absmax
# per 64 + fp32 per 256 blocks (double quant, bnb_4bit_use_double_quant).
_LINEAR_BITS: dict[str, float] = {
    "awq": 4.15625,
    "gptq": 4.15625,
    "gptq-int8": 8.1875,
    "fp8": 8.0,
    "nvfp4": 4.5,
    "mxfp4": 4.25,
    "bnb-4bit": 4.127,
    "bf16": 16.0,
    "fp16": 16.0,
}


_ANONYMOUS_FILES = frozenset({"", "model", "ggml-model", "consolidated", "pytorch-model", "weights"})


def _words(name: str) -> list[str]:
    return [w.lower() for w in _WORD.findall(name)]


def _loose_keys(name: str) -> list[tuple[str, bool]]:
    """(key, noted) pairs: the name without same-weights words, then also without release words."""
    words = _words(_strip_org(name))
    same = [w for w in words if w not in _SAME_WEIGHTS_WORDS]
    keys = [(model_key("-".join(same)), False)]
    release = [w for w in same if w not in _RELEASE_WORDS and not _DATE.match(w)]
    if release != same:
        keys.append((model_key("-".join(release)), True))
    return [(k, n) for k, n in keys if k]


def _exact_names(m: ModelSpec) -> list[tuple[str, str | None]]:
    names: list[tuple[str, str | None]] = [(n, None) for n in (m.id, *m.aliases)]
    for v in m.variants:
        names += [(n, v.id) for n in (v.id, *v.aliases, *([v.ollama] if v.ollama else []))]
    return names


def exact_keys(m: ModelSpec) -> list[tuple[str, str | None]]:
    """(key, variant id) for every name of ``m`` that must be unique across the catalog: full ids,
    aliases, variant ids and Ollama tags (with and without the organisation, except the model id)."""
    out: list[tuple[str, str | None]] = [(model_key(m.id), None)]
    for name, variant in _exact_names(m)[1:]:
        out.append((model_key(name), variant))
        if name != m.id:
            out.append((model_key(_strip_org(name)), variant))
    return [(k, v) for k, v in out if k]


@_catalog_index
def _model_index() -> dict[str, tuple[str, str | None]]:
    """Exact keys; a model id without its organisation comes last (``Llama-3.1-8B`` is the base
    checkpoint, unless an alias already claims the short name for a same-size tune)."""
    index: dict[str, tuple[str, str | None]] = {}
    for m in models():
        for key, variant in exact_keys(m):
            index.setdefault(key, (m.id, variant))
    for m in models():
        index.setdefault(model_key(_strip_org(m.id)), (m.id, None))
    # a vendor id that names its precision (``NVIDIA-Nemotron-3-Nano-30B-A3B-BF16``) also answers for the name
    # without it, so a sibling build (``...-30B-A3B-FP8``) parses to this model plus its own quant
    for m in models():
        bare = parse_name(m.id).base
        if model_key(bare) != model_key(_strip_org(m.id)):
            index.setdefault(model_key(bare), (m.id, None))
    return index


@_catalog_index
def _loose_index() -> dict[str, list[str]]:
    """Keys without instruct/chat/hf words (and without release words): key -> model ids."""
    index: dict[str, list[str]] = {}
    for m in models():
        for name in (m.id, *m.aliases):
            for key, _noted in _loose_keys(name):
                ids = index.setdefault(key, [])
                if m.id not in ids:
                    ids.append(m.id)
    return index


@_catalog_index
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


def same_memory(a: ModelSpec, b: ModelSpec) -> bool:
    """Two catalog entries a memory estimate cannot tell apart (a chat tune and its base)."""
    fields = ("num_hidden_layers", "hidden_size", "num_attention_heads", "num_key_value_heads", "head_dim")
    return (
        all(getattr(a, f) == getattr(b, f) for f in fields)
        and a.layer_groups == b.layer_groups
        and a.mla == b.mla
        and abs(a.params_b - b.params_b) <= 0.01 * b.params_b
    )


def _official(model: ModelSpec) -> Variant | None:
    """The base name means the official checkpoint (FP8 for DeepSeek-V3, MXFP4 for gpt-oss, ...)."""
    return next((v for v in model.variants if v.id == model.id), None)


def _serving_variant(match: ModelMatch, engine: str | None) -> ModelMatch:
    """vLLM / SGLang load safetensors: an Ollama tag or GGUF file name means the official checkpoint."""
    v = match.variant
    if engine not in ("vllm", "sglang") or v is None or v.quant != "gguf":
        return match
    official = _official(match.model)
    label = official.id if official else match.model.id
    note = f"{v.id} is a GGUF build; {engine} serves the checkpoint {label}"
    return ModelMatch(match.model, official, _join(match.note, note))


def _join(*notes: str) -> str:
    return "; ".join(n for n in notes if n)


def _base_match(parsed: ParsedName, query: str) -> ModelMatch:
    """The catalog model a parsed name means: exact, then release words dropped, then fuzzy."""
    index = _model_index()
    by_id = _model_by_id()
    names = spellings(parsed.base)
    if parsed.ollama_tag:
        size = parsed.ollama_tag.split("-", 1)[0]
        names = [f"{name}-{size}" for name in names] + names
    for name in names:
        key = model_key(name)
        if key in index:
            model_id, variant_id = index[key]
            model = by_id[model_id]
            variant = next((v for v in model.variants if v.id == variant_id), None)
            return ModelMatch(model, variant if variant_id else _official(model))
    moe = _moe_by_total_size(parsed, index)
    if moe is not None:
        return ModelMatch(by_id[moe], _official(by_id[moe]))
    loose = _loose_index()
    for name in names:
        for key, noted in _loose_keys(name):
            ids = loose.get(key)
            if not ids:
                continue
            model = by_id[ids[0]]
            if any(not same_memory(model, by_id[i]) for i in ids[1:]):
                raise NameNotFound("model", query, ids[:5], ambiguous=True)
            note = ""
            if noted or model_key(_strip_org(name)) != model_key(_strip_org(model.id)):
                note = (
                    f"{_strip_org(name)} is not catalogued; assumed {model.id} (same layers, heads and size"
                )
                note += ", its context limit may differ)" if noted else ")"
            return ModelMatch(model, _official(model), note)
    key = model_key(_strip_org(parsed.base))
    _family_match(query, key)
    model_id, variant_id = index[_fuzzy_model(query, key, index)]
    model = by_id[model_id]
    variant = next((v for v in model.variants if v.id == variant_id), None)
    return ModelMatch(model, variant or _official(model), f"closest catalog name to {query!r}: {model.id}")


# What follows the total size in a mixture-of-experts name: the active parameters ("26B-A4B", "35B-A3B"),
# optionally a tune word ("-it", "-Instruct").
_ACTIVE_SIZE = LazyPattern(r"^a[0-9]+(?:\.[0-9]+)?b(?:it|instruct|chat)?$")


def _moe_by_total_size(parsed: ParsedName, index: dict[str, tuple[str, str | None]]) -> str | None:
    """Ollama's library tags a mixture-of-experts model by its total size only (``gemma4:26b`` is
    gemma-4-26B-A4B, ``qwen3:30b`` is Qwen3-30B-A3B): the one model whose name is that size plus an
    active size, or None when none or several are."""
    size = (parsed.ollama_tag or "").split("-", 1)[0]
    if not _TAG_SIZE.match(size):
        return None
    found: set[str] = set()
    for name in spellings(parsed.base):
        prefix = model_key(f"{name}-{size}")
        found |= {
            v[0] for k, v in index.items() if k.startswith(prefix) and _ACTIVE_SIZE.match(k[len(prefix) :])
        }
    return found.pop() if len(found) == 1 else None


@_catalog_index
def _family_index() -> dict[str, list[str]]:
    """Family name key (``qwen3.6``, ``nemotron-h``) -> its models, smallest first."""
    index: dict[str, list[str]] = {}
    for m in sorted(models(), key=lambda m: m.params_b):
        index.setdefault(model_key(m.family), []).append(m.id)
    return index


def _family_match(query: str, key: str) -> None:
    """A bare family name (``qwen3.6``): a question between the models it covers, never a pick (a family
    label can cover different releases of one architecture, ``minimax-m2`` covers M2.5 and M2.7)."""
    ids = _family_index().get(key)
    if not ids:
        return
    hint = f"{query.strip()} is a family name; add the size or release, e.g. {_strip_org(ids[0])}"
    raise NameNotFound("model", query, ids[:5], ambiguous=len(ids) > 1, hint=hint)


def _fuzzy_model(query: str, key: str, index: dict[str, tuple[str, str | None]]) -> str:
    """A typo-level match only: same family word, same numbers with their units (``3`` is not ``3b``,
    ``2506`` stays ``2506``), and a near-identical spelling. Anything looser is a question."""
    wanted = sorted(key_numbers(key))
    family = _family(key)
    same = [k for k in index if _family(k) == family and sorted(key_numbers(k)) == wanted]
    scored = _rapidfuzz()[1].extract(key, same, scorer=_rapidfuzz()[0].ratio, limit=3) if same else []
    if scored and scored[0][1] >= 95 and (len(scored) == 1 or scored[0][1] - scored[1][1] >= 3):
        return scored[0][0]
    raise NameNotFound("model", query, _closest(key, index))


def _family(key: str) -> str:
    """The leading letters of a key: ``magistral`` in ``magistralsmall2506``."""
    out = []
    for ch in key:
        if not ch.isalpha():
            break
        out.append(ch)
    return "".join(out)


def _closest(key: str, index: dict[str, tuple[str, str | None]]) -> list[str]:
    scored = _rapidfuzz()[1].extract(key, list(index), scorer=_rapidfuzz()[0].WRatio, limit=15)
    out: list[str] = []
    for k, score, _ in scored:
        name = index[k][1] or index[k][0]
        if score >= 60 and name not in out:
            out.append(name)
    return out[:5]


def _quant_variant(match: ModelMatch, parsed: ParsedName) -> ModelMatch:
    """Pair the base geometry with the quantization the name asks for (a real size where catalogued)."""
    model, quant = match.model, parsed.quant
    if quant is None and parsed.ollama:
        return _ollama_variant(match, parsed)
    if quant is None:
        return match
    if quant == "gguf":
        return _gguf_variant(match, parsed)
    for v in model.variants:
        if v.quant == quant:
            # another repo's build of that quant: its real size stands in for the typed one, said so
            # (any organisation: a republisher not listed in THIRD_PARTY_ORGS is still not the vendor)
            note = ""
            if _strip_org(v.id).lower() != parsed.typed_name.lower():
                who = "a third-party" if parsed.third_party else "another"
                note = f"{parsed.original} is {who} {quant} build; weights as {v.id}"
            return ModelMatch(model, v, _join(match.note, note))
    bits = _LINEAR_BITS.get(quant)
    if bits is None:
        raise NameNotFound("model", parsed.original, [], hint=f"no weight size known for {quant}")
    variant = Variant(
        id=parsed.original,
        quant=quant,  # type: ignore[arg-type]  # a parsed name's str; Variant validates it against QuantName
        bits_per_weight=_bits_with_embeddings(model, bits),
        source=f"bits computed: {quant} linears {bits:g} bits, embeddings and head 16-bit, on {model.id}'s shapes",
    )
    gib = model.params_b * 1e9 * (variant.bits_per_weight or 16) / 8 / 2**30
    note = f"{parsed.original}: {quant} weights estimated from {model.id}'s shapes ({gib:.1f} GiB)"
    return ModelMatch(model, variant, _join(match.note, note))


# An Ollama tag's size label ("8b", "1.5b", "1t") rounds the model's parameter count, loosely for small models
# (falcon3:1b is 1.67B with its embeddings, gemma2:2b 2.61B). A label more than 2x from the matched model names
# another model of the family ("deepseek-r1:8b" is not the 671B R1), so the resolver asks instead.
_TAG_SIZE = LazyPattern(r"^([0-9]+(?:\.[0-9]+)?)([mbt])$")
_TAG_UNITS = {"m": 1e-3, "b": 1.0, "t": 1e3}


def _check_tag_size(match: ModelMatch, parsed: ParsedName) -> None:
    label = (parsed.ollama_tag or "").split("-", 1)[0].lower()
    m = _TAG_SIZE.match(label)
    if m is None:
        return
    billions = float(m.group(1)) * _TAG_UNITS[m.group(2)]
    params = match.model.params_b
    if max(billions, params) <= 2 * min(billions, params):
        return
    by_id = _model_by_id()
    family = _family_index().get(model_key(match.model.family), [])
    near = [i for i in family if max(billions, by_id[i].params_b) <= 2 * min(billions, by_id[i].params_b)]
    hint = f"the tag names a {label} model; {match.model.id} has {params:g}B parameters"
    raise NameNotFound("model", parsed.original, near[:5], hint=hint)


def _ollama_variant(match: ModelMatch, parsed: ParsedName) -> ModelMatch:
    """``qwen3:30b-a3b``: an Ollama tag names Ollama's GGUF build; the catalogued one, if there is one."""
    tags = [v for v in match.model.variants if v.ollama]
    if not tags:
        return _no_ollama_build(match, parsed)
    size = (parsed.ollama_tag or "").split("-", 1)[0]
    wanted = f"{parsed.base}:{size}".lower()
    hit = next((v for v in tags if (v.ollama or "").lower() == wanted), None)
    if hit is None and len(tags) == 1:
        hit = tags[0]
    if hit is None:
        return _no_ollama_build(match, parsed)
    note = "" if (hit.ollama or "").lower() == parsed.original.lower() else f"assumed Ollama's {hit.ollama}"
    return ModelMatch(match.model, hit, _join(match.note, note))


def _no_ollama_build(match: ModelMatch, parsed: ParsedName) -> ModelMatch:
    """An Ollama tag of a model whose Ollama build is not catalogued: the geometry is right, the weights
    are the safetensors checkpoint's, and the answer says so (Ollama serves its own GGUF file)."""
    label = match.label
    quant = match.variant.quant if match.variant else match.model.torch_dtype
    note = (
        f"{parsed.original} is an Ollama tag and no catalogued Ollama build of {match.model.id} matches it, "
        f"so weights are those of {label} ({quant}); Ollama's own GGUF file differs in size"
    )
    return ModelMatch(match.model, match.variant, _join(match.note, note))


def _bits_with_embeddings(model: ModelSpec, linear_bits: float) -> float:
    """Average bits per parameter when embeddings and head (2 x vocab x hidden) stay 16-bit."""
    total = model.params_b * 1e9
    embed = min(total, 2 * model.vocab_size * model.hidden_size)
    return round((embed * 16 + (total - embed) * linear_bits) / total, 3)


def _gguf_variant(match: ModelMatch, parsed: ParsedName) -> ModelMatch:
    model, wanted = match.model, parsed.gguf_type
    ggufs = [v for v in model.variants if v.quant == "gguf"]
    if wanted is None:
        if match.variant is not None and match.variant.quant == "gguf":
            return match
        raise NameNotFound(
            "model", parsed.original, [v.id for v in ggufs][:5], hint="name the GGUF file type, e.g. Q4_K_M"
        )
    hit = next((v for v in ggufs if (v.gguf_type or "").upper() == wanted.upper()), None)
    if hit is not None:
        note = ""
        if parsed.ollama_tag and "-" in parsed.ollama_tag and (hit.ollama or "") != parsed.original:
            note = f"{parsed.original}: assumed {hit.id} (same model size and file type)"
        return ModelMatch(model, hit, _join(match.note, note))
    fmt = next((f for f in quant_formats().weight_formats if f.engine == "gguf" and f.name == wanted), None)
    bpw = fmt.effective_bpw or fmt.block_bpw if fmt else None
    if not bpw:
        # the model is known, its file's size is not (a per-tensor mix has no fixed bits per weight)
        hint = f"{model.id}, but no size is known for GGUF type {wanted}; give the file's size"
        raise NameNotFound("model", parsed.original, [model.id], hint=hint)
    variant = Variant(
        id=parsed.original,
        quant="gguf",
        gguf_type=wanted,
        bits_per_weight=bpw,
        source=f"effective {wanted} bits per weight from calculator/data/quants.yaml on {model.id}'s size",
    )
    gib = model.params_b * 1e9 * bpw / 8 / 2**30
    note = f"{parsed.original}: {wanted} file of {model.id}, size estimated at {bpw:g} bpw ({gib:.1f} GiB)"
    return ModelMatch(model, variant, _join(match.note, note))


# a Hugging Face repo id as typed ("lukealonso/GLM-5.1-NVFP4"), not a local path ("/models/GLM-5.1-NVFP4")
_REPO_ID = LazyPattern(r"^([A-Za-z0-9][A-Za-z0-9._-]*)/[A-Za-z0-9][A-Za-z0-9._-]*$")


def _other_repo(query: str, variant: Variant | None) -> str:
    """A catalogued build's name under another organisation is that organisation's own build: its
    weights are taken as the catalogued one's, and the answer says so."""
    typed = _REPO_ID.match(query.strip())
    if typed is None or variant is None or "/" not in variant.id:
        return ""
    org = typed.group(1)
    if org.lower() == variant.id.split("/", 1)[0].lower():
        return ""
    who = "a third-party" if org.lower() in names_module.THIRD_PARTY_ORGS else "another"
    return f"{query.strip()} is {who} {variant.quant} build; weights as {variant.id}"


def resolve_model(query: str, engine: str | None = None) -> ModelMatch:
    """The catalog model and checkpoint a name means; ``note`` says anything that was assumed.

    ``engine`` (``vllm``/``sglang``/``llama.cpp``/``ollama``): vLLM and SGLang serve the safetensors
    checkpoint, so an Ollama tag asked with them means the official checkpoint, not a GGUF file.
    """
    q = query.strip()
    if not q or len(q) > 300:
        raise NameNotFound("model", query[:80], [])
    by_id = _model_by_id()
    tags = _ollama_index()
    hit_tag = tags.get(q.lower().removesuffix(":latest")) or tags.get(q.lower())
    if hit_tag is not None:
        model = by_id[hit_tag[0]]
        variant: Variant | None = next(v for v in model.variants if v.id == hit_tag[1])
        return _serving_variant(ModelMatch(model, variant), engine)
    exact = _model_index().get(model_key(q)) or _model_index().get(model_key(_strip_org(q)))
    if exact is not None and ":" not in q:
        model = by_id[exact[0]]
        variant = next((v for v in model.variants if v.id == exact[1]), None)
        note = _other_repo(q, variant) if exact[1] else ""
        match = ModelMatch(model, variant if exact[1] else _official(model), note)
        return _serving_variant(match, engine)
    parsed = parse_name(q)
    if model_key(parsed.base) in _ANONYMOUS_FILES:
        raise NameNotFound(
            "model", query, [], hint="a file name like this does not say which model; name the model"
        )
    if not model_key(parsed.base):
        raise NameNotFound("model", query, [])
    base = _base_match(parsed, query)
    _check_tag_size(base, parsed)
    return _serving_variant(_quant_variant(base, parsed), engine)


def _numbers(key: str) -> list[str]:
    return re.findall(r"[0-9]+", key)


def _fuzzy(kind: str, query: str, key: str, index: dict) -> str:
    """Best fuzzy key, or NameNotFound with the closest distinct entries."""
    if not key:
        raise NameNotFound(kind, query, [])
    scored = _rapidfuzz()[1].extract(key, list(index), scorer=_rapidfuzz()[0].WRatio, limit=25)

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
            rest.append((label, value, max(_rapidfuzz()[0].partial_ratio(key, k) for k in keys)))
    rest.sort(key=lambda r: -r[2])
    ranked = prefix + contains + [(label, value) for label, value, score in rest if score >= 75]
    return [(label[:100], value[:100]) for label, value in ranked[:limit]]
