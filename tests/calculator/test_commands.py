"""Commands keep the user's own line and change only the needed flags — and only on that engine's line."""

from __future__ import annotations

from calculator.commands import llamacpp_command, sglang_command, vllm_command


def test_user_flags_kept_and_changed_in_every_spelling():
    base = "CUDA_VISIBLE_DEVICES=7 python -m vllm.entrypoints.openai.api_server --model m --max-model-len=32768 -tp 2"
    out = vllm_command(
        base, None, {"--max-model-len": "16384", "--tensor-parallel-size": "4", "--enforce-eager": ""}
    )
    assert out == (
        "CUDA_VISIBLE_DEVICES=7 python -m vllm.entrypoints.openai.api_server --model m "
        "--max-model-len 16384 --tensor-parallel-size 4 --enforce-eager"
    )


def test_bare_flash_attn_switch_replaced_without_eating_the_next_flag():
    out = llamacpp_command(
        r"llama-server -m C:\m\x.gguf -c 50000 -fa -ngl 99", None, {"-c": "32768", "-fa": "on"}
    )
    assert out == r"llama-server -m C:\m\x.gguf -ngl 99 -c 32768 -fa on"


def test_another_engines_command_is_not_reused():
    llama = "llama-server -m x.gguf -c 8192"
    assert (
        vllm_command(llama, "Qwen/Qwen3-8B", {"--max-model-len": "4096"})
        == "vllm serve Qwen/Qwen3-8B --max-model-len 4096"
    )
    assert (
        llamacpp_command("vllm serve Qwen/Qwen3-8B", "q.gguf", {"-c": "4096"})
        == "llama-server -m q.gguf -c 4096"
    )
    assert sglang_command(llama, "m", {"--context-length": "4096"}).startswith(
        "python -m sglang.launch_server"
    )
    assert vllm_command("aphrodite run m --max-model-len 9", None, {"--max-model-len": "8"}).endswith(
        "--max-model-len 8"
    )
