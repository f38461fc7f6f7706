"""Which Ollama a paste ran, from the line that starts its runner: 'starting llama server' is Ollama's
own runner through v0.11.4 (llm/server.go; renamed in v0.11.5), 'starting llama-server' is upstream
llama-server from v0.30.0 (llm/llama_server.go).  A 2025 log must not read as v0.30+."""

from __future__ import annotations

from tests.conftest import situation_of, wild_log


def test_the_old_runner_line_dates_the_paste_before_0_11_5():
    line = 'msg="starting llama server" cmd="/usr/local/bin/ollama runner --ollama-engine --ctx-size 2048"\n'
    situation = situation_of(line + 'msg=offload library=cuda layers.model=63 memory.required.kv="992.0 MiB"')
    assert situation.version_src is not None and situation.version_src.value == "<0.11.5"
    assert situation.version is not None and situation.version < (0, 11, 5)


def test_the_log_date_bounds_it_tighter():
    # ollama#9685 (lines dated 2025-03-12): v0.6.0 was the newest release then (tagged 2025-03-11)
    situation = situation_of(wild_log("ollama9685-gemma3-27b-ctx2048")["text"])
    assert situation.version_src is not None and situation.version_src.value == "<=0.6.0"
    assert situation.version == (0, 6, 0)


def test_the_llama_server_line_dates_the_paste_from_0_30():
    line = (
        'time=2026-05-02T10:00:00.000Z level=INFO source=llama_server.go:400 msg="starting llama-server" '
        'cmd="/usr/lib/ollama/llama-server --model /root/.ollama/models/blobs/sha256-ab12 --ctx-size 8192"\n'
        "time=2026-05-02T10:00:01.000Z level=INFO source=server.go:138 msg=offload library=cuda "
        'layers.requested=-1 layers.model=29 layers.offload=29 memory.required.kv="448.0 MiB"'
    )
    situation = situation_of(line)
    assert situation.version_src is not None and situation.version_src.value == ">=0.30.0"
