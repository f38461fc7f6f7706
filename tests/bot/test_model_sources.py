"""Models outside the catalog: a local config.json, a model folder, a local GGUF file; the Hub only
when allowed (tests never touch the network)."""

from __future__ import annotations

import io
import json

import numpy as np
import pytest

from adapters.cli import main
from bot.model_sources import ModelSourceError, resolve_model_arg
from calculator.kv import llamacpp_layout, vllm_layout
from calculator.resolve import NameNotFound

QWEN15B = {  # Qwen/Qwen2.5-1.5B-Instruct config.json (fields memory depends on)
    "architectures": ["Qwen2ForCausalLM"],
    "hidden_size": 1536,
    "intermediate_size": 8960,
    "max_position_embeddings": 32768,
    "num_attention_heads": 12,
    "num_hidden_layers": 28,
    "num_key_value_heads": 2,
    "torch_dtype": "bfloat16",
    "vocab_size": 151936,
    "model_type": "qwen2",
}

GEMMA_LIKE = {  # a text_config nested multimodal config with per-layer types
    "architectures": ["Gemma3ForConditionalGeneration"],
    "text_config": {
        "hidden_size": 3840,
        "intermediate_size": 15360,
        "num_attention_heads": 16,
        "num_hidden_layers": 6,
        "num_key_value_heads": 8,
        "head_dim": 256,
        "vocab_size": 262208,
        "max_position_embeddings": 131072,
        "sliding_window": 1024,
        "layer_types": ["sliding_attention"] * 5 + ["full_attention"],
    },
    "torch_dtype": "bfloat16",
}


def test_config_json_file(tmp_path):
    cfg = tmp_path / "config.json"
    cfg.write_text(json.dumps(QWEN15B))
    found = resolve_model_arg(str(cfg), allow_local=True)
    assert found.origin == "config.json"
    assert vllm_layout(found.model).all_attention_bytes_per_token == 28 * 2 * 128 * 2 * 2


def test_model_folder_with_safetensors_index(tmp_path):
    (tmp_path / "config.json").write_text(json.dumps(QWEN15B))
    (tmp_path / "model.safetensors.index.json").write_text(
        json.dumps({"metadata": {"total_size": 3087467520}})
    )
    found = resolve_model_arg(str(tmp_path), allow_local=True)
    assert found.variant is not None and found.variant.size_bytes == 3087467520


def test_nested_text_config_with_layer_types(tmp_path):
    cfg = tmp_path / "config.json"
    cfg.write_text(json.dumps(GEMMA_LIKE))
    found = resolve_model_arg(str(cfg), allow_local=True)
    lay = vllm_layout(found.model)
    assert lay.growing_layers == 1 and lay.sliding[0].window == 1024 and lay.sliding[0].layers == 5


def test_gguf_file(tmp_path):
    gguf = pytest.importorskip("gguf")
    path = tmp_path / "tiny-Q4_K_M.gguf"
    w = gguf.GGUFWriter(str(path), "llama")
    w.add_block_count(32)
    w.add_embedding_length(4096)
    w.add_feed_forward_length(14336)
    w.add_head_count(32)
    w.add_head_count_kv(8)
    w.add_context_length(131072)
    w.add_file_type(gguf.LlamaFileType.MOSTLY_Q4_K_M)
    w.add_tensor("token_embd.weight", np.zeros((8, 8), dtype=np.float32))
    w.write_header_to_file()
    w.write_kv_data_to_file()
    w.write_tensors_to_file()
    w.close()
    found = resolve_model_arg(str(path), allow_local=True)
    assert found.origin == "gguf"
    assert found.variant.gguf_type == "Q4_K_M"
    assert llamacpp_layout(found.model).growing_bytes_per_token == 128 * 1024  # Llama-3.1-8B shape


def test_bad_files_give_clear_errors(tmp_path):
    bad = tmp_path / "config.json"
    bad.write_text("{not json")
    with pytest.raises(ModelSourceError, match="not a readable JSON"):
        resolve_model_arg(str(bad), allow_local=True)
    junk = tmp_path / "x.gguf"
    junk.write_bytes(b"GGUF\x00\x01garbage")
    with pytest.raises(ModelSourceError):
        resolve_model_arg(str(junk), allow_local=True)
    missing = tmp_path / "folder"
    missing.mkdir()
    with pytest.raises(ModelSourceError, match=r"no config\.json"):
        resolve_model_arg(str(missing), allow_local=True)


def test_chat_never_opens_local_paths(tmp_path):
    cfg = tmp_path / "config.json"
    cfg.write_text(json.dumps(QWEN15B))
    with pytest.raises(NameNotFound):
        resolve_model_arg(str(cfg))  # allow_local is False for chat


def test_unknown_hub_id_without_network_says_so():
    with pytest.raises(NameNotFound, match="does not look models up on the Hugging Face Hub"):
        resolve_model_arg("someorg/SomeBrandNewModel-7B")


def test_cli_vram_with_local_config(tmp_path):
    cfg = tmp_path / "config.json"
    cfg.write_text(json.dumps(QWEN15B))
    out = io.StringIO()
    code = main(["vram", "--gpu", "t4", "--model", str(cfg), "--json"], stdin=io.StringIO(), stdout=out)
    data = json.loads(out.getvalue())
    assert code == 0 and data["kv_bytes_per_token"] == 28672 and data["fits"]


def test_from_paste_uses_the_geometry_the_log_prints():
    from bot.model_sources import from_paste
    from tests.calculator.test_from_log import GPUSTACK_1681

    found = from_paste(GPUSTACK_1681)
    assert found.origin == "paste"
    assert found.model.num_hidden_layers == 48 and found.variant.gguf_type == "Q4_K_M"
    assert found.notes == ("geometry read from the pasted llama.cpp log (qwen2)",)
    assert llamacpp_layout(found.model).growing_bytes_per_token == 196608


def test_from_paste_names_a_catalog_model_when_the_log_has_no_geometry():
    from bot.model_sources import from_paste
    from bot.vram import catalog_lookup

    paste = "INFO 08-01 10:00:00 [utils.py:326] non-default args: {'model': 'Qwen/Qwen2.5-7B-Instruct'}\n"
    found = from_paste(paste, catalog_lookup)
    assert found.origin == "catalog" and found.model.id == "Qwen/Qwen2.5-7B-Instruct"


def test_from_paste_never_raises():
    from bot.model_sources import from_paste
    from bot.vram import catalog_lookup

    for text in (
        "",
        "\x00\xff" * 1000,
        "print_info: arch = llama\n" * 50_000,
        "non-default args: {'model': 'x/y'}",
    ):
        assert from_paste(text, catalog_lookup) is None
