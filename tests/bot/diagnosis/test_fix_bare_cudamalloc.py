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
    fit, smi = ranked_fixes("cudaMalloc failed: out of memory")[:2]
    # --fit is on by default (b7407+): adding it changes nothing, unsetting what pins it does
    assert (fit.change, fit.command, fit.adds) == (
        "leave -ngl, -c, -ts and -ot out of your llama.cpp command",
        "",
        None,
    )
    assert runnable(smi) == "nvidia-smi --query-compute-apps=pid,process_name,used_memory --format=csv"


FULL = "ggml_backend_cuda_buffer_type_alloc_buffer: allocating 9000.00 MiB on device 0: cudaMalloc failed: out of memory"


def test_a_command_that_pins_the_layers_gets_them_unset_for_fit():
    fixes = ranked_fixes("llama-server -m x.gguf -ngl 99 -c 32768 -ts 1,1\n" + FULL)
    assert fixes[0].command == "llama-server -m x.gguf --fit on"


def test_a_command_that_pins_nothing_gets_no_fit_fix():
    # --fit was already on and free to size everything: "add --fit on" would be a no-op
    fixes = ranked_fixes("llama-server -m x.gguf --port 8081\n" + FULL)
    assert not any("--fit" in f.command or "--fit" in f.change for f in fixes)
    assert (
        ranked_fixes("llama-server -m x.gguf -fit off\n" + FULL)[0].command
        == "llama-server -m x.gguf --fit on"
    )


def test_the_full_line_keeps_its_own_signature():
    line = "ggml_backend_cuda_buffer_type_alloc_buffer: allocating 9000.00 MiB on device 0: cudaMalloc failed: out of memory"
    reply = diagnose(detect(line))
    assert reply is not None and reply.signature == "llamacpp.gpu_oom.alloc"


def test_an_illegal_access_is_not_read_as_memory():
    root = detect("cudaMalloc failed: an illegal memory access was encountered").root
    assert root is not None and root.signature == "common.illegal_memory_access"
