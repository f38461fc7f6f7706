"""llama.cpp and Ollama signatures on pastes that differ from the corpus: other prefixes, numbers, versions.

The per-signature examples live in knowledge/signatures/{llamacpp,ollama}.yaml; these tests cover what a
single example cannot: ranking between findings, exclusions, and the context read from the same paste.
"""

from __future__ import annotations

import pytest

from bot.core import GardenBot, Paste
from bot.detector import detect
from bot.formatter import to_markdown
from knowledge.schema import MEMORY_CATEGORIES


def _root(text: str):
    detection = detect(text)
    assert detection.findings, "nothing detected"
    return detection.findings[0], detection


def _params(detection) -> dict:
    merged: dict = {}
    for finding in detection.findings:
        for k, v in finding.params.items():
            merged.setdefault(k, v)
    return merged


# ---------------------------------------------------------------- ranking


def test_kv_alloc_ranks_above_the_cudamalloc_line_before_it():
    text = (
        "Aug 08 23:02:37 box llama-server[311]: ggml_backend_cuda_buffer_type_alloc_buffer: "
        "allocating 8192.00 MiB on device 1: cudaMalloc failed: out of memory\n"
        "Aug 08 23:02:37 box llama-server[311]: llama_kv_cache_unified: failed to allocate buffer for kv cache\n"
        "Aug 08 23:02:37 box llama-server[311]: llama_init_from_model: failed to initialize the context: "
        "failed to allocate buffer for kv cache\n"
        "Aug 08 23:02:37 box llama-server[311]: common_init_from_params: failed to create context with model "
        "'/m/qwen.gguf'\n"
    )
    root, detection = _root(text)
    assert root.category == "kv_alloc_failed"
    assert root.params["alloc_mib"] == pytest.approx(8192.0)
    assert root.params["device"] == "1"
    ids = [f.signature for f in detection.findings]
    assert "llamacpp.context_init_failed" not in ids  # explained by the KV finding


def test_weights_oom_with_rocm_and_docker_prefix():
    text = (
        "llamacpp-1  | ggml_backend_cuda_buffer_type_alloc_buffer: allocating 20480.00 MiB on device 0: "
        "cudaMalloc failed: out of memory\n"
        "llamacpp-1  | alloc_tensor_range: failed to allocate ROCm0 buffer of size 21474836480\n"
        "llamacpp-1  | llama_model_load: error loading model: unable to allocate ROCm0 buffer\n"
    )
    root, _ = _root(text)
    assert root.signature == "llamacpp.gpu_oom.weights"
    assert root.params == {"alloc_mib": 20480.0, "device": "0", "buffer": "ROCm0"}


def test_host_buffer_failure_is_host_memory_not_gpu():
    text = (
        "ggml_backend_cpu_buffer_type_alloc_buffer: failed to allocate buffer of size 1073741824\n"
        "ggml_gallocr_reserve_n_impl: failed to allocate CPU buffer of size 1073741824\n"
        "graph_reserve: failed to allocate compute buffers\n"
    )
    root, _ = _root(text)
    assert root.category == "host_memory"


def test_metal_status5_is_gpu_oom_with_working_set():
    text = (
        "ggml_metal_init: recommendedMaxWorkingSetSize  = 10922.67 MB\n"
        "ggml_metal_synchronize: error: command buffer 0 failed with status 5\n"
        "error: Insufficient Memory (00000008:kIOGPUCommandBufferCallbackErrorOutOfMemory)\n"
        "decode: failed to decode, ret = -3\n"
    )
    root, detection = _root(text)
    assert root.signature == "llamacpp.gpu_oom.metal_command_buffer"
    assert _params(detection)["working_set_mib"] == pytest.approx(10922.67)


def test_metal_assert_after_working_set_overflow():
    text = (
        "ggml_metal_init: recommendedMaxWorkingSetSize  = 10922.67 MB\n"
        "ggml_metal_add_buffer: allocated 'data            ' buffer, size =  7000.00 MB, ( 7000.00 / 10922.67)\n"
        "ggml_metal_add_buffer: allocated 'kv              ' buffer, size =  6000.00 MB, (23000.00 / 10922.67)\n"
        "GGML_ASSERT: ggml-metal.m:1623: false\n"
    )
    root, detection = _root(text)
    assert root.category == "gpu_oom"
    assert "llamacpp.gpu_oom.metal_assert" in [f.signature for f in detection.findings]


# ---------------------------------------------------------------- Ollama runner: memory or not


@pytest.mark.parametrize(
    "text",
    [
        "Error: llama runner process has terminated: exit status 0xc000001d",
        "Error: llama runner process has terminated: signal: illegal instruction (core dumped)",
        "ollama._types.ResponseError: llama runner process has terminated: exit status 0xc000001d (status code: 500)",
    ],
)
def test_illegal_instruction_is_not_a_memory_finding(text):
    detection = detect(text)
    assert not [f.signature for f in detection.findings if f.category in MEMORY_CATEGORIES]


def test_runner_crash_quoting_a_context_failure_is_one_finding():
    text = (
        "Error: llama runner process has terminated: exit status 0xc0000409 "
        "error:failed to create context with model 'C:\\Users\\me\\.ollama\\models\\blobs\\sha256-1234'"
    )
    _, detection = _root(text)
    assert [f.category for f in detection.findings] == ["runner_crashed"]
    assert detection.context.get("os") == "Windows"


def test_runner_crash_with_allocation_error_ranks_runner_first():
    text = (
        "Jan 02 10:00:00 srv ollama[900]: time=2024-07-16T10:00:00.000Z level=ERROR source=sched.go:443 "
        'msg="error loading llama server" error="llama runner process has terminated: exit status 2 '
        'error loading model: unable to allocate CUDA0 buffer"'
    )
    root, detection = _root(text)
    assert root.category == "runner_crashed"
    assert root.params["exit_status"] == "2"
    assert "llamacpp.gpu_oom.weights" in [f.signature for f in detection.findings]


def test_llama_server_startup_oom_v030():
    text = (
        '{"error":"llama-server startup failed before projector CPU offload retry: '
        'llama-server reported out-of-memory during startup"}'
    )
    root, _ = _root(text)
    assert root.signature == "ollama.gpu_oom.llama_server_startup"


# ---------------------------------------------------------------- Ollama numbers


def test_system_memory_wrapped_and_in_mib():
    text = (
        "Traceback (most recent call last):\n"
        '  File "app.py", line 10, in <module>\n'
        "ollama._types.ResponseError: model requires more system memory (1023.5 MiB) than is\n"
        "available (812.0 MiB) (status code: 500)\n"
    )
    root, _ = _root(text)
    assert root.category == "host_memory"
    assert root.params["required_gib"] == pytest.approx(1023.5 / 1024, rel=1e-3)
    assert root.params["available_gib"] == pytest.approx(812.0 / 1024, rel=1e-3)


def test_offload_line_other_units_and_multi_gpu():
    text = (
        'time=2024-11-08T01:39:28.564+05:30 level=INFO source=memory.go:326 msg="offload to cuda" '
        "layers.requested=-1 layers.model=81 layers.offload=81 layers.split=41,40 "
        'memory.available="[23.3 GiB 23.3 GiB]" memory.gpu_overhead="0 B" memory.required.full="44.9 GiB" '
        'memory.required.partial="44.9 GiB" memory.required.kv="2.5 GiB" memory.required.allocations="[22.6 GiB 22.3 GiB]" '
        'memory.weights.total="38.9 GiB" memory.weights.repeating="38.1 GiB" memory.weights.nonrepeating="822.0 MiB" '
        'memory.graph.full="1.1 GiB" memory.graph.partial="1.1 GiB"'
    )
    root, _ = _root(text)
    assert root.signature == "ollama.memory_report.offload"
    assert root.params["required_kv_mib"] == pytest.approx(2560.0)
    assert root.params["graph_full_mib"] == pytest.approx(1126.4)
    assert root.params["gpu_available_gib"] == pytest.approx(23.3)
    assert root.params["layers_offload"] == 81


def test_invalid_env_does_not_outrank_the_memory_report():
    text = (
        'time=2025-01-16T04:29:50.395Z level=WARN source=config.go:215 msg="invalid environment variable, '
        'using default" key=OLLAMA_NUM_PARALLEL value=four default=0\n'
        'time=2025-01-16T04:29:50.741Z level=INFO source=server.go:104 msg="system memory" total="62.5 GiB" '
        'free="60.1 GiB" free_swap="8.0 GiB"\n'
    )
    root, detection = _root(text)
    assert root.category == "memory_report"
    assert "ollama.invalid_argument.env" in [f.signature for f in detection.findings]


# ---------------------------------------------------------------- context


def test_llama_server_command_line_context():
    text = (
        "$ ./build/bin/llama-server -m /models/Llama-3.1-8B-Instruct-Q4_K_M.gguf --ctx-size 32768 -np 4 "
        "-ctk q8_0 -ctv q4_0 -fa off -ngl 99\n"
        "ggml_cuda_init: found 1 CUDA devices:\n"
        "  Device 0: NVIDIA GeForce RTX 3090, compute capability 8.6, VMM: yes\n"
        "llama_init_from_model: quantized V cache requires flash_attn to be enabled\n"
    )
    root, detection = _root(text)
    assert root.category == "kv_quant_needs_flash_attn"
    ctx = detection.context.fields
    assert ctx["n_ctx"] == 32768
    assert ctx["n_parallel"] == 4
    assert ctx["cache_type_k"] == "q8_0"
    assert ctx["cache_type_v"] == "q4_0"
    assert ctx["flash_attn"] == "off"
    assert ctx["n_gpu_layers"] == 99
    assert ctx["gpu"] == "NVIDIA GeForce RTX 3090"
    assert ctx["compute_capability"] == pytest.approx(8.6)
    assert ctx["model"] == "/models/Llama-3.1-8B-Instruct-Q4_K_M.gguf"
    assert ctx["command"].startswith("./build/bin/llama-server -m ")


def test_ollama_server_config_context():
    text = (
        'time=2025-05-01T10:00:00.000Z level=INFO source=routes.go:1205 msg="server config" '
        'env="map[OLLAMA_CONTEXT_LENGTH:8192 OLLAMA_FLASH_ATTENTION:true OLLAMA_KV_CACHE_TYPE:q8_0 '
        'OLLAMA_NUM_PARALLEL:2]"\n'
        'time=2025-05-01T10:00:01.000Z level=INFO source=types.go:130 msg="inference compute" id=GPU-1 '
        'library=cuda variant=v12 compute=8.9 driver=12.4 name="NVIDIA GeForce RTX 4090" total="23.5 GiB" '
        'available="22.1 GiB"\n'
        "Error: model requires more system memory (12.0 GiB) than is available (9.5 GiB)\n"
    )
    root, detection = _root(text)
    assert root.category == "host_memory"
    ctx = detection.context.fields
    assert ctx["n_ctx"] == 8192
    assert ctx["n_parallel"] == 2
    assert ctx["cache_type_k"] == "q8_0"
    assert ctx["gpu"] == "NVIDIA GeForce RTX 4090"
    assert ctx["compute_capability"] == pytest.approx(8.9)
    assert ctx["gpu_total_gib"] == pytest.approx(23.5)


def test_context_exceeded_slot_with_podman_prefix():
    text = (
        "[llama-cpp] | srv  send_error: task id = 4, error: request (17000 tokens) exceeds the available "
        "context size (8192 tokens), try increasing it\n"
    )
    root, _ = _root(text)
    assert root.category == "context_exceeded"
    assert root.params == {"requested_tokens": 17000, "n_ctx": 8192}


def test_harmless_ctx_info_alone_is_only_a_report():
    text = (
        "llama_context: n_ctx         = 4096\n"
        "llama_context: n_ctx_seq (4096) < n_ctx_train (131072) -- the full capacity of the model will not be utilized\n"
    )
    detection = detect(text)
    assert {f.severity for f in detection.findings} == {"info"}


# ---------------------------------------------------------------- the request longer than the slot


def test_server_request_wrapped_over_lines_keeps_both_numbers():
    # the §1.7 wording (llama.cpp since #18174) as a chat client wraps it
    root, _ = _root(
        "error: request (8312 tokens)\nexceeds the available context size (4096 tokens),\ntry increasing it"
    )
    assert root.signature == "llamacpp.context_exceeded.server"
    assert root.params == {"requested_tokens": 8312, "n_ctx": 4096}


def test_slot_line_gives_the_numbers_the_old_error_does_not_print():
    # the 2024-09 .. 2025-10 error text names no numbers; the slot's "new prompt" line above it does
    text = (
        "slot update_slots: id  0 | task 7 | new prompt, n_ctx_slot = 4096, n_keep = 0, n_prompt_tokens = 5200\n"
        "slot      release: id  0 | task 7 | stop processing: n_past = 0, truncated = 0\n"
        "srv    send_error: task id = 7, error: the request exceeds the available context size. "
        "try increasing the context size or enable context shift"
    )
    root, _ = _root(text)
    assert root.signature == "llamacpp.context_exceeded.server"
    assert root.params == {"requested_tokens": 5200, "n_ctx": 4096}


def test_a_slot_line_far_from_the_error_is_not_read_as_its_numbers():
    lines = [
        "slot update_slots: id  0 | task 7 | new prompt, n_ctx_slot = 4096, n_keep = 0, n_prompt_tokens = 900"
    ]
    lines += [
        f"slot update_slots: id  0 | task 7 | prompt processing progress, n_past = {n}" for n in range(5)
    ]
    lines += ["srv    send_error: task id = 9, error: the request exceeds the available context size."]
    root, _ = _root("\n".join(lines))
    assert root.signature == "llamacpp.context_exceeded.server"
    assert "requested_tokens" not in root.params


# ---------------------------------------------------------------- not memory, though it reads like it


def test_an_xid31_page_fault_explains_the_ollama_runner_stop():
    runner = (
        "Error: an error was encountered while running the model: model runner has unexpectedly stopped, "
        "this may be due to resource limitations or an internal error, check ollama server logs for details"
    )
    xid = (
        "[  365.969681] NVRM: Xid (PCI:0000:01:00): 31, pid=13705, name=ollama, channel 0x0000000c, "
        "intr 00000000. MMU Fault: ENGINE GRAPHICS GPC2 GPCCLIENT_PROP_0 faulted @ 0x0_00000000. "
        "Fault is of type FAULT_PDE ACCESS_TYPE_VIRT_READ"
    )
    alone, _ = _root(runner)
    assert alone.signature == "ollama.runner_crashed.unexpectedly_stopped"
    root, detection = _root(runner + "\n\n" + xid)
    assert root.signature == "common.xid31_mmu_fault"
    assert root.category == "illegal_memory_access"
    assert not [f.signature for f in detection.findings if f.category in MEMORY_CATEGORIES]


def test_another_xid_is_not_read_as_a_page_fault():
    detection = detect("NVRM: Xid (PCI:0000:01:00): 79, pid=1234, GPU has fallen off the bus.")
    assert "common.xid31_mmu_fault" not in [f.signature for f in detection.findings]


def test_a_missing_tensor_before_the_fit_line_is_no_memory_error():
    text = (
        "llama_model_load: error loading model: missing tensor 'blk.24.attn_k.weight'\n"
        "llama_model_load_from_file_impl: failed to load model\n"
        "llama_params_fit: encountered an error while trying to fit params to free device memory: "
        "failed to load model"
    )
    root, detection = _root(text)
    assert root.signature == "llamacpp.model_file_missing_tensor"
    assert root.params["tensor"] == "blk.24.attn_k.weight"
    assert not [f.signature for f in detection.findings if f.category in MEMORY_CATEGORIES]


def test_context_shift_disabled_is_the_generation_limit_not_the_prompt():
    root, _ = _root("srv    send_error: task id = 7, error: context shift is disabled")
    assert root.signature == "llamacpp.context_exceeded.generation"
    assert root.category == "context_exceeded"


# ---------------------------------------------------------------- wordings from wild_2026d (other prefixes)


def test_a_context_refused_for_a_parameter_is_no_memory_finding():
    # journald prefix and an n_seq_max reason: a check on -np, not an allocation
    text = (
        "Mar 02 10:11:12 box llama-server[88]: llama_init_from_model: failed to initialize the context: "
        "n_seq_max must be <= 256\n"
        "Mar 02 10:11:12 box llama-server[88]: common_init_from_params: failed to create context with model "
        "'/m/q.gguf'\n"
    )
    root, detection = _root(text)
    assert root.signature == "llamacpp.context_init_failed.not_memory"
    assert root.params["reason"] == "n_seq_max must be <= 256"
    assert not [f.signature for f in detection.findings if f.category in MEMORY_CATEGORIES]


def test_a_context_refused_after_a_cudamalloc_failure_stays_memory():
    text = (
        "E ggml_backend_cuda_buffer_type_alloc_buffer: allocating 9000.00 MiB on device 0: "
        "cudaMalloc failed: out of memory\n"
        "E llama_init_from_model: failed to initialize the context: n_seq_max must be <= 256\n"
    )
    ids = [f.signature for f in detect(text).findings]
    assert "llamacpp.context_init_failed.not_memory" not in ids


def test_fit_under_tensor_split_is_a_skipped_fit_not_a_projected_deficit():
    text = (
        "llama-server  | 0.00.039.524 W common_fit_params: failed to fit params to free device memory: "
        "llama_params_fit is not implemented for SPLIT_MODE_TENSOR, abort\n"
    )
    root, detection = _root(text)
    assert root.signature == "llamacpp.fit_skipped.split_mode_tensor"
    assert "llamacpp.fit_failed" not in [f.signature for f in detection.findings]


def test_ggml_host_allocator_failure_is_host_memory_in_mib():
    # ggml.c prints size / 2^20 with %6.2f and calls it MB: the number is MiB, read exactly
    text = (
        "0.00.806.033 E ggml_aligned_malloc: insufficient memory (attempted to allocate 60438.47 MB)\n"
        "0.00.806.050 E ggml_backend_cpu_buffer_type_alloc_buffer: failed to allocate buffer of size 63374323968\n"
    )
    root, _ = _root(text)
    assert root.category == "host_memory"
    assert root.params["alloc_bytes"] == 63374323968  # the exact byte count wins when both lines are there
    alone, _ = _root(text.splitlines()[0])
    assert alone.signature == "llamacpp.host_memory.cpu_buffer"
    assert alone.params == {"alloc_mib": 60438.47}


def test_lmstudio_n_keep_reply_gives_lmstudio_levers_not_llama_server_flags():
    text = (
        'Chat request failed (400): {"error":"The number of tokens to keep from the initial prompt is '
        "greater than the context length (n_keep: 20481 >= n_ctx: 8192). Try to load the model with a "
        'larger context length, or provide a shorter input."}'
    )
    root, _ = _root(text)
    assert root.signature == "lmstudio.context_exceeded.n_keep"
    assert root.params == {"requested_tokens": 20481, "n_ctx": 8192}
    reply = GardenBot().triage(Paste(text, False, []))
    assert reply is not None
    markdown = to_markdown(reply)
    assert "above 20,481 tokens" in markdown
    assert "-c " not in markdown and "--ctx-size" not in markdown


def test_flash_attention_occupancy_assert_is_not_memory():
    text = (
        "ggml/src/ggml-cuda/template-instances/../fattn-common.cuh:931: "
        "GGML_ASSERT(max_blocks_per_sm > 0) failed\n"
    )
    root, detection = _root(text)
    assert root.signature == "llamacpp.flash_attn_occupancy_assert"
    assert not [f.signature for f in detection.findings if f.category in MEMORY_CATEGORIES]


def test_llama_server_bind_failure_names_the_port():
    text = "0.00.520.900 E srv    main: couldn't bind HTTP server socket, hostname: 0.0.0.0, port: 8033\n"
    root, _ = _root(text)
    assert root.signature == "llamacpp.port_in_use"
    assert root.params == {"host": "0.0.0.0", "port": "8033"}


def test_fit_abort_reads_the_projection_printed_before_it():
    text = (
        "Jun 01 08:00:01 box llama-server[7]: common_params_fit_impl: projected to use 30211 MiB of device "
        "memory vs. 23817 MiB of free device memory\n"
        "Jun 01 08:00:01 box llama-server[7]: common_params_fit_impl: cannot meet free memory target of "
        "1024 MiB, need to reduce device memory by 7418 MiB\n"
        "Jun 01 08:00:01 box llama-server[7]: common_fit_params: failed to fit params to free device memory: "
        "n_gpu_layers already set by user to 99, abort\n"
    )
    root, _ = _root(text)
    assert root.signature == "llamacpp.fit_failed"
    assert root.params["projected_mib"] == 30211
    assert root.params["free_mib"] == 23817
    assert root.params["reason"] == "n_gpu_layers already set by user to 99, abort"


def test_host_buffer_size_regrouped_by_hand_is_not_read_as_bytes():
    # ggml prints the size with %zu; "108 000 000 000" is a person's regrouping, and reading its first
    # group would report a 108-byte buffer
    text = (
        "ggml_backend_cpu_buffer_type_alloc_buffer: failed to allocate buffer of size 108 000 000 000\n"
        "alloc_tensor_range: failed to allocate CPU_REPACK buffer of size 108 000 000 000\n"
        "llama_model_load: error loading model: unable to allocate CPU_REPACK buffer\n"
    )
    root, _ = _root(text)
    assert root.signature == "llamacpp.host_memory.cpu_buffer"
    assert "alloc_bytes" not in root.params
    assert root.params["buffer"] == "CPU_REPACK"
    exact, _ = _root(
        "ggml_backend_cpu_buffer_type_alloc_buffer: failed to allocate buffer of size 22532325376\n"
    )
    assert exact.params["alloc_bytes"] == 22532325376


def test_rs_cache_allocation_failure_is_a_kv_alloc_failure():
    text = "llama_init_from_model: failed to initialize the context: failed to allocate buffer for rs cache\n"
    root, _ = _root(text)
    assert root.signature == "llamacpp.kv_alloc_failed"
    assert root.category == "kv_alloc_failed"


KV_FULL = (
    "decode: failed to find a memory slot for batch of size 512\n"
    "srv  update_slots: failed to find free space in the KV cache, retrying with smaller batch size, i = 0, "
    "n_batch = 256, ret = 1\n"
    "srv    send_error: task id = 12, error: Context size has been exceeded.\n"
)


def test_a_full_kv_cache_at_decode_is_the_root_over_the_slot_error_it_ends_in():
    found = detect(KV_FULL)
    assert found.root is not None and found.root.signature == "llamacpp.context_exceeded.kv_full"
    assert found.root.params == {"batch_tokens": 512}
    reply = GardenBot().triage(Paste(KV_FULL, False, []), addressed=True)
    assert reply is not None and reply.title == "llama.cpp: the KV cache had no free cells for the next batch"
    assert not any(n.startswith("Also in the paste") for n in reply.notes)


def test_the_old_kv_full_message_with_a_compute_error_is_not_a_full_cache():
    text = "srv  update_slots: failed to decode the batch: KV cache is full - try increasing it via the context size, i = 0, n_batch = 512, ret = -3"
    assert all(f.signature != "llamacpp.context_exceeded.kv_full" for f in detect(text).findings)


def test_a_model_newer_than_ollama_is_a_version_problem_not_a_crash():
    text = (
        "Error: llama runner process has terminated: this model is not supported by your version of Ollama. "
        "You may need to upgrade"
    )
    found = detect(text)
    assert [f.signature for f in found.findings] == ["ollama.model_needs_newer_version"]
    reply = GardenBot().triage(Paste(text, False, []), addressed=True)
    assert reply is not None and reply.title == "Ollama: this model needs a newer Ollama than the one running"
