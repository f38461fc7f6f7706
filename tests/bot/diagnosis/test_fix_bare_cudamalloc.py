"""The bare ggml message, as people paste it (`cudaMalloc failed: out of memory`, the line's head cut):
recognised as a llama.cpp / ggml allocation failure, answered with llama.cpp's own fit and the check of
what else holds the GPU; the full line keeps its own signature with the buffer's size."""

from __future__ import annotations

from bot.detector import detect
from bot.diagnosis import diagnose
from tests.bot.diagnosis.helpers import ranked_fixes, runnable


def test_the_bare_line_gets_a_diagnosis():
    reply = diagnose(detect("cudaMalloc failed: out of memory"))
    assert reply is not None and reply.signature == "llamacpp.gpu_oom.alloc_bare"
    assert [runnable(f) for f in ranked_fixes("cudaMalloc failed: out of memory")][:2] == [
        "+ --fit on",  # no command or model in the paste: the flag for the user's own llama-server line
        "nvidia-smi --query-compute-apps=pid,process_name,used_memory --format=csv",
    ]


def test_the_full_line_keeps_its_own_signature():
    line = "ggml_backend_cuda_buffer_type_alloc_buffer: allocating 9000.00 MiB on device 0: cudaMalloc failed: out of memory"
    reply = diagnose(detect(line))
    assert reply is not None and reply.signature == "llamacpp.gpu_oom.alloc"


def test_an_illegal_access_is_not_read_as_memory():
    root = detect("cudaMalloc failed: an illegal memory access was encountered").root
    assert root is not None and root.signature == "common.illegal_memory_access"
