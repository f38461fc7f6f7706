"""An OOM during CUDA-graph capture: the fix captures no graphs (vLLM --enforce-eager, SGLang
--disable-cuda-graph), a setting whose effect needs no number from the paste."""

from __future__ import annotations

from bot.detector import detect
from bot.diagnosis import diagnose
from knowledge.loader import load_builtin
from tests.bot.diagnosis.helpers import runnable


def _example(signature_id: str, index: int = 0) -> str:
    sig = next(s.signature for s in load_builtin().signatures if s.signature.id == signature_id)
    return sig.examples[index].text


def _first(text: str, engine: str) -> str:
    reply = diagnose(detect(text))
    assert reply is not None
    return next(runnable(f) for f in sorted(reply.fixes, key=lambda f: f.rank) if f.engine == engine)


def test_sglang_capture_oom_disables_cuda_graphs():
    text = _example("sglang.cuda_graph_oom.v0")
    assert _first(text, "sglang") == "+ --disable-cuda-graph"  # no command in the paste


def test_sglang_capture_oom_keeps_the_users_command():
    text = (
        "python3 -m sglang.launch_server --model-path Qwen/Qwen2.5-7B-Instruct --mem-fraction-static 0.9\n"
        + _example("sglang.cuda_graph_oom.v0")
    )
    assert _first(text, "sglang") == (
        "python3 -m sglang.launch_server --model-path Qwen/Qwen2.5-7B-Instruct --mem-fraction-static 0.9 "
        "--disable-cuda-graph"
    )


def test_vllm_log_stopping_in_capture_runs_eager():
    assert _first(_example("vllm.gpu_oom.cudagraph_log_stops"), "vllm") == "+ --enforce-eager"
