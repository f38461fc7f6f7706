"""Golden tests for the memory families: no_kv_memory (vLLM, SGLang, TGI), kv_cache_too_small@tgi,
gpu_oom (PyTorch, vLLM, llama.cpp, SGLang, TGI, Ollama), kv_alloc_failed and the vLLM Mamba-block reply.

Each corpus record (shared/corpus/dev.jsonl, cited by id) and each unseen paste runs through
detect -> diagnose -> to_markdown; the asserts check the root cause, the user's own numbers and that the
computed fix values really do what the reply claims.
"""

from __future__ import annotations

import re

import pytest

from bot.detector import detect
from bot.diagnosis import (
    diagnose,
    kv_alloc,
    mamba,
    no_kv_sglang,
    no_kv_vllm,
    oom_llamacpp,
    oom_ollama,
    oom_sglang,
    oom_tgi,
    oom_torch,
    oom_vllm,
    rule_for,
    tgi,
)
from bot.facts import gather
from bot.formatter import to_markdown
from bot.reply import Fix, Reply
from tests.conftest import corpus_record


def run(text: str) -> tuple[Reply, str]:
    reply = diagnose(detect(text))
    assert reply is not None
    return reply, to_markdown(reply)


def corpus(record_id: str) -> tuple[Reply, str]:
    return run(corpus_record(record_id)["text"])


def fix(reply: Reply, needle: str, engine: str | None = None) -> Fix:
    found = [f for f in reply.fixes if needle in f.command and (engine is None or f.engine == engine)]
    assert found, f"no fix with {needle!r}: {[f.command for f in reply.fixes]}"
    return found[0]


def fact(reply: Reply, label: str) -> str:
    for section in reply.sections:
        for f in section.facts:
            if label in f.label:
                return f.value
    raise AssertionError(f"no fact {label!r}")


def number(text: str) -> float:
    m = re.search(r"-?[0-9][0-9,]*(?:\.[0-9]+)?", text)
    assert m, text
    return float(m.group(0).replace(",", ""))


def top(reply: Reply, engine: str) -> Fix:
    return reply.fixes_by_engine()[engine][0]


# ------------------------------------------------------------------------------------------ the table


def test_rules_are_registered_per_engine():
    assert rule_for("no_kv_memory", "vllm") is no_kv_vllm.vllm_no_kv_memory
    assert rule_for("no_kv_memory", "sglang") is no_kv_sglang.sglang_no_kv_memory
    assert rule_for("no_kv_memory", "tgi") is tgi.tgi_warmup_no_memory
    assert rule_for("kv_cache_too_small", "tgi") is tgi.tgi_kv_cache_too_small
    assert rule_for("kv_alloc_failed", "llama.cpp") is kv_alloc.llamacpp_kv_alloc_failed
    for engine, rule in (
        ("pytorch", oom_torch.pytorch_gpu_oom),
        ("vllm", oom_vllm.vllm_gpu_oom),
        ("llama.cpp", oom_llamacpp.llamacpp_gpu_oom),
        ("sglang", oom_sglang.sglang_gpu_oom),
        ("tgi", oom_tgi.tgi_gpu_oom),
        ("ollama", oom_ollama.ollama_gpu_oom),
    ):
        assert rule_for("gpu_oom", engine) is rule


# ------------------------------------------------------------------------------------------ vLLM no_kv_memory


def test_vllm10439_no_cache_blocks_without_numbers():
    reply, md = corpus("vllm10439-qwen05b-compose")
    assert reply.category == "no_kv_memory"
    assert "no memory left for the KV cache" in reply.title
    # the root cause: util is a fraction of the *total*, and the too-low-util corpus case is named
    assert "*total*" in reply.summary and "0.03-0.4" in reply.summary
    assert "--gpu-memory-utilization 0.9" in top(reply, "vllm").command
    assert "expandable_segments" not in md


def test_vllm14574_engine_core_cut_off_after_weights():
    reply, _ = corpus("vllm14574-ci-buildkite")
    assert "cut off" in reply.title and "245 MiB" in reply.title  # 0.2389 GiB from the log
    assert fact(reply, "weights") == "0.24 GiB"
    assert "including other processes" in reply.summary.lower()
    shared = fix(reply, "second engine")
    assert "0.4" in shared.command and "0.85" in shared.command
    # 0.24 GiB of weights: quantizing them is no fix
    assert not any("fp8" in f.command for f in reply.fixes)


def test_unseen_v0_log_computes_the_utilization_that_fits():
    paste = (
        "$ vllm serve Qwen/Qwen2.5-0.5B-Instruct --gpu-memory-utilization 0.1 --max-model-len 8192\n"
        "INFO 05-30 06:40:55 worker.py:267] the current vLLM instance can use total_gpu_memory (14.56GiB) x "
        "gpu_memory_utilization (0.10) = 1.46GiB\n"
        "INFO 05-30 06:40:55 worker.py:267] model weights take 0.93GiB; non_torch_memory takes 0.05GiB; PyTorch "
        "activation peak memory takes 1.20GiB; the rest of the memory reserved for KV Cache is -0.72GiB.\n"
        "ERROR 05-30 06:40:56 engine.py:366] ValueError: No available memory for the cache blocks. Try increasing "
        "`gpu_memory_utilization` when initializing the engine.\n"
    )
    reply, md = run(paste)
    assert "2.18 GiB" in reply.title and "1.46 GiB" in reply.title  # 1.46 budget + 0.72 over
    assert fact(reply, "over the budget") == "0.72 GiB"
    util = reply.data["suggested_util"]
    assert util == pytest.approx(0.17)
    raise_util = fix(reply, "--gpu-memory-utilization 0.17")
    # the KV cache it claims: 0.17 x 14.56 - 2.18 = 0.30 GiB, which holds the 8,192-token request
    kv = 0.17 * 14.56 - (1.46 + 0.72)
    assert f"{kv:.2f} GiB left for the KV cache" in raise_util.effect
    tokens = number(raise_util.effect.split("about ")[1])
    assert tokens >= 8192
    assert tokens == pytest.approx(kv * 2**30 / 12288, rel=0.01)  # Qwen2.5-0.5B: 12 KiB per token
    # V0 lines: no CUDA-graph estimate in this budget, so neither the env switch nor a graph segment
    assert "VLLM_MEMORY_PROFILER_ESTIMATE_CUDAGRAPHS" not in md
    assert "--enable-chunked-prefill" in fix(reply, "--max-num-batched-tokens 2048").command


def test_unseen_v022_large_cudagraph_estimate_comes_first():
    paste = (
        "INFO 01-01 10:00:00 [api_server.py:1] vLLM API server version 0.22.0\n"
        "$ vllm serve Qwen/Qwen3-32B --gpu-memory-utilization 0.92 --max-model-len 32768\n"
        "(EngineCore_DP0 pid=5) INFO 01-01 10:00:01 [gpu_worker.py:330] Free memory on device cuda:0 (78.6/79.19 "
        "GiB) on startup. Desired GPU memory utilization is (0.92, 72.85 GiB).\n"
        "(EngineCore_DP0 pid=5) INFO 01-01 10:01:00 [gpu_model_runner.py:2100] Model loading took 61.03 GiB memory "
        "and 40.2 seconds\n"
        "(EngineCore_DP0 pid=5) INFO 01-01 10:01:30 [gpu_worker.py:400] Estimated CUDA graph memory: 9.50 GiB total\n"
        "(EngineCore_DP0 pid=5) ValueError: No available memory for the cache blocks. Try increasing "
        "`gpu_memory_utilization` when initializing the engine.\n"
    )
    reply, _ = run(paste)
    assert "CUDA graphs" in reply.title
    first = top(reply, "vllm")
    assert first.command.startswith("VLLM_MEMORY_PROFILER_ESTIMATE_CUDAGRAPHS=0 vllm serve Qwen/Qwen3-32B")
    # it caps util at 0.9 so the (now unbudgeted) graphs fit outside it, and says what KV that leaves
    assert "--gpu-memory-utilization 0.9" in first.command
    assert "9.50 GiB" in first.effect and "at util 0.9" in first.effect


# ------------------------------------------------------------------------------------------ SGLang no_kv_memory


def test_sglang4330_stuck_between_two_fractions():
    reply, _ = corpus("sglang4330-l40s-084-vs-085")
    assert "0.84" in reply.title and "0.85" in reply.title
    assert "raising the fraction alone cannot work" in reply.summary
    # no advice to raise the fraction: the higher value ran out of memory on the other side
    assert not any("raise --mem-fraction-static" in f.change for f in reply.fixes)
    commands = " ".join(f.command for f in reply.fixes)
    for lever in ("--chunked-prefill-size", "--cuda-graph-max-bs", "--speculative-num-draft-tokens"):
        assert lever in commands
    assert top(reply, "sglang").rank <= 2


def test_unseen_sglang_fraction_for_the_wanted_context():
    paste = (
        "python -m sglang.launch_server --model-path Qwen/Qwen3-8B --mem-fraction-static 0.6 --context-length 32768\n"
        "[2026-01-12 09:13:40 TP0] Load weight begin. avail mem=23.12 GB\n"
        "[2026-01-12 09:14:01 TP0] Load weight end. elapsed=20.1 s, type=Qwen3ForCausalLM, dtype=torch.bfloat16, "
        "avail mem=7.85 GB, mem usage=15.27 GB.\n"
        "[2026-01-12 09:14:03 TP0] ValueError: Loaded weights leave no GPU memory for the KV cache under "
        "--mem-fraction-static=0.6. Raise --mem-fraction-static above 0.661 (minimum viable = 1 - available/pre = "
        "0.6605). If using speculative decoding, draft weights are now counted.\n"
    )
    reply, _ = run(paste)
    assert "0.6" in reply.title and "0.661" in reply.title
    assert fact(reply, "pool is just empty") == "0.6605"
    raise_it = fix(reply, "--mem-fraction-static 0.86")
    # the pool at 0.86 holds the 32,768 tokens: 0.86 x 23.12 - 15.27 GiB >= 32,768 x 144 KiB
    pool = 0.86 * 23.12 - 15.27
    assert pool * 2**30 >= 32768 * 147456
    assert "--context-length 32768" in raise_it.command
    # and it warns that this eats SGLang's own activation reserve for a 24 GB card
    assert "expect a CUDA OOM" in raise_it.cost
    assert any("--kv-cache-dtype fp8_e5m2" in f.command and "0.76" in f.effect for f in reply.fixes)


# ------------------------------------------------------------------------------------------ TGI


def test_tgi1164_tiny_prefill_means_the_weights_fill_the_gpu():
    reply, _ = corpus("tgi1164-warmup-256-prefill")
    assert "256-token prefill" in reply.title
    assert fact(reply, "--max-batch-prefill-tokens") == "256"
    assert fact(reply, "--max-input-tokens") == "64"
    assert "weights themselves" in reply.summary
    assert "--quantize" in top(reply, "tgi").command
    prefill = fix(reply, "--max-batch-prefill-tokens 128")  # half of 256, still >= --max-input-tokens 64
    assert ">= --max-input-tokens (64)" in prefill.effect


def test_unseen_tgi_warmup_halves_the_prefill_budget_above_max_input():
    paste = (
        "text-generation-launcher --model-id meta-llama/Llama-3.1-8B-Instruct --max-input-tokens 8000 "
        "--max-total-tokens 16000 --max-batch-prefill-tokens 16384\n"
        "RuntimeError: Not enough memory to handle 16384 prefill tokens. You need to decrease "
        "`--max-batch-prefill-tokens`\n"
    )
    reply, _ = run(paste)
    first = top(reply, "tgi")
    assert "--max-batch-prefill-tokens 8192" in first.command
    assert "--max-input-tokens 8000" in first.command  # 8,192 >= 8,000: the input cap can stay
    assert reply.data["suggested_prefill_tokens"] == 8192


def test_unseen_tgi_max_total_tokens_above_the_kv_pool():
    paste = (
        "text-generation-launcher --model-id mistralai/Mistral-7B-Instruct-v0.3 --max-input-tokens 30000 "
        "--max-total-tokens 32768 --max-batch-prefill-tokens 30000\n"
        'Error: ArgumentValidation("`max_total_tokens` must be <= `max_batch_total_tokens`. Given: 32768 and 20480")\n'
    )
    reply, _ = run(paste)
    assert reply.category == "kv_cache_too_small"
    assert "20,480" in reply.title and "32,768" in reply.title
    first = top(reply, "tgi")
    assert "--max-total-tokens 20480" in first.command
    new_input = int(re.search(r"--max-input-tokens (\d+)", first.command).group(1))
    new_prefill = int(re.search(r"--max-batch-prefill-tokens (\d+)", first.command).group(1))
    assert new_input < 20480 and new_input <= new_prefill <= 20480  # TGI's own argument rules
    assert fact(reply, "KV pool size") == "2.50 GiB"  # 20,480 x 128 KiB (Mistral 7B)
    # a smaller prefill budget must drag --max-input-tokens down with it
    smaller = fix(reply, "--max-batch-prefill-tokens 14336")
    assert "--max-input-tokens 14336" in smaller.command


# ------------------------------------------------------------------------------------------ PyTorch OOM


def test_easyedit563_absurd_request_is_a_shape_bug():
    reply, md = corpus("easyedit563-llama32-3b-355gib")
    assert reply.data["oom_kind"] == "absurd"
    assert "355.43 GiB" in reply.title and "79.32 GiB" in reply.title and "4.5x" in reply.title
    assert "padded to max_length" in reply.summary
    assert fact(reply, "free on the GPU") == "18.06 GiB"
    assert fact(reply, "allocated by PyTorch") == "52.51 GiB"
    assert fact(reply, "reserved but unallocated") == "8.25 GiB"
    assert fact(reply, "this process") == "61.25 GiB"
    assert 'padding="longest"' in top(reply, "transformers").command
    # 8.25 GiB cached is nothing against 355 GiB: no allocator flag
    assert "expandable_segments" not in md


def test_oobabooga1041_kv_growth_on_a_full_card():
    reply, md = corpus("oobabooga1041-rtx2070-llama-kvcat")
    assert reply.data["oom_kind"] == "growth"
    assert "20.00 MiB" in reply.title and "8.00 GiB" in reply.title and "6.63 GiB" in reply.title
    assert "past_key_value" in reply.summary
    assert fact(reply, "reserved by PyTorch") == "7.29 GiB"
    assert "max_new_tokens" in top(reply, "transformers").command
    assert "expandable_segments" not in md
    cap = fix(reply, "max_memory")
    assert '{0: "6GiB"' in cap.command  # 8 GiB card - 1.5 GiB kept for activations / KV


def test_unseen_fragmentation_gets_expandable_segments():
    paste = (
        "torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 2.50 GiB. GPU 0 has a total capacity of "
        "23.64 GiB of which 1.10 GiB is free. Including non-PyTorch memory, this process has 22.52 GiB memory in "
        "use. Of the allocated memory 17.80 GiB is allocated by PyTorch, and 4.30 GiB is reserved by PyTorch but "
        "unallocated.\n"
    )
    reply, md = run(paste)
    assert reply.data["oom_kind"] == "fragmentation"
    assert "fragmentation is not the main problem" not in md
    assert "4.30 GiB" in reply.title and "2.50 GiB" in reply.title
    first = reply.fixes[0]
    assert first.command.startswith("PYTORCH_CUDA_ALLOC_CONF=expandable_segments:True")
    assert reply.memory is not None and reply.memory.total_gib == pytest.approx(23.64)


def test_unseen_weights_larger_than_the_card():
    paste = (
        'pipe = pipeline("text-generation", model="meta-llama/Llama-3.1-70B-Instruct", device=0)\n'
        "torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 448.00 MiB. GPU 0 has a total capacity of "
        "79.25 GiB of which 300.00 MiB is free. Including non-PyTorch memory, this process has 78.94 GiB memory in "
        "use. Of the allocated memory 78.31 GiB is allocated by PyTorch, and 120.00 MiB is reserved by PyTorch but "
        "unallocated.\n"
    )
    reply, md = run(paste)
    assert reply.data["oom_kind"] == "weights"
    assert "131.42 GiB" in reply.title  # 70.55 B parameters x 2 bytes
    assert "load_in_4bit" in top(reply, "transformers").command
    assert "When software cannot bridge it" in md
    assert "expandable_segments" not in md


# ------------------------------------------------------------------------------------------ vLLM CUDA-graph OOM


def test_vllm15598_util_098_leaves_no_room_for_graphs():
    reply, md = corpus("vllm15598-ray-l40-cudagraph-oom")
    assert "0.98" in reply.title and "912 MiB" in reply.title  # (1 - 0.98) x 44.53 GiB
    util = reply.data["suggested_util"]
    assert util == pytest.approx(0.95)
    lower = top(reply, "vllm")
    assert "--gpu-memory-utilization 0.95" in lower.command
    room = (1 - util) * 44.53
    assert room >= 2.0 and f"leaves {room:.2f} GiB" in lower.effect
    assert f"{21.20 - (0.98 - 0.95) * 44.53:.2f} GiB" in lower.effect  # the KV cache after
    assert fact(reply, "weights") == "20.64 GiB"
    assert "--enforce-eager" in fix(reply, "--enforce-eager").command
    assert "GPU 6" in md


def test_vllm7593_log_stops_during_capture():
    reply, _ = corpus("vllm7593-gemma2-9b-8xl4")
    assert "log stops" in reply.title
    assert "22,982" in fact(reply, "KV blocks") and "367,712 tokens" in fact(reply, "KV blocks")
    assert "--gpu-memory-utilization 0.85" in top(reply, "vllm").command
    assert any("--max-num-seqs" in f.command for f in reply.fixes)


def test_unseen_v1_capture_oom_leaves_two_gib():
    paste = (
        "vllm serve meta-llama/Llama-3.1-8B-Instruct --gpu-memory-utilization 0.97 --max-num-seqs 512\n"
        "(EngineCore_DP0 pid=311) INFO 07-01 10:00:00 [gpu_model_runner.py:2000] Capturing CUDA graph shapes:  40%\n"
        "(EngineCore_DP0 pid=311) ERROR 07-01 10:00:04 [core.py:700] torch.OutOfMemoryError: CUDA out of memory. "
        "Tried to allocate 64.00 MiB. GPU 0 has a total capacity of 79.19 GiB of which 30.00 MiB is free.\n"
    )
    reply, _ = run(paste)
    util = reply.data["suggested_util"]
    assert util < 0.97 and (1 - util) * 79.19 >= 2.0
    assert f"--gpu-memory-utilization {util:g}" in top(reply, "vllm").command
    assert "--max-num-seqs 128" in fix(reply, "--max-num-seqs 128").command  # a quarter of 512


# ------------------------------------------------------------------------------------------ llama.cpp OOM


def test_llamacpp20431_weights_stage():
    reply, _ = corpus("llamacpp20431-weights-145gb")
    assert "weights" in reply.title and "141.42 GiB" in reply.title and "device 0" in reply.title
    assert "not the context size" in reply.summary
    assert "--fit on" in top(reply, "llama.cpp").command
    assert any("-cmoe" in f.command for f in reply.fixes)
    assert not any("-ctk" in f.command for f in reply.fixes)  # not a KV problem


def test_unseen_weights_stage_computes_ngl():
    paste = (
        "llama-server -m /models/Qwen2.5-32B-Instruct-Q4_K_M.gguf -ngl 99 -c 16384\n"
        "llama_model_load_from_file_impl: using device CUDA0 (NVIDIA GeForce RTX 4070) (0000:01:00.0) - 11500 MiB free\n"
        "ggml_backend_cuda_buffer_type_alloc_buffer: allocating 18944.00 MiB on device 0: cudaMalloc failed: out of memory\n"
        "alloc_tensor_range: failed to allocate CUDA0 buffer of size 19864223744\n"
        "llama_model_load: error loading model: unable to allocate CUDA0 buffer\n"
    )
    reply, _ = run(paste)
    n = reply.data["n_gpu_layers_fit"]
    assert n == 28
    ngl = top(reply, "llama.cpp")
    assert f"-ngl {n}" in ngl.command and "-ngl 99" not in ngl.command
    assert ngl.command.startswith("llama-server -m /models/Qwen2.5-32B-Instruct-Q4_K_M.gguf")
    per_layer = 18944 / 65  # all 64 + 1 layers were on this GPU (-ngl 99)
    kv_per_layer = 256 * 1024 * 16384 / 64 / 2**20  # Qwen2.5-32B: 256 KiB per token over 64 layers
    assert n * (per_layer + kv_per_layer) + 1024 + 512 <= 11500
    assert (n + 1) * (per_layer + kv_per_layer) + 1024 + 512 > 11500
    assert not any("-cmoe" in f.command for f in reply.fixes)  # a dense model


def test_llamacpp26297_compute_buffer_recovered_by_the_retry():
    reply, _ = corpus("llamacpp26297-minimax-m3-newlog")
    assert "compute buffer" in reply.title and "device 1" in reply.title
    assert "retrying without pipeline parallelism" in reply.summary and "non-fatal" in reply.summary
    assert reply.data["multi_gpu"] and not reply.data["absurd"]
    ub = fix(reply, "-ub 512")
    assert "12,937 MiB" in ub.effect  # 51,748.72 MiB x 512 / 2048
    assert "-ub 2048" not in ub.command and "--tensor-split 11,11,10" in ub.command  # the user's own line


def test_ikllama749_absurd_compute_buffer_is_a_bug():
    reply, _ = corpus("ikllama749-11gpu-280gb-compute")
    assert reply.data["absurd"]
    assert "bug" in reply.title and "272.81 GiB" in reply.title
    assert "379 MiB KV cache" in reply.summary
    assert "--fit off" in top(reply, "llama.cpp").command
    assert any("report" in f.change for f in reply.fixes)


def test_unseen_single_gpu_compute_oom_without_flash_attention():
    paste = (
        "./llama-server -m /models/Meta-Llama-3.1-8B-Instruct-Q4_K_M.gguf -c 65536 -ub 4096 -b 4096 -ngl 99\n"
        "ggml_backend_cuda_buffer_type_alloc_buffer: allocating 17408.00 MiB on device 0: cudaMalloc failed: out of memory\n"
        "ggml_gallocr_reserve_n_impl: failed to allocate CUDA0 buffer of size 18253611008\n"
        "graph_reserve: failed to allocate compute buffers\n"
    )
    reply, _ = run(paste)
    assert not reply.data["multi_gpu"] and "non-fatal" not in reply.summary
    assert "2,176 MiB" in fix(reply, "-ub 512").effect  # 17,408 x 512 / 4096
    assert "-fa on" in fix(reply, "-fa on").command


def test_llamafile42_metal_working_set():
    reply, _ = corpus("llamafile42-m1-8gb-metal-assert")
    assert "5,461 MiB" in reply.title
    assert fact(reply, "unified memory") == "8 GB"
    room = 5461.34 - 400 - 81.63 - 256
    assert fact(reply, "room left for the weights") == f"{room:,.0f} MiB"
    sysctl = fix(reply, "sudo sysctl iogpu.wired_limit_mb=6144")  # 8 GB - 2 GB for macOS
    assert "kernel panic" in sysctl.cost
    assert reply.data["wired_limit_mb"] == 6144


def test_unseen_metal_on_a_32gb_mac():
    paste = (
        "ggml_metal_init: recommendedMaxWorkingSetSize  = 21845.34 MB\n"
        "llama_kv_cache: size = 2048.00 MiB (  16384 cells,  32 layers,  1/1 seqs), K (f16): 1024.00 MiB, V (f16): 1024.00 MiB\n"
        "sched_reserve:       MTL0 compute buffer size =   560.00 MiB\n"
        "ggml_metal_log_allocated_size: warning: current allocated size is greater than the recommended max working set size\n"
        "ggml_metal_synchronize: error: command buffer 0 failed with status 5\n"
    )
    reply, _ = run(paste)
    assert fact(reply, "unified memory") == "32 GB"
    assert reply.data["wired_limit_mb"] == 28672  # 32 GB - 4 GB (an eighth) for macOS
    assert fact(reply, "room left for the weights") == f"{21845.34 - 2048 - 560 - 256:,.0f} MiB"


# ------------------------------------------------------------------------------------------ kv_alloc_failed


def test_xinference1202_kv_buffer_on_device_0():
    reply, md = corpus("xinference1202-qwen15-72b-q3-kv-alloc")
    assert reply.category == "kv_alloc_failed"
    assert "41,984 MiB" in reply.title and "device 0" in reply.title
    assert fact(reply, "weights on the first GPU") == "16,854 MiB"
    room = number(fact(reply, "left for the KV cache"))
    assert room == pytest.approx(23.58 * 1024 - 0.4 * 1024 - 16854.41 - 512 - 256, abs=1)
    assert fact(reply, "share of the asked KV") == f"{room / 41984:.0%}"
    assert f"{41984 / room:.1f}x" in reply.summary
    assert any("-ctk q8_0" in f.command and "-fa on" in f.command for f in reply.fixes)
    assert "n_ctx" in md


def test_unseen_kv_alloc_with_model_and_context_gives_a_fitting_c():
    paste = (
        "  Device 0: NVIDIA GeForce RTX 3090, compute capability 8.6, VMM: yes\n"
        "llama_model_loader: - kv   2:                               general.name str              = Qwen1.5-72B-Chat\n"
        "llm_load_tensors: offloaded 81/81 layers to GPU\n"
        "llm_load_tensors:      CUDA0 buffer size = 16854.41 MiB\n"
        "llm_load_tensors:      CUDA1 buffer size = 16892.66 MiB\n"
        "llama_new_context_with_model: n_ctx      = 32768\n"
        "ggml_backend_cuda_buffer_type_alloc_buffer: allocating 41984.00 MiB on device 0: cudaMalloc failed: out of memory\n"
        "llama_kv_cache_init: failed to allocate buffer for kv cache\n"
    )
    reply, _ = run(paste)
    per_token = reply.data["kv_per_token_device"]
    assert per_token == pytest.approx(41984 * 2**20 / 32768)  # 1,312 KiB on device 0
    assert fact(reply, "layers whose KV lives on device 0") == "41"  # x 32 KiB: Qwen1.5-72B, 64 KV heads
    assert "no grouped-query attention" in reply.summary
    fit = reply.data["fit_ctx"]
    assert fit == 4096
    assert f"-c {fit}" in top(reply, "llama.cpp").command
    assert fit * per_token <= reply.data["kv_room_mib"] * 2**20 < 2 * fit * per_token
    q8 = reply.data["fit_ctx_q8"]
    assert q8 > fit and q8 * per_token * 1.0625 / 2 <= reply.data["kv_room_mib"] * 2**20


# ------------------------------------------------------------------------------------------ Ollama


def test_unseen_ollama_forced_num_gpu():
    paste = (
        "$ ollama run qwen2.5:32b\n"
        "ollama._types.ResponseError: memory layout cannot be allocated with num_gpu = 48 (status code: 500)\n"
    )
    reply, _ = run(paste)
    assert "num_gpu = 48" in reply.title
    layers = fix(reply, "num_gpu 36")
    assert layers.rank == 1
    assert any("OLLAMA_KV_CACHE_TYPE=q8_0" in f.command for f in reply.fixes)
    assert "ollama run qwen2.5:32b" in fix(reply, "OLLAMA_KV_CACHE_TYPE=q8_0").command
    assert "ollama run qwen2.5:14b" in fix(reply, "qwen2.5:14b").command  # the next size down in the family


def test_unseen_ollama_startup_oom_uses_the_vram_tier():
    paste = (
        'time=2026-07-01T10:00:00.000Z level=INFO source=types.go:130 msg="inference compute" id=GPU-1 '
        'library=cuda compute=8.9 name=CUDA0 description="NVIDIA GeForce RTX 4060" total="7.6 GiB" '
        'available="7.1 GiB"\n'
        'time=2026-07-01T10:00:01.000Z level=INFO source=server.go:400 msg="starting llama-server" '
        'cmd="/usr/lib/ollama/llama-server --ctx-size 131072 -np 1 --flash-attn auto"\n'
        "Error: 500 Internal Server Error: llama-server reported out-of-memory during startup: cudaMalloc failed: "
        "out of memory\n"
    )
    reply, _ = run(paste)
    assert "131,072" in reply.title
    assert "OLLAMA_CONTEXT_LENGTH=4096" in top(reply, "ollama").command  # Ollama's own tier below 23 GiB
    assert reply.data["suggested_num_ctx"] == 4096


# ------------------------------------------------------------------------------------------ vLLM Mamba blocks


def test_vllm_mamba_blocks_reply():
    """kv.py owns kv_cache_too_small@vllm; this is the reply it can dispatch to for the Mamba signature."""
    paste = (
        "vllm serve Qwen/Qwen3-Next-80B-A3B-Instruct --tensor-parallel-size 4 --max-num-seqs 1024\n"
        "(EngineCore_DP0 pid=2113) ValueError: max_num_seqs (1024) exceeds available Mamba cache blocks (854). Each "
        "decode sequence requires one Mamba cache block, so CUDA graph capture cannot proceed.\n"
    )
    detection = detect(paste)
    assert detection.root.signature == "vllm.kv_cache_too_small.mamba_blocks"
    reply = mamba.vllm_mamba_blocks(gather(detection, detection.root))
    assert "1,024" in reply.title and "854" in reply.title
    first = reply.fixes[0]
    assert "--max-num-seqs 848" in first.command and "--max-num-seqs 1024" not in first.command
    assert 848 <= 854
    assert "--tensor-parallel-size 4" in first.command
    assert any("--enforce-eager" in f.command for f in reply.fixes)
