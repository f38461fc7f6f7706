"""Speculative decoding's share of vLLM V1's KV pool: the draft layers that get KV cache next to the
target's, and the draft tokens a recurrent layer keeps state for.

From vLLM's source (v1/core/kv_cache_utils.py, v1/kv_cache_interface.py, model_executor/layers/mamba/):
- the drafter's attention layers are in the same forward context, so ``get_kv_cache_spec`` returns them
  with the target's and ``get_kv_cache_groups`` groups them: a layer whose spec (KV heads, head size,
  dtype) equals a target layer's joins that type, any other is a type of its own.  An MTP method drafts
  with the model's own ``mtp_num_hidden_layers`` full-attention layers (the target's geometry); DFlash,
  EAGLE and draft models bring their own config.json (``calculator/data/drafters.yaml``); n-gram and
  suffix drafting have no layers.
- a Mamba / Gated DeltaNet layer keeps ``conv_kernel - 1 + num_speculative_tokens`` conv-state columns
  (mamba_utils.py gated_delta_net_state_shape ``num_spec``), and a request takes
  ``2 + num_speculative_blocks`` state pages with prefix caching (MambaSpec.max_memory_usage_bytes,
  ``num_speculative_blocks = num_speculative_tokens``, mamba/abstract.py get_kv_cache_spec).
"""

from __future__ import annotations

from dataclasses import dataclass

from calculator.catalog import Drafter, ModelSpec, drafters

# methods that draft without attention layers of their own (vllm config/speculative.py)
NO_LAYER_METHODS = frozenset({"ngram", "ngram_gpu", "suffix", "medusa", "mlp_speculator"})


@dataclass(frozen=True)
class SpecDecode:
    """The speculative config a run used (vLLM ``--speculative-config``)."""

    method: str | None
    num_tokens: int
    draft_model: str | None = None  # as the paste names it

    @property
    def is_mtp(self) -> bool:
        """vLLM turns "mtp" into the model's own method name (deepseek_mtp, qwen3_next_mtp, ...)."""
        return self.method is not None and (self.method == "mtp" or self.method.endswith("_mtp"))


@dataclass(frozen=True)
class DraftAttention:
    """The drafter's attention layers in the pool: how many, their geometry, and whether their KV spec
    is the target's own (then they join the target's full-attention group)."""

    layers: int
    kv_heads: int
    head_dim: int
    shares_target_spec: bool
    mla: bool = False


def _last_component(name: str) -> str:
    """The model a pasted name or path names: its last path component (Windows paths too)."""
    return name.strip().strip("\"'").replace("\\", "/").rstrip("/").split("/")[-1]


def find_drafter(name: str | None) -> Drafter | None:
    """The catalog drafter a pasted name or path stands for (its last path component)."""
    if not name:
        return None
    query = _last_component(name).lower()
    for d in drafters():
        if query == d.id.split("/")[-1].lower() or query in (a.lower() for a in d.aliases):
            return d
    return None


def _target_full(model: ModelSpec) -> tuple[int, int]:
    """(KV heads, head_dim) of the target's full-attention layers."""
    full = next((g for g in model.layer_groups if g.kind == "full"), None)
    kv = (full.kv_heads if full else None) or model.num_key_value_heads
    return kv, (full.head_dim if full else None) or model.head_dim


def draft_attention(model: ModelSpec, spec: SpecDecode) -> DraftAttention | None:
    """The draft layers vLLM gives KV cache for ``spec`` on ``model``; None when there are none or
    their geometry is unknown (an MTP model whose catalog entry has no mtp_layers, a drafter outside
    the catalog)."""
    if spec.method in NO_LAYER_METHODS:
        return None
    kv, head_dim = _target_full(model)
    if spec.is_mtp:
        if not model.mtp_layers:
            return None
        return DraftAttention(model.mtp_layers, kv, head_dim, True, mla=model.mla is not None)
    drafter = find_drafter(spec.draft_model)
    if drafter is None:
        return None
    shares = (drafter.num_key_value_heads, drafter.head_dim) == (kv, head_dim) and model.mla is None
    return DraftAttention(drafter.num_hidden_layers, drafter.num_key_value_heads, drafter.head_dim, shares)


# what a reply says when the paste shows speculative decoding but cuts its config (from_log.speculative_cut)
SPEC_CUT_NOTE = (
    "your run decodes speculatively, but the paste cuts its speculative config off, so the KV pool is "
    "counted without the drafter's layers (paste the whole args line to count them)"
)


def unknown_draft_note(model: ModelSpec, spec: SpecDecode) -> str | None:
    """What a reply must say when the drafter's layers cannot be counted; None when they can."""
    if spec.method in NO_LAYER_METHODS or draft_attention(model, spec) is not None:
        return None
    if spec.draft_model and not spec.is_mtp:  # a path names its model by its last component
        what = f"the draft model {_last_component(spec.draft_model)} is"
    else:
        what = "its draft layers are"
    return (
        f"your run drafts {spec.num_tokens} tokens ({spec.method or 'speculative decoding'}); {what} "
        "not in my catalog, so the KV pool is counted without them"
    )
