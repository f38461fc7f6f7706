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
