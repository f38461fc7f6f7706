"""The Hub as a model source, through the real huggingface_hub client against a fake Hub on 127.0.0.1."""

from __future__ import annotations

import io
import json
import socket
import threading
import time

import pytest

from adapters.cli import main
from bot.model_sources import from_paste, resolve_model_arg
from bot.settings import load_settings
from bot.vram import answer
from calculator.kv import vllm_layout
from calculator.resolve import NameNotFound
from tests.bot.fake_hub import FakeHub, safetensors_header

REPO = "acme-labs/Tiny-Hub-2B"  # no catalog entry has this name
CONFIG = {
    "architectures": ["LlamaForCausalLM"],
    "model_type": "llama",
    "hidden_size": 2048,
    "intermediate_size": 8192,
    "num_attention_heads": 16,
    "num_hidden_layers": 16,
    "num_key_value_heads": 4,
    "head_dim": 128,
    "vocab_size": 32000,
    "max_position_embeddings": 8192,
    "torch_dtype": "bfloat16",
}
TENSORS = {
    "model.embed_tokens.weight": ("BF16", [32000, 2048]),
    "model.layers.0.mlp.up_proj.weight": ("BF16", [8192, 2048]),
    "model.norm.weight": ("F32", [2048]),
}
SIZE = 32000 * 2048 * 2 + 8192 * 2048 * 2 + 2048 * 4


@pytest.fixture
def hub(monkeypatch, tmp_path):
    fake = FakeHub()
    fake.add(
        REPO,
        {"config.json": json.dumps(CONFIG).encode(), "model.safetensors": safetensors_header(TENSORS)},
    )
    fake.add("acme-labs/Weights-Elsewhere", {"README.md": b"GGUF files only"})
    fake.gated.add("acme-labs/Gated-7B")
    fake.start()
    monkeypatch.setenv("HF_ENDPOINT", fake.url)
    monkeypatch.setenv("HF_HOME", str(tmp_path / "hf-home"))  # no stored token
    for var in ("HF_HUB_OFFLINE", "HF_TOKEN", "HUGGING_FACE_HUB_TOKEN"):
        monkeypatch.delenv(var, raising=False)
    yield fake
    fake.stop()
    _let_workers_finish()


def _let_workers_finish() -> None:
    """A lookup that ran out of time leaves its worker retrying in the background (bounded by
    huggingface_hub's own retries); let it end before the next test shares the client."""
    for thread in threading.enumerate():
        if thread.name.startswith("hub:"):
            thread.join(timeout=60)


def test_model_outside_the_catalog_resolves_from_its_config_and_safetensors(hub, tmp_path):
    found = resolve_model_arg(REPO, allow_hub=True, cache_dir=tmp_path)
    assert found.origin == "hub"
    assert (found.model.num_hidden_layers, found.model.num_key_value_heads, found.model.head_dim) == (
        16,
        4,
        128,
    )
    assert vllm_layout(found.model).all_attention_bytes_per_token == 16 * 4 * 128 * 2 * 2
    assert found.variant.size_bytes == SIZE
    assert found.notes[0].startswith(f"{REPO} is not in my catalog; its geometry is from its config.json")
    assert "mostly BF16" in found.notes[0]
    assert any("Range" not in r and r.startswith("HEAD") for r in hub.requests)


def test_a_second_lookup_makes_no_request(hub, tmp_path):
    resolve_model_arg(REPO, allow_hub=True, cache_dir=tmp_path)
    before = len(hub.requests)
    assert before > 0
    again = resolve_model_arg(REPO, allow_hub=True, cache_dir=tmp_path)
    assert len(hub.requests) == before
    assert again.variant.size_bytes == SIZE
    hub.stop()  # and the cache answers with the Hub gone
    assert resolve_model_arg(REPO, allow_hub=True, cache_dir=tmp_path).model.num_hidden_layers == 16


def test_gated_repo_is_said_plainly(hub, tmp_path):
    with pytest.raises(NameNotFound, match=r"acme-labs/Gated-7B is gated on the Hugging Face Hub: accept"):
        resolve_model_arg("acme-labs/Gated-7B", allow_hub=True, cache_dir=tmp_path)


def test_missing_repo_is_said_plainly(hub, tmp_path):
    with pytest.raises(NameNotFound, match=r"the Hugging Face Hub has no public model acme-labs/Nope-1B"):
        resolve_model_arg("acme-labs/Nope-1B", allow_hub=True, cache_dir=tmp_path)


def test_repo_without_config_json_is_said_plainly(hub, tmp_path):
    with pytest.raises(NameNotFound, match=r"has no config\.json"):
        resolve_model_arg("acme-labs/Weights-Elsewhere", allow_hub=True, cache_dir=tmp_path)


def test_slow_hub_answers_within_the_bound_and_says_so(hub, tmp_path):
    hub.delay = 5.0
    start = time.monotonic()
    with pytest.raises(NameNotFound, match=r"did not answer within 0\.5 s, so I answered without it"):
        resolve_model_arg(REPO, allow_hub=True, cache_dir=tmp_path, budget=0.5)
    assert time.monotonic() - start < 4.0  # the 5 s the fake takes are not waited for


def test_hub_down_answers_within_the_bound_and_says_so(monkeypatch, tmp_path):
    with socket.socket() as s:  # a port nothing listens on
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    monkeypatch.setenv("HF_ENDPOINT", f"http://127.0.0.1:{port}")
    monkeypatch.delenv("HF_HUB_OFFLINE", raising=False)
    start = time.monotonic()
    with pytest.raises(
        NameNotFound, match=r"Hugging Face Hub (did not answer within 1 s|could not be reached)"
    ):
        resolve_model_arg(REPO, allow_hub=True, cache_dir=tmp_path, budget=1.0)
    assert time.monotonic() - start < 5.0
    _let_workers_finish()


def test_offline_mode_asks_nothing_but_still_reads_the_cache(hub, tmp_path, monkeypatch):
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    with pytest.raises(NameNotFound, match=r"Hub lookups are off here \(HF_HUB_OFFLINE\)"):
        resolve_model_arg(REPO, allow_hub=True, cache_dir=tmp_path)
    assert hub.requests == []
    monkeypatch.delenv("HF_HUB_OFFLINE")
    resolve_model_arg(REPO, allow_hub=True, cache_dir=tmp_path)
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    assert resolve_model_arg(REPO, allow_hub=True, cache_dir=tmp_path).origin == "hub"


def test_catalog_models_never_touch_the_hub(hub, tmp_path):
    found = resolve_model_arg("Qwen/Qwen2.5-7B-Instruct", allow_hub=True, cache_dir=tmp_path)
    assert found.origin == "catalog" and hub.requests == []


def test_hostile_repo_ids_are_not_looked_up(hub, tmp_path):
    for name in ("../../etc/passwd", "acme-labs/../../tmp/owned", "a/b/c", "org/" + "x" * 200):
        with pytest.raises(NameNotFound):
            resolve_model_arg(name, allow_hub=True, cache_dir=tmp_path)
    assert hub.requests == []
    assert not (tmp_path / "models").exists()


def test_settings_turn_it_on_by_default_with_the_cache_in_the_data_folder(tmp_path, monkeypatch):
    monkeypatch.delenv("GPU_GARDEN_HUB_LOOKUP", raising=False)
    monkeypatch.delenv("GPU_GARDEN_HUB_CACHE_DIR", raising=False)
    settings = load_settings(database=tmp_path / "data" / "bot.sqlite3")
    assert settings.hub_lookup is True
    assert settings.hub_cache_dir == tmp_path / "data" / "hub-cache"
    monkeypatch.setenv("GPU_GARDEN_HUB_LOOKUP", "false")
    assert load_settings().hub_lookup is False


def test_chat_bot_vram_uses_the_hub(hub, tmp_path, monkeypatch):
    from adapters.runner import build_service

    monkeypatch.delenv("GPU_GARDEN_HUB_LOOKUP", raising=False)
    settings = load_settings(database=tmp_path / "bot.sqlite3")
    service = build_service(settings)
    reply = answer(raw=f"gpu:t4 model:{REPO}", lookup=service.bot.model_lookup)
    assert reply.kind == "vram"
    assert reply.data["kv_bytes_per_token"] == 16 * 4 * 128 * 2 * 2
    assert any(
        n.startswith(f"{REPO} is not in my catalog; its geometry is from its config.json")
        for n in reply.notes
    )
    assert (tmp_path / "hub-cache" / "models" / "acme-labs--Tiny-Hub-2B.json").is_file()


def test_cli_vram_resolves_from_the_hub_and_no_hub_turns_it_off(hub, tmp_path, monkeypatch, capsys):
    monkeypatch.setenv("GPU_GARDEN_HUB_CACHE_DIR", str(tmp_path / "cache"))
    monkeypatch.delenv("GPU_GARDEN_HUB_LOOKUP", raising=False)
    out = io.StringIO()
    code = main(["vram", "--gpu", "t4", "--model", REPO, "--json"], stdin=io.StringIO(), stdout=out)
    assert code == 0 and json.loads(out.getvalue())["kv_bytes_per_token"] == 32768
    text = io.StringIO()
    main(["vram", "--gpu", "t4", "--model", REPO], stdin=io.StringIO(), stdout=text)
    assert "its geometry is from its config.json on the Hugging Face Hub" in text.getvalue()
    err = io.StringIO()
    code = main(
        ["vram", "--gpu", "t4", "--model", "acme-labs/Other-3B", "--no-hub"], stdin=io.StringIO(), stdout=err
    )
    assert code == 2
    assert "does not look models up on the Hugging Face Hub" in capsys.readouterr().err
    assert not any("Other-3B" in r for r in hub.requests)


def test_vllm_paste_naming_a_hub_model(hub, tmp_path):
    paste = (
        "INFO 08-21 18:34:34 [core.py:122] Initializing a V1 LLM engine (v0.11.0) with config: "
        f"model='{REPO}', dtype=torch.bfloat16, max_seq_len=8192, tensor_parallel_size=1\n"
    )

    def lookup(name: str):
        return resolve_model_arg(name, allow_hub=True, cache_dir=tmp_path)

    found = from_paste(paste, lookup)
    assert found.origin == "hub" and found.model.num_hidden_layers == 16
    assert from_paste(paste) is None  # no lookup given: the name alone is not geometry


def test_askers_during_a_slow_lookup_share_one_worker(hub, tmp_path):
    hub.delay = 2.0
    for _ in range(3):
        with pytest.raises(NameNotFound, match=r"did not answer within 0\.2 s"):
            resolve_model_arg(REPO, allow_hub=True, cache_dir=tmp_path, budget=0.2)
    assert sum(1 for t in threading.enumerate() if t.name == f"hub:{REPO}") == 1
