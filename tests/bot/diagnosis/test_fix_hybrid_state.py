"""SGLang's hybrid state pool holds fewer slots than one request needs: --max-mamba-cache-size set to the
mamba_ratio the error prints (max_num_reqs = slots // ratio)."""

from __future__ import annotations

from bot.detector import detect
from bot.diagnosis import diagnose


def test_state_pool_gets_one_requests_slots():
    text = (
        "python -m sglang.launch_server --model-path Qwen/Qwen3-Next-80B-A3B-Instruct --tp 4\n"
        "RuntimeError: Hybrid (mamba/linear-attention) state cache is too small to serve any requests.\n"
        "max_mamba_cache_size=3, mamba_ratio=5, resulting max_num_reqs=0.\n"
    )
    reply = diagnose(detect(text))
    assert reply is not None
    assert reply.fixes[0].command == (
        "python -m sglang.launch_server --model-path Qwen/Qwen3-Next-80B-A3B-Instruct --tp 4 --max-mamba-cache-size 5"
    )


def test_without_the_ratio_no_number_is_made_up():
    reply = diagnose(detect("RuntimeError: Hybrid state cache is too small to serve any requests"))
    assert reply is not None
    assert all("--max-mamba-cache-size" not in f.command for f in reply.fixes)
