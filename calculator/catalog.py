"""Catalog schemas (plain dataclasses, validated by pydantic on a cache miss) and loading of the shipped
YAML data.

Every entry carries ``source``: where its numbers come from (a model's config.json, a vendor spec
sheet, llama.cpp's quantization tables).

The YAML is parsed with libyaml's C loader when PyYAML has it, and the validated catalogs are kept in a
cache keyed by the data files' content (:mod:`knowledge.cache`), so an unchanged catalog loads in
milliseconds.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from functools import cache
from pathlib import Path
from typing import Literal, TypeVar

from calculator.units import GB, GIB
from knowledge.cache import cached, code_digest, content_key, load_yaml
from knowledge.validate import STRICT, positive, validate

T = TypeVar("T")
LayerKind = Literal["full", "sliding", "chunked", "mla", "linear"]
GGUF_DEFAULT = "Q4_K_M"  # the GGUF type a name without one means (Ollama's default tag)

# The entries are plain frozen dataclasses, validated by pydantic (knowledge.validate) when a cache
# entry is built; numbers that must be positive are checked in __post_init__, so a spec built in code
# from a config.json, GGUF metadata or a log is checked the same way.


@dataclass(frozen=True, kw_only=True)
class Price:
    """A card's price: what was paid or asked, of which kind, when, and where it was read."""

    __pydantic_config__ = STRICT

    usd: float
    kind: Literal["msrp", "street", "cloud_hourly"]
    date: str
    source: str


@dataclass(frozen=True, kw_only=True)
class GPU:
    """A card as its vendor specifies it, with the memory an engine sees on it."""

    __pydantic_config__ = STRICT

    id: str
    name: str
    vendor: Literal["nvidia", "amd", "apple", "intel"]
    segment: Literal["consumer", "workstation", "datacenter", "apple", "laptop", "embedded"]
    memory_gb: float  # memory as marketed (GB or GiB as the vendor prints it)
    memory_bytes: int  # physical memory in bytes
    usable_gib: float | None = None  # total memory the driver/torch reports (what vLLM logs as total)
    bandwidth_gbs: float | None = None
    arch: str
    compute_capability: str | None = None
    bf16: bool
    fp8: bool
    fp4: bool = False
    unified_memory: bool = False
    price: Price | None = None
    aliases: list[str] = field(default_factory=list)
    source: str
    # set by the resolver, never in the catalog: which card a family name was taken as
    assumed: str | None = None

    @property
    def total_gib(self) -> float:
        """Memory an engine sees as total on this card.

        Unified-memory Macs give the GPU Metal's recommendedMaxWorkingSetSize: about two thirds of
        RAM on small machines (5461 MB of 8 GB on an M1, corpus llamafile42) and three quarters on
        large ones; discrete cards report slightly less than their physical memory.
        """
        if self.usable_gib is not None:
            return self.usable_gib
        physical = self.memory_bytes / GIB
        if self.unified_memory:
            return physical * (0.75 if physical > 36 else 2 / 3)
        return physical * 0.985

    @property
    def cc(self) -> float | None:
        return float(self.compute_capability) if self.compute_capability else None

    @property
    def fp8_kv_cache(self) -> bool:
        """Whether vLLM's ``--kv-cache-dtype fp8`` is a sensible suggestion on this GPU."""
        if self.vendor == "nvidia":
            return self.cc is not None and self.cc >= 8.9
        if self.vendor == "amd":
            return self.fp8
        return False


@dataclass(frozen=True, kw_only=True)
class LayerGroup:
    """Layers of one attention kind: a model's layer composition is a list of these."""

    __pydantic_config__ = STRICT

    kind: LayerKind
    count: int
    window: int | None = None  # sliding window / chunk size in tokens
    kv_heads: int | None = None  # overrides the model's KV heads
    head_dim: int | None = None  # overrides the model's head_dim
    state_bytes: int | None = None  # linear/Mamba layers: recurrent state per sequence per layer, in bytes
    # linear layers: one column of the conv state (conv_dim x dtype bytes); vLLM keeps
    # conv_kernel - 1 + num_speculative_tokens columns
    conv_column_bytes: int | None = None

    def __post_init__(self) -> None:
        positive(self, "count")
        if self.kind in ("sliding", "chunked") and not self.window:
            raise ValueError(f"{self.kind} layers need a window")
        if self.kind == "linear" and self.state_bytes is None:
            raise ValueError("linear layers need state_bytes")


@dataclass(frozen=True, kw_only=True)
class MLA:
    """Multi-head latent attention ranks (DeepSeek-style): what its KV cache stores per token."""

    __pydantic_config__ = STRICT

    kv_lora_rank: int
    qk_rope_head_dim: int


@dataclass(frozen=True, kw_only=True)
class VisionTower:
    """A multimodal model's vision encoder: ``vision_config`` of config.json plus the image processor's
    pixel cap (preprocessor_config.json), what vLLM's profiling run sizes its dummy images by."""

    __pydantic_config__ = STRICT

    depth: int
    hidden_size: int  # the tower's width (Qwen2-VL: embed_dim)
    intermediate_size: int  # the MLP's inner width
    gated_mlp: bool  # gate and up projections (SwiGLU) rather than fc1 -> act
    num_heads: int
    patch_size: int
    spatial_merge_size: int
    temporal_patch_size: int = 2
    in_channels: int = 3
    out_hidden_size: int  # the width of the embeddings handed to the decoder
    deepstack_layers: int = 0  # extra feature levels kept (Qwen3-VL)
    window_size: int | None = None  # windowed attention span in pixels
    max_pixels: int  # the image processor's pixel cap
    video: bool = True  # the model takes videos (profiled as a modality)
    source: str

    def __post_init__(self) -> None:
        positive(self, "depth", "hidden_size", "intermediate_size", "num_heads", "patch_size")
        positive(self, "spatial_merge_size", "temporal_patch_size", "in_channels", "out_hidden_size")
        positive(self, "max_pixels")
        if self.deepstack_layers < 0:
            raise ValueError(f"deepstack_layers must not be negative, not {self.deepstack_layers!r}")


@dataclass(frozen=True, kw_only=True)
class RopeScaling:
    """A config.json's ``rope_scaling``: how the context was stretched past training."""

    __pydantic_config__ = STRICT

    type: str
    factor: float | None = None
    original_max_position_embeddings: int | None = None


QuantName = Literal[
    "bf16",
    "fp16",
    "fp8",
    "awq",
    "gptq",
    "gptq-int8",
    "nvfp4",
    "mxfp4",
    "bnb-4bit",
    "gguf",
]


@dataclass(frozen=True, kw_only=True)
class Variant:
    """One checkpoint of a model: a quantisation with its real size or bits per weight."""

    __pydantic_config__ = STRICT

    id: str  # repo id, Ollama tag or GGUF file name
    quant: QuantName
    gguf_type: str | None = None  # e.g. Q4_K_M, IQ4_XS (gguf only)
    size_bytes: int | None = None  # real checkpoint / file size
    bits_per_weight: float | None = None
    ollama: str | None = None  # Ollama tag serving this variant
    aliases: list[str] = field(default_factory=list)
    source: str

    def __post_init__(self) -> None:
        if self.size_bytes is None and self.bits_per_weight is None:
            raise ValueError("a variant needs size_bytes or bits_per_weight")
        if self.quant == "gguf" and not self.gguf_type:
            raise ValueError("a gguf variant needs gguf_type")


_POSITIVE = (
    "num_hidden_layers", "hidden_size", "num_attention_heads", "num_key_value_heads", "head_dim",
    "vocab_size", "max_position_embeddings", "params_b",
)  # fmt: skip


@dataclass(frozen=True, kw_only=True)
class ModelSpec:
    """A model's shapes from its config.json: what weights, KV cache and activations depend on."""

    __pydantic_config__ = STRICT

    id: str
    family: str
    architecture: str
    source: str
    num_hidden_layers: int
    hidden_size: int
    intermediate_size: int | None = None
    moe_intermediate_size: int | None = None
    num_attention_heads: int
    num_key_value_heads: int
    head_dim: int
    vocab_size: int
    max_position_embeddings: int
    rope_scaling: RopeScaling | None = None
    torch_dtype: Literal["bfloat16", "float16", "float32"] = "bfloat16"
    params_b: float  # total parameters, billions
    active_params_b: float | None = None  # MoE: active per token, billions
    num_experts: int | None = None
    experts_per_token: int | None = None
    layers: list[LayerGroup] | None = None  # layer composition; absent = every layer full attention
    mla: MLA | None = None
    mtp_layers: int | None = None  # the model's own draft layers (config.json mtp_num_hidden_layers)
    multimodal: bool = False
    vision: VisionTower | None = None  # multimodal: the vision encoder
    variants: list[Variant] = field(default_factory=list)
    aliases: list[str] = field(default_factory=list)

    def __post_init__(self) -> None:
        positive(self, *_POSITIVE)
        if self.layers is not None:
            total = sum(g.count for g in self.layers)
            if total != self.num_hidden_layers:
                raise ValueError(
                    f"layer groups sum to {total}, num_hidden_layers is {self.num_hidden_layers}"
                )
            if any(g.kind == "mla" for g in self.layers) and self.mla is None:
                raise ValueError("mla layers need the mla ranks")

    @property
    def layer_groups(self) -> list[LayerGroup]:
        if self.layers is not None:
            return self.layers
        kind: LayerKind = "mla" if self.mla else "full"
        return [LayerGroup(kind=kind, count=self.num_hidden_layers)]

    @property
    def dtype_bytes(self) -> int:
        return 2  # fp32 checkpoints are served in 16-bit by every engine here

    @property
    def native_weight_bytes(self) -> int:
        return int(self.params_b * 1e9 * self.dtype_bytes)

    @property
    def is_moe(self) -> bool:
        return self.active_params_b is not None


@dataclass(frozen=True, kw_only=True)
class Drafter:
    """A separate draft model's attention geometry (its config.json): the layers whose KV cache vLLM
    V1 keeps in the target's pool when it drafts (DFlash, EAGLE, a small draft model)."""

    __pydantic_config__ = STRICT

    id: str
    architecture: str
    source: str
    num_hidden_layers: int
    num_key_value_heads: int
    head_dim: int
    aliases: list[str] = field(default_factory=list)

    def __post_init__(self) -> None:
        positive(self, "num_hidden_layers", "num_key_value_heads", "head_dim")


@dataclass(frozen=True, kw_only=True)
class QuantFormat:
    """A weight or KV-cache format and its bits per weight / bytes per element."""

    __pydantic_config__ = STRICT

    name: str
    engine: Literal["gguf", "vllm"]
    block_bpw: float | None = None
    effective_bpw: float | None = None
    kv_bytes_per_element: float | None = None
    source: str


@dataclass(frozen=True, kw_only=True)
class _GPUFile:
    """data/gpus.yaml."""

    __pydantic_config__ = STRICT

    gpus: list[GPU]


@dataclass(frozen=True, kw_only=True)
class _ModelFile:
    """One file of data/models/."""

    __pydantic_config__ = STRICT

    models: list[ModelSpec]


@dataclass(frozen=True, kw_only=True)
class _DrafterFile:
    """data/drafters.yaml."""

    __pydantic_config__ = STRICT

    drafters: list[Drafter]


@dataclass(frozen=True, kw_only=True)
class _QuantFile:
    """data/quants.yaml."""

    __pydantic_config__ = STRICT

    weight_formats: list[QuantFormat]
    kv_cache_types: list[QuantFormat]


DATA_DIR = Path(__file__).resolve().parent / "data"


def _files(*names: str) -> list[tuple[str, bytes]]:
    """(name, bytes) of data files: a file name, or a folder name standing for its ``*.yaml``."""
    return [file for name in names for file in _read_group(name)]


@cache
def _read_group(name: str) -> tuple[tuple[str, bytes], ...]:
    """One file, or a folder's ``*.yaml``, read once per process (the catalogs and the name index key
    on the same files)."""
    path = DATA_DIR / name
    if not path.is_dir():
        return ((name, path.read_bytes()),)
    return tuple((f"{name}/{p.name}", p.read_bytes()) for p in sorted(path.glob("*.yaml")))


_CODE = code_digest(Path(__file__).resolve())


@cache
def _group_digest(name: str) -> bytes:
    """A digest of one file or folder (each file's name and bytes), computed once a process: a catalog
    and the name indexes built from it all key on the same files (the models folder four times)."""
    return content_key("files", _read_group(name)).encode()


def catalog_digests(*names: str) -> list[tuple[str, bytes]]:
    """(name, digest) of catalog files or folders: what keys a cache entry derived from them."""
    return [(name, _group_digest(name)) for name in names]


def _validated(kind: str, name: str, build: Callable[[list[tuple[str, bytes]]], T], expect: type) -> T:
    key = content_key(kind, catalog_digests(name), _CODE)
    return cached(key, lambda: build(_files(name)), expect)


def _build_gpus(files: list[tuple[str, bytes]]) -> tuple[GPU, ...]:
    return tuple(validate(_GPUFile, load_yaml(files[0][1])).gpus)


def _build_models(files: list[tuple[str, bytes]]) -> tuple[ModelSpec, ...]:
    found: list[ModelSpec] = []
    seen: dict[str, str] = {}
    for filename, data in files:
        for model in validate(_ModelFile, load_yaml(data)).models:
            if model.id in seen:
                raise ValueError(f"model {model.id!r} is in both {seen[model.id]} and {filename}")
            seen[model.id] = filename
            found.append(model)
    return tuple(found)


def _build_quants(files: list[tuple[str, bytes]]) -> _QuantFile:
    return validate(_QuantFile, load_yaml(files[0][1]))


@cache
def gpus() -> tuple[GPU, ...]:
    return _validated("catalog-gpus", "gpus.yaml", _build_gpus, tuple)


@cache
def models() -> tuple[ModelSpec, ...]:
    """Every model of every file in ``data/models/`` (one file per family)."""
    return _validated("catalog-models", "models", _build_models, tuple)


def _build_drafters(files: list[tuple[str, bytes]]) -> tuple[Drafter, ...]:
    return tuple(validate(_DrafterFile, load_yaml(files[0][1])).drafters)


@cache
def drafters() -> tuple[Drafter, ...]:
    return _validated("catalog-drafters", "drafters.yaml", _build_drafters, tuple)


@cache
def quant_formats() -> _QuantFile:
    return _validated("catalog-quants", "quants.yaml", _build_quants, _QuantFile)


def variant_weight_bytes(model: ModelSpec, variant: Variant | None) -> int:
    """Bytes of weights a checkpoint puts on the GPUs (before sharding)."""
    if variant is None:
        return model.native_weight_bytes
    if variant.size_bytes is not None:
        return variant.size_bytes
    assert variant.bits_per_weight is not None
    return int(model.params_b * 1e9 * variant.bits_per_weight / 8)


__all__ = [
    "GB",
    "GPU",
    "MLA",
    "LayerGroup",
    "ModelSpec",
    "QuantFormat",
    "Variant",
    "VisionTower",
    "gpus",
    "models",
    "quant_formats",
    "variant_weight_bytes",
]


def gguf_weight_bytes(model: ModelSpec, variant: Variant | None) -> tuple[int, str]:
    """A GGUF file's size and its label: the named file's, else the default type's bits per weight."""
    if variant is not None:
        return variant_weight_bytes(model, variant), variant.gguf_type or variant.quant
    bpw = next(
        (
            f.effective_bpw
            for f in quant_formats().weight_formats
            if f.name == GGUF_DEFAULT and f.effective_bpw
        ),
        4.89,
    )
    return int(model.params_b * 1e9 * bpw / 8), f"{GGUF_DEFAULT} (estimated size)"
