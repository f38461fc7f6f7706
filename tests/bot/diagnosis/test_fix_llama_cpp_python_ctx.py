"""llama-cpp-python's own overflow (llama_cpp/llama.py _create_completion: "Requested tokens (N) exceed
context window of M") is answered with its constructor's n_ctx, never with llama-server flags
(-c / --fit / --kv-unified are not llama-cpp-python settings)."""

from __future__ import annotations

from bot.detector import detect
from bot.diagnosis import diagnose

LINE = "ValueError: Requested tokens (3000) exceed context window of 2048"


def test_the_overflow_is_llama_cpp_python_s_with_its_n_ctx_step():
    reply = diagnose(detect(LINE))
    assert reply is not None and reply.signature == "llama_cpp_python.requested_tokens_exceed_n_ctx"
    assert reply.summary.startswith(
        "The prompt is 3,000 tokens and the model was loaded with a context window (n_ctx) of 2,048:"
    )
    steps = next(s.body for s in reply.sections if s.heading == "What to do")
    assert steps.splitlines()[0] == (
        "- load the model with a window larger than the prompt: Llama(model_path=..., n_ctx=N) "
        "(n_ctx=0 takes the model's trained length); for llama_cpp.server, its n_ctx setting"
    )
    assert reply.fixes == []
