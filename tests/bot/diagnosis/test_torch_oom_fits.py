"""A PyTorch out-of-memory whose request fits in what the message says was free is no shortage: the
reply names the backend PyTorch names (CUDA, HIP, XPU) and does not send the user looking for another
process."""

from __future__ import annotations

from bot.detector import detect
from bot.diagnosis import diagnose
from tests.conftest import wild_text

# torch-xpu-ops#3011 (tests/data/wild_2026.jsonl torchxpuops3011-xpu-oom-free-gt-tried)
XPU_FITS = (
    "torch.OutOfMemoryError: XPU out of memory. Tried to allocate 4.66 GiB. GPU 0 has a total capacity of "
    "5.65 GiB of which 5.65 GiB is free. Of the allocated memory 195.50 KiB is allocated by PyTorch, and "
    "1.81 MiB is reserved by PyTorch but unallocated."
)


def test_a_request_that_fits_in_the_free_memory_is_no_shortage():
    reply = diagnose(detect(XPU_FITS))
    assert reply is not None
    assert reply.title == "XPU out of memory: tried 4.66 GiB with 5.65 GiB free"
    assert reply.summary.startswith(
        "PyTorch asked for 4.66 GiB more, 5.65 GiB of 5.65 GiB were free. The request fits in what was free, so "
        "this is no shortage"
    )
    assert not any(f.command == "xpu-smi ps" for f in reply.fixes)  # no other process took the memory


def test_a_request_over_the_free_memory_is_still_a_shortage():
    short = XPU_FITS.replace("of which 5.65 GiB is free", "of which 1.20 GiB is free")
    reply = diagnose(detect(short))
    assert reply is not None
    assert reply.summary.startswith("PyTorch asked for 4.66 GiB more, only 1.20 GiB of 5.65 GiB were free.")
    assert "no shortage" not in reply.summary


def test_a_request_just_under_the_free_memory_of_a_full_card_is_still_a_shortage():
    # club-3090#58 (tests/data/wild_2026b.jsonl): 50 MiB asked with 56.88 MiB of 23.56 GiB free
    text = (
        "torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 50.00 MiB. GPU 0 has a total capacity "
        "of 23.56 GiB of which 56.88 MiB is free"
    )
    reply = diagnose(detect(text))
    assert reply is not None
    # MiB as PyTorch printed them; the request was under what was free, but the card was nearly full
    assert reply.title == "CUDA out of memory: tried 50.00 MiB with 56.88 MiB free"
    assert reply.summary.startswith(
        "PyTorch asked for 50.00 MiB more, 56.88 MiB of 23.56 GiB were free (most of the GPU was in use)."
    )
    assert "no shortage" not in reply.summary


def test_memory_reserved_but_unallocated_is_named_as_pytorch_prints_it():
    # nlzy/vllm-gfx906#14 (tests/data/wild_engines.jsonl gfx906-14-hip-oom): 92.65 MiB reserved, 64 MiB asked
    reply = diagnose(detect(wild_text("wild_engines.jsonl", "gfx906-14-hip-oom")))
    assert reply is not None
    assert " 92.65 MiB is reserved by PyTorch but unallocated: fragmentation." in reply.summary


def test_a_process_holding_almost_all_memory_in_use_is_not_sent_looking_for_another():
    # wild_engines strixhalo2-hip-oom: PyTorch holds 57.83 GiB allocated + 2.53 reserved of the 60.71 GiB in use
    reply = diagnose(detect(wild_text("wild_engines.jsonl", "strixhalo2-hip-oom")))
    assert reply is not None
    assert reply.summary.endswith(
        "This process holds 57.83 GiB. That is almost all in use: its own work (model, cache, batch, sequence "
        "length) is too large for this GPU."
    )
    assert not any(f.command.startswith("rocm-smi") for f in reply.fixes)


def test_memory_in_use_outside_the_process_is_named_and_looked_at_first():
    # OpenMOSS/MOSS-TTSD#71 (wild_2026e mossttsd71-sglang-json-oom): this process holds 1.81 of 23.51 GiB
    reply = diagnose(detect(wild_text("wild_2026e.jsonl", "mossttsd71-sglang-json-oom")))
    assert reply is not None
    assert reply.summary.endswith(
        "This process holds 1.81 GiB. The other 21.70 GiB in use is held outside it: other processes, the driver, or the system where the GPU shares its RAM."
    )
    first = min(reply.fixes, key=lambda f: f.rank)
    assert first.command == "nvidia-smi --query-compute-apps=pid,process_name,used_memory --format=csv"


def test_a_small_first_process_does_not_hide_the_memory_held_by_the_later_ones():
    # NVIDIA/TensorRT-LLM#7818 (wild_engines trtllm7818-rank-load): the first listed process holds 270 MiB,
    # three more follow; 20.93 GiB of the 22.05 in use is outside this process
    reply = diagnose(detect(wild_text("wild_engines.jsonl", "trtllm7818-rank-load")))
    assert reply is not None
    assert reply.summary.endswith(
        "This process holds 1.12 GiB. The other 20.93 GiB in use is held outside it: other processes, the driver, or the system where the GPU shares its RAM."
    )
    first = min(reply.fixes, key=lambda f: f.rank)
    assert first.command == "nvidia-smi --query-compute-apps=pid,process_name,used_memory --format=csv"


def test_a_listed_process_that_is_the_container_itself_is_not_another_process():
    # TGI#2246 (wild_wordings tgi2246-torch-oom-small-alloc): "Process N has 44.52 GiB" of a 44.53 GiB card
    # while PyTorch allocated 40.92 GiB of it: the one process is this one, seen from inside a container
    reply = diagnose(detect(wild_text("wild_wordings.jsonl", "tgi2246-torch-oom-small-alloc")))
    assert reply is not None
    assert reply.summary.endswith(
        "This process holds 40.92 GiB. That is almost all in use: its own work (model, cache, batch, sequence "
        "length) is too large for this GPU."
    )
    assert not any(f.command.startswith("nvidia-smi --query-compute-apps") for f in reply.fixes)
