"""The terminal path end to end: a real paste in, the rendered reply out; and every bad input."""

from __future__ import annotations

import io
import json
import subprocess
import sys
from pathlib import Path

import pytest

from adapters.cli import main

V0_KV = (
    "ValueError: The model's max seq len (131072) is larger than the maximum number of tokens that can be "
    "stored in KV cache (5728). Try increasing gpu_memory_utilization or decreasing max_model_len when "
    "initializing the engine.\n"
)
V1_KV = (
    "ValueError: To serve at least one request with the model's max seq len (131072), (32.0 GiB KV cache is "
    "needed, which is larger than the available KV cache memory (1.4 GiB). Based on the available memory, the "
    "estimated maximum model length is 5728. Try increasing `gpu_memory_utilization` or decreasing "
    "`max_model_len` when initializing the engine.\n"
)


def run(argv, stdin_text=""):
    out = io.StringIO()
    code = main(argv, stdin=io.StringIO(stdin_text), stdout=out)
    return code, out.getvalue()


def _flag_value(text: str, flag: str) -> list[int]:
    values = []
    for line in text.splitlines():
        parts = line.replace("`", " ").split()  # a command line, or flags quoted as inline code
        for i, tok in enumerate(parts[:-1]):
            if tok == flag and parts[i + 1].isdigit():
                values.append(int(parts[i + 1]))
    return values


@pytest.mark.parametrize("paste", [V0_KV, V1_KV], ids=["v0-wording", "v1-wording"])
def test_triage_kv_error_end_to_end(tmp_path, paste):
    log = tmp_path / "error.log"
    log.write_text("INFO 04-12 08:21:19 [core.py:58] starting\n" + paste)
    code, out = run(["triage", str(log)])
    assert code == 0
    assert "5,728 tokens" in out and "131,072" in out  # the user's own numbers
    assert "one request of 131,072 does not fit" in out  # the key point
    lens = _flag_value(out, "--max-model-len")
    assert lens[0] == 5120  # the first fix: a context the logged cache holds
    # no model or GPU in the paste: no other engine's command, since none can be computed on its budget
    assert "llama-server" not in out and "OLLAMA_CONTEXT_LENGTH" not in out


def test_v1_wording_uses_logged_kv_per_token():
    code, out = run(["triage", "--full", "-"], V1_KV)
    assert code == 0
    assert "kv cache: **1.40 GiB**" in out and "kv needed: **32.00 GiB**" in out, out
    # 32 GiB / 131,072 tokens = 256 KiB per token: fp8 halves it, so 2 x 5,728 tokens fit
    assert _flag_value(out, "--max-model-len") == [5120, 11264]
    assert "--kv-cache-dtype fp8" in out


def test_v0_wording_suggests_no_flag_its_version_lacks():
    _code, out = run(["triage", "-"], V0_KV)
    assert "--max-model-len auto" not in out  # only from vLLM 0.14; this wording is <= 0.10
    assert _flag_value(out, "--max-model-len") == [5120]


def test_triage_json_shape():
    code, out = run(["triage", "--json", "-"], V1_KV)
    data = json.loads(out)
    assert code == 0
    first = data["findings"][0]
    assert first["category"] == "kv_cache_too_small"
    assert first["engine"] == "vllm"
    assert first["params"]["max_model_len"] == 131072
    assert first["params"]["estimated_max_model_len"] == 5728
    assert {"engine", "command", "effect"} <= set(first["fixes"][0])
    # no command or model in the paste: no command line, the flags to add to the user's own
    assert [(f["command"], f["adds"]) for f in first["fixes"]] == [
        ("", "--max-model-len 5120"),
        ("", "--max-model-len 11264 --kv-cache-dtype fp8"),
    ]
    assert all(f["verification"]["starts"] for f in first["fixes"])
    assert isinstance(data["context"], dict)


def test_triage_brief():
    code, out = run(["triage", "--brief", "-"], V0_KV)
    assert code == 0
    assert out.count("```bash") == 0  # no command in the paste: the fix is the flag to add
    assert "**Fix:** cap the context at 5,120 tokens (add `--max-model-len 5120` to your vLLM command)" in out


def test_vram_human_and_json():
    code, out = run(["vram", "--gpu", "4090", "--model", "qwen2.5-coder-32b-awq"])
    assert code == 0
    assert "RTX 4090" in out and "Qwen2.5-Coder-32B-Instruct-AWQ" in out
    code, out = run(["vram", "--gpu", "4090", "--model", "qwen2.5-coder-32b-awq", "--json"])
    data = json.loads(out)
    for key in (
        "model",
        "gpu",
        "engine",
        "weights_gib",
        "kv_bytes_per_token",
        "kv_cache_gib",
        "kv_tokens",
        "max_model_len",
        "max_model_len_fit",
        "max_concurrency",
        "fits",
        "breakdown",
        "remedies",
    ):
        assert key in data
    assert data["kv_bytes_per_token"] == 2 * 64 * 8 * 128 * 2  # 64 layers, 8 KV heads, head_dim 128, bf16


def test_terminal_bot_answers_paste_and_vram():
    stdin = V0_KV + "\n/vram gpu:4090 model:qwen-32b-awq\n/quit\n"
    code, out = run([], stdin)
    assert code == 0
    assert "5,728 tokens" in out
    assert "Qwen2.5-32B-Instruct-AWQ on NVIDIA GeForce RTX 4090" in out


def test_terminal_bot_paste_ended_by_eof():
    code, out = run([], V1_KV)
    assert code == 0 and "5,728" in out and "--max-model-len 5120" in out


# --- bad input: a clear one-line message, the right exit status, never a traceback ---------------


def test_missing_file(capsys):
    code = main(["triage", "/nonexistent/error.log"], stdin=io.StringIO(), stdout=io.StringIO())
    assert code == 2
    assert "no such file" in capsys.readouterr().err


def test_empty_input(capsys):
    code = main(["triage", "-"], stdin=io.StringIO("   \n"), stdout=io.StringIO())
    assert code == 1
    assert "empty" in capsys.readouterr().err


def test_binary_garbage(tmp_path):
    blob = tmp_path / "core.bin"
    blob.write_bytes(bytes(range(256)) * 64 + b"\x00\xff\xfe" * 1000)
    code, out = run(["triage", str(blob)])
    assert code == 0
    assert "No known memory or context issue found" in out


def test_large_file_is_capped(tmp_path):
    big = tmp_path / "big.log"
    with big.open("w") as fh:
        line = "INFO 01-01 00:00:00 [x.py:1] nothing to see here\n"
        fh.write(line * (21 * 1024 * 1024 // len(line)))
        fh.write(V0_KV)
    code, out = run(["triage", str(big)])
    assert code == 0
    assert "I read part of it" in out
    assert "5,728" in out  # the error at the end of the big file was found


def test_unknown_gpu_lists_closest(capsys):
    code = main(
        ["vram", "--gpu", "rtx 4909", "--model", "qwen-32b-awq"], stdin=io.StringIO(), stdout=io.StringIO()
    )
    err = capsys.readouterr().err
    assert code == 2
    assert "rtx-4090" in err and "Traceback" not in err


def test_unknown_model_lists_closest(capsys):
    code = main(
        ["vram", "--gpu", "4090", "--model", "qwen2.5-coder-33b-awqq"],
        stdin=io.StringIO(),
        stdout=io.StringIO(),
    )
    err = capsys.readouterr().err
    assert code == 2
    assert "Qwen" in err


def test_vram_bad_number(capsys):
    code = main(
        ["vram", "--gpu", "4090", "--model", "qwen-32b-awq", "--gpu-memory-utilization", "3"],
        stdin=io.StringIO(),
        stdout=io.StringIO(),
    )
    assert code == 2
    assert "utilization" in capsys.readouterr().err


def test_terminal_bad_vram_is_a_message_not_a_crash():
    code, out = run([], "/vram gpu:nosuchgpu model:qwen-32b-awq\n/vram\n/quit\n")
    assert code == 0
    assert "unknown GPU" in out and "usage: /vram" in out


def test_console_script_never_prints_a_traceback(tmp_path):
    garbage = tmp_path / "x.log"
    garbage.write_bytes(b"\xff\xfe\x00" * 100 + b"max seq len (99999999999999999999999)")
    proc = subprocess.run(
        [sys.executable, "-m", "adapters.cli", "triage", str(garbage)],
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert proc.returncode == 0
    assert "Traceback" not in proc.stderr + proc.stdout


PACK = """engine: custom
signatures:
  - id: acme.quota
    category: gpu_oom
    title: "ACME cluster: GPU quota exceeded"
    patterns: ["QuotaExceeded: namespace (?P<namespace>[a-z0-9-]+) asked for (?P<asked_gib>[0-9.]+) GiB"]
    captures: {namespace: text, asked_gib: gib}
    cause: "Your namespace {namespace} hit its GPU quota."
    examples:
      - text: "QuotaExceeded: namespace ml-team asked for 80 GiB"
        params: {namespace: ml-team, asked_gib: 80.0}
"""


def test_triage_matches_a_pack_from_the_knowledge_folder(tmp_path, monkeypatch):
    packs = tmp_path / "packs"
    packs.mkdir()
    (packs / "acme.yaml").write_text(PACK)
    monkeypatch.setenv("GPU_GARDEN_KNOWLEDGE_DIR", str(packs))
    code, out = run(["triage", "--json", "-"], "QuotaExceeded: namespace ml-team asked for 80 GiB\n")
    assert code == 0
    finding = json.loads(out)["findings"][0]
    assert finding["signature"] == "acme.quota"
    assert finding["params"] == {"namespace": "ml-team", "asked_gib": 80.0}


def test_triage_without_the_folder_does_not_match_the_pack(monkeypatch):
    monkeypatch.delenv("GPU_GARDEN_KNOWLEDGE_DIR", raising=False)
    code, out = run(["triage", "--json", "-"], "QuotaExceeded: namespace ml-team asked for 80 GiB\n")
    assert code == 0
    assert [f["signature"] for f in json.loads(out)["findings"]] == []


def test_triage_with_a_broken_pack_is_a_clear_error(tmp_path, monkeypatch, capsys):
    packs = tmp_path / "packs"
    packs.mkdir()
    (packs / "bad.yaml").write_text("engine: custom\nsignatures: [{id: x}]\n")
    monkeypatch.setenv("GPU_GARDEN_KNOWLEDGE_DIR", str(packs))
    code, _out = run(["triage", "-"], V0_KV)
    err = capsys.readouterr().err
    assert code == 2
    assert err.startswith("gpu-garden: knowledge: ") and "bad.yaml" in err and "Traceback" not in err


def test_triage_honours_a_configured_paste_limit(tmp_path, monkeypatch):
    log = tmp_path / "big.log"
    log.write_text("x" * 4096 + "\n" + V0_KV)
    monkeypatch.setenv("GPU_GARDEN_LIMITS_PASTE_MAX_BYTES", "2048")
    code, out = run(["triage", str(log)])
    assert code == 0
    assert "I read part of it" in out and "5,728" in out
    monkeypatch.delenv("GPU_GARDEN_LIMITS_PASTE_MAX_BYTES")
    code, out = run(["triage", str(log)])
    assert "I read part of it" not in out


_IMPORTED = (
    "import sys, io, contextlib\n"
    "from adapters.cli import main\n"
    "with contextlib.redirect_stdout(io.StringIO()):\n"
    "    try:\n"
    "        main(sys.argv[1:])\n"
    "    except SystemExit:\n"
    "        pass\n"
    "print(' '.join(sorted(m for m in sys.modules if m.split('.')[0] in ('bot', 'calculator', 'knowledge'))))\n"
)


def _modules_after(argv: list[str]) -> set[str]:
    proc = subprocess.run(
        [sys.executable, "-c", _IMPORTED, *argv], capture_output=True, text=True, timeout=120, check=True
    )
    return set(proc.stdout.split())


def test_help_imports_none_of_the_core():
    # not even the dataclass code table's hook: bot installs it, and --help builds no dataclass
    assert _modules_after(["--help"]) == set()


def test_every_adapter_module_imports_bot_before_its_first_dataclass():
    # adapters/__init__ no longer installs the code table: each module defining a dataclass must have
    # imported bot (which installs it) by then
    root = Path(__file__).resolve().parents[2] / "adapters"
    for path in sorted(root.rglob("*.py")):
        text = path.read_text()
        if (at := text.find("\n@dataclass")) >= 0:
            assert "\nfrom bot" in text[:at] or "\nimport bot" in text[:at], path


def test_vram_never_loads_the_detector_or_the_knowledge_base():
    loaded = _modules_after(["vram", "--gpu", "4090", "--model", "qwen2.5-coder-32b-awq"])
    assert "calculator.estimate" in loaded
    # --model / --gpu are checked for secrets by the secret rules alone: no redactor, no normaliser
    assert not loaded & {"bot.detector", "bot.core", "knowledge.loader", "knowledge.schema"}
    assert not loaded & {"bot.redact", "bot.normalize"}


def test_triage_without_a_finding_never_loads_the_diagnosis_or_the_calculator(tmp_path):
    log = tmp_path / "fine.log"
    log.write_text("INFO 01-01 00:00:00 [x.py:1] nothing to see here\n")
    loaded = _modules_after(["triage", str(log)])
    assert "bot.detector" in loaded and "bot.core" in loaded
    assert not loaded & {"bot.diagnosis", "bot.vram", "calculator.estimate", "calculator.catalog"}


# what a diagnosis imports only when a finding needs it: the other forms, each engine's estimator and its
# sourced constants, the /vram computation with its GPU search, and the platforms' message model
OTHER_FORMS = {f"bot.diagnosis.{name}" for name in ("advice", "capability", "constraint", "report", "static_share", "wrapper")}  # fmt: skip
ENGINES = {"calculator.llamacpp", "calculator.ollama", "calculator.sglang"}
VLLM = {"calculator.vllm", "calculator.vllm_mm", "calculator.constants", "calculator.versions"}
VRAM = {"calculator.estimate", "calculator.matchmaker", "calculator.fit", "bot.vram", "bot.message"}
ONE_LINE_KV = (
    "ValueError: The model's max seq len (16000) is larger than the maximum number of tokens that can be "
    "stored in KV cache (96). Try increasing `gpu_memory_utilization` or decreasing `max_model_len` when "
    "initializing the engine.\n"
)


def test_a_one_line_pytorch_oom_loads_its_own_diagnosis_and_no_budget(tmp_path):
    log = tmp_path / "one.log"
    log.write_text("torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 2.00 GiB.\n")
    loaded = _modules_after(["triage", str(log)])
    assert {"bot.diagnosis.over", "bot.situation"} <= loaded  # diagnosed: budget_over, its torch_oom
    assert not loaded & (OTHER_FORMS | ENGINES | VLLM | VRAM)


def test_a_one_line_vllm_kv_error_loads_vllms_budget_and_no_other_engines(tmp_path):
    log = tmp_path / "kv.log"
    log.write_text(ONE_LINE_KV)
    loaded = _modules_after(["triage", str(log)])
    assert {"bot.diagnosis.capacity", "calculator.vllm"} <= loaded  # capacity_short on vLLM's budget
    assert not loaded & (OTHER_FORMS | ENGINES | VRAM | {"bot.diagnosis.over"})


def test_a_vllm_vram_loads_no_other_engines_budget():
    loaded = _modules_after(["vram", "--gpu", "4090", "--model", "qwen2.5-coder-32b-awq"])
    assert {"calculator.estimate", "calculator.vllm"} <= loaded
    assert not loaded & ENGINES


def test_terminal_paste_whose_first_line_is_a_path_is_triaged():
    import io

    from adapters.cli import run_terminal

    paste = "/usr/lib/python3/site-packages/vllm/engine.py:1: UserWarning: x\n" + V0_KV + "\n\n/quit\n"
    out = io.StringIO()
    run_terminal(io.StringIO(paste), out, interactive=False)
    assert "Unknown command" not in out.getvalue() and "5,728" in out.getvalue()


def test_triage_reads_a_utf16_file(tmp_path):
    log = tmp_path / "ps.log"
    log.write_bytes(("INFO x\r\n" + V0_KV + "\r\n").encode("utf-16"))
    code, out = run(["triage", str(log)])
    assert code == 0 and "5,728" in out


def test_triage_json_names_the_secrets_and_repeats_none(tmp_path):
    import json

    log = tmp_path / "s.log"
    token = "glpat-" + "Ab3dE5gH7jK9mN1pQ3sT"
    log.write_text(f"GITLAB_TOKEN={token}\n{V0_KV}\n")
    code, out = run(["triage", "--json", str(log)])
    result = json.loads(out)
    assert code == 0 and token not in out
    assert result["secrets"] == ["GitLab token"] and "GitLab token" in result["notice"]


@pytest.mark.parametrize(
    "argv",
    [
        ["vram", "--gpu", "4090", "--model", "qwen2.5-coder-32b-awq", "-c", "8192", "--no-hub"],
        ["triage", "--brief", "a.log", "-"],
        ["knowledge", "test", "pack.yaml"],
        ["discord", "--database", "x.sqlite3", "sync-commands", "--guild", "1"],
        ["slack", "--log-level", "DEBUG"],
        ["stats", "--since", "24h"],
        ["healthcheck"],
        [],
    ],
)
def test_a_parser_built_for_one_command_parses_it_as_the_whole_parser(argv):
    from adapters.cli import build_parser

    assert vars(build_parser(argv).parse_args(argv)) == vars(build_parser().parse_args(argv))
    # an error in the command's arguments prints the top-level usage: every command still listed
    assert build_parser(argv).format_usage() == build_parser().format_usage()
