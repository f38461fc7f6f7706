"""Ollama on top of llama.cpp: its default context by VRAM, num_parallel and OLLAMA_KV_CACHE_TYPE.

Since v0.30 Ollama spawns llama-server with ``-c num_ctx*num_parallel -np num_parallel`` (unified KV
off, so every slot gets num_ctx) and lets ``--fit`` move layers; see shared/reference/llamacpp_ollama.md §3.
"""

from __future__ import annotations

from dataclasses import dataclass

from calculator.catalog import ModelSpec
from calculator.llamacpp import LlamaCppBudget, LlamaCppConfig, llamacpp_budget


def default_num_ctx(total_vram_gib: float, trained_ctx: int) -> int:
    """v0.15.5+: 262144 with >= 47 GiB of VRAM in total, 32768 with >= 23 GiB, else 4096; capped."""
    if total_vram_gib >= 47:
        tier = 262144
    elif total_vram_gib >= 23:
        tier = 32768
    else:
        tier = 4096
    return min(tier, trained_ctx)


def auto_batch(num_ctx: int) -> int:
    if num_ctx > 32768:
        return 2048
    if num_ctx > 4096:
        return 1024
    return 512


@dataclass
class OllamaConfig:
    num_ctx: int | None = None  # None: Ollama's VRAM-tier default
    num_parallel: int = 1
    kv_cache_type: str = "f16"
    flash_attention: bool = True


def ollama_budget(model: ModelSpec, weight_bytes: int, total_gib: float, cfg: OllamaConfig) -> LlamaCppBudget:
    num_ctx = cfg.num_ctx or default_num_ctx(total_gib, model.max_position_embeddings)
    parallel = max(1, cfg.num_parallel)
    lcfg = LlamaCppConfig(
        n_ctx=num_ctx * parallel,
        cache_type_k=cfg.kv_cache_type,
        cache_type_v=cfg.kv_cache_type,
        n_parallel=parallel,
        kv_unified=False,
        flash_attn=cfg.flash_attention,
        n_ubatch=auto_batch(num_ctx),
    )
    budget = llamacpp_budget(model, weight_bytes, total_gib, lcfg)
    # the largest num_ctx per slot that fits
    budget.n_ctx_max_fit = budget.n_ctx_max_fit // parallel
    return budget
