"""An engine worker's PyTorch out-of-memory is answered by the start-up phase it hit: weight loading,
the memory profile, the KV-cache allocation or serving (knowledge/signatures/vllm.yaml, the phase9
block), and SGLang's "loaded weights leave no GPU memory for the KV cache" by what a raise of
--mem-fraction-static does there (bot/diagnosis/static_share.py).  The pastes are real: wild records
by id, or the signature's own examples (their threads are cited beside them in the YAML)."""

from __future__ import annotations

import pytest

from bot.core import GardenBot, Paste
from bot.formatter import to_markdown
from bot.reply import Reply
from tests.conftest import wild_text


def _reply(text: str) -> Reply:
    reply = GardenBot().triage(Paste(text, False, []))
    assert reply is not None
    return reply


def _advice(reply: Reply) -> str:
    return "\n".join(
        s.body for s in reply.sections if s.heading in ("What to do", "Or make the weights smaller per GPU")
    )


# https://github.com/vllm-project/vllm/issues/31273: this process holds 139.21 of 139.72 GiB at shard 1/37
H20 = wild_text("wild_2026.jsonl", "vllm31273-weight-load-oom-h20")

# https://github.com/vllm-project/vllm/pull/9045: another process holds 71.11 GiB while the shards load
OTHER_PROCESS = (
    "(VllmWorkerProcess pid=3897243) ERROR 10-03 18:29:17 multiproc_worker_utils.py:231] torch.OutOfMemoryError: "
    "CUDA out of memory. Tried to allocate 60.00 MiB. GPU 2 has a total capacity of 79.22 GiB of which 2.06 MiB "
    "is free. Process 3888866 has 71.11 GiB memory in use. Including non-PyTorch memory, this process has 8.08 GiB "
    "memory in use. Of the allocated memory 4.90 GiB is allocated by PyTorch, and 66.39 MiB is reserved by PyTorch "
    "but unallocated.\nLoading pt checkpoint shards:   0% Completed | 0/46 [00:00<?, ?it/s]"
)

# https://github.com/vllm-project/vllm/issues/12529 (vLLM 0.8 V1, an 8 GiB GPU): the OOM inside the profile
PROFILE = (
    "ERROR 03-13 09:00:43 [core.py:330]     available_gpu_memory = self.model_executor.determine_available_memory()\n"
    'ERROR 03-13 09:00:43 [core.py:330]   File "/home/gaocegege/code/vllm/vllm/v1/executor/abstract.py", line 66, '
    "in determine_available_memory\n"
    "ERROR 03-13 09:00:43 [core.py:330] torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 1.16 GiB. "
    "GPU 0 has a total capacity of 7.75 GiB of which 1.17 GiB is free. Including non-PyTorch memory, this process "
    "has 5.02 GiB memory in use. Of the allocated memory 4.81 GiB is allocated by PyTorch, and 18.97 MiB is "
    "reserved by PyTorch but unallocated."
)

# https://github.com/noonghunna/club-3090/issues/16 (vLLM V1, RTX 3090): the API server's output handler
# fails with the engine core's OOM while serving
SERVING = (
    "(EngineCore pid=112) ERROR 05-01 14:39:06 [core.py:1131] torch.OutOfMemoryError: CUDA out of memory. Tried to "
    "allocate 50.00 MiB. GPU 0 has a total capacity of 23.56 GiB of which 21.75 MiB is free. Including non-PyTorch "
    "memory, this process has 23.50 GiB memory in use. Of the allocated memory 22.88 GiB is allocated by PyTorch, "
    "with 24.00 MiB allocated in private pools (e.g., CUDA Graphs), and 275.38 MiB is reserved by PyTorch but "
    "unallocated.\n(APIServer pid=1) ERROR 05-01 14:39:06 [async_llm.py:699] AsyncLLM output_handler failed."
)

# https://github.com/lemonade-sdk/vllm-rocm/issues/5 (vLLM V1 on a gfx1151 APU): inside _allocate_kv_cache_tensors
KV_ALLOC = (
    '2026-05-08 11:47:02.256 [Error] (Process) (EngineCore pid=2651)   File "/var/lib/lemonade/.cache/lemonade/bin/'
    'vllm/rocm/lib/python3.12/site-packages/vllm/v1/worker/gpu_model_runner.py", line 6537, in '
    "_allocate_kv_cache_tensors\n"
    "2026-05-08 11:47:02.257 [Error] (Process) (EngineCore pid=2651) torch.OutOfMemoryError: HIP out of memory. "
    "Tried to allocate 12.95 GiB. GPU 0 has a total capacity of 127.00 GiB of which 18.55 GiB is free. Of the "
    "allocated memory 99.37 GiB is allocated by PyTorch, and 121.80 MiB is reserved by PyTorch but unallocated."
)


def test_weight_loading_is_answered_by_splitting_the_weights_not_by_another_process():
    reply = _reply(H20)
    assert reply.signature == "vllm.gpu_oom.weight_loading"
    assert "this process holds 139.21 GiB of the 139.72 GiB GPU" in reply.summary
    advice = _advice(reply)
    assert "--tensor-parallel-size" in advice and "--pipeline-parallel-size" in advice
    assert "quantized checkpoint" in advice
    # no other process is in the paste (the container shows the engine itself as "Process N")
    assert "nvidia-smi" not in to_markdown(reply) and not reply.fixes


def test_weight_loading_names_the_tensor_parallel_size_the_paste_printed():
    reply = _reply(
        "INFO 12-24 08:49:58 [arg_utils.py:1100] tensor_parallel_size=1, pipeline_parallel_size=1\n" + H20
    )
    assert reply.signature == "vllm.gpu_oom.weight_loading"
    assert "This run used --tensor-parallel-size 1." in _advice(reply)


def test_weight_loading_with_another_process_on_the_gpu_finds_it_first():
    reply = _reply(OTHER_PROCESS)
    assert reply.signature == "vllm.gpu_oom.weight_loading_other_process"
    steps = _advice(reply).splitlines()
    assert steps[0].startswith("- find the other process and stop it")
    assert "nvidia-smi --query-compute-apps=pid,process_name,used_memory --format=csv" in steps[0]


def test_the_profile_is_answered_by_a_smaller_dummy_batch_not_a_lower_utilization():
    reply = _reply(PROFILE)
    assert reply.signature == "vllm.gpu_oom.profile_run"
    advice = _advice(reply)
    assert "--max-num-batched-tokens" in advice and "--max-num-seqs" in advice
    assert "--gpu-memory-utilization" not in advice
    assert "lowering it does not help" in reply.summary


def test_the_profile_advice_names_the_batch_the_paste_printed():
    config = "INFO 03-13 09:00:20 [config.py:1600] max_num_batched_tokens=8192, max_num_seqs=1024\n"
    advice = _advice(_reply(config + PROFILE))
    assert "This run profiled 8,192 tokens." in advice
    assert "This run used 1,024." in advice


def test_serving_lowers_the_utilization_by_what_the_allocation_lacked():
    reply = _reply(SERVING)
    assert reply.signature == "vllm.gpu_oom.serving"
    # (50.00 MiB - 21.75 MiB + 0.25 GiB) / 23.56 GiB = 0.0118 -> 0.02
    assert reply.fixes[0].change == (
        "lower `--gpu-memory-utilization` by 0.02 from the value in force (in the server_args / engine-args line)"
    )


def test_serving_with_the_users_command_prints_the_lowered_utilization():
    command = "vllm serve Qwen/Qwen3-8B --gpu-memory-utilization 0.95\n"
    reply = _reply(command + SERVING)
    assert reply.signature == "vllm.gpu_oom.serving"
    assert reply.fixes[0].command == "vllm serve Qwen/Qwen3-8B --gpu-memory-utilization 0.93"


def test_the_kv_cache_allocation_is_its_own_phase():
    reply = _reply(KV_ALLOC)
    assert reply.signature == "vllm.gpu_oom.kv_cache_allocation"
    assert reply.engine == "vllm"


@pytest.mark.parametrize(
    ("later", "phase"),
    [
        # the weights loaded: the same OOM is no longer the weight phase
        ("INFO 12-24 08:50:40 [gpu_model_runner.py:1329] Model loading took 68.91 GiB and 40.10 seconds\n", "vllm.gpu_oom.profile_run"),
        # the profile finished too: no phase signature claims it without the later phase's own frames
        ("INFO 12-24 08:50:40 [gpu_model_runner.py:1329] Model loading took 68.91 GiB and 40.10 seconds\n"
         "INFO 12-24 08:50:52 [gpu_worker.py:227] Memory profiling takes 11.02 seconds\n", "pytorch.cuda_oom.v0"),
    ],
)  # fmt: skip
def test_a_later_phase_in_the_log_moves_the_answer(later: str, phase: str):
    # the shards bar stays in the paste: the later line alone decides
    assert _reply(later + H20).signature == phase


# ---------------------------------------------------------------- SGLang: the static share
def test_sglang_raise_above_the_floor_from_the_load_weight_line():
    # https://github.com/SemiAnalysisAI/InferenceX/issues/2128: avail mem=12.25 GB, mem usage=125.65 GB
    reply = _reply(wild_text("wild_2026b.jsonl", "inferencex2128-sglang-weights-no-kv"))
    assert reply.signature == "sglang.weights_leave_no_kv.v0"
    fix = reply.fixes[0]
    # 1 - 12.25 / (12.25 + 125.65) = 0.9112 (the reporter quotes SGLang's 0.9113), rounded up: 0.912
    assert fix.change == "raise `--mem-fraction-static` above 0.912"
    assert fix.verification["floor"] == 0.9112
    # each 0.01 of the 137.90 GiB free before loading; the headroom at the floor is what the weights left
    assert fix.effect.startswith("each 0.01 above 0.9112 gives the KV pool 1.38 GiB")
    assert "keep 12.25 GiB at the floor" in fix.effect
    assert "nvidia-smi" not in to_markdown(reply)


def test_sglang_raise_above_the_floor_the_message_prints():
    text = (
        "[2026-01-12 09:14:03 TP1] ValueError: Loaded weights leave no GPU memory for the KV cache under "
        "--mem-fraction-static=0.7. Raise --mem-fraction-static above 0.773 (minimum viable = 1 - available/pre "
        "= 0.7725). If using speculative decoding, draft weights are now counted."
    )
    fix = _reply(text).fixes[0]
    assert fix.change == "raise `--mem-fraction-static` above 0.773"
    assert fix.verification["floor"] == 0.7725


def test_sglang_message_cut_before_its_floor_points_at_the_floor_it_prints():
    # https://github.com/sgl-project/sglang/pull/28683 (record sglang28683-dsv4-eagle-no-kv)
    reply = _reply(wild_text("wild_2026b.jsonl", "sglang28683-dsv4-eagle-no-kv"))
    assert reply.fixes[0].change.startswith("raise `--mem-fraction-static` above the minimum SGLang prints")
    assert reply.fixes[0].command == ""


def test_sglang_no_raise_when_the_weights_left_nothing_free():
    # nothing free after the weights: the floor is 1, and no fraction below 1 gives the pool any memory
    text = (
        "Load weight end. type=Qwen3ForCausalLM, avail mem=0.00 GB, mem usage=79.10 GB.\n"
        "ValueError: Loaded weights leave no GPU memory for the KV cache under --mem-fraction-static=0.9."
    )
    reply = _reply(text)
    assert reply.signature == "sglang.weights_leave_no_kv.v0"
    assert not [f for f in reply.fixes if "mem-fraction-static" in f.change]
    assert "--tp" in _advice(reply)
