"""Geometry from the paste: real load logs from public issue threads (each cited), read with no catalog."""

from __future__ import annotations

from calculator.from_log import read_log, spec_from_log
from calculator.kv import LLAMACPP_KV_BYTES, llamacpp_layout
from calculator.units import GIB, MIB

# https://github.com/gpustack/gpustack/issues/1681 (llama-box, Qwen2.5-14B Q4_K_M; timestamped prefix)
GPUSTACK_1681 = """\
0.00.167.165 I llama_model_loader: - type  f32:  241 tensors
0.00.167.166 I llama_model_loader: - type q4_K:  289 tensors
0.00.167.167 I llama_model_loader: - type q6_K:   49 tensors
0.00.167.168 I print_info: file format = GGUF V3 (latest)
0.00.167.168 I print_info: file type   = Q4_K - Medium
0.00.167.171 I print_info: file size   = 8.37 GiB (4.87 BPW)\x20
0.00.288.553 I load: special tokens cache size = 22
0.00.447.712 I load: token to piece cache size = 0.9310 MB
0.00.447.724 I print_info: arch             = qwen2
0.00.447.725 I print_info: vocab_only       = 0
0.00.447.725 I print_info: n_ctx_train      = 131072
0.00.447.726 I print_info: n_embd           = 5120
0.00.447.726 I print_info: n_layer          = 48
0.00.447.732 I print_info: n_head           = 40
0.00.447.733 I print_info: n_head_kv        = 8
0.00.447.734 I print_info: n_rot            = 128
0.00.447.734 I print_info: n_swa            = 0
0.00.447.734 I print_info: n_embd_head_k    = 128
0.00.447.735 I print_info: n_embd_head_v    = 128
0.00.447.737 I print_info: n_gqa            = 5
0.00.447.738 I print_info: n_embd_k_gqa     = 1024
"""

# https://github.com/ggml-org/llama.cpp/issues/10560 (Mistral-Large-Instruct-2411 Q8_0, b4202, run with
# --ctx-size 4096 --cache-type-k q8_0 --cache-type-v q8_0); the older llm_load_print_meta prefix
LLAMACPP_10560 = """\
llama_model_loader: - type  f32:  177 tensors
llama_model_loader: - type q8_0:  618 tensors
llm_load_print_meta: format           = GGUF V3 (latest)
llm_load_print_meta: arch             = llama
llm_load_print_meta: vocab type       = SPM
llm_load_print_meta: n_vocab          = 32768
llm_load_print_meta: n_merges         = 0
llm_load_print_meta: vocab_only       = 0
llm_load_print_meta: n_ctx_train      = 131072
llm_load_print_meta: n_embd           = 12288
llm_load_print_meta: n_layer          = 88
llm_load_print_meta: n_head           = 96
llm_load_print_meta: n_head_kv        = 8
llm_load_print_meta: n_rot            = 128
llm_load_print_meta: n_swa            = 0
llm_load_print_meta: n_embd_head_k    = 128
llm_load_print_meta: n_embd_head_v    = 128
llm_load_print_meta: n_gqa            = 12
"""

# https://github.com/ollama/ollama/pull/6279 (turn 66: Ollama's journal, Llama 3.1 70B Q4_0)
OLLAMA_6279 = """\
Sep 11 01:16:15 lena ollama[1884]: llm_load_print_meta: model type       = 70B
Sep 11 01:16:15 lena ollama[1884]: llm_load_print_meta: model ftype      = Q4_0
Sep 11 01:16:15 lena ollama[1884]: llm_load_print_meta: model params     = 70.55 B
Sep 11 01:16:15 lena ollama[1884]: llm_load_print_meta: model size       = 37.22 GiB (4.53 BPW)
Sep 11 01:16:15 lena ollama[1884]: llm_load_print_meta: general.name     = Meta Llama 3.1 70B Instruct
"""

# https://github.com/mlc-delgado/pytldr-oss/issues/3 (llama-2-13b-chat.Q5_K_M.gguf, the GGUF kv dump)
PYTLDR_3 = """\
llama_model_loader: loaded meta data with 19 key-value pairs and 363 tensors from /usr/share/models/llama-2-13b-chat.Q5_K_M.gguf (version GGUF V2)
llama_model_loader: Dumping metadata keys/values. Note: KV overrides do not apply in this output.
llama_model_loader: - kv   0:                       general.architecture str              = llama
llama_model_loader: - kv   1:                               general.name str              = LLaMA v2
llama_model_loader: - kv   2:                       llama.context_length u32              = 4096
llama_model_loader: - kv   3:                     llama.embedding_length u32              = 5120
llama_model_loader: - kv   4:                          llama.block_count u32              = 40
llama_model_loader: - kv   5:                  llama.feed_forward_length u32              = 13824
llama_model_loader: - kv   6:                 llama.rope.dimension_count u32              = 128
llama_model_loader: - kv   7:                 llama.attention.head_count u32              = 40
llama_model_loader: - kv   8:              llama.attention.head_count_kv u32              = 40
llama_model_loader: - kv   9:     llama.attention.layer_norm_rms_epsilon f32              = 0.000010
llama_model_loader: - kv  10:                          general.file_type u32              = 17
"""

# https://github.com/vllm-project/vllm/pull/11348 (turn 2; the issue form hard-wrapped the line mid-word)
VLLM_11348 = """\
INFO 01-15 13:09:52 llm_engine.py:232] Initializing an LLM engine (v0.6.6.post2.dev226+gad388d25.d20250115) with config: model='LoneStriker/Llama-3.3-70B-Instruct-3.5bpw-h6-exl2', speculative_config=None, tokenizer='LoneStriker/Ll
ama-3.3-70B-Instruct-3.5bpw-h6-exl2', skip_tokenizer_init=False, tokenizer_mode=auto, revision=None, override_neuron_config=None, tokenizer_revision=None, trust_remote_code=False, dtype=torch.float16, max_seq_len=32768, download_d
ir=None, load_format=auto, tensor_parallel_size=2, pipeline_parallel_size=3, disable_custom_all_reduce=False, quantization=exl2, enforce_eager=False, kv_cache_dtype=auto, quantization_param_path=None, device_config=cuda, decoding_
"""

# https://github.com/SergiioB/intel-arc-pro-b70-inference-cookbook/issues/4 (V1 engine, vLLM 0.27)
VLLM_V1 = (
    "(EngineCore pid=316) INFO 08-21 18:34:34 [core.py:122] Initializing a V1 LLM engine "
    "(v0.27.2rc1.dev77+gac7509e2b) with config: model='/model', speculative_config=SpeculativeConfig("
    "method='mtp', model='/model', num_spec_tokens=4), tokenizer='/model', skip_tokenizer_init=False, "
    "tokenizer_mode=auto, revision=None, tokenizer_revision=None, trust_remote_code=False, "
    "dtype=torch.float16, max_seq_len=100000, download_dir=None, load_format=auto, tensor_parallel_size=1, "
    "pipeline_parallel_size=1, data_parallel_size=1, decode_context_parallel_size=1, dcp_comm_backend=ag_rs, "
    "disable_custom_all_reduce=True, quantization=auto_gptq, quantization_config=None, enforce_eager=False, "
    "enable_return_routed_experts=False, kv_cache_dtype=fp8, device_config=xpu\n"
)

# https://github.com/vllm-project/vllm/pull/13027 (a Hugging Face cache path as model=)
VLLM_13027 = (
    "INFO 02-10 17:12:31 llm_engine.py:234] Initializing a V0 LLM engine (v0.6.4.post2.dev395+g02222a02.d20241217) "
    "with config: model='/home/cmq/.cache/huggingface/hub/models--facebook--opt-125m/snapshots/"
    "27dcfa74d334bc871f3234de431e71c6eeba5dd6', speculative_config=None, dtype=torch.float16, max_seq_len=2048, "
    "tensor_parallel_size=1, pipeline_parallel_size=1, quantization=None, enforce_eager=True, kv_cache_dtype=auto\n"
)


def test_print_info_geometry_and_weights():
    found = read_log(GPUSTACK_1681)
    spec = found.spec
    assert found.engine == "llama.cpp"
    assert (spec.num_hidden_layers, spec.num_attention_heads, spec.num_key_value_heads) == (48, 40, 8)
    assert (spec.hidden_size, spec.head_dim, spec.max_position_embeddings) == (5120, 128, 131072)
    assert spec.layers is None  # n_swa = 0: every layer full attention
    assert found.variant.gguf_type == "Q4_K_M"
    assert found.variant.size_bytes == int(8.37 * GIB)
    assert found.settings["bits_per_weight"] == 4.87
    # f16 K and V: 48 layers x n_embd_k_gqa 1024 (the log's own figure) x 2 x 2 bytes
    assert llamacpp_layout(spec).growing_bytes_per_token == 48 * 1024 * 2 * 2 == 196608


def test_llm_load_print_meta_geometry_and_the_runs_kv():
    spec = spec_from_log(LLAMACPP_10560)
    assert (spec.num_hidden_layers, spec.num_key_value_heads, spec.head_dim) == (88, 8, 128)
    assert (spec.hidden_size, spec.vocab_size, spec.max_position_embeddings) == (12288, 32768, 131072)
    lay = llamacpp_layout(spec, "q8_0", "q8_0")
    # --ctx-size 4096 with q8_0 K and V (34 bytes per 32 elements): 88 x 1024 x 2 x 34/32 x 4096 bytes
    assert lay.seq_bytes(4096) == 88 * 1024 * 2 * LLAMACPP_KV_BYTES["q8_0"] * 4096
    assert lay.seq_bytes(4096) / MIB == 748.0


def test_ollama_journal_prefix_params_size_and_name():
    found = read_log(OLLAMA_6279)
    assert found.engine == "ollama"
    assert found.name == "Meta Llama 3.1 70B Instruct"
    assert found.settings == {
        "file_type": "Q4_0",
        "file_size_bytes": int(37.22 * GIB),
        "bits_per_weight": 4.53,
    }
    assert found.spec is None  # no geometry lines in this part of the log


def test_gguf_kv_dump():
    found = read_log(PYTLDR_3)
    spec = found.spec
    assert found.name == "LLaMA v2"
    assert (spec.num_hidden_layers, spec.num_key_value_heads, spec.head_dim) == (40, 40, 128)
    assert (spec.max_position_embeddings, spec.intermediate_size) == (4096, 13824)
    assert llamacpp_layout(spec).growing_bytes_per_token == 40 * 40 * 128 * 2 * 2
    # general.file_type 17 is LLAMA_FTYPE_MOSTLY_Q5_K_M; no file size printed, so the catalogued bpw
    assert (found.variant.gguf_type, found.variant.size_bytes) == ("Q5_K_M", None)
    assert found.variant.bits_per_weight == 5.7036


def test_vllm_config_dump_rejoined_after_hard_wrap():
    found = read_log(VLLM_11348)
    assert found.engine == "vllm" and found.spec is None
    assert found.name == "LoneStriker/Llama-3.3-70B-Instruct-3.5bpw-h6-exl2"
    assert found.settings == {
        "model": "LoneStriker/Llama-3.3-70B-Instruct-3.5bpw-h6-exl2",
        "dtype": "float16",
        "max_seq_len": 32768,
        "tensor_parallel_size": 2,
        "pipeline_parallel_size": 3,
        "quantization": "exl2",
        "enforce_eager": False,
        "kv_cache_dtype": "auto",
        "engine_version": "0.6.6.post2.dev226+gad388d25.d20250115",
    }


def test_vllm_v1_config_dump():
    found = read_log(VLLM_V1)
    assert found.name == "/model"
    assert found.settings["max_seq_len"] == 100000
    assert found.settings["quantization"] == "auto_gptq"
    assert found.settings["kv_cache_dtype"] == "fp8"
    assert found.settings["engine_version"] == "0.27.2rc1.dev77+gac7509e2b"


def test_vllm_hf_cache_path_names_the_repo():
    assert read_log(VLLM_13027).name == "facebook/opt-125m"


def test_non_default_args_win_over_the_dump():
    text = (
        "INFO 08-01 10:00:00 [utils.py:326] non-default args: {'model': 'Qwen/Qwen3-8B', "
        "'max_model_len': 8192, 'gpu_memory_utilization': 0.85, 'tensor_parallel_size': 2}\n" + VLLM_V1
    )
    found = read_log(text)
    assert found.name == "Qwen/Qwen3-8B"
    assert found.settings["max_model_len"] == 8192
    assert found.settings["gpu_memory_utilization"] == 0.85
    assert found.settings["tensor_parallel_size"] == 2
    assert found.settings["max_seq_len"] == 100000


def test_sliding_window_without_layer_map_is_an_upper_bound_with_a_note():
    text = GPUSTACK_1681.replace("n_swa            = 0", "n_swa            = 4096")
    found = read_log(text)
    assert found.spec.layers is None
    assert "4096-token sliding window" in found.notes[0]


def test_sliding_layers_from_load_tensors_lines():
    text = GPUSTACK_1681.replace("n_swa            = 0", "n_swa            = 4096")
    text += "".join(
        f"load_tensors: layer {i:3d} assigned to device CUDA0, is_swa = {0 if i % 6 == 5 else 1}\n"
        for i in range(48)
    )
    spec = read_log(text).spec
    kinds = {g.kind: g.count for g in spec.layers}
    assert kinds == {"full": 8, "sliding": 40}
    assert next(g.window for g in spec.layers if g.kind == "sliding") == 4096


def test_second_model_in_the_log_is_not_mixed_in():
    draft = GPUSTACK_1681.replace("n_layer          = 48", "n_layer          = 28").replace(
        "n_head_kv        = 8", "n_head_kv        = 2"
    )
    spec = spec_from_log(GPUSTACK_1681 + draft)
    assert (spec.num_hidden_layers, spec.num_key_value_heads) == (48, 8)


def test_nothing_to_read():
    assert read_log("") is None
    assert read_log("Traceback (most recent call last):\nRuntimeError: CUDA out of memory") is None
    assert spec_from_log("print_info: n_layer = 12\n") is None  # no architecture: not enough to build on
    assert spec_from_log("print_info: arch = llama\nprint_info: n_layer = 0\n") is None


# https://github.com/ggml-org/llama.cpp/pull/23398 (turn 38: a qwen35 GGUF, debug-level print_info)
LLAMACPP_23398 = """\
0.00.278.963 D print_info: arch                  = qwen35
0.00.278.964 D print_info: vocab_only            = 0
0.00.278.964 D print_info: no_alloc              = 1
0.00.278.965 D print_info: n_ctx_train           = 262144
0.00.278.965 D print_info: n_embd                = 5120
0.00.278.966 D print_info: n_embd_inp            = 5120
0.00.278.966 D print_info: n_layer               = 65
0.00.278.973 D print_info: n_head                = 24
0.00.278.975 D print_info: n_head_kv             = 4
0.00.278.975 D print_info: n_rot                 = 64
0.00.278.975 D print_info: n_swa                 = 0
0.00.278.977 D print_info: is_swa_any            = 0
0.00.278.978 D print_info: n_embd_head_k         = 256
0.00.278.978 D print_info: n_embd_head_v         = 256
0.00.278.979 D print_info: n_gqa                 = 6
0.00.278.984 D print_info: n_embd_k_gqa          = 1024
0.00.278.987 D print_info: n_embd_v_gqa          = 1024
"""


def test_newer_print_info_layout():
    spec = spec_from_log(LLAMACPP_23398)
    assert (spec.architecture, spec.num_hidden_layers, spec.num_key_value_heads) == ("qwen35", 65, 4)
    assert (spec.head_dim, spec.max_position_embeddings) == (256, 262144)


def test_recurrent_layers_without_a_layer_map_get_a_note():
    found = read_log(LLAMACPP_23398 + "0.00.279.100 D print_info: ssm_d_state           = 128\n")
    assert "recurrent (SSM / linear-attention) layers" in found.notes[0]


def test_numbers_no_gguf_could_hold_are_dropped():
    text = GPUSTACK_1681.replace("n_layer          = 48", "n_layer          = " + "9" * 40)
    assert spec_from_log(text) is None


# https://github.com/ggml-org/llama.cpp/issues/11200 (Qwen2.5-Coder-32B q8_0 GGUF, -c 32768, q8_0 K and V)
LLAMACPP_11200 = """\
llama_new_context_with_model: freq_scale    = 1
llama_kv_cache_init: kv_size = 32768, offload = 1, type_k = 'q8_0', type_v = 'q8_0', n_layer = 64, can_shift = 1
llama_kv_cache_init:      CUDA0 KV buffer size =  2788.00 MiB
llama_kv_cache_init:      CUDA1 KV buffer size =  1564.00 MiB
llama_new_context_with_model: KV self size  = 4352.00 MiB, K (q8_0): 2176.00 MiB, V (q8_0): 2176.00 MiB
"""


def test_the_logs_own_kv_cache_lines():
    found = read_log(LLAMACPP_11200)
    assert found.settings == {
        "kv_cells": 32768,
        "cache_type_k": "q8_0",
        "cache_type_v": "q8_0",
        "kv_layers": 64,
        "kv_mib": 4352.0,
    }
    # per cell and layer: 4352 MiB / 32768 / 64 = 2176 bytes = 8 KV heads x 128 x 2 (K, V) x 34/32 (q8_0)
    per_layer = found.settings["kv_mib"] * MIB / found.settings["kv_cells"] / found.settings["kv_layers"]
    assert per_layer == 8 * 128 * 2 * LLAMACPP_KV_BYTES["q8_0"] == 2176


def test_kv_summary_line_of_newer_builds():
    # the format string of ggml-org/llama.cpp src/llama-kv-cache.cpp: "%s: size = %7.2f MiB (%6u cells,
    # %3d layers, %2u/%u seqs), K (%s): %7.2f MiB, V (%s): %7.2f MiB"
    line = (
        "llama_kv_cache: size = 1152.00 MiB (  8192 cells,  36 layers,  1/1 seqs), "
        "K (f16):  576.00 MiB, V (f16):  576.00 MiB\n"
    )
    found = read_log(GPUSTACK_1681 + line)
    assert (found.settings["kv_cells"], found.settings["kv_layers"], found.settings["kv_mib"]) == (
        8192,
        36,
        1152.0,
    )
