"""Pieces every Ollama runner reply uses: exit statuses and where the server log is."""

from __future__ import annotations

from bot.reply import Fact, Fix

LOG_HOWTO = (
    "# Linux (systemd)\n"
    "journalctl -u ollama --no-pager -n 200\n"
    "# macOS\n"
    "tail -n 200 ~/.ollama/logs/server.log\n"
    "# Windows (PowerShell)\n"
    "Get-Content $env:LOCALAPPDATA\\Ollama\\server.log -Tail 200\n"
    "# more detail: stop the service, run it by hand and repeat the request\n"
    "OLLAMA_DEBUG=1 ollama serve"
)


EXIT_CODES = {
    "0xc0000409": "STATUS_STACK_BUFFER_OVERRUN: Windows' code for a process that aborted itself (abort(), "
    "a failed assert, an unhandled C++ exception) — not a memory code by itself",
    "0xc0000005": "STATUS_ACCESS_VIOLATION: the runner touched memory it does not own (a bug or a broken "
    "driver/library), not 'out of memory'",
    "0xc0000142": "STATUS_DLL_INIT_FAILED: a library (often the GPU runtime) failed to initialise",
    "2": "a Go panic or a fatal runner error",
    "1": "the runner exited with an error",
    "-1": "the runner exited with an error",
}


def status_facts(status: str) -> list[Fact]:
    """The runner's exit status as a fact, with its meaning when it is a known code."""
    if not status:
        return []
    meaning = EXIT_CODES.get(status.lower())
    return [
        Fact(
            "exit status",
            f"{status}" + (f" ({meaning.split(':')[0]})" if meaning and ":" in meaning else ""),
            "log",
        )
    ]


def ollama_log_fix(rank: int) -> Fix:
    """Ask for the server log: where it is on each OS, and how to get more detail."""
    return Fix(
        "ollama",
        "send the server log lines around the crash",
        LOG_HOWTO,
        "the runner's own last lines say what failed (an allocation, an assert, an unsupported tensor)",
        "",
        rank,
    )
