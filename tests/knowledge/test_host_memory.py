"""System RAM the operating system took back or refused (knowledge/signatures/host_memory.yaml): the
Linux OOM killer and Windows' commit limit are answered as system memory, never with GPU levers."""

from __future__ import annotations

from bot.core import GardenBot, Paste
from bot.detector import detect

KERNEL = (
    "Jun 28 08:07:01 nixos kernel: Out of memory: Killed process 1301 (ollama) total-vm:20123456kB, "
    "anon-rss:15000000kB, file-rss:0kB, shmem-rss:0kB\n"
)
PAGING = (
    "OSError: [WinError 1455] The paging file is too small for this operation to complete. Error loading "
    '"C:\\py\\torch\\lib\\cudnn_cnn_infer64_8.dll" or one of its dependencies.\n'
)


def _reply(text: str):
    reply = GardenBot().triage(Paste(text, False, []), addressed=True)
    assert reply is not None
    return reply


def test_the_kernels_oom_kill_names_the_process_and_is_system_memory():
    reply = _reply(KERNEL)
    assert reply.signature == "host.oom_killed" and reply.category == "host_memory"
    assert reply.summary.startswith("The kernel killed ollama. The machine, or the container's memory limit")
    assert reply.fixes == []  # advice only: no GPU setting changes what the kernel killed


def test_a_cgroup_kill_and_a_kubernetes_reason_are_the_same_finding():
    for text in (
        "kernel: Memory cgroup out of memory: Killed process 4182 (python3) total-vm:812044kB, anon-rss:518420kB",
        "    Last State:     Terminated\n      Reason:       OOMKilled\n      Exit Code:    137",
    ):
        assert detect(text).root.signature == "host.oom_killed", text


def test_a_gpu_oom_outranks_a_kernel_line_about_some_process():
    text = KERNEL + "torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 2.00 GiB."
    assert detect(text).root.signature != "host.oom_killed"


def test_the_windows_commit_limit_is_answered_for_windows():
    reply = _reply(PAGING)
    assert reply.title == "Windows: the page file is too small (system commit limit reached)"
    said = reply.summary + " ".join(s.body for s in reply.sections)
    assert "free -h" not in said and "Virtual memory" in said


def test_torchs_cpu_allocator_refusal_reads_the_bytes_either_wording():
    for text, size in (
        (
            "RuntimeError: [enforce fail at alloc_cpu.cpp:114] data. DefaultCPUAllocator: not enough memory: "
            "you tried to allocate 8589934592 bytes.",
            8589934592,
        ),
        (
            "RuntimeError: [enforce fail at alloc_cpu.cpp:75] err == 0. DefaultCPUAllocator: can't allocate "
            "memory: you tried to allocate 4009910272 bytes. Error code 12 (Cannot allocate memory)",
            4009910272,
        ),
    ):
        root = detect(text).root
        assert root is not None and (root.signature, root.params) == (
            "host.torch_cpu_allocator",
            {"alloc_bytes": size},
        )
