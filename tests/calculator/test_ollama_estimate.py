"""Ollama's own KV estimate (the offload line's memory.required.kv) by release: before v0.6.3 every
layer at the full context, sliding-window layers too (ollama commit f66216e39, PR #9987)."""

from __future__ import annotations

from calculator.kv import llamacpp_layout
from calculator.ollama import estimated_kv_bytes
from calculator.resolve import resolve_model
from calculator.units import MIB


def test_gemma3_before_0_6_3_counts_every_layer_at_the_full_context():
    # ollama#9685 (March 2025, v0.6.0 at the log's date): memory.required.kv="992.0 MiB" at num_ctx 2048
    # = 62 layers x 2048 cells x 16 KV heads x 128 x (K + V) x 2 bytes
    model = resolve_model("gemma3:27b").model
    assert estimated_kv_bytes(model, llamacpp_layout(model), 2048, (0, 6, 0)) / MIB == 992.0


def test_from_0_6_3_gemma3_sliding_layers_hold_window_plus_batch():
    # 52 sliding layers x (1024 + 512) cells + 10 global layers x 2048, at 16 KV heads x 128 x 2 x 2 bytes
    model = resolve_model("gemma3:27b").model
    assert estimated_kv_bytes(model, llamacpp_layout(model), 2048, (0, 6, 3)) / MIB == 784.0


def test_gpt_oss_sliding_layers_are_estimated_at_a_4096_window():
    # fs/ggml GraphSize "gptoss" (v0.11.0+): even layers at num_parallel x 4096 + batch, odd at the context
    model = resolve_model("gpt-oss:20b").model
    layout = llamacpp_layout(model)
    per_layer = layout.growing_bytes_per_token / 12  # 24 layers, 12 full
    assert estimated_kv_bytes(model, layout, 8192, (0, 11, 0)) == per_layer * 12 * (8192 + 4096 + 512)


def test_other_architectures_count_every_layer_at_the_context():
    # gemma2 has sliding layers, but Ollama's estimate only special-cases gemma3
    model = resolve_model("google/gemma-2-9b-it").model
    layout = llamacpp_layout(model)
    every = layout.growing_bytes_per_token + sum(g.bytes_per_token for g in layout.sliding)
    assert estimated_kv_bytes(model, layout, 4096, (0, 30, 0)) == every * 4096
