"""Build a ModelSpec from a model's own metadata: a Hugging Face config.json (as a dict) or a GGUF
file's key/value metadata (as a dict).  Pure functions; reading the files is the caller's job.

Covers what memory depends on: layers, heads, KV heads, head_dim, per-layer attention type
(``layer_types`` / sliding-window patterns / linear attention), MLA ranks, MoE sizes, context and
RoPE scaling, dtype.  Parameters are counted from the shapes when no size is given.
"""

from __future__ import annotations

from typing import Any

from calculator.catalog import MLA, LayerGroup, ModelSpec, RopeScaling, Variant


class ConfigError(ValueError):
    """The metadata lacks a field memory depends on; the message names it."""


def _need(cfg: dict[str, Any], *keys: str) -> Any:
    for key in keys:
        if cfg.get(key) is not None:
            return cfg[key]
    raise ConfigError(f"config has none of {', '.join(keys)}")


def _text_config(cfg: dict[str, Any]) -> dict[str, Any]:
    """Multimodal configs nest the language model under text_config / llm_config."""
    for key in ("text_config", "llm_config", "language_config"):
        sub = cfg.get(key)
        if isinstance(sub, dict) and ("num_hidden_layers" in sub or "n_layer" in sub):
            merged = {k: v for k, v in cfg.items() if k != key}
            merged.update(sub)
            return merged
    return cfg


def _estimate_params(
    hidden: int,
    inter: int,
    layers: int,
    vocab: int,
    heads: int,
    kv: int,
    head_dim: int,
    experts: int | None,
    moe_inter: int | None,
) -> float:
    attn = hidden * heads * head_dim * 2 + hidden * kv * head_dim * 2
    mlp = 3 * hidden * (moe_inter or inter) * experts if experts else 3 * hidden * inter
    return (layers * (attn + mlp) + 2 * vocab * hidden) / 1e9


def _layer_groups_from_types(
    types: list[str], window: int | None, cfg: dict[str, Any]
) -> list[LayerGroup] | None:
    counts: dict[str, int] = {}
    for t in types:
        counts[t] = counts.get(t, 0) + 1
    groups: list[LayerGroup] = []
    for kind, n in counts.items():
        if kind in ("full_attention", "attention", "global"):
            groups.append(LayerGroup(kind="full", count=n))
        elif kind in ("sliding_attention", "local", "sliding_window"):
            if not window:
                raise ConfigError("sliding_attention layers without sliding_window")
            groups.append(LayerGroup(kind="sliding", count=n, window=int(window)))
        elif kind in ("chunked_attention",):
            groups.append(
                LayerGroup(
                    kind="chunked", count=n, window=int(cfg.get("attention_chunk_size") or window or 8192)
                )
            )
        elif kind in ("linear_attention", "mamba", "recurrent"):
            groups.append(_linear_group(cfg, n))
        else:
            raise ConfigError(f"unknown layer type {kind!r}")
    return groups or None


def _linear_group(cfg: dict[str, Any], count: int) -> LayerGroup:
    """Gated DeltaNet layers also give one conv-state column (conv_dim x 2 B), kept once more per
    speculative token (vllm mamba_utils.py gated_delta_net_state_shape)."""
    column = None
    if "linear_num_value_heads" in cfg:
        k_width = int(cfg.get("linear_num_key_heads", 16)) * int(cfg.get("linear_key_head_dim", 128))
        column = (
            2 * k_width + int(cfg["linear_num_value_heads"]) * int(cfg.get("linear_value_head_dim", 128))
        ) * 2
    return LayerGroup(
        kind="linear", count=count, state_bytes=_linear_state_bytes(cfg), conv_column_bytes=column
    )


def _linear_state_bytes(cfg: dict[str, Any]) -> int:
    """Gated DeltaNet / Mamba state per sequence per layer (conv state + recurrent state, 2-byte)."""
    if "linear_num_value_heads" in cfg:
        k_heads = int(cfg.get("linear_num_key_heads", 16))
        v_heads = int(cfg["linear_num_value_heads"])
        k_dim = int(cfg.get("linear_key_head_dim", 128))
        v_dim = int(cfg.get("linear_value_head_dim", 128))
        kernel = int(cfg.get("linear_conv_kernel_dim", 4))
        conv = (2 * k_heads * k_dim + v_heads * v_dim) * (kernel - 1)
        ssm = v_heads * k_dim * v_dim
        return (conv + ssm) * 2
    d_state = int(cfg.get("state_size") or cfg.get("mamba_d_state") or 128)
    expand = int(cfg.get("expand") or cfg.get("mamba_expand") or 2)
    d_inner = expand * int(cfg["hidden_size"])
    kernel = int(cfg.get("conv_kernel") or cfg.get("mamba_d_conv") or 4)
    return (d_inner * (kernel - 1) + d_inner * d_state) * 2


def spec_from_config(
    cfg: dict[str, Any], name: str, source: str, size_bytes: int | None = None
) -> tuple[ModelSpec, Variant | None]:
    """A ModelSpec (and a variant carrying the checkpoint size, when known) from config.json."""
    cfg = _text_config(cfg)
    layers = int(_need(cfg, "num_hidden_layers", "n_layer", "num_layers"))
    hidden = int(_need(cfg, "hidden_size", "n_embd", "d_model"))
    heads = int(_need(cfg, "num_attention_heads", "n_head"))
    kv = int(cfg.get("num_key_value_heads") or cfg.get("num_kv_heads") or heads)
    head_dim = int(cfg.get("head_dim") or hidden // heads)
    vocab = int(_need(cfg, "vocab_size"))
    inter = int(cfg.get("intermediate_size") or cfg.get("ffn_hidden_size") or 4 * hidden)
    max_pos = int(
        _need(
            cfg, "max_position_embeddings", "n_positions", "max_seq_len", "seq_length", "max_sequence_length"
        )
    )
    experts = cfg.get("num_experts") or cfg.get("num_local_experts") or cfg.get("n_routed_experts")
    per_tok = cfg.get("num_experts_per_tok") or cfg.get("num_experts_per_token") or cfg.get("moe_topk")
    moe_inter = cfg.get("moe_intermediate_size")
    rope = cfg.get("rope_scaling") or cfg.get("rope_parameters")
    rope_scaling = None
    if isinstance(rope, dict) and (rope.get("type") or rope.get("rope_type")) not in (None, "default"):
        rope_scaling = RopeScaling(
            type=str(rope.get("type") or rope.get("rope_type")),
            factor=rope.get("factor"),
            original_max_position_embeddings=rope.get("original_max_position_embeddings"),
        )
    mla = None
    if cfg.get("kv_lora_rank"):
        mla = MLA(
            kv_lora_rank=int(cfg["kv_lora_rank"]), qk_rope_head_dim=int(cfg.get("qk_rope_head_dim", 64))
        )
        head_dim = int(cfg.get("qk_nope_head_dim", 128)) + mla.qk_rope_head_dim
    groups: list[LayerGroup] | None = None
    window = cfg.get("sliding_window")
    types = cfg.get("layer_types")
    if isinstance(types, list) and len(types) == layers:
        groups = _layer_groups_from_types([str(t) for t in types], window, cfg)
    elif cfg.get("full_attention_interval"):
        full = layers // int(cfg["full_attention_interval"])
        groups = [
            LayerGroup(kind="full", count=full),
            _linear_group(cfg, layers - full),
        ]
    elif window and cfg.get("sliding_window_pattern"):
        pattern = int(cfg["sliding_window_pattern"])
        full = layers // pattern
        groups = [
            LayerGroup(kind="full", count=full),
            LayerGroup(kind="sliding", count=layers - full, window=int(window)),
        ]
    elif (
        window
        and cfg.get("use_sliding_window", True)
        and cfg.get("model_type") in ("mistral", "mixtral", "gemma2")
    ):
        if cfg.get("model_type") == "gemma2":
            groups = [
                LayerGroup(kind="full", count=layers - layers // 2),
                LayerGroup(kind="sliding", count=layers // 2, window=int(window)),
            ]
        else:
            groups = [LayerGroup(kind="sliding", count=layers, window=int(window))]
    if groups is not None and mla is not None:
        groups = [g if g.kind != "full" else LayerGroup(kind="mla", count=g.count) for g in groups]
    dtype = str(cfg.get("torch_dtype") or cfg.get("dtype") or "bfloat16")
    if dtype not in ("bfloat16", "float16", "float32"):
        dtype = "bfloat16"
    params = _estimate_params(hidden, inter, layers, vocab, heads, kv, head_dim, experts, moe_inter)
    if size_bytes:
        params = size_bytes / 2 / 1e9 if dtype != "float32" else size_bytes / 4 / 1e9
    active = None
    if experts and per_tok:
        active = _estimate_params(hidden, inter, layers, vocab, heads, kv, head_dim, per_tok, moe_inter)
    spec = ModelSpec(
        id=name,
        family="local",
        architecture=str((cfg.get("architectures") or ["unknown"])[0]),
        source=source,
        num_hidden_layers=layers,
        hidden_size=hidden,
        intermediate_size=inter,
        moe_intermediate_size=int(moe_inter) if moe_inter else None,
        num_attention_heads=heads,
        num_key_value_heads=kv,
        head_dim=head_dim,
        vocab_size=vocab,
        max_position_embeddings=max_pos,
        rope_scaling=rope_scaling,
        torch_dtype=dtype,  # type: ignore[arg-type]  # narrowed to the three dtypes above; mypy cannot see it
        params_b=round(params, 3),
        active_params_b=round(active, 3) if active else None,
        num_experts=int(experts) if experts else None,
        experts_per_token=int(per_tok) if per_tok else None,
        layers=groups,
        mla=mla,
        mtp_layers=int(cfg.get("mtp_num_hidden_layers") or cfg.get("num_nextn_predict_layers") or 0) or None,
    )
    variant = None
    if size_bytes:
        quant = _quant_of(cfg)
        variant = Variant(id=name, quant=quant, size_bytes=size_bytes, source=source)  # type: ignore[arg-type]  # _quant_of returns QuantName values
    return spec, variant


def _quant_of(cfg: dict[str, Any]) -> str:
    qc = cfg.get("quantization_config") or {}
    method = str(qc.get("quant_method", "")).lower()
    if method in ("awq", "gptq", "fp8", "mxfp4"):
        return method
    if method == "compressed-tensors" or "fp8" in str(qc).lower():
        return "fp8"
    if method == "bitsandbytes":
        return "bnb-4bit"
    return "bf16" if str(cfg.get("torch_dtype", "bfloat16")) != "float16" else "fp16"


def spec_from_gguf(
    meta: dict[str, Any], name: str, source: str, file_size: int, file_type: str | None
) -> tuple[ModelSpec, Variant]:
    """A ModelSpec from GGUF metadata (``<arch>.block_count`` etc.) and the file's real size."""
    spec = spec_from_gguf_meta(meta, name, source)
    variant = Variant(
        id=name, quant="gguf", gguf_type=file_type or "unknown", size_bytes=file_size, source=source
    )
    return spec, variant


def spec_from_gguf_meta(meta: dict[str, Any], name: str, source: str) -> ModelSpec:
    """The geometry alone from GGUF metadata, for callers that know the weights' size another way
    (a load log prints it rounded, with its bits per weight)."""
    arch = str(_need(meta, "general.architecture"))

    def key(k: str, default: Any = None) -> Any:
        return meta.get(f"{arch}.{k}", default)

    layers = int(key("block_count") or _need(meta, f"{arch}.block_count"))
    hidden = int(key("embedding_length") or _need(meta, f"{arch}.embedding_length"))
    heads_raw = key("attention.head_count")
    heads = int(max(heads_raw) if isinstance(heads_raw, list) else (heads_raw or 0))
    if not heads:
        raise ConfigError(f"{arch}.attention.head_count missing")
    kv_raw = key("attention.head_count_kv", heads)
    head_dim = int(key("attention.key_length") or hidden // heads)
    vocab = int(key("vocab_size") or meta.get("tokenizer.ggml.tokens.count") or 32000)
    ctx = int(key("context_length") or 4096)
    inter_raw = key("feed_forward_length") or 4 * hidden
    inter = int(max(inter_raw) if isinstance(inter_raw, list) else inter_raw)
    window = key("attention.sliding_window")
    groups: list[LayerGroup] | None = None
    mla = None
    if key("attention.kv_lora_rank"):
        mla = MLA(
            kv_lora_rank=int(key("attention.kv_lora_rank")),
            qk_rope_head_dim=int(key("rope.dimension_count") or 64),
        )
    if isinstance(kv_raw, list):
        kv_layers = [int(x) for x in kv_raw]
        attn = [x for x in kv_layers if x > 0]
        kv = max(attn) if attn else 1
        recurrent = sum(1 for x in kv_layers if x == 0)
        groups = []
        if attn:
            groups.append(LayerGroup(kind="full", count=len(attn), kv_heads=kv))
        if recurrent:
            state = int(key("ssm.state_size", 128)) * int(key("ssm.inner_size", 2 * hidden)) * 2
            groups.append(LayerGroup(kind="linear", count=recurrent, state_bytes=state))
    else:
        kv = int(kv_raw)
    if window and groups is None:
        pattern = key("attention.sliding_window_pattern")
        if isinstance(pattern, list):  # per layer: true = sliding
            sliding = sum(1 for x in pattern if x)
            groups = [
                LayerGroup(kind="full", count=layers - sliding),
                LayerGroup(kind="sliding", count=sliding, window=int(window)),
            ]
            groups = [g for g in groups if g.count > 0]
    experts = key("expert_count")
    params = _estimate_params(
        hidden, inter, layers, vocab, heads, kv, head_dim, experts, key("expert_feed_forward_length")
    )
    if meta.get("general.parameter_count"):
        params = int(meta["general.parameter_count"]) / 1e9
    return ModelSpec(
        id=name,
        family="local-gguf",
        architecture=arch,
        source=source,
        num_hidden_layers=layers,
        hidden_size=hidden,
        intermediate_size=inter,
        num_attention_heads=heads,
        num_key_value_heads=kv,
        head_dim=head_dim,
        vocab_size=vocab,
        max_position_embeddings=ctx,
        params_b=round(params, 3),
        layers=groups,
        mla=mla,
    )
