"""vLLM signatures beyond their YAML examples: ranking, misfires, context rules, corpus records."""

from __future__ import annotations

import pytest

from bot.detector import detect
from knowledge.schema import MEMORY_CATEGORIES
from tests.conftest import corpus_record


def _ids(text: str) -> list[str]:
    return [f.signature for f in detect(text).findings]


def _memory(text: str) -> list[str]:
    return [f.signature for f in detect(text).findings if f.category in MEMORY_CATEGORIES]


# --- must not misfire ------------------------------------------------------------------------------------

SERVE = (
    "$ vllm serve Qwen/Qwen2.5-7B-Instruct --max-model-len 32768 --gpu-memory-utilization 0.95 "
    "--tensor-parallel-size 2 --enforce-eager\n"
)

UNRELATED = {
    "import error": SERVE + "INFO 07-02 15:53:59 [__init__.py:244] Automatically detected platform cuda.\n"
    "Traceback (most recent call last):\n"
    '  File "/usr/bin/vllm", line 5, in <module>\n'
    "    from vllm.entrypoints.cli.main import main\n"
    "ImportError: /opt/vllm/_C.abi3.so: undefined symbol: _ZN5torch3jit17parseSchemaOrNameERKSsb",
    "unknown architecture": SERVE
    + "ValueError: Model architectures ['FooForCausalLM'] are not supported for now. Supported architectures: [...]",
    "nccl during profiling": SERVE
    + "(RayWorkerWrapper pid=67451, ip=10.1.0.7) ERROR 06-25 15:28:30 worker_base.py:148]   File "
    '"/opt/vllm/worker/worker.py", line 162, in determine_num_available_blocks\n'
    "(RayWorkerWrapper pid=67451, ip=10.1.0.7) ERROR 06-25 15:28:30 worker_base.py:148]     "
    "self.model_runner.profile_run()\n"
    "RuntimeError: NCCL error in: ../torch/csrc/distributed/c10d/NCCLUtils.hpp:275, unhandled system error",
    "bus error": SERVE + "\nBus error (core dumped)",
    "hf offline": SERVE
    + "OSError: We couldn't connect to 'https://huggingface.co' to load this file, couldn't find it in the "
    "cached files and it looks like Qwen/Qwen2.5-7B-Instruct is not the path to a directory.",
    "engine core failed, real cause shown": "INFO 07-01 09:00:00 [gpu_model_runner.py:1801] Model loading took "
    "14.99 GiB and 8.1 seconds\n"
    "ERROR 07-01 09:00:05 [core.py:700] EngineCore failed to start.\n"
    "KeyError: 'model.layers.0.mlp.experts.w2_weight'\n"
    "RuntimeError: Engine core initialization failed. See root cause above. Failed core proc(s): {}",
    "hang during capture": "INFO 08-19 07:51:12 model_runner.py:1028] CUDA graphs can take additional 1~3 GiB "
    "memory per GPU. If you are running out of memory, consider decreasing `gpu_memory_utilization`.\n"
    "RuntimeError: NCCL error: unhandled cuda error (run with NCCL_DEBUG=INFO for details)",
}


@pytest.mark.parametrize("name", sorted(UNRELATED))
def test_unrelated_errors_are_not_memory(name):
    assert _memory(UNRELATED[name]) == []


@pytest.mark.parametrize(
    "record_id",
    [
        "neg-vllm20361-undefined-symbol-serve",
        "neg-vllm5828-nccl-in-profile-run",
        "neg-vllm6689-bus-error-shm",
    ],
)
def test_corpus_negatives_have_no_memory_finding(record_id):
    assert _memory(corpus_record(record_id)["text"]) == []


# --- the signature each corpus family lands on -------------------------------------------------------------

ROOTS = {
    "vllm10439-qwen05b-compose": "vllm.no_kv_memory.no_cache_blocks",
    "vllm14574-ci-buildkite": "vllm.no_kv_memory.engine_init_truncated",
    "pytorch175666-free-mem-startup": "vllm.gpu_memory_in_use.startup_free",
    "vllmomni276-a100-qwen3omni": "vllm.gpu_memory_in_use.startup_free",
    "vllm15598-ray-l40-cudagraph-oom": "vllm.gpu_oom.cudagraph_capture_log",
    "vllm7593-gemma2-9b-8xl4": "vllm.gpu_oom.cudagraph_log_stops",
    "adaptthink1-tp8-28heads": "vllm.tp_divisibility.heads",
    "vllm414-codellama13b-tp5-fastchat": "vllm.tp_divisibility.heads",
    "substratus37-t4-bf16": "vllm.dtype_unsupported.bf16",
    "vllm1284-p100-bf16-cc6": "vllm.dtype_unsupported.bf16",
    "vllm4327-fp8-cc86": "vllm.quantization_unsupported.capability",
    "vllm4202-awq-v100-wrapped-args": "vllm.quantization_unsupported.capability",
    "transformers39976-qwen3moe-gguf": "vllm.max_len_exceeds_model.derived",
    "repodoc-1m-rope-batched-1010000": "vllm.batched_tokens_too_small",
    "vllm447-mpt7b-prompt-limit": "vllm.context_exceeded.v0_prompt_limit",
    "stepaudio3-max-tokens-too-large": "vllm.context_exceeded.max_tokens_too_large",
    "aphrodite1320-pixtral-48gb-breakdown": "vllm.memory_report.aphrodite_breakdown",
    "repofile-qwen25-15b-t4-colab": "vllm.memory_report.v0_breakdown",
}


@pytest.mark.parametrize("record_id", sorted(ROOTS))
def test_corpus_root_signature(record_id):
    ids = _ids(corpus_record(record_id)["text"])
    assert ids and ids[0] == ROOTS[record_id], ids


def test_p100_bf16_ranks_before_gpu_unsupported():
    ids = _ids(corpus_record("vllm1284-p100-bf16-cc6")["text"])
    assert ids.index("vllm.dtype_unsupported.bf16") < ids.index("vllm.gpu_unsupported.cc_below_70")


def test_cudagraph_oom_outranks_a_plain_torch_oom():
    text = corpus_record("vllm15598-ray-l40-cudagraph-oom")["text"]
    findings = detect(text).findings
    assert findings[0].signature == "vllm.gpu_oom.cudagraph_capture_log"
    assert findings[0].params["total_gib"] == pytest.approx(44.53)


def test_truncated_engine_core_guess_yields_to_the_real_error():
    text = (
        "INFO 03-10 08:07:20 [gpu_model_runner.py:1067] Model loading took 0.2389 GB and 0.977005 seconds\n"
        "ERROR 03-10 08:07:20 [core.py:302] EngineCore hit an exception: Traceback (most recent call last):\n"
        'ERROR 03-10 08:07:20 [core.py:302]     raise ValueError("No available memory for the cache blocks. "'
    )
    ids = _ids(text)
    assert ids[0] == "vllm.no_kv_memory.no_cache_blocks"
    assert "vllm.no_kv_memory.engine_init_truncated" not in ids


def test_max_tokens_error_hides_the_generic_context_message():
    text = (
        "'max_tokens' or 'max_completion_tokens' is too large: 8000. This model's maximum context length is "
        "4096 tokens and your request has 2778 input tokens (8000 > 4096 - 2778)."
    )
    ids = _ids(text)
    assert ids[0] == "vllm.context_exceeded.max_tokens_too_large"
    assert "vllm.context_exceeded.openai_context" not in ids


# --- prefixes, wrapping, numbers ------------------------------------------------------------------------------


def test_free_memory_error_through_compose_prefix_and_ansi():
    text = (
        "vllm-1  | \x1b[1;36m(EngineCore_DP0 pid=217)\x1b[0;0m ERROR 09-30 11:02:03 [core.py:708] ValueError: "
        "Free memory on device cuda:0 (10.43/23.53 GiB) on startup is less than desired GPU memory utilization "
        "(0.92, 21.65 GiB). Decrease GPU memory utilization or reduce GPU memory used by other processes."
    )
    f = detect(text).findings[0]
    assert f.signature == "vllm.gpu_memory_in_use.startup_free"
    assert f.params == {
        "device": "cuda:0",
        "free_gib": 10.43,
        "total_gib": 23.53,
        "gpu_memory_utilization": 0.92,
        "requested_gib": 21.65,
    }


def test_no_cache_blocks_wrapped_mid_word():
    text = (
        "(VllmWorker rank=0 pid=4242) ERROR 05-01 10:00:00 [multiproc_executor.py:470] ValueError: No available memory for the cach\n"
        "e blocks. Try increasing `gpu_memory_utilization` when initializing the engine."
    )
    assert _ids(text)[0] == "vllm.no_kv_memory.no_cache_blocks"


def test_kv_capacity_with_thousands_separators():
    text = "(EngineCore pid=1) INFO 11-20 10:00:00 [kv_cache_planning.py:900] GPU KV cache size: 1,138,176 tokens, Maximum concurrency for 32,768 tokens per request: 34.73x"
    f = detect(text).findings[0]
    assert f.params == {"kv_tokens": 1138176, "max_model_len": 32768, "max_concurrency": 34.73}


def test_derived_max_model_len_printed_as_float():
    text = (
        "ValueError: User-specified max_model_len (262144) is greater than the derived max_model_len "
        "(max_position_embeddings=131072.0 or model_max_length=None in model's config.json)."
    )
    f = detect(text).findings[0]
    assert f.params["derived_max_model_len"] == 131072


# --- context rules --------------------------------------------------------------------------------------------


def test_context_from_namespace_dump():
    text = (
        "INFO 04-19 17:25:10 api_server.py:150] args: Namespace(host=None, port=8001, model='/data/Qwen1.5-32B-AWQ', "
        "dtype='auto', kv_cache_dtype='fp8', max_model_len=8192, tensor_parallel_size=2, seed=0, "
        "gpu_memory_utilization=0.85, max_num_batched_tokens=None, max_num_seqs=64, quantization='awq', "
        "enforce_eager=True, max_context_len_to_capture=8192)"
    )
    ctx = detect(text).context.fields
    assert ctx["model"] == "/data/Qwen1.5-32B-AWQ"
    assert ctx["dtype"] == "auto"
    assert ctx["kv_cache_dtype"] == "fp8"
    assert ctx["max_model_len"] == 8192
    assert ctx["tp"] == 2
    assert ctx["gpu_memory_utilization"] == pytest.approx(0.85)
    assert ctx["max_num_seqs"] == 64
    assert ctx["quantization"] == "awq"
    assert ctx["enforce_eager"] is True
    assert "max_num_batched_tokens" not in ctx


def test_context_from_cli_with_equals():
    ctx = detect(
        "vllm serve meta-llama/Llama-3.1-8B-Instruct --max-model-len=32768 --tensor-parallel-size=4 "
        "--gpu-memory-utilization=0.92 --dtype=bfloat16"
    ).context.fields
    assert ctx["model"] == "meta-llama/Llama-3.1-8B-Instruct"
    assert ctx["max_model_len"] == 32768
    assert ctx["tp"] == 4
    assert ctx["gpu_memory_utilization"] == pytest.approx(0.92)
    assert ctx["dtype"] == "bfloat16"


def test_context_from_python_llm_call():
    ctx = detect(
        'llm = LLM(model="Qwen/Qwen2.5-72B-Instruct-AWQ", tensor_parallel_size=2, max_model_len=16384, '
        "gpu_memory_utilization=0.9)"
    ).context.fields
    assert ctx["model"] == "Qwen/Qwen2.5-72B-Instruct-AWQ"
    assert ctx["tp"] == 2
    assert ctx["max_model_len"] == 16384
    assert ctx["gpu_memory_utilization"] == pytest.approx(0.9)
    assert detect('llm = LLM("facebook/opt-125m")').context.fields["model"] == "facebook/opt-125m"


def test_context_engine_version_forms():
    assert (
        detect(
            "INFO 05-30 06:39:59 llm_engine.py:234] Initializing a V0 LLM engine (v0.7.2) with config: "
        ).context.fields["engine_version"]
        == "0.7.2"
    )
    assert detect("vLLM Version: 0.6.3.post1").context.fields["engine_version"] == "0.6.3.post1"
    assert detect("docker run vllm/vllm-openai:v0.8.5 --model x").context.fields["engine_version"] == "0.8.5"
    assert detect("pip install vllm==0.10.1.1").context.fields["engine_version"] == "0.10.1.1"


def test_hints_in_vllm_messages_are_not_settings():
    # every V0 startup prints this hint; the bf16 error suggests --dtype=half
    text = (
        "INFO 03-27 10:29:03 [model_runner.py:1442] Capturing cudagraphs for decoding. To run the model in eager "
        "mode, set 'enforce_eager=True' or use '--enforce-eager' in the CLI.\n"
        "ValueError: Bfloat16 is only supported on GPUs with compute capability of at least 8.0. Your Tesla T4 GPU "
        "has compute capability 7.5. You can use float16 instead by explicitly setting the`dtype` flag in CLI, "
        "for example: --dtype=half."
    )
    ctx = detect(text).context.fields
    assert "enforce_eager" not in ctx
    assert "dtype" not in ctx
    assert ctx["gpu"] == "Tesla T4"
    assert ctx["compute_capability"] == pytest.approx(7.5)


def test_using_max_model_len_log_line():
    ctx = detect(
        "(EngineCore pid=3) INFO 11-01 10:00:00 [model.py:1600] Using max model len 40960"
    ).context.fields
    assert ctx["max_model_len"] == 40960


# --- multimodal encoder cache and sampler warm-up (vLLM V1) ---------------------------------------------

# vllm/v1/engine/input_processor.py InputProcessor._validate_model_input, the f-string as written there
ENCODER_CACHE_MESSAGE = (
    "The {prompt_type} prompt contains a(n) {modality} item with {num_embeds} embedding tokens, which exceeds "
    "the pre-allocated encoder cache size {size}. Please reduce the input size or increase the encoder cache "
    "size by setting --limit-mm-per-prompt at startup."
)


def test_encoder_cache_reads_the_embedding_token_wording():
    text = "(APIServer pid=1) vllm.exceptions.VLLMValidationError: " + ENCODER_CACHE_MESSAGE.format(
        prompt_type="decoder", modality="video", num_embeds=20160, size=16384
    )
    root = detect(text).root
    assert root is not None and root.signature == "vllm.context_exceeded.encoder_cache"
    assert root.params == {"modality": "video", "mm_tokens": 20160, "encoder_cache_tokens": 16384}


def test_encoder_cache_reads_the_length_wording_wrapped_by_a_terminal():
    text = (
        "(APIServer pid=1) ValueError: The decoder prompt contains a(n) image item with\n"
        "length 6105, which exceeds the pre-allocated encoder cache size 6084. Please\n"
        "reduce the input size or increase the encoder cache size by setting\n"
        "--limit-mm-per-prompt at startup."
    )
    root = detect(text).root
    assert root is not None and root.signature == "vllm.context_exceeded.encoder_cache"
    assert root.params == {"modality": "image", "mm_tokens": 6105, "encoder_cache_tokens": 6084}


def test_encoder_cache_is_not_a_prompt_longer_than_max_model_len():
    text = ENCODER_CACHE_MESSAGE.format(prompt_type="decoder", modality="image", num_embeds=4641, size=3721)
    assert "vllm.context_exceeded.decoder_prompt" not in _ids(text)


def test_pooler_warmup_oom_is_the_sampler_signature_with_its_request_count():
    # vllm/v1/worker/gpu_model_runner.py _dummy_pooler_run_task, the message as written there
    text = (
        "RuntimeError: CUDA out of memory occurred when warming up pooler (task='embed') with 256 dummy "
        "requests. Please try lowering `max_num_seqs` or `gpu_memory_utilization` when initializing the engine."
    )
    root = detect(text).root
    assert root is not None and root.signature == "vllm.gpu_oom.sampler_warmup"
    assert root.params == {"max_num_seqs": 256}


def test_sampler_warmup_outranks_the_torch_oom_of_another_rank():
    text = (
        "(Worker_TP0 pid=11) ERROR 12-23 23:04:22 [core.py:1525] RuntimeError: CUDA out of memory occurred when "
        "warming up sampler with 1024 dummy requests. Please try lowering `max_num_seqs` or "
        "`gpu_memory_utilization` when initializing the engine.\n"
        "(Worker_TP1 pid=12) ERROR 12-23 23:04:22 [core.py:1525] torch.OutOfMemoryError: CUDA out of memory. "
        "Tried to allocate 1.74 GiB. GPU 0 has a total capacity of 94.99 GiB of which 1.02 GiB is free."
    )
    root = detect(text).root
    assert root is not None and root.signature == "vllm.gpu_oom.sampler_warmup"
    assert root.params == {"max_num_seqs": 1024}
