"""Golden tests for the generic diagnoses: the key point and the first fix, with exact values.

Every command asserted here was re-evaluated on the engine's budget by the bot itself; the values are the
ones that budget gives for the paste's own numbers (and the catalog's model and GPU where the paste names
them)."""

from __future__ import annotations

from bot.detector import detect
from bot.diagnosis import diagnose
from bot.reply import Reply
from tests.bot.diagnosis.helpers import runnable
from tests.conftest import corpus_record

KV_V0 = (
    "ValueError: The model's max seq len (131072) is larger than the maximum number of tokens that can be "
    "stored in KV cache (5728). Try increasing gpu_memory_utilization or decreasing max_model_len when "
    "initializing the engine."
)
SEED = "vllm serve Qwen/Qwen2.5-Coder-32B-Instruct-AWQ dies on my 4090, any idea?\n" + KV_V0


def reply_for(text: str) -> Reply:
    reply = diagnose(detect(text))
    assert reply is not None
    return reply


def commands(reply: Reply, engine: str) -> list[str]:
    """The commands in rank order; ``+ FLAGS`` where the paste named no command or model."""
    return [runnable(f) for f in sorted(reply.fixes, key=lambda f: f.rank) if f.engine == engine]


def test_seed_case_written_as_a_person_writes_it():
    reply = reply_for(SEED)
    vllm = commands(reply, "vllm")
    # the 4090 from the prose, the model from the prose line, but never the prose itself in a command
    assert vllm[0] == "vllm serve Qwen/Qwen2.5-Coder-32B-Instruct-AWQ --max-model-len 5120"
    assert all("any idea" not in c and "dies" not in c for c in vllm)
    assert "one request of 131,072 does not fit" in reply.summary
    # llama.cpp on llama.cpp's own budget (a Q4_K_M GGUF on a 23.64 GiB 4090), not vLLM's 5,120
    assert commands(reply, "llama.cpp") == [
        "llama-server -m Qwen2.5-Coder-32B-Instruct-Q4_K_M.gguf -c 24576 -ctk q8_0 -ctv q8_0 -fa on"
    ]
    assert any(f.label == "GPU" and "4090" in f.value for s in reply.sections for f in s.facts)


def test_every_fix_carries_its_prediction():
    for fix in reply_for(SEED).fixes:
        if fix.engine in ("vllm", "llama.cpp", "ollama"):
            assert fix.verification["starts"] is True
            assert fix.verification["fit_tokens"] >= fix.verification["serves"]


def test_v0_combined_levers_get_the_context_that_holds_itself():
    """The error's wording is V0's (raise_if_cache_size_invalid), and V0 profiles max_model_len tokens
    at once below 32K: fp8 KV + utilization 0.95 holds 20,480 tokens at the asked 131,072 (chunked
    profile) but only 1,088 at 20,480, so the combination is offered at the longest context that holds
    itself on its own profile."""
    vllm = commands(reply_for(SEED), "vllm")
    assert vllm == [
        "vllm serve Qwen/Qwen2.5-Coder-32B-Instruct-AWQ --max-model-len 5120",
        "vllm serve Qwen/Qwen2.5-Coder-32B-Instruct-AWQ --max-model-len 12288 --kv-cache-dtype fp8 "
        "--gpu-memory-utilization 0.95 --max-num-seqs 128",
    ]


def test_a_command_over_several_lines_with_quotes_and_secrets():
    paste = (
        "$ HF_TOKEN=hf_abcdefghijklmnopqrstuvwxyz0123 CUDA_VISIBLE_DEVICES=0 vllm serve "
        "Qwen/Qwen2.5-Coder-32B-Instruct-AWQ \\\n    --max-model-len 131072 \\\n"
        '    --chat-template "my template.jinja" --api-key sk-not-a-real-key-0000000000\n' + KV_V0
    )
    first = commands(reply_for(paste), "vllm")[0]
    assert first == (
        "CUDA_VISIBLE_DEVICES=0 vllm serve Qwen/Qwen2.5-Coder-32B-Instruct-AWQ "
        "--chat-template 'my template.jinja' --max-model-len 5120"
    )


def test_python_api_users_get_keyword_arguments():
    paste = 'llm = LLM(model="Qwen/Qwen2.5-Coder-32B-Instruct-AWQ", max_model_len=131072)\n' + KV_V0
    first = commands(reply_for(paste), "vllm")[0]
    assert first == "LLM(model='Qwen/Qwen2.5-Coder-32B-Instruct-AWQ', max_model_len=5120)"


def test_v0_wording_gets_no_flag_its_version_lacks():
    reply = reply_for(KV_V0)
    assert all("auto" not in c for c in commands(reply, "vllm"))  # --max-model-len auto is 0.14+
    assert commands(reply, "vllm") == ["+ --max-model-len 5120"]


def test_utilization_error_asks_for_no_more_than_is_free():
    rec = corpus_record("pytorch175666-free-mem-startup")
    reply = reply_for(rec["text"])
    assert reply.summary.startswith("2.28 GiB of the 22.05 GiB are already in use")
    assert commands(reply, "vllm")[0].endswith("--gpu-memory-utilization 0.88")
    assert 0.88 * 22.05 <= 19.77  # what vLLM checks at start


def test_tp_size_divides_the_heads_and_fits_the_gpus():
    rec = corpus_record("adaptthink1-tp8-28heads")
    reply = reply_for(rec["text"])
    assert "Sizes that work: 1, 2, 4, 7." in reply.summary
    assert commands(reply, "vllm")[0].endswith("--tensor-parallel-size 4")


def test_bf16_on_a_t4_loads_in_half():
    reply = reply_for(corpus_record("substratus37-t4-bf16")["text"])
    assert reply.title == "vLLM: bfloat16 needs compute capability 8.0, NVIDIA Tesla T4 has 7.5"
    assert commands(reply, "vllm")[0].endswith("--dtype half")
    half = next(f for f in reply.fixes if f.adds == "--dtype half")
    assert (
        half.effect
        == "float16 runs on GPUs without bfloat16 (compute capability below 8.0: V100, T4, the RTX 20 series)"
    )


def test_mamba_state_blocks_cap_the_sequences():
    paste = (
        "ValueError: max_num_seqs (256) exceeds available Mamba cache blocks (40). Each decode sequence "
        "requires one Mamba cache block, so CUDA graph capture cannot proceed."
    )
    reply = reply_for(paste)
    assert reply.summary == "Each running sequence needs one state block; 40 fit, max_num_seqs is 256."
    assert commands(reply, "vllm") == ["+ --max-num-seqs 40"]


def test_ik_llama_gets_a_bare_flash_attention_switch():
    paste = (
        "llama_init_from_model: V cache quantization requires flash_attn\n"
        "main: build = 3800 (ikawrakow/ik_llama.cpp)\n"
    )
    reply = reply_for(paste)
    assert reply.category == "kv_quant_needs_flash_attn"
    assert commands(reply, "llama.cpp") == ["+ -fa"]  # ik_llama.cpp: no value
    upstream = reply_for(paste.replace("3800 (ikawrakow/ik_llama.cpp)", "6500 (abc1234)"))
    assert commands(upstream, "llama.cpp") == ["+ -fa on"]  # b6325+: a value
    old = reply_for(paste.replace("3800 (ikawrakow/ik_llama.cpp)", "3800 (abc1234)"))
    assert commands(old, "llama.cpp") == ["+ -fa"]  # before b6325: a switch


def test_pytorch_oom_larger_than_the_gpu_says_so():
    reply = reply_for(corpus_record("easyedit563-llama32-3b-355gib")["text"])
    assert "larger than the whole GPU (79.32 GiB)" in reply.summary


def test_llama_cpp_python_s_overflow_is_told_in_its_own_terms():
    reply = reply_for(corpus_record("logdetective193-llamacpppy-2285-2048")["text"])
    assert reply.title == "llama-cpp-python: the prompt does not fit in the context window (n_ctx)"
    assert reply.summary.startswith(
        "The prompt is 2,285 tokens and the model was loaded with a context window (n_ctx) of 2,048:"
    )


# --- the key point each family leads with (exact sentences, from the paste's own numbers) -----------


def test_key_point_host_memory():
    reply = reply_for(corpus_record("continue11478-llama31-8b")["text"])
    assert reply.title == "Not enough system memory: needs 2.7 GiB, 2.3 GiB available"
    # what the 2.7 GiB counts (llm/server.go: the layers no GPU holds) and what lowers it
    assert reply.summary == (
        "Ollama estimated that the part of the model that stays in system RAM (the layers that do not fit "
        "on the GPU, plus their KV cache and buffers) needs 2.7 GiB, but only 2.3 GiB of RAM (+ swap) is "
        "free, so it refused to load. The number is only the RAM part: a bigger GPU share, a smaller "
        "context or a smaller quant lowers it."
    )
    assert all("nvidia-smi" not in f.command for f in reply.fixes)  # system RAM, not the GPU


def test_key_point_quantization_below_capability():
    reply = reply_for(corpus_record("vllm4202-awq-v100-wrapped-args")["text"])
    assert reply.summary == "The awq kernels need compute capability 7.5; this GPU has 7.0."


def test_key_point_request_longer_than_the_context():
    reply = reply_for(corpus_record("vllm447-mpt7b-prompt-limit")["text"])
    assert reply.summary == "The request is 3,622 tokens; the server was started with room for 2,560."


def test_key_point_memory_report_is_not_an_error():
    reply = reply_for(corpus_record("vllm10517-20k-ok")["text"])
    assert reply.fixes == []
    assert reply.summary.startswith("Total 23.58 GiB x utilization 0.9;")


def test_key_point_weights_that_do_not_fit_one_gpu():
    reply = reply_for(corpus_record("llamacpp20431-weights-145gb")["text"])
    assert reply.title == "llama.cpp: could not allocate 144,817 MiB for the CUDA0 buffer"
    assert "the context size does not" in reply.summary
    assert all("-c " not in f.command for f in reply.fixes)  # a smaller context is no fix for weights


def test_non_memory_failures_get_no_memory_diagnosis():
    for rid in ("neg-vllm6689-bus-error-shm", "neg-openinstruct738-tokenizer-enum"):
        reply = diagnose(detect(corpus_record(rid)["text"]))
        assert reply is None or reply.category not in {"gpu_oom", "kv_cache_too_small", "no_kv_memory"}
