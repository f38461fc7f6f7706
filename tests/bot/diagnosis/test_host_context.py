"""Golden tests for host memory, crashed runners, context overflows, flash attention, bad arguments
(llama.cpp, Ollama) and memory reports.

Each corpus record (shared/corpus/dev.jsonl, cited by id) and each unseen paste runs through the real
pipeline — ``bot.detector.detect`` -> ``bot.diagnosis.diagnose`` -> ``bot.formatter.to_markdown`` — and
the reply must name the root cause, echo the user's numbers and carry the computed fix values.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

import bot.diagnosis as diagnosis
from bot.detector import detect
from bot.diagnosis import (
    context_exceeded,
    flash_attn,
    host_memory,
    invalid_args_llamacpp,
    invalid_args_ollama,
    memory_report,
    runner_crashed,
)
from bot.facts import PasteFacts
from bot.formatter import to_markdown
from bot.reply import Fix, Reply

ROOT = Path(__file__).resolve().parents[3]
_PATHS = [ROOT.parent / "shared" / "corpus" / "dev.jsonl", ROOT / "tests" / "data" / "dev.jsonl"]
CORPUS_PATH = next((p for p in _PATHS if p.is_file()), _PATHS[-1])
CORPUS = {
    r["id"]: r
    for r in (
        json.loads(line) for line in CORPUS_PATH.read_text(encoding="utf-8").splitlines() if line.strip()
    )
}


@pytest.fixture(autouse=True)
def paste_text(monkeypatch):
    """The rules read ``facts.text`` (the prefix-stripped paste) for what no finding captures: a second run
    of the same report, a traceback's ``max_tokens=``, a tokenizer warning.  Until PasteFacts carries it,
    attach it exactly as ``gather`` would; once it does, this fixture does nothing."""
    if "text" in PasteFacts.__dataclass_fields__:
        return
    original = diagnosis.gather

    def gather(detection, root):
        facts = original(detection, root)
        facts.text = detection.normalized.views[0].text
        return facts

    monkeypatch.setattr(diagnosis, "gather", gather)


def run(text: str) -> tuple[Reply, str]:
    reply = diagnosis.diagnose(detect(text))
    assert reply is not None
    return reply, to_markdown(reply)


def corpus(record_id: str) -> tuple[Reply, str]:
    return run(CORPUS[record_id]["text"])


def fixes(reply: Reply, engine: str | None = None) -> list[Fix]:
    return [f for f in sorted(reply.fixes, key=lambda f: f.rank) if engine is None or f.engine == engine]


def fix_with(reply: Reply, text: str, engine: str | None = None) -> Fix:
    found = [f for f in fixes(reply, engine) if text in f.command or text in f.change]
    assert found, f"no fix with {text!r}: {[(f.engine, f.change, f.command) for f in reply.fixes]}"
    return found[0]


def fact(reply: Reply, label_part: str):
    for section in reply.sections:
        for f in section.facts:
            if label_part in f.label:
                return f
    raise AssertionError(f"no fact {label_part!r}")


# ------------------------------------------------------------------------------------------ registry


def test_rules_are_found_for_their_categories():
    from bot.diagnosis import rule_for

    assert rule_for("host_memory", "ollama") is host_memory.host_memory
    assert rule_for("host_memory", "llama.cpp") is host_memory.host_memory
    assert rule_for("runner_crashed", "ollama") is runner_crashed.runner_crashed
    for engine in ("llama.cpp", "ollama", "vllm", "sglang"):
        assert rule_for("context_exceeded", engine) is context_exceeded.context_exceeded
    assert rule_for("kv_quant_needs_flash_attn", "llama.cpp") is flash_attn.kv_quant_needs_flash_attn
    assert rule_for("invalid_argument", "llama.cpp") is invalid_args_llamacpp.invalid_argument_llamacpp
    assert rule_for("invalid_argument", "ollama") is invalid_args_ollama.invalid_argument_ollama
    assert rule_for("invalid_argument", "vllm") is not invalid_args_llamacpp.invalid_argument_llamacpp
    assert rule_for("memory_report", "sglang") is memory_report.memory_report


# ------------------------------------------------------------------------------------------ host_memory


def test_continue11478_llama31_8b_ram_part_only():
    reply, md = corpus("continue11478-llama31-8b")
    assert reply.category == "host_memory"
    assert reply.title == "Ollama: the CPU part of the model needs 2.70 GiB of RAM, 2.30 GiB is free"
    assert "0.40 GiB short" in reply.summary
    # "Model: Llama 3.1 8B" -> Ollama's llama3.1:8b (4.9 GB), of which only the CPU part needs RAM
    assert "about 2.41 GiB of it was planned for the GPU" in reply.summary
    assert fact(reply, "model weights (llama3.1:8b)").value == "4.56 GiB"
    quant = fixes(reply, "ollama")[0]
    assert "Q3_K_M build (3.74 GiB" in quant.change
    assert "llama3.1:8b-instruct-q3_K_M" in quant.command
    assert "0.83 GiB smaller" in quant.effect
    assert fix_with(reply, "OLLAMA_CONTEXT_LENGTH=2048").command.startswith(
        "OLLAMA_CONTEXT_LENGTH=2048 ollama serve"
    )
    swap = fix_with(reply, "swapon")
    assert "not a fix for speed" in swap.cost
    assert reply.data["short_gib"] == pytest.approx(0.4)
    assert "llama-server -m <Llama-3.1-8B-Instruct-Q4_K_M>.gguf -c 4096" in md


def test_easyrag9_nested_json_error():
    reply, md = corpus("easyrag9-valueerror-json")
    assert reply.title == "Ollama: the CPU part of the model needs 3.70 GiB of RAM, 3.60 GiB is free"
    assert fact(reply, "short by").value == "0.10 GiB"
    assert fact(reply, "free RAM + free swap").value == "3.60 GiB"
    # no model named: the quant fix says how much smaller, the swap fix how much swap
    assert "at least 0.35 GiB smaller" in fixes(reply)[0].change
    assert "fallocate -l 2G" in fix_with(reply, "swapon").command
    assert "tell me the tag" in md


def test_unseen_ollama_system_memory_with_offload_line():
    text = """$ ollama run gemma2:27b
time=2024-08-01T10:00:00.000Z level=INFO source=server.go:101 msg="system memory" total="15.5 GiB" free="9.8 GiB" free_swap="2.0 GiB"
time=2024-08-01T10:00:00.001Z level=INFO source=memory.go:309 msg="offload to cuda" layers.requested=-1 layers.model=47 layers.offload=14 layers.split="" memory.available="[7.6 GiB]" memory.required.full="17.9 GiB" memory.required.partial="7.4 GiB" memory.required.kv="736.0 MiB" memory.weights.total="14.6 GiB" memory.graph.full="562.5 MiB"
Error: model requires more system memory (12.1 GiB) than is available (11.8 GiB)"""
    reply, _ = run(text)
    assert reply.title == "Ollama: the CPU part of the model needs 12.10 GiB of RAM, 11.80 GiB is free"
    assert "Ollama planned 7.40 GiB for the GPU (14 of 47 layers)" in reply.summary
    assert fact(reply, "planned for the GPU").source == "log"
    assert fact(reply, "layers on the GPU").value == "14/47"
    quant = fixes(reply, "ollama")[0]
    # the GPU stays full: the whole saving comes off the RAM part
    assert "Q3_K_L build (13.62 GiB" in quant.change
    assert (
        "0.98 GiB smaller than the 14.60 GiB you run: the RAM part shrinks by about that much" in quant.effect
    )


def test_unseen_ollama_whole_model_in_ram():
    reply, _ = run(
        "$ ollama run llama3.1:8b\nError: model requires more system memory (5.1 GiB) than is available (3.9 GiB)"
    )
    assert "1.20 GiB short" in reply.summary
    assert "this is the whole model: nothing was planned for the GPU" in reply.summary
    assert "3 GiB more lets the model load" in fix_with(reply, "swapon").effect


def test_unseen_llamacpp_cpu_buffer_no_mmap_mlock():
    text = """llama-server -m /models/Meta-Llama-3.1-70B-Instruct-Q4_K_M.gguf -c 32768 -ngl 40 --no-mmap --mlock
ggml_backend_cpu_buffer_type_alloc_buffer: failed to allocate buffer of size 21474836480
alloc_tensor_range: failed to allocate CPU buffer of size 21474836480
llama_model_load: error loading model: unable to allocate CPU buffer"""
    reply, _ = run(text)
    assert reply.category == "host_memory"
    assert (
        reply.title
        == "llama.cpp: 20.00 GiB for the weights kept on the CPU in system RAM could not be allocated"
    )
    first = fixes(reply)[0]
    assert first.change == "drop --no-mmap and --mlock"
    assert first.command == "llama-server -m /models/Meta-Llama-3.1-70B-Instruct-Q4_K_M.gguf -c 32768 -ngl 40"
    ctx = fix_with(reply, "-c 16384")
    assert "5.00 GiB less KV, 2.53 GiB of it in RAM (41 CPU layers)" in ctx.effect
    assert "-cram 0" in fix_with(reply, "-cram 0").command
    assert "-ngl 40 keeps 41 of 81 layers in RAM" in fix_with(reply, "let --fit place the layers").effect


def test_unseen_llamacpp_pinned_memory_is_not_fatal():
    reply, _ = run("ggml_cuda_host_malloc: failed to allocate 16740.00 MiB of pinned memory: out of memory")
    assert reply.title == "llama.cpp: 16,740 MiB of pinned host memory could not be allocated (not fatal)"
    assert "fell back to ordinary memory" in reply.summary
    assert fixes(reply)[0].command.startswith("GGML_CUDA_NO_PINNED=1 ")


# ------------------------------------------------------------------------------------------ runner_crashed


def test_ollama5764_allocation_failure_is_memory_and_0xc0000409_is_not():
    reply, md = corpus("ollama5764-gemma2-0xc0000409-buffer")
    assert reply.category == "runner_crashed"
    assert reply.data["cause"] == "memory"
    assert "unable to allocate backend buffer" in reply.summary
    assert (
        "0xc0000409 is only how the abort after that failure is reported, not a memory code itself"
        in reply.summary
    )
    # it failed placing the weights: fewer layers / a smaller model first, the context after
    ranked = fixes(reply, "ollama")
    assert ranked[0].change == "fewer layers on the GPU"
    assert "/set parameter num_gpu" in ranked[0].command
    assert any("num_ctx" in f.change for f in ranked[1:])
    assert "page file" in md
    assert "journalctl -u ollama" in md


def test_ollama5628_create_context_on_old_ollama_means_upgrade_not_memory():
    reply, md = corpus("ollama5628-codegeex4-0xc0000409-ctx")
    assert reply.data["cause"] == "create_context"
    assert reply.data["memory"] is False
    assert reply.title.endswith("— upgrade Ollama first")
    assert "codegeex4:9b-all-q4_K_M" in reply.title
    assert "nothing here points to memory" in reply.summary
    assert "fixed in the next release" in reply.summary
    top = fixes(reply)[0]
    assert top.change.startswith("upgrade Ollama")
    assert "ollama pull codegeex4:9b-all-q4_K_M" in top.command
    assert "out of memory" not in reply.summary
    assert "ran out of" not in md


def test_unseen_runner_oom_known_model_and_gpu_computes_num_ctx():
    text = """$ ollama run qwen2.5:14b
Error: llama runner process has terminated: cudaMalloc failed: out of memory
time=2025-02-01T10:00:00.000Z level=INFO source=types.go:131 msg="inference compute" id=GPU-1 library=cuda variant=v12 compute=8.6 driver=12.4 name="NVIDIA GeForce RTX 3060" total="11.8 GiB" available="11.0 GiB\""""
    reply, _ = run(text)
    assert reply.data["cause"] == "memory"
    # 8.42 GiB of weights + KV at 2,048 fit in 11.8 GiB: a larger num_ctx, parallel slots or another process
    assert "needs 9.49 GiB" in reply.summary
    assert "above about 8,960 tokens it no longer fits" in reply.summary
    first = fixes(reply)[0]
    assert first.change == "num_ctx 8,192"
    assert first.command.startswith("OLLAMA_CONTEXT_LENGTH=8192 ollama serve\nollama run qwen2.5:14b")
    assert fix_with(reply, "OLLAMA_NUM_PARALLEL=1")
    assert fix_with(reply, "nvidia-smi")


def test_unseen_runner_killed_by_oom_killer():
    reply, md = run("ollama run mixtral:8x7b\nError: llama runner process has terminated: signal: killed")
    assert reply.title == "Ollama: the runner was killed by the Linux OOM killer (out of system RAM)"
    assert fact(reply, "model (mixtral:8x7b)").value == "24.21 GiB"
    assert "Q3_K_M build (21.72 GiB" in fix_with(reply, "q3_K_M").change
    assert "journalctl -k" in md


def test_unseen_runner_stopped_without_cause_asks_for_logs():
    reply, md = run(
        "Error: an error was encountered while running the model: model runner has unexpectedly stopped, this "
        "may be due to resource limitations or an internal error, check ollama server logs for details"
    )
    assert reply.data["cause"] == "unknown"
    assert fixes(reply)[0].change == "send the server log lines around the crash"
    assert "OLLAMA_DEBUG=1 ollama serve" in md
    assert "journalctl -u ollama --no-pager -n 200" in md


def test_unseen_runner_assert_is_not_called_memory():
    reply, _ = run(
        "Error: llama runner process has terminated: exit status 2 GGML_ASSERT(ggml_nelements(a) == ne0*ne1) failed"
    )
    assert reply.data["cause"] == "unknown"
    assert "not an allocation failure" in reply.summary
    assert "memory" not in reply.title
    assert fixes(reply)[0].change == "send the server log lines around the crash"


def test_unseen_llama_server_wording_v030():
    reply, md = run(
        "Error: 500 Internal Server Error: llama-server process has terminated: exit status 1: CUDA error: out of memory"
    )
    assert reply.data["cause"] == "memory"
    assert reply.data["num_ctx_assumed"] == 4096
    assert "-c num_ctx x num_parallel" in md
    assert fixes(reply)[0].command.startswith("OLLAMA_CONTEXT_LENGTH=2048 ollama serve")


# ------------------------------------------------------------------------------------------ context_exceeded


def test_llamacpppy120_default_n_ctx_512():
    reply, _ = corpus("llamacpppy120-ctx-512")
    assert reply.category == "context_exceeded"
    assert "512 is the default of Llama(...)" in reply.summary
    # max_tokens=1024 from the traceback: 1024 + a prompt -> n_ctx 2048
    assert reply.data["max_tokens"] == 1024
    assert reply.data["wanted_ctx"] == 2048
    assert fixes(reply)[0].command == 'llm = Llama(model_path="<model>.gguf", n_ctx=2048)'
    assert "max_tokens=256" in fix_with(reply, "max_tokens below 512").command


def test_logdetective193_llamacpp_python_server_2285_over_2048():
    reply, _ = corpus("logdetective193-llamacpppy-2285-2048")
    assert reply.title == "llama-cpp-python: 2,285 tokens requested, the context window is 2,048"
    assert "default of the llama-cpp-python server" in reply.summary
    first = fixes(reply)[0]  # the paste is the server: its flag comes first
    assert first.command.startswith("python -m llama_cpp.server --model <model>.gguf --n_ctx 4096")
    assert fix_with(reply, "lower max_tokens by 237")


def test_vllm447_v0_prompt_limit_and_trained_context():
    reply, md = corpus("vllm447-mpt7b-prompt-limit")
    assert reply.title == "vLLM (V0): a 3,622-token prompt is over the 2,560-token prompt limit"
    assert "2,560 was the default --max-num-batched-tokens" in reply.summary
    assert "built for 2,048 tokens" in reply.summary
    shorten = fixes(reply)[0]
    assert shorten.change == "shorten the prompt by 2,086+ tokens"
    assert "under 1,536 tokens so 512 are left" in shorten.command
    assert "pip install -U vllm" in md


def test_stepaudio3_max_tokens_too_large():
    reply, _ = corpus("stepaudio3-max-tokens-too-large")
    assert reply.title == "vLLM: max_tokens 32,000 does not fit next to the prompt"
    assert "max_tokens ≤ max_model_len − prompt tokens" in reply.summary
    assert fixes(reply)[0].change == "lower max_tokens (or leave it unset)"
    raise_len = fix_with(reply, "--max-model-len")
    assert raise_len.command == "vllm serve <model> --max-model-len 36864"
    assert "startup check decides" in raise_len.effect


def test_unseen_llama_server_np_divides_c():
    text = """$ llama-server -m /models/Qwen2.5-7B-Instruct-Q4_K_M.gguf -c 16384 -np 4 -ngl 99 --port 8080
srv  send_error: task id = 0, error: request (8312 tokens) exceeds the available context size (4096 tokens), try increasing it"""
    reply, _ = run(text)
    assert reply.title == "llama-server: an 8,312-token request, but each slot holds 4,096 tokens"
    assert "-c / 4 = 4,096 tokens" in reply.summary
    first = fixes(reply)[0]
    assert (
        first.command
        == "llama-server -m /models/Qwen2.5-7B-Instruct-Q4_K_M.gguf -ngl 99 --port 8080 -c 49152 -np 4"
    )
    assert "12,288 x 4" in first.effect
    assert "2.62 GiB" in first.effect
    assert fix_with(reply, "-kvu").command.endswith("-np 4 -ngl 99 --port 8080 -kvu")
    assert fix_with(reply, "shorten the prompt by 5,240")


def test_unseen_vllm_openai_prompt_fits_lower_max_tokens():
    text = """vllm serve Qwen/Qwen2.5-7B-Instruct --max-model-len 8192
openai.BadRequestError: Error code: 400 - {'object': 'error', 'message': "This model's maximum context length is 8192 tokens. However, you requested 10240 tokens (6144 in the messages, 4096 in the completion). Please reduce the length of the messages or completion.", 'type': 'BadRequestError'}"""
    reply, _ = run(text)
    assert reply.data["max_tokens_allowed"] == 2048
    assert fixes(reply)[0].command.startswith('"max_tokens": 2048')
    raise_len = fix_with(reply, "--max-model-len")
    assert raise_len.command == "vllm serve Qwen/Qwen2.5-7B-Instruct --max-model-len 12288"
    assert "0.66 GiB of KV cache (56 KiB/token)" in raise_len.effect


def test_unseen_ollama_truncated_prompt():
    text = """ollama run llama3.1:8b
time=2025-06-01T12:00:00.000Z level=WARN source=runner.go:128 msg="truncating input prompt" limit=4096 prompt=11021 keep=5 new=4096"""
    reply, md = run(text)
    assert reply.title == "Ollama: an 11,021-token prompt was cut to num_ctx 4,096"
    assert "/v1 endpoints cannot change it" in reply.summary
    first = fixes(reply)[0]
    assert first.command == "OLLAMA_CONTEXT_LENGTH=12288 ollama serve\nollama run llama3.1:8b"
    assert "KV cache 0.50 GiB -> 1.50 GiB" in first.cost
    assert "ollama create llama3.1-8b-12k -f Modelfile" in md


def test_unseen_sglang_completion_too_long():
    text = """python -m sglang.launch_server --model-path Qwen/Qwen2.5-14B-Instruct --context-length 32768
Requested token count exceeds the model's maximum context length of 32768 tokens. You requested a total of 36000 tokens: 30000 tokens from the input messages and 6000 tokens for the completion. Please reduce the number of tokens in the input messages or the completion to fit within the limit."""
    reply, _ = run(text)
    assert reply.title.startswith("SGLang: 36,000 tokens requested (30,000 input + 6,000 completion)")
    assert "max_tokens ≤ 2,768 is enough" in reply.summary
    assert "already the model's trained context" in reply.summary
    assert fixes(reply)[0].command.startswith('"max_tokens": 2768')


# ------------------------------------------------------------------------------------------ flash attention


def test_unseen_quantized_v_with_fa_off():
    text = """llama-server -m Meta-Llama-3.1-8B-Instruct-Q4_K_M.gguf -c 32768 -ctk q8_0 -ctv q8_0 -fa off
llama_init_from_model: quantized V cache requires flash_attn to be enabled"""
    reply, md = run(text)
    assert reply.category == "kv_quant_needs_flash_attn"
    first = fixes(reply)[0]
    assert (
        first.command
        == "llama-server -m Meta-Llama-3.1-8B-Instruct-Q4_K_M.gguf -c 32768 -ctk q8_0 -ctv q8_0 -fa on"
    )
    assert "2.12 GiB at 32,768 tokens" in first.effect
    keep = fix_with(reply, "-ctv f16")
    assert "KV 3.06 GiB instead of 2.12 GiB" in keep.effect
    assert "OLLAMA_FLASH_ATTENTION=1 OLLAMA_KV_CACHE_TYPE=q8_0" in md
    assert "is not in my catalog" not in md


def test_unseen_jetson_xavier_has_no_flash_attention():
    text = """./llama-server -m qwen2.5-7b-instruct-q4_k_m.gguf -c 16384 -ctk q4_0 -ctv q4_0
ggml_cuda_init: found 1 CUDA devices:
  Device 0: Xavier, compute capability 7.2, VMM: yes
llama_init_from_model: failed to initialize the context: quantized V cache was requested, but this requires Flash Attention"""
    reply, _ = run(text)
    assert reply.title.endswith("— not available on this GPU")
    assert not any("-fa on" in f.command for f in reply.fixes)
    assert fixes(reply)[0].command.endswith("-ctv f16")
    same = fix_with(reply, "context 7,168")
    assert same.command.endswith("-ctv f16 -c 7168")


def test_unseen_ollama_quantized_kv_ignored():
    reply, _ = run(
        'time=2025-03-01T10:00:00.000Z level=WARN source=server.go:196 msg="OLLAMA_FLASH_ATTENTION must be enabled '
        'to use a quantized OLLAMA_KV_CACHE_TYPE" cache_type=q4_0'
    )
    assert reply.title == "Ollama: OLLAMA_KV_CACHE_TYPE=q4_0 was ignored — flash attention is off"
    assert "3.56x the memory of q4_0" in reply.summary
    assert fixes(reply)[0].command.startswith(
        "OLLAMA_FLASH_ATTENTION=1 OLLAMA_KV_CACHE_TYPE=q4_0 ollama serve"
    )


# ------------------------------------------------------------------------------------------ invalid_argument


def test_unseen_bare_fa_swallows_next_flag():
    text = """./llama-server -m models/gemma-3-12b-it-Q4_K_M.gguf -fa -c 8192 -ngl 99
error: unknown value for --flash-attn: '-c'"""
    reply, _ = run(text)
    assert reply.title == "llama.cpp: the old bare -fa swallowed '-c' as its value"
    assert (
        fixes(reply)[0].command
        == "./llama-server -m models/gemma-3-12b-it-Q4_K_M.gguf -c 8192 -ngl 99 -fa on"
    )


def test_unseen_unsupported_cache_type():
    text = """llama-server -m mistral-7b-instruct-v0.3.Q5_K_M.gguf -c 8192 --cache-type-k q8 --cache-type-v q8
error while handling argument "--cache-type-k": Unsupported cache type: q8"""
    reply, _ = run(text)
    assert reply.title == "llama.cpp: 'q8' is not a KV cache type"
    assert "f32, f16, bf16, q8_0, q4_0, q4_1, iq4_nl, q5_0, q5_1" in reply.summary
    assert (
        fixes(reply)[0].command
        == "llama-server -m mistral-7b-instruct-v0.3.Q5_K_M.gguf -c 8192 -ctk q8_0 -ctv q8_0 -fa on"
    )


@pytest.mark.parametrize(
    ("key", "value", "fixed"),
    [("OLLAMA_GPU_OVERHEAD", "1.5GiB", "1610612736"), ("OLLAMA_NUM_PARALLEL", "four", "4")],
)
def test_unseen_invalid_ollama_env(key, value, fixed):
    reply, _ = run(
        f'time=2025-06-01T10:00:00.000Z level=WARN source=config.go:215 msg="invalid environment variable, using '
        f'default" key={key} value={value} default=0'
    )
    assert reply.title == f"Ollama ignored {key}={value} — write {key}={fixed}"
    assert fixes(reply, "ollama")[0].command.startswith(f"{key}={fixed} ollama serve")


# ------------------------------------------------------------------------------------------ memory_report


def test_ollama11819_last_layer_needs_0_2_gib():
    reply, md = corpus("ollama11819-ctx2048-kv608")
    assert reply.category == "memory_report"
    assert (
        reply.title
        == "Ollama: 48 of 49 layers on the GPU — all of them need 11.00 GiB, 10.90 GiB is available"
    )
    assert "KV cache 608 MiB for 2,048 tokens" in reply.summary
    assert "started the runner with --n-gpu-layers 49 anyway" in reply.summary
    q8 = fix_with(reply, "q8_0 KV cache")
    assert "KV 608 MiB -> 323 MiB" in q8.effect
    assert "all 49 layers on the GPU, still 2,048 tokens" in q8.effect
    ctx = fix_with(reply, "OLLAMA_CONTEXT_LENGTH=1024")
    assert "about 304 MiB" in ctx.effect
    assert fact(reply, "KV per token").value == "304 KiB"
    assert "-c 2048 -fa on -ctk q8_0 -ctv q8_0" in md
    assert "is not in my catalog" not in md  # the runner's blob path names no model


def test_ollama8447_gpu_overhead_needs_bytes():
    reply, md = corpus("ollama8447-compose-dsv3-kv9.5")
    assert (
        reply.title
        == "Ollama: 5 of 62 layers on the GPU — all of them need 415.70 GiB, 23.30 GiB is available"
    )
    assert "KV cache 9.50 GiB" in reply.summary
    assert "OLLAMA_GPU_OVERHEAD=8G was rejected (it must be a byte count, 8589934592)" in reply.summary
    first = fixes(reply)[0]
    assert first.command.startswith("OLLAMA_GPU_OVERHEAD=8589934592 ollama serve")
    assert "plans with 15.30 GiB instead of 23.30 GiB" in first.effect
    assert "/set parameter num_gpu 2" in fix_with(reply, "num_gpu 2").command
    assert "flash attention is not supported by this model" in md


def test_vllm10517_20k_fits():
    reply, _ = corpus("vllm10517-20k-ok")
    assert (
        reply.title
        == "vLLM: 3.81 GiB of KV cache holds 31,232 tokens — 1.56 requests of 20,000 tokens at once"
    )
    assert "23.58 GiB x 0.9 = 21.22 GiB" in reply.summary
    assert "1,952 blocks of 16 = 31,232 tokens at 128 KiB per token" in reply.summary
    assert "this configuration is fine" in reply.summary
    util = fixes(reply)[0]
    assert util.command == "vllm serve <model> --gpu-memory-utilization 0.95"
    assert "+1.18 GiB for the KV cache = about 9,664 more tokens" in util.effect
    assert reply.memory is not None and reply.memory.total_gib == pytest.approx(23.58)


def test_llamacpp27680_swa_cache_is_small():
    reply, _ = corpus("llamacpp27680-dsv4-ansi-swa")
    assert reply.title == "llama.cpp: the KV cache takes 182.75 MiB (4,352 cells) for a 64,000-token context"
    assert "sliding-window layers" in reply.summary
    assert "'n_ctx_seq (64,000) < n_ctx_train (1,048,576)' is informational" in reply.summary
    assert fact(reply, "KV per cell").value == "43.0 KiB"
    assert fixes(reply)[0].command.endswith("-lv 4")


def test_sglang29575_pool_is_shared():
    reply, _ = corpus("sglang29575-max-total-num-tokens")
    assert reply.title == (
        "SGLang: a KV pool of 2,086,558 tokens — 8.15 requests of the full 256,000-token context at once"
    )
    assert "the total, not a per-request limit" in reply.summary
    assert "each gets about 63,229 tokens" in reply.summary
    assert fact(reply, "free after the pool").value == "17.22 GiB"


def test_aphrodite1320_breakdown():
    reply, _ = corpus("aphrodite1320-pixtral-48gb-breakdown")
    assert (
        reply.title
        == "Aphrodite: 10.53 GiB of KV cache holds 69,024 tokens — 8.43 requests of 8,192 tokens at once"
    )
    assert "47.53 GiB x 0.9 = 42.78 GiB" in reply.summary
    assert "69,024 tokens at 160 KiB per token" in reply.summary
    assert "about 6,553 more tokens of KV cache" in reply.summary
    assert fix_with(reply, "--max-num-batched-tokens 4096").command.startswith("aphrodite run <model>")


def test_turbomind14_non_torch_memory_eats_kv():
    reply, md = corpus("turbomind14-awq-v100-nontorch")
    assert reply.title == (
        "vLLM: 8.94 GiB more non-torch memory in 'Turbomind AWQ' — the KV cache shrinks from 13.55 to 4.42 GiB"
    )
    assert "9.17 GiB in 'Turbomind AWQ' instead of 0.23 GiB" in reply.summary
    assert "67% fewer tokens" in reply.summary
    assert fact(reply, "Original AWQ").value == "9.09 / 0.23 / 4.10 / 13.55 GiB"
    assert fact(reply, "Turbomind AWQ").value == "9.30 / 9.17 / 4.09 / 4.42 GiB"
    assert reply.data["non_torch_added_gib"] == pytest.approx(8.94)
    assert "N non-torch                     9.17 GiB" in md


def test_unseen_llamacpp_buffers_leave_room_for_more_context():
    text = """llama-server -m Meta-Llama-3.1-8B-Instruct-Q4_K_M.gguf -c 8192 -ngl 99
llama_prepare_model_devices: using device CUDA0 (NVIDIA GeForce RTX 4070) (0000:01:00.0) - 11400 MiB free
load_tensors: offloaded 33/33 layers to GPU
load_tensors:        CUDA0 model buffer size =  4403.49 MiB
llama_kv_cache:      CUDA0 KV buffer size =  1024.00 MiB
llama_kv_cache: size = 1024.00 MiB (  8192 cells,  32 layers,  1/1 seqs), K (f16):  512.00 MiB, V (f16):  512.00 MiB
sched_reserve:      CUDA0 compute buffer size =   560.00 MiB"""
    reply, _ = run(text)
    assert (
        reply.title == "llama.cpp: the KV cache takes 1,024.00 MiB (8,192 cells) for an 8,192-token context"
    )
    assert "128.0 KiB per token" in reply.summary
    room = fixes(reply)[0]
    assert room.command == "llama-server -m Meta-Llama-3.1-8B-Instruct-Q4_K_M.gguf -ngl 99 -c 43264"
    assert "35,108 more tokens" in room.effect


def test_unseen_vllm_v1_kv_report():
    text = """(EngineCore_DP0 pid=7) INFO 10-03 16:22:17 [gpu_worker.py:298] Available KV cache memory: 9.75 GiB
(EngineCore_DP0 pid=7) INFO 10-03 16:22:17 [kv_cache_utils.py:864] GPU KV cache size: 79,872 tokens
(EngineCore_DP0 pid=7) INFO 10-03 16:22:17 [kv_cache_utils.py:868] Maximum concurrency for 16,384 tokens per request: 4.88x"""
    reply, _ = run(text)
    assert (
        reply.title
        == "vLLM: 9.75 GiB of KV cache holds 79,872 tokens — 4.88 requests of 16,384 tokens at once"
    )
    assert "128 KiB per token" in reply.summary
    assert fix_with(reply, "--max-model-len 8192")


def test_unseen_ollama_cpu_only_offload_line():
    reply, _ = run(
        'time=2024-07-05T02:37:04.449Z level=INFO source=memory.go:309 msg="offload to cpu" layers.requested=-1 '
        'layers.model=33 layers.offload=0 layers.split="" memory.available="[6.0 GiB]" memory.required.full="7.2 GiB" '
        'memory.required.partial="0 B" memory.required.kv="1.0 GiB" memory.required.allocations="[6.8 GiB]" '
        'memory.weights.total="5.6 GiB" memory.graph.full="296.0 MiB"'
    )
    assert reply.title == "Ollama: CPU only — the model needs 7.20 GiB, 6.00 GiB of memory is available"
    assert "It is 1.20 GiB over" in reply.summary
    assert fixes(reply)[0].command.startswith("OLLAMA_CONTEXT_LENGTH=1024 ollama serve")
