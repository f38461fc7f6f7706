"""Ollama's "memory layout cannot be allocated" (llm/server.go, v0.17.4-v0.24.0): the planned layout's
allocation failed; a forced num_gpu is not backed off, and without it the free memory Ollama measured was
not there, so the check is what else holds the GPU."""

from __future__ import annotations

from bot.detector import detect
from bot.diagnosis import diagnose
from tests.bot.diagnosis.helpers import ranked_fixes


def test_a_forced_num_gpu_is_named_and_the_gpu_is_checked_first():
    text = "Error: 500 Internal Server Error: memory layout cannot be allocated with num_gpu = 40"
    reply = diagnose(detect(text))
    assert reply is not None and reply.signature == "ollama.gpu_oom.memory_layout"
    assert (
        "the layer count was forced by the request or Modelfile, and Ollama does not try fewer layers."
        in reply.summary
    )
    # the layout is the GPUs' (system RAM has its own "requires more system memory" error)
    assert [f.command for f in ranked_fixes(text)] == [
        "nvidia-smi --query-compute-apps=pid,process_name,used_memory --format=csv"
    ]
