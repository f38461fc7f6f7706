"""vLLM's profiling run for a multimodal model: the dummy images and videos it encodes, and the memory
that adds to the activation peak.

V0 (vllm/worker/model_runner.py profile_run, 0.6-0.8): the dummy batch is cut into
``max(1, min(max_num_seqs, max_num_batched_tokens // max_mm_tokens))`` sequences, each carrying the
largest image and video the processor allows, ``limit_mm_per_prompt`` of each (default 1).  A sequence
is never cut to fit: when the placeholders outnumber ``max_num_batched_tokens / num_seqs`` V0 warns
("The sequence length used for profiling ... is too short", vllm/multimodal/profiling.py) and runs the
whole prompt, so the text pass covers every placeholder token.

V1 (vllm/v1/worker/gpu_model_runner.py profile_run, 0.9-0.11): the encoder runs once on a batch of the
modality with the most tokens per item, ``min(encoder_budget // item_tokens, max_num_seqs x limit)``
items with ``encoder_budget = max(max_num_batched_tokens, item_tokens)``
(v1/core/encoder_cache_manager.py compute_encoder_budget); the outputs stay cached during the text
dummy run of ``max_num_batched_tokens`` tokens.

The largest item is the processor's pixel cap as a square (smart_resize of an unbounded image,
transformers image_processing_qwen2_vl.py): side ``floor(sqrt(max_pixels) / (patch x merge)) x patch x
merge``; ``(side / patch)^2`` patches, ``/ merge^2`` tokens.  A dummy video is that frame repeated;
frames are padded to ``temporal_patch_size``.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from calculator.catalog import ModelSpec, VisionTower
from calculator.constants import constant
from calculator.units import GIB

V0_DEFAULT_LIMIT = int(constant("vllm", "mm_default_limit_v0"))
V1_DEFAULT_LIMIT = int(constant("vllm", "mm_default_limit_v1"))
MAX_FRAMES = int(constant("vllm", "mm_max_frames_per_video"))
PIXEL_BYTES = constant("vllm", "mm_pixel_value_bytes")
LIVE_HIDDEN = constant("vllm", "mm_vision_live_hidden")


@dataclass(frozen=True)
class MmSettings:
    """The multimodal settings that size the profile: --limit-mm-per-prompt per modality and
    --mm-processor-kwargs max_pixels (None: the engine's / processor's default).  max_pixels is taken
    by V1's dummy builder (no log checks it yet) and ignored by V0's (see v0_profile)."""

    images: int | None = None
    videos: int | None = None
    max_pixels: int | None = None


@dataclass(frozen=True)
class MmProfile:
    """What the profiling run pushes through the model, per forward."""

    text_tokens: int  # tokens of the decoder pass
    mm_tokens: int  # encoder outputs alive during it
    patches: int  # patches of the largest single encoder call
    pixel_patches: int  # patches whose float32 pixel values sit on the GPU
    seqs: int | None = None  # dummy sequences (V0 cuts them to fit the multimodal tokens), else max_num_seqs


@dataclass(frozen=True)
class _Item:
    """One image's (or frame group's) patches and the tokens it becomes."""

    patches: int  # per temporal group (one image, or two frames of a video)
    tokens: int


def _item(v: VisionTower, max_pixels: int | None) -> _Item:
    factor = v.patch_size * v.spatial_merge_size
    side = max(factor, math.isqrt(max_pixels or v.max_pixels) // factor * factor)
    patches = (side // v.patch_size) ** 2
    return _Item(patches, patches // v.spatial_merge_size**2)


def _video_groups(v: VisionTower, item: _Item, room: int, videos: int) -> int:
    """Temporal groups of the dummy video: the most frames whose tokens fit ``room``, shared by the
    videos, capped at MAX_FRAMES, at least one frame (qwen2_vl.py get_num_frames_with_most_features)."""
    t = v.temporal_patch_size
    fit = 0
    while fit < MAX_FRAMES * max(1, videos) and ((fit + 1 + (fit + 1) % t) // t) * item.tokens <= room:
        fit += 1
    frames = max(1, min(fit // max(1, videos), MAX_FRAMES))
    return max(1, (frames + frames % t) // t)


def v0_profile(
    model: ModelSpec, batched: int, max_seqs: int, max_len: int, mm: MmSettings
) -> MmProfile | None:
    v = model.vision
    if v is None:
        return None
    # V0 sizes its dummy items by the checkpoint's processor: with --mm-processor-kwargs max_pixels=1280
    # vLLM 0.8.3 still profiled 2.51 GiB for Qwen2.5-VL-72B at tp=4 (vllm#16570), the full-size items'
    # figure (2.74 GiB here) and not the tiny images' (0.42 GiB)
    item = _item(v, None)
    images = V0_DEFAULT_LIMIT if mm.images is None else mm.images
    videos = (V0_DEFAULT_LIMIT if mm.videos is None else mm.videos) if v.video else 0
    groups_max = _video_groups(v, item, max_len - images * item.tokens, videos)
    max_mm = images * item.tokens + videos * groups_max * item.tokens
    if max_mm <= 0:
        return MmProfile(batched, 0, 0, 0)
    seqs = max(1, min(max_seqs, batched // max_mm))
    seq_len = batched // seqs
    groups = _video_groups(v, item, seq_len - images * item.tokens, videos)
    per_seq = images * item.tokens + videos * groups * item.tokens
    image_patches = seqs * images * item.patches
    video_patches = seqs * videos * groups * item.patches
    return MmProfile(
        text_tokens=seqs * max(seq_len, per_seq),
        mm_tokens=seqs * per_seq,
        patches=max(image_patches, video_patches),
        pixel_patches=image_patches + video_patches,
        seqs=seqs,
    )


def v1_profile(model: ModelSpec, batched: int, max_seqs: int, mm: MmSettings) -> MmProfile | None:
    v = model.vision
    if v is None:
        return None
    item = _item(v, mm.max_pixels)
    images = V1_DEFAULT_LIMIT if mm.images is None else mm.images
    videos = (V1_DEFAULT_LIMIT if mm.videos is None else mm.videos) if v.video else 0
    limit = images if images > 0 else videos  # a dummy video has one frame group here: same tokens
    if limit <= 0:
        return MmProfile(batched, 0, 0, 0)
    budget = max(batched, item.tokens)
    items = max(1, min(budget // item.tokens, max_seqs * limit))
    return MmProfile(batched, items * item.tokens, items * item.patches, items * item.patches)


def vision_peak_gib(model: ModelSpec, patches: int, tp: int) -> float:
    """One vision block over ``patches``: the residual stream and the norm output at the tower's width
    plus the MLP's inner activations (gate+up and their product, or fc1 and its activation), split over
    tensor-parallel ranks like the MLP."""
    v = model.vision
    if v is None or patches <= 0:
        return 0.0
    inner = (3 if v.gated_mlp else 2) * v.intermediate_size / max(1, tp)
    return patches * (LIVE_HIDDEN * v.hidden_size + inner) * model.dtype_bytes / GIB


def held_gib(model: ModelSpec, profile: MmProfile) -> float:
    """What stays allocated through the profile's forward: the float32 pixel values of every dummy
    item and the encoder outputs (with Qwen3-VL's deepstack levels) handed to the decoder."""
    v = model.vision
    if v is None:
        return 0.0
    per_patch = v.in_channels * v.temporal_patch_size * v.patch_size**2 * PIXEL_BYTES
    embeds = profile.mm_tokens * v.out_hidden_size * (1 + v.deepstack_layers) * model.dtype_bytes
    return (profile.pixel_patches * per_patch + embeds) / GIB
