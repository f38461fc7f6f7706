"""Golden tests for vLLM configuration and compatibility errors.

Each family runs its real corpus records (shared/corpus/dev.jsonl, cited by id) end to end, detector ->
diagnosis -> Markdown, and at least one unseen paste with other numbers, prefixes or wrapping.
"""

from __future__ import annotations

import json
import re

import pytest

from bot.detector import detect
from bot.diagnosis import (
    batched_tokens,
    diagnose,
    dtype,
    free_memory,
    invalid_args_vllm,
    max_len,
    quantization,
    rule_for,
    tp,
)
from bot.formatter import to_markdown
from bot.reply import Reply
from tests.conftest import corpus_record


def _run(text: str) -> tuple[Reply, str]:
    reply = diagnose(detect(text))
    assert reply is not None, "nothing diagnosed"
    return reply, to_markdown(reply)


def _corpus(record_id: str) -> tuple[Reply, str]:
    return _run(corpus_record(record_id)["text"])


def _commands(reply: Reply, engine: str = "vllm") -> list[str]:
    return [f.command for f in sorted(reply.fixes, key=lambda f: f.rank) if f.engine == engine]


def _facts(reply: Reply) -> dict[str, tuple[str, str]]:
    return {f.label: (f.value, f.source) for s in reply.sections for f in s.facts}


def _flag(command: str, flag: str) -> str | None:
    m = re.search(rf"(?:^|\s){re.escape(flag)}[ =](\S+)", command)
    return m.group(1) if m else None


def _sentences(summary: str) -> int:
    return len([s for s in re.split(r"(?<=[.!?])\s+", summary.strip()) if s])


def test_rules_are_registered_for_vllm():
    for category, module in (
        ("tp_divisibility", tp),
        ("dtype_unsupported", dtype),
        ("gpu_unsupported", dtype),
        ("quantization_unsupported", quantization),
        ("max_len_exceeds_model", max_len),
        ("batched_tokens_too_small", batched_tokens),
        ("invalid_argument", invalid_args_vllm),
        ("gpu_memory_in_use", free_memory),
    ):
        assert rule_for(category, "vllm") is module.RULES[f"{category}@vllm"]


# ------------------------------------------------------------------------------------------------ tp_divisibility


def test_tp_corpus_adaptthink1_28_heads_on_8_gpus():
    reply, md = _corpus("adaptthink1-tp8-28heads")
    assert reply.category == "tp_divisibility"
    assert "28" in reply.title and "8" in reply.title
    assert reply.data["valid_tp_sizes"] == [1, 2, 4, 7]
    assert all(28 % t == 0 for t in reply.data["valid_tp_sizes"])
    tps = [int(_flag(c, "--tensor-parallel-size")) for c in _commands(reply)]
    assert tps and all(28 % t == 0 for t in tps)
    assert reply.data["suggested_tp"] == 4
    assert reply.data["suggested_tp_pp"] == [4, 2]
    combo = [c for c in _commands(reply) if "--pipeline-parallel-size" in c]
    assert (
        combo
        and _flag(combo[0], "--tensor-parallel-size") == "4"
        and _flag(combo[0], "--pipeline-parallel-size") == "2"
    )
    assert _facts(reply)["attention heads"] == ("28", "log")
    assert "3.5 heads each" in reply.summary
    assert 2 <= _sentences(reply.summary) <= 4
    assert "**28** _(from your log)_" in md


def test_tp_corpus_vllm414_codellama_fastchat_tp6():
    reply, md = _corpus("vllm414-codellama13b-tp5-fastchat")
    assert reply.data["num_attention_heads"] == 40 and reply.data["tp"] == 6
    assert "6.67 heads each" in md
    assert all(40 % t == 0 for t in reply.data["valid_tp_sizes"])
    commands = _commands(reply)
    assert _flag(commands[0], "--tensor-parallel-size") == "4"
    # six GPUs: 2 x 3 uses them all
    assert reply.data["suggested_tp_pp"] == [2, 3]
    assert any(
        _flag(c, "--tensor-parallel-size") == "2" and _flag(c, "--pipeline-parallel-size") == "3"
        for c in commands
    )
    assert all(c.startswith("vllm serve /tmp/CodeLlama-13b-Instruct-hf") for c in commands)
    # the second attempt (tensor_parallel_size=5 in the config line) is explained, not offered
    assert any("tensor_parallel_size=5" in n for n in reply.notes)
    assert all(_flag(c, "--tensor-parallel-size") != "5" for c in commands)


def test_tp_unseen_known_model_keeps_flags_and_uses_kv_heads():
    text = (
        "vllm serve Qwen/Qwen2.5-14B-Instruct -tp 6 --max-model-len 16384\n"
        "2024-01-22 14:32:27 | ERROR | stderr | ValueError: Total number of attention heads (40) must be "
        "divisible by tensor parallel size (6)."
    )
    reply, md = _run(text)
    # 40 heads, 8 KV heads, MLP 13824: 5 divides the heads but not the KV heads
    assert reply.data["valid_tp_sizes"] == [1, 2, 4, 8]
    assert "- KV heads: **8** _(catalog)_" in md
    assert _facts(reply)["KV heads"] == ("8", "catalog")
    first = _commands(reply)[0]
    assert _flag(first, "--tensor-parallel-size") == "4"
    assert "-tp 6" not in first and "--max-model-len 16384" in first
    assert "Qwen/Qwen2.5-14B-Instruct" in first


def test_tp_unseen_wrapped_engine_core_64_heads_on_3():
    text = (
        "(EngineCore_DP0 pid=77) ValueError: Total number of attention heads (64) must be divisible by tensor\n"
        "parallel size (3)."
    )
    reply, _ = _run(text)
    assert reply.data["tp"] == 3 and reply.data["suggested_tp"] == 2
    # 3 GPUs: tp 2 leaves one idle; pure pipeline parallelism (1 x 3) uses all three
    assert reply.data["suggested_tp_pp"] == [1, 3]
    assert all(64 % t == 0 for t in reply.data["valid_tp_sizes"])


def test_tp_pipeline_needs_upgrade_on_old_vllm():
    text = (
        "INFO 04-19 17:25:10 api_server.py:149] vLLM API server version 0.4.0.post1\n"
        "ValueError: Total number of attention heads (28) must be divisible by tensor parallel size (8)"
    )
    reply, _ = _run(text)
    combo = next(f for f in reply.fixes if "pipeline-parallel" in f.change)
    assert combo.command.startswith('pip install -U "vllm>=0.5.1"')
    assert "0.4.0" in combo.cost


# ------------------------------------------------------------------------------------------------ dtype_unsupported


def test_dtype_corpus_substratus37_t4():
    reply, md = _corpus("substratus37-t4-bf16")
    assert reply.category == "dtype_unsupported"
    assert "Tesla T4" in reply.title and "7.5" in reply.title
    facts = _facts(reply)
    assert facts["GPU"] == ("Tesla T4", "log")
    assert facts["compute capability"] == ("7.5", "log")
    assert _flag(_commands(reply)[0], "--dtype") == "half"
    assert "0.11" in reply.summary  # automatic fallback on newer vLLM
    assert "65,504" in md  # the float16 overflow risk
    assert 2 <= _sentences(reply.summary) <= 4


def test_dtype_corpus_vllm1284_p100_is_below_vllm_minimum():
    reply, md = _corpus("vllm1284-p100-bf16-cc6")
    assert reply.category == "dtype_unsupported"
    assert "- compute capability: **6.0** _(from your log)_" in md
    assert "P100" in reply.title and "6.0" in reply.title and "7.0" in reply.title
    # --dtype half would not help: vLLM refuses compute capability 6.0 anyway
    assert "--dtype half would only get past" in reply.summary
    engines = {f.engine for f in reply.fixes}
    assert {"llama.cpp", "ollama"} <= engines
    assert "llama-server" in _commands(reply, "llama.cpp")[0]
    assert _facts(reply)["compute capability"] == ("6.0", "log")


def test_dtype_unseen_explicit_bf16_on_v100_new_vllm():
    text = (
        "INFO 10-02 11:00:00 [api_server.py:1] vLLM API server version 0.11.0\n"
        "vllm serve google/gemma-2-9b-it --dtype bfloat16 --max-model-len 8192\n"
        "(EngineCore_DP0 pid=9) ValueError: Bfloat16 is only supported on GPUs with compute capability of at "
        "least 8.0. Your Tesla V100-SXM2-32GB GPU has compute capability 7.0. You can use float16 instead by "
        "explicitly setting the `dtype` flag in CLI, for example: --dtype=half."
    )
    reply, md = _run(text)
    commands = _commands(reply)
    assert "gemma2 models are known to overflow in float16" in md
    assert _flag(commands[0], "--dtype") == "half"
    assert "bfloat16" not in commands[0] and "--max-model-len 8192" in commands[0]
    assert any(_flag(c, "--dtype") == "auto" for c in commands)  # >= 0.11 falls back by itself
    assert "you asked for bfloat16 explicitly" in reply.summary
    assert any("float32" in n for n in reply.notes)


def test_dtype_unseen_quant_dtype_and_fallback_warning():
    reply, _ = _run(
        "ValueError: torch.bfloat16 is not supported for quantization method awq. Supported dtypes: [torch.float16]"
    )
    assert _flag(_commands(reply)[0], "--dtype") == "half"
    assert "awq" in reply.title
    warn = (
        "WARNING 09-01 10:00:00 [cuda.py:100] Your device 'Tesla T4' (with compute capability 7.5) doesn't "
        "support torch.bfloat16. Falling back to torch.float16 for compatibility."
    )
    reply, _ = _run(warn)
    assert "by itself" in reply.title and "Tesla T4" in reply.title


# ------------------------------------------------------------------------------------------------ gpu_unsupported


def test_gpu_unsupported_unseen_known_model():
    text = (
        "vllm serve Qwen/Qwen2.5-7B-Instruct\n"
        '  File "/usr/lib/python3/site-packages/vllm/worker/worker.py", line 80, in init_device\n'
        "RuntimeError: GPUs with compute capability below 7.0 are not supported."
    )
    reply, md = _run(text)
    assert reply.category == "gpu_unsupported"
    assert "7.0" in reply.title
    assert _commands(reply, "ollama") == ["ollama run qwen2.5:7b"]
    assert "Qwen2.5-7B-Instruct-Q4_K_M.gguf" in _commands(reply, "llama.cpp")[0]
    assert "Pascal" in md or "compute capability 5.0" in md


# ------------------------------------------------------------------------------------------------ quantization_unsupported


def test_quant_corpus_vllm4327_fp8_on_ampere():
    reply, md = _corpus("vllm4327-fp8-cc86")
    assert reply.category == "quantization_unsupported"
    assert "- your GPU's capability: **8.6** _(from your log)_" in md
    assert "fp8" in reply.title and "9.0" in reply.title and "8.6" in reply.title
    assert _facts(reply)["minimum capability"] == ("9.0", "log")
    # a newer vLLM dropped fp8's minimum to 8.0 (Marlin, weight-only)
    assert reply.data["upgrade_to"] == "0.11.0"
    upgrade = next(f for f in reply.fixes if f.change.startswith("upgrade vLLM"))
    assert 'pip install -U "vllm>=0.11.0"' in upgrade.command and "Marlin" in upgrade.effect
    assert any(f.engine == "llama.cpp" for f in reply.fixes)


def test_quant_corpus_vllm4202_awq_on_v100_wrapped_args():
    reply, md = _corpus("vllm4202-awq-v100-wrapped-args")
    assert "- model: **/data/qwen1.5/Qwen1.5-32B-Chat-AWQ** _(from your log)_" in md
    assert "awq" in reply.title and "7.5" in reply.title and "7.0" in reply.title
    assert reply.data["upgrade_to"] is None  # AWQ's minimum never dropped
    gptq = next(f for f in reply.fixes if "GPTQ" in f.change)
    assert _flag(gptq.command, "--quantization") == "gptq"
    assert _flag(gptq.command, "--dtype") == "half"  # Volta has no bfloat16
    assert "Qwen1.5-32B-Chat" in gptq.command
    # vLLM 0.4.0 is in the paste: no bitsandbytes (needs >= 0.5), no version note
    assert not any("bitsandbytes" in f.change for f in reply.fixes)
    assert not any("version not in the paste" in n for n in reply.notes)


def test_quant_unseen_gptq_marlin_on_turing_keeps_command():
    text = (
        "vllm serve Qwen/Qwen2.5-7B-Instruct-GPTQ-Int4 --quantization gptq_marlin --max-model-len 8192\n"
        "(EngineCore_DP0 pid=12) ValueError: The quantization method gptq_marlin is not supported for the current GPU.\n"
        "Minimum capability: 80. Current capability: 75."
    )
    reply, _ = _run(text)
    first = _commands(reply)[0]
    assert _flag(first, "--quantization") == "gptq" and "gptq_marlin" not in first
    assert "--max-model-len 8192" in first and _flag(first, "--dtype") == "half"


def test_quant_unseen_awq_catalog_checkpoint_swapped_in():
    text = (
        "vllm serve Qwen/Qwen2.5-32B-Instruct-AWQ --max-model-len 8192\n"
        "ValueError: The quantization method awq is not supported for the current GPU. Minimum capability: 75. "
        "Current capability: 70."
    )
    reply, _ = _run(text)
    gptq = next(f for f in reply.fixes if "GPTQ" in f.change)
    assert gptq.command.startswith("vllm serve Qwen/Qwen2.5-32B-Instruct-GPTQ-Int4 ")
    assert "--max-model-len 8192" in gptq.command


def test_quant_unseen_fp8_on_t4_with_vllm_011_points_to_newer_release():
    text = (
        "INFO 10-02 11:00:00 [api_server.py:1] vLLM API server version 0.11.0\n"
        "ValueError: The quantization method fp8 is not supported for the current GPU. Minimum capability: 80. "
        "Current capability: 75."
    )
    reply, _ = _run(text)
    assert reply.data["upgrade_to"] == "0.33.0"


# ------------------------------------------------------------------------------------------------ max_len_exceeds_model


def test_max_len_corpus_transformers39976_gguf_config():
    reply, md = _corpus("transformers39976-qwen3moe-gguf")
    assert reply.category == "max_len_exceeds_model"
    assert "- max_model_len asked for: **131,072** _(from your log)_" in md
    assert "131,072" in reply.title and "32,768" in reply.title
    facts = _facts(reply)
    assert facts["limit vLLM derived (max_position_embeddings)"] == ("32,768", "log")
    assert _flag(_commands(reply)[0], "--max-model-len") == "32768"
    assert any("GGUF" in n and "39976" in n for n in reply.notes)
    allow = next(f for f in reply.fixes if "VLLM_ALLOW_LONG_MAX_MODEL_LEN=1" in f.command)
    assert "garbage" in allow.cost
    yarn = next(f for f in reply.fixes if "YaRN" in f.change)
    overrides = json.loads(yarn.command.split("--hf-overrides '")[1].split("'")[0])
    # v0.33 assumed: rope_parameters, and max_position_embeddings raised since YaRN no longer scales it (>= 0.30)
    assert overrides["rope_parameters"]["factor"] == 4.0
    assert overrides["max_position_embeddings"] == 131072


def test_max_len_unseen_llama31_float_derived_no_yarn_on_llama3_rope():
    text = (
        "INFO 05-01 10:00:00 api_server.py:1] vLLM API server version 0.8.5\n"
        "vllm serve meta-llama/Llama-3.1-8B-Instruct --max-model-len 262144 --gpu-memory-utilization 0.95\n"
        "ValueError: User-specified max_model_len (262144) is greater than the derived max_model_len "
        "(max_position_embeddings=131072.0 or model_max_length=None in model's config.json). This may lead to "
        "incorrect model outputs or CUDA errors. To allow overriding this maximum, set the env var "
        "VLLM_ALLOW_LONG_MAX_MODEL_LEN=1"
    )
    reply, _ = _run(text)
    first = _commands(reply)[0]
    assert _flag(first, "--max-model-len") == "131072" and "--gpu-memory-utilization 0.95" in first
    assert not any("--hf-overrides" in c for c in _commands(reply))  # llama3 RoPE is already scaled
    assert _facts(reply)["rope_scaling"][1] == "catalog"


def test_max_len_unseen_qwen25_on_vllm_010_uses_rope_scaling_key():
    text = (
        "INFO 08-01 10:00:00 [api_server.py:1] vLLM API server version 0.10.1\n"
        "vllm serve Qwen/Qwen2.5-7B-Instruct --max-model-len 131072\n"
        "ValueError: User-specified max_model_len (131072) is greater than the derived max_model_len "
        "(max_position_embeddings=32768 or model_max_length=None in model's config.json)."
    )
    reply, _ = _run(text)
    yarn = next(f for f in reply.fixes if "YaRN" in f.change)
    overrides = json.loads(yarn.command.split("--hf-overrides '")[1].split("'")[0])
    assert overrides == {
        "rope_scaling": {"rope_type": "yarn", "factor": 4.0, "original_max_position_embeddings": 32768}
    }
    assert _flag(yarn.command, "--max-model-len") == "131072"


def test_max_len_unseen_gguf_file_gets_hf_config_path():
    text = (
        "vllm serve ./Qwen3-30B-A3B-Q4_K_M.gguf --max-model-len 131072\n"
        "User-specified max_model_len (131072) is greater than the derived max_model_len (max_position_embeddings=32768 "
        "or model_max_length=None in model's config.json)."
    )
    reply, _ = _run(text)
    assert reply.data["gguf"] is True
    assert "GGUF" in reply.summary
    assert any("--hf-config-path" in c for c in _commands(reply))


# ------------------------------------------------------------------------------------------------ batched_tokens_too_small


def test_batched_corpus_repodoc_1m_rope():
    reply, md = _corpus("repodoc-1m-rope-batched-1010000")
    assert reply.category == "batched_tokens_too_small"
    assert "- max_model_len: **1,010,000** _(from your log)_" in md
    assert "4,096" in reply.title and "1,010,000" in reply.title
    first = _commands(reply)[0]
    assert "--enable-chunked-prefill" in first
    raise_fix = next(f for f in reply.fixes if f.change.startswith("raise max_num_batched_tokens"))
    assert _flag(raise_fix.command, "--max-num-batched-tokens") == "1010000"
    assert "activation" in raise_fix.cost and "247x" in raise_fix.cost
    assert _facts(reply)["max_num_batched_tokens"] == ("4,096", "log")


def test_batched_unseen_drops_no_chunked_prefill_and_estimates_activations():
    text = (
        "vllm serve Qwen/Qwen2.5-7B-Instruct --max-model-len 32768 --max-num-batched-tokens 2048 "
        "--no-enable-chunked-prefill\n"
        "ValueError: max_num_batched_tokens (2048) is smaller than max_model_len (32768). This effectively "
        "limits the maximum sequence length to max_num_batched_tokens and makes vLLM reject longer sequences. "
        "Please increase max_num_batched_tokens or decrease max_model_len."
    )
    reply, _ = _run(text)
    first = _commands(reply)[0]
    assert "--no-enable-chunked-prefill" not in first and "--enable-chunked-prefill" in first
    assert "--max-model-len 32768" in first
    facts = _facts(reply)
    assert facts["activation peak at 32,768 tokens"][1] == "estimated"
    raise_fix = next(f for f in reply.fixes if f.change.startswith("raise max_num_batched_tokens"))
    assert _flag(raise_fix.command, "--max-num-batched-tokens") == "32768"
    assert "GiB" in raise_fix.cost


# ------------------------------------------------------------------------------------------------ invalid_argument


def test_invalid_batched_lt_seqs():
    text = "vllm serve Qwen/Qwen2.5-7B-Instruct --max-num-batched-tokens 128\nValueError: max_num_batched_tokens (128) must be greater than or equal to max_num_seqs (256)."
    reply, _ = _run(text)
    commands = _commands(reply)
    assert _flag(commands[0], "--max-num-seqs") == "128" and "--max-num-batched-tokens 128" in commands[0]
    assert _flag(commands[1], "--max-num-batched-tokens") == "256"
    assert any("default" in n for n in reply.notes)


def test_invalid_kv_cache_dtype_lists_valid_values_from_log():
    text = (
        "vllm serve Qwen/Qwen2.5-7B-Instruct --kv-cache-dtype int8\n"
        "ValueError: Invalid kv_cache_dtype: 'int8'. Valid values are: ['auto', 'fp8', 'fp8_e4m3', 'fp8_e5m2']"
    )
    reply, _ = _run(text)
    assert _facts(reply)["valid values"] == ("auto, fp8, fp8_e4m3, fp8_e5m2", "log")
    first = _commands(reply)[0]
    assert _flag(first, "--kv-cache-dtype") == "fp8" and "int8" not in first


# ------------------------------------------------------------------------------------------------ gpu_memory_in_use


@pytest.mark.parametrize("record_id", ["pytorch175666-free-mem-startup", "vllmomni276-a100-qwen3omni"])
def test_memory_in_use_corpus_numbers(record_id):
    record = corpus_record(record_id)
    reply, md = _run(record["text"])
    facts = record["facts"]
    assert reply.category == "gpu_memory_in_use"
    assert f"- free at startup: **{facts['free_gib']:g} GiB** _(from your log)_" in md
    for value in (facts["free_gib"], facts["gpu_total_gib"], facts["requested_gib"]):
        assert f"{value:g}" in reply.title
    numbers = _facts(reply)
    assert numbers["free at startup"] == (f"{facts['free_gib']:g} GiB", "log")
    assert numbers["total GPU memory"] == (f"{facts['gpu_total_gib']:g} GiB", "log")
    assert "total" in reply.summary and "free" in reply.summary
    assert any(
        "nvidia-smi --query-compute-apps=pid,used_memory --format=csv" in c for c in _commands(reply, "any")
    )
    util = reply.data["suggested_utilization"]
    if util is not None:
        assert util * facts["gpu_total_gib"] <= facts["free_gib"]
        assert any(_flag(c, "--gpu-memory-utilization") == f"{util:.2f}" for c in _commands(reply))


def test_memory_in_use_corpus_pytorch175666_utilization():
    reply, md = _corpus("pytorch175666-free-mem-startup")
    assert reply.data["suggested_utilization"] == 0.88
    assert "cuda:1" in reply.title
    assert "--kv-cache-memory-bytes" in md
    assert any("v0.15" in n for n in reply.notes)


def test_memory_in_use_corpus_vllmomni276_stages_must_sum_below_one():
    reply, md = _corpus("vllmomni276-a100-qwen3omni")
    assert "v0.11-v0.13" in md  # the wording without a device name dates the paste
    assert reply.data["suggested_utilization"] is None  # 0.49 GiB free: lowering cannot help
    assert "cannot help" in reply.summary
    # the stages ask 0.6 + 0.99 (held) of the GPU: scaled so they sum below 1, in the same proportion
    others, this = reply.data["split_utilizations"]
    assert (others, this) == (0.61, 0.36)
    assert others + this < 1
    split = next(f for f in reply.fixes if "split the GPU" in f.change)
    assert "gpu_memory_utilization: 0.61" in split.command and "gpu_memory_utilization: 0.36" in split.command
    assert "78.83 GiB" in reply.summary


def test_memory_in_use_unseen_wrapped_keeps_command():
    text = (
        "vllm serve Qwen/Qwen2.5-1.5B-Instruct --max-model-len 16384 --gpu-memory-utilization 0.92\n"
        "ValueError: Free memory on device cuda:0 (10.5/23.54 GiB) on startup is less than desired\n"
        "GPU memory utilization (0.92, 21.66 GiB). Decrease GPU memory utilization or reduce GPU memory\n"
        "used by other processes."
    )
    reply, md = _run(text)
    util = reply.data["suggested_utilization"]
    assert util == 0.43 and util * 23.54 <= 10.5
    first = _commands(reply)[0]
    assert _flag(first, "--gpu-memory-utilization") == "0.43" and "--max-model-len 16384" in first
    assert "0.92" not in first
    pinned = next(f for f in reply.fixes if "--kv-cache-memory-bytes" in f.command)
    assert re.search(r"--kv-cache-memory-bytes \d+G\b", pinned.command)
    assert "GPU memory when vLLM started" in md


def test_memory_in_use_external_weights_and_profiling():
    reply, _ = _run(
        "ValueError: Externally held weights on device cuda:0 (70.2/79.19 GiB) exceed the desired GPU memory "
        "utilization (0.8, 63.35 GiB). Increase GPU memory utilization or reduce GPU memory used by other processes."
    )
    util = float(_flag(_commands(reply)[0], "--gpu-memory-utilization"))
    assert util * 79.19 > 70.2
    reply, _ = _run(
        "AssertionError: Error in memory profiling. Initial free memory 46.8 GiB, current free memory 47.3 GiB. "
        "This happens when other processes sharing the same container release GPU memory while vLLM is "
        "profiling during initialization."
    )
    assert "46.80" in reply.title and "47.30" in reply.title
    assert _facts(reply)["released by another process"] == ("0.50 GiB", "computed")
    assert any("--kv-cache-memory-bytes" in c for c in _commands(reply))
    # the byte-count wording is vLLM 0.8-0.10: no --kv-cache-memory-bytes there
    reply, _ = _run(
        "AssertionError: Error in memory profiling. Initial free memory 31457280000, current free memory "
        "31665995776. This happens when the GPU memory was not properly cleaned up before initializing the vLLM "
        "instance."
    )
    assert not any("--kv-cache-memory-bytes" in c for c in _commands(reply))
    assert any("0.8-0.10" in n for n in reply.notes)
    reply, _ = _run(
        "ValueError: Free memory on device cuda:0 (5.1/79.19 GiB) on startup is less than the engine's budget "
        "after excluding external process's weights (0.92, 8.4 GiB). Decrease GPU memory utilization or reduce "
        "GPU memory used by other processes."
    )
    util = float(_flag(_commands(reply)[0], "--gpu-memory-utilization"))
    # the engine's budget (8.4 GiB at 0.92) shrinks with the utilization until it fits in the 5.1 GiB free
    assert 8.4 - (0.92 - util) * 79.19 <= 5.1


def test_fitting_utilization_never_exceeds_free():
    for free, total in [(19.77, 22.05), (10.5, 23.54), (70.0, 79.32), (40.0, 44.4), (5.0, 15.76)]:
        util = free_memory.fitting_utilization(free, total)
        assert util * total <= free
        assert util == round(util, 2)
