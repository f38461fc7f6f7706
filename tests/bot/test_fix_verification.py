"""Every engine command the bot prints would start as printed, checked independently of the bot's fix
code (bench/verify_fixes.py recomputes each command's budget from the paste's own numbers).

The corpora (dev.jsonl, tests/data/wild_*.jsonl, every signature example) must give no violation; a
known violation is listed in KNOWN with the reason and marked xfail(strict=True), so it fails the day
it is fixed and is then removed from the list.  The checker itself is tested on hand-made fixes: each
rule must catch the command that breaks it.
"""

from __future__ import annotations

import pytest

from bench.verify_fixes import Result, Row, check_fix, read_facts, run
from bot.reply import Fix
from bot.shell import find_command
from calculator.catalog import models

# (corpus, record id) -> why the printed command would not start
KNOWN: dict[tuple[str, str], str] = {}


@pytest.fixture(scope="module")
def result() -> Result:
    return run()


def _row(result: Result, corpus: str) -> Row:
    return next(r for r in result.rows if r.corpus == corpus)


CORPORA = ["dev.jsonl", "wild_engines.jsonl", "wild_wordings.jsonl", "wild_2026c.jsonl", "signature examples"]


@pytest.mark.parametrize("corpus", CORPORA)
def test_no_unknown_violation(result: Result, corpus: str) -> None:
    row = _row(result, corpus)
    unknown = [v for v in row.violations if (corpus, v[0]) not in KNOWN]
    assert unknown == []
    assert row.checked > 0  # the corpus really printed engine commands that were read back


@pytest.mark.parametrize(
    ("corpus", "record"),
    [pytest.param(c, r, marks=pytest.mark.xfail(strict=True, reason=why)) for (c, r), why in KNOWN.items()],
)
def test_known_violation(result: Result, corpus: str, record: str) -> None:
    assert record not in {v[0] for v in _row(result, corpus).violations}


# ---------------------------------------------------------------- the checker catches each broken rule

V0 = (
    "Memory profiling results: total_gpu_memory=23.58GiB initial_memory_usage=15.34GiB peak_torch_memory=17.98GiB "
    "memory_usage_post_profile=15.35GiB non_torch_memory=0.35GiB kv_cache_size=2.89GiB gpu_memory_utilization=0.90\n"
    "The model's max seq len (29000) is larger than the maximum number of tokens that can be stored in KV cache "
    "(23648). Try increasing `gpu_memory_utilization` or decreasing `max_model_len` when initializing the engine."
)
V1 = (
    "ValueError: To serve at least one request with the models's max seq len (131072), (16.00 GiB KV cache is "
    "needed, which is larger than the available KV cache memory (0.71 GiB). Based on the available memory, the "
    "estimated maximum model length is 5632."
)
FREE = (
    "ValueError: Free memory on device cuda:1 (19.77/22.05 GiB) on startup is less than desired GPU memory "
    "utilization (0.9, 19.84 GiB). Decrease GPU memory utilization or reduce GPU memory used by other processes."
)
TP = "ValueError: Total number of attention heads (28) must be divisible by tensor parallel size (8)"


def _problems(paste: str, command: str, engine: str = "vllm") -> list[str]:
    fix = Fix(engine=engine, change="", command=command, effect="")
    verdict = check_fix(fix, paste, read_facts(paste), find_command(paste))
    assert verdict.checked
    return verdict.problems


def test_read_facts_v0_profile() -> None:
    facts = read_facts(V0)
    assert (facts.asked, facts.capacity, facts.kv_gib, facts.total_gib, facts.util) == (
        29000,
        23648,
        2.89,
        23.58,
        0.9,
    )


def test_v1_wrapped_and_cut_reads_the_bytes() -> None:
    paste = (
        "ValueError: To serve at least one request with the model's max seq len (100000), (4.26 GiB KV cach\n"
        "e is needed, which is larger than the available KV cache memory (4.25 GiB). Based on the avai"
    )
    # no estimate printed: 100000 x (4.25 - 0.005) / (4.26 + 0.005) tokens
    assert read_facts(paste).capacity == 99531
    assert _problems(paste, "vllm serve m --max-model-len 99531") == []
    assert _problems(paste, "vllm serve m --max-model-len 99532") == [
        "asks 99532 tokens; the KV cache holds about 99531 after the command's flags"
    ]


def test_v0_context_must_fit_the_blocks() -> None:
    assert _problems(V0, "vllm serve m --max-model-len 23648") == []
    assert _problems(V0, "vllm serve m --max-model-len 23664") == [
        "asks 23664 tokens; the KV cache holds about 23648 after the command's flags"
    ]


def test_fp8_doubles_the_capacity() -> None:
    assert _problems(V1, "vllm serve m --max-model-len 11264 --kv-cache-dtype fp8") == []
    assert _problems(V1, "vllm serve m --max-model-len 11265 --kv-cache-dtype fp8") == [
        "asks 11265 tokens; the KV cache holds about 11264 after the command's flags"
    ]


def test_fp8_gains_nothing_when_the_run_already_used_it() -> None:
    paste = "vllm serve m --kv-cache-dtype fp8\n" + V1
    assert _problems(paste, "vllm serve m --max-model-len 11264 --kv-cache-dtype fp8") == [
        "asks 11264 tokens; the KV cache holds about 5632 after the command's flags"
    ]


def test_utilization_adds_its_share_of_the_total() -> None:
    # 2.89 GiB (+0.005 printing) for 23648 tokens; 0.93 adds 0.03 x 23.58 GiB: 29386 tokens, 0.92 only 27459
    assert _problems(V0, "vllm serve m --gpu-memory-utilization 0.93") == []
    assert _problems(V0, "vllm serve m --gpu-memory-utilization 0.92") == [
        "asks 29000 tokens; the KV cache holds about 27459 after the command's flags"
    ]


def test_enforce_eager_alone_buys_no_kv_here() -> None:
    assert _problems(V0, "vllm serve m --enforce-eager") == [
        "asks 29000 tokens; the KV cache holds about 23648 after the command's flags"
    ]


def test_utilization_must_fit_what_is_free() -> None:
    assert _problems(FREE, "vllm serve m --gpu-memory-utilization 0.89") == []
    assert _problems(FREE, "vllm serve m --gpu-memory-utilization 0.9") == [
        "utilization 0.9 x 22.05 GiB > 19.77 GiB free"
    ]


def test_impossible_values() -> None:
    assert _problems(FREE, "vllm serve m --gpu-memory-utilization 1.2") == [
        "--gpu-memory-utilization 1.2 is outside (0, 1]"
    ]
    assert _problems(V0, "vllm serve m --max-model-len 0") == [
        "--max-model-len '0' is not a positive integer"
    ]


def test_tp_must_divide_heads_kv_heads_and_mlp() -> None:
    assert _problems(TP, "vllm serve m --tensor-parallel-size 4") == []
    assert _problems(TP, "vllm serve m --tensor-parallel-size 3") == [
        "tensor parallel 3 does not divide the 28 attention heads"
    ]
    alike = sum(1 for m in models() if m.num_attention_heads == 28)  # the catalog grows; none splits by 7
    assert _problems(TP, "vllm serve m --tensor-parallel-size 7") == [
        f"tensor parallel 7 fits none of the {alike} catalogued models with 28 heads "
        "(their KV heads or intermediate_size do not split by it)"
    ]
    named = "vllm serve deepseek-ai/DeepSeek-R1-Distill-Qwen-7B --tensor-parallel-size 8\n" + TP
    assert _problems(
        named, "vllm serve deepseek-ai/DeepSeek-R1-Distill-Qwen-7B --tensor-parallel-size 7"
    ) == [
        "tensor parallel 7 neither divides nor is a multiple of the 4 KV heads",
        "tensor parallel 7 does not divide intermediate_size 18944",
    ]


def test_prose_other_engine_and_model_path() -> None:
    paste = "vllm serve /models/qwen --max-model-len 29000\n" + V0
    assert _problems(paste, "vllm serve /models/qwen --max-model-len 20000") == []
    assert _problems(paste, "vllm serve Qwen/Qwen2.5-7B --max-model-len 20000") == [
        "model 'Qwen/Qwen2.5-7B' instead of the user's '/models/qwen'"
    ]
    assert _problems(paste, "vllm serve /models/qwen dies on my 4090, any idea? --max-model-len 20000") == [
        "not a command line (prose, or no known launcher)"
    ]
    assert _problems(paste, "llama-server -m /models/qwen -c 20000") == [
        "a llama.cpp command line in a vllm fix"
    ]


def test_llamacpp_training_context_and_physical_batch() -> None:
    over = "llama_context: n_ctx_seq (262144) > n_ctx_train (131072) -- possible training context overflow"
    assert _problems(over, "llama-server -m x.gguf -c 131072", "llama.cpp") == []
    assert _problems(over, "llama-server -m x.gguf -c 262144 -np 2", "llama.cpp") == []
    assert _problems(over, "llama-server -m x.gguf -c 262144", "llama.cpp") == [
        "-c 262144 per slot is over the training context 131072"
    ]
    batch = "error: input (11257 tokens) is too large to process. increase the physical batch size (current batch size: 8192)"
    assert _problems(batch, "llama-server -m x.gguf -ub 11257 -b 11257", "llama.cpp") == []
    assert _problems(batch, "llama-server -m x.gguf -ub 11257", "llama.cpp") == [
        "physical batch 2048 (min of -ub and -b) < the input's 11257 tokens"
    ]


def test_fa_value_needs_its_build_and_not_ik_llama() -> None:
    err = "llama_init_from_model: V cache quantization requires flash_attn"
    assert _problems("build: 6325 (abc)\n" + err, "llama-server -m x.gguf -fa on", "llama.cpp") == []
    assert _problems("build: 6000 (abc)\n" + err, "llama-server -m x.gguf -fa on", "llama.cpp") == [
        "-fa on is not in llama.cpp b6000 (llamacpp.fa_value)"
    ]
    assert _problems("ik_llama.cpp\n" + err, "llama-server -m x.gguf -fa on", "llama.cpp") == [
        "-fa on is not in ik_llama.cpp (llamacpp.fa_value)"
    ]


def test_sglang_context_within_the_derived_length() -> None:
    err = "ValueError: User-specified context_length (131072) is greater than the derived context_length (32768)."
    cmd = "python -m sglang.launch_server --model-path m --context-length "
    assert _problems(err, cmd + "32768", "sglang") == []
    assert _problems(err, cmd + "65536", "sglang") == ["asks 65536 tokens, over the derived maximum 32768"]


def test_no_flag_the_printed_version_lacks() -> None:
    paste = "INFO vLLM API server version 0.4.0\n" + V0
    assert _problems(paste, "vllm serve m --max-model-len 20000 --kv-cache-dtype fp8") == [
        "--kv-cache-dtype is not in vllm 0.4.0 (vllm.fp8_kv_cache)"
    ]
    assert (
        _problems(paste.replace("0.4.0", "0.4.2"), "vllm serve m --max-model-len 20000 --kv-cache-dtype fp8")
        == []
    )
