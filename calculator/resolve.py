"""Turn the names people type (``4090``, ``a100-80g``, ``qwen-32b-awq``, ``llama3.1:8b``) into catalog entries.

Exact matches on normalised keys first, then fuzzy matching (rapidfuzz); an ambiguous or unknown
name raises :class:`NameNotFound` carrying the closest known names.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from functools import cache

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


@cache
def _gpu_index() -> dict[str, str]:
    index: dict[str, str] = {}
    for g in gpus():
        for name in (g.id, g.name, *g.aliases):
            for key in _key_variants(name):
                index.setdefault(key, g.id)
        # "NVIDIA GeForce RTX 4090" -> "rtx4090", "4090"
        short = normalise(g.name.replace("NVIDIA", "").replace("GeForce", "").replace("Tesla", ""))
        index.setdefault(short, g.id)
    return index


@cache
def _gpu_by_id() -> dict[str, GPU]:
    return {g.id: g for g in gpus()}


def resolve_gpu(query: str) -> GPU:
    q = query.strip()
    if not q:
        raise NameNotFound("GPU", query, [])
    index = _gpu_index()
    by_id = _gpu_by_id()
    key = normalise(q.replace("NVIDIA", "").replace("GeForce", "").replace("Tesla", ""))
    for k in (normalise(q), key):
        if k in index:
            return by_id[index[k]]
    return by_id[index[_fuzzy("GPU", q, key, index)]]


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
