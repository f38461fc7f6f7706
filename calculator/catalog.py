"""Catalog schemas (pydantic) and loading of the shipped YAML data.

Every entry carries ``source``: where its numbers come from (a model's config.json, a vendor spec
sheet, llama.cpp's quantization tables).

The YAML is parsed with libyaml's C loader when PyYAML has it, and the validated catalogs are kept in a
cache keyed by the data files' content (:mod:`knowledge.cache`), so an unchanged catalog loads in
milliseconds.
"""

from __future__ import annotations

from functools import cache
from pathlib import Path
from typing import Literal

from pydantic import BaseModel, ConfigDict, Field, model_validator

from calculator.units import GB, GIB
from knowledge.cache import cached, code_digest, content_key, load_yaml

LayerKind = Literal["full", "sliding", "chunked", "mla", "linear"]


class _Strict(BaseModel):
    # defer_build: the validators are built on the first validation, which a start that reads the
    # validated catalog back from the cache never does
    model_config = ConfigDict(extra="forbid", frozen=True, defer_build=True)


class Price(_Strict):
    usd: float
    kind: Literal["msrp", "street", "cloud_hourly"]
    date: str
    source: str


class GPU(_Strict):
    id: str
    name: str
    vendor: Literal["nvidia", "amd", "apple", "intel"]
    segment: Literal["consumer", "workstation", "datacenter", "apple", "laptop", "embedded"]
    memory_gb: float = Field(description="memory as marketed (GB or GiB as the vendor prints it)")
    memory_bytes: int = Field(description="physical memory in bytes")
    usable_gib: float | None = Field(
        default=None, description="total memory the driver/torch reports (what vLLM logs as total)"
    )
    bandwidth_gbs: float | None = None
    arch: str
    compute_capability: str | None = None
    bf16: bool
    fp8: bool
    fp4: bool = False
    unified_memory: bool = False
    price: Price | None = None
    aliases: list[str] = []
    source: str
    assumed: str | None = Field(
        default=None,
        exclude=True,
        description="set by the resolver, never in the catalog: which card a family name was taken as",
    )

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


class LayerGroup(_Strict):
    kind: LayerKind
    count: int = Field(gt=0)
    window: int | None = Field(default=None, description="sliding window / chunk size in tokens")
    kv_heads: int | None = Field(default=None, description="overrides the model's KV heads")
    head_dim: int | None = Field(default=None, description="overrides the model's head_dim")
    state_bytes: int | None = Field(
        default=None, description="linear/Mamba layers: recurrent state per sequence per layer, in bytes"
    )
    conv_column_bytes: int | None = Field(
        default=None,
        description="linear layers: one column of the conv state (conv_dim x dtype bytes); vLLM keeps "
        "conv_kernel - 1 + num_speculative_tokens columns",
    )

    @model_validator(mode="after")
    def _window_needed(self) -> LayerGroup:
        if self.kind in ("sliding", "chunked") and not self.window:
            raise ValueError(f"{self.kind} layers need a window")
        if self.kind == "linear" and self.state_bytes is None:
            raise ValueError("linear layers need state_bytes")
        return self


class MLA(_Strict):
    kv_lora_rank: int
    qk_rope_head_dim: int


class VisionTower(_Strict):
    """A multimodal model's vision encoder: ``vision_config`` of config.json plus the image processor's
    pixel cap (preprocessor_config.json), what vLLM's profiling run sizes its dummy images by."""

    depth: int = Field(gt=0)
    hidden_size: int = Field(gt=0, description="the tower's width (Qwen2-VL: embed_dim)")
    intermediate_size: int = Field(gt=0, description="the MLP's inner width")
    gated_mlp: bool = Field(description="gate and up projections (SwiGLU) rather than fc1 -> act")
    num_heads: int = Field(gt=0)
    patch_size: int = Field(gt=0)
    spatial_merge_size: int = Field(gt=0)
    temporal_patch_size: int = Field(default=2, gt=0)
    in_channels: int = Field(default=3, gt=0)
    out_hidden_size: int = Field(gt=0, description="the width of the embeddings handed to the decoder")
    deepstack_layers: int = Field(default=0, ge=0, description="extra feature levels kept (Qwen3-VL)")
    window_size: int | None = Field(default=None, description="windowed attention span in pixels")
    max_pixels: int = Field(gt=0, description="the image processor's pixel cap")
    video: bool = Field(default=True, description="the model takes videos (profiled as a modality)")
    source: str


class RopeScaling(_Strict):
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


class Variant(_Strict):
    id: str = Field(description="repo id, Ollama tag or GGUF file name")
    quant: QuantName
    gguf_type: str | None = Field(default=None, description="e.g. Q4_K_M, IQ4_XS (gguf only)")
    size_bytes: int | None = Field(default=None, description="real checkpoint / file size")
    bits_per_weight: float | None = None
    ollama: str | None = Field(default=None, description="Ollama tag serving this variant")
    aliases: list[str] = []
    source: str

    @model_validator(mode="after")
    def _size_known(self) -> Variant:
        if self.size_bytes is None and self.bits_per_weight is None:
            raise ValueError("a variant needs size_bytes or bits_per_weight")
        if self.quant == "gguf" and not self.gguf_type:
            raise ValueError("a gguf variant needs gguf_type")
        return self


class ModelSpec(_Strict):
    id: str
    family: str
    architecture: str
    source: str
    num_hidden_layers: int = Field(gt=0)
    hidden_size: int = Field(gt=0)
    intermediate_size: int | None = None
    moe_intermediate_size: int | None = None
    num_attention_heads: int = Field(gt=0)
    num_key_value_heads: int = Field(gt=0)
    head_dim: int = Field(gt=0)
    vocab_size: int = Field(gt=0)
    max_position_embeddings: int = Field(gt=0)
    rope_scaling: RopeScaling | None = None
    torch_dtype: Literal["bfloat16", "float16", "float32"] = "bfloat16"
    params_b: float = Field(gt=0, description="total parameters, billions")
    active_params_b: float | None = Field(default=None, description="MoE: active per token, billions")
    num_experts: int | None = None
    experts_per_token: int | None = None
    layers: list[LayerGroup] | None = Field(
        default=None, description="layer composition; absent = every layer full attention"
    )
    mla: MLA | None = None
    mtp_layers: int | None = Field(
        default=None, description="the model's own draft layers (config.json mtp_num_hidden_layers)"
    )
    multimodal: bool = False
    vision: VisionTower | None = Field(default=None, description="multimodal: the vision encoder")
    variants: list[Variant] = []
    aliases: list[str] = []

    @model_validator(mode="after")
    def _layers_add_up(self) -> ModelSpec:
        if self.layers is not None:
            total = sum(g.count for g in self.layers)
            if total != self.num_hidden_layers:
                raise ValueError(
                    f"layer groups sum to {total}, num_hidden_layers is {self.num_hidden_layers}"
                )
            if any(g.kind == "mla" for g in self.layers) and self.mla is None:
                raise ValueError("mla layers need the mla ranks")
        return self

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


class Drafter(_Strict):
    """A separate draft model's attention geometry (its config.json): the layers whose KV cache vLLM
    V1 keeps in the target's pool when it drafts (DFlash, EAGLE, a small draft model)."""

    id: str
    architecture: str
    source: str
    num_hidden_layers: int = Field(gt=0)
    num_key_value_heads: int = Field(gt=0)
    head_dim: int = Field(gt=0)
    aliases: list[str] = []


class QuantFormat(_Strict):
    name: str
    engine: Literal["gguf", "vllm"]
    block_bpw: float | None = None
    effective_bpw: float | None = None
    kv_bytes_per_element: float | None = None
    source: str


class _GPUFile(_Strict):
    gpus: list[GPU]


class _ModelFile(_Strict):
    models: list[ModelSpec]


class _DrafterFile(_Strict):
    drafters: list[Drafter]


class _QuantFile(_Strict):
    weight_formats: list[QuantFormat]
    kv_cache_types: list[QuantFormat]


DATA_DIR = Path(__file__).resolve().parent / "data"


def _files(*names: str) -> list[tuple[str, bytes]]:
    """(name, bytes) of data files: a file name, or a folder name standing for its ``*.yaml``."""
    paths: list[Path] = []
    for name in names:
        path = DATA_DIR / name
        paths.extend(sorted(path.glob("*.yaml")) if path.is_dir() else [path])
    return [(p.relative_to(DATA_DIR).as_posix(), p.read_bytes()) for p in paths]


_CODE = code_digest(Path(__file__).resolve())


def catalog_files(*names: str) -> list[tuple[str, bytes]]:
    """(name, bytes) of catalog data files, for keying what is derived from them."""
    return _files(*names)


def _validated(kind: str, files: list[tuple[str, bytes]], build, expect: type):
    key = content_key(kind, files, _CODE)
    return cached(key, lambda: build(files), expect)


def _build_gpus(files: list[tuple[str, bytes]]) -> tuple[GPU, ...]:
    return tuple(_GPUFile.model_validate(load_yaml(files[0][1])).gpus)


def _build_models(files: list[tuple[str, bytes]]) -> tuple[ModelSpec, ...]:
    found: list[ModelSpec] = []
    seen: dict[str, str] = {}
    for filename, data in files:
        for model in _ModelFile.model_validate(load_yaml(data)).models:
            if model.id in seen:
                raise ValueError(f"model {model.id!r} is in both {seen[model.id]} and {filename}")
            seen[model.id] = filename
            found.append(model)
    return tuple(found)


def _build_quants(files: list[tuple[str, bytes]]) -> _QuantFile:
    return _QuantFile.model_validate(load_yaml(files[0][1]))


@cache
def gpus() -> tuple[GPU, ...]:
    return _validated("catalog-gpus", _files("gpus.yaml"), _build_gpus, tuple)


@cache
def models() -> tuple[ModelSpec, ...]:
    """Every model of every file in ``data/models/`` (one file per family)."""
    return _validated("catalog-models", _files("models"), _build_models, tuple)


def _build_drafters(files: list[tuple[str, bytes]]) -> tuple[Drafter, ...]:
    return tuple(_DrafterFile.model_validate(load_yaml(files[0][1])).drafters)


@cache
def drafters() -> tuple[Drafter, ...]:
    return _validated("catalog-drafters", _files("drafters.yaml"), _build_drafters, tuple)


@cache
def quant_formats() -> _QuantFile:
    return _validated("catalog-quants", _files("quants.yaml"), _build_quants, _QuantFile)


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
