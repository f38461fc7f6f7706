"""A launcher's "the engine did not start" line (vllm.load_failed.engine_start, a wrapper) answers only
when the paste holds no other failure, with the signature's own steps, and is never listed beside the
failure it reports as another one."""

from __future__ import annotations

from bot.detector import detect
from bot.diagnosis import diagnose
from tests.conftest import wild_text

# vllm#27508, the API server's tail (the signature's own example)
ALONE = (
    "(APIServer pid=223598) RuntimeError: Engine core initialization failed. See root cause above. "
    "Failed core proc(s): {}"
)


def test_the_wrapper_alone_answers_with_its_steps():
    reply = diagnose(detect(ALONE))
    assert reply is not None and reply.signature == "vllm.load_failed.engine_start"
    steps = next(s.body for s in reply.sections if s.heading == "What to do")
    assert steps.startswith("- paste the lines from the first ERROR or Traceback of the worker / EngineCore")


def test_the_wrapper_is_not_another_failure_beside_the_one_it_reports():
    # vllm-omni#469 (wild_2026c): the KV cache error, then vLLM's "Engine core initialization failed"
    text = wild_text("wild_2026c.jsonl", "vllmomni469-negative-kv-then-failed")
    found = detect(text)
    assert "vllm.load_failed.engine_start" in [f.signature for f in found.findings]
    reply = diagnose(found)
    assert reply is not None and reply.signature != "vllm.load_failed.engine_start"
    assert not any("the engine did not start" in n for n in reply.notes)


# Ollama's report quotes only "exit status 2"; the runner's own CUDA failure is a few lines above it
RUNNER_EXIT = (
    "CUDA error: out of memory\n"
    "  current device: 0, in function ggml_backend_cuda_buffer_set_tensor at /go/src/ggml-cuda.cu:2321\n"
    "  cudaMemcpyAsync(...)\n"
    "/go/src/ggml-cuda.cu:75: CUDA error\n"
    'time=2025-04-29T12:31:28.521+02:00 level=ERROR source=sched.go:457 msg="error loading llama server" '
    'error="llama runner process has terminated: exit status 2"\n'
)


def test_a_report_quoting_no_known_error_yields_to_the_engines_own_error():
    found = detect(RUNNER_EXIT)
    assert found.root is not None and found.root.signature == "ollama.runner_crashed.terminated"
    reply = diagnose(found)
    assert reply is not None and reply.signature == "llamacpp.gpu_oom.cuda_runtime"
    assert reply.notes[-1] == (
        "The launcher only reported that the engine stopped; this is the engine's error in the paste."
    )


def test_a_report_quoting_a_known_error_is_answered_with_it():
    text = RUNNER_EXIT.replace("exit status 2", "cudaMalloc failed: out of memory")
    reply = diagnose(detect(text))
    assert reply is not None and reply.signature == "ollama.runner_crashed.terminated"
    assert "The launcher only reported that the engine stopped; this is the error it quoted." in reply.notes
