"""Ollama's runner died without quoting why: the fix is the server log that holds the runner's own error
(Ollama docs/troubleshooting.md), not a memory setting guessed without a number."""

from __future__ import annotations

from bot.detector import detect
from bot.diagnosis import diagnose

STOPPED = (
    "Error: an error was encountered while running the model: model runner has unexpectedly stopped, this "
    "may be due to resource limitations or an internal error, check ollama server logs for details"
)


def test_runner_stopped_points_at_the_server_log():
    reply = diagnose(detect(STOPPED))
    assert reply is not None
    assert [f.command for f in reply.fixes] == ["journalctl -u ollama --no-pager | tail -n 50"]
    assert reply.fixes[0].verification == {"kind": "diagnostic"}
