"""The vLLM engine generation a paste ran, whatever its release says: from 0.8 to 0.10 V0 still ran
(VLLM_USE_V1=0, or as V1's fallback), and its code paths and wording prove it (knowledge/features.yaml,
markers with a mode).  The budget is then V0's (its profile, its graphs outside the KV budget)."""

from __future__ import annotations

from bot.diagnosis.budgets import budget_for
from tests.conftest import situation_of, wild_log

V0_ERROR = (
    "ValueError: The model's max seq len (8192) is larger than the maximum number of tokens that can be "
    "stored in KV cache (2400). Try increasing `gpu_memory_utilization` or decreasing `max_model_len` "
    "when initializing the engine."
)


def test_v0_code_paths_on_a_v1_era_release_read_as_v0():
    # gpustack#1800: a 0.8-era log prefix ([model_runner.py:1110]) with V0's worker.py frames
    situation = situation_of(wild_log("gpustack1800-qwen25vl7b-3090-v0")["text"])
    assert situation.engine_mode == "v0"
    budget = budget_for(situation)
    assert budget is not None and budget.estimate.v0 is True


def test_the_environment_switch_in_the_command_reads_as_v0():
    situation = situation_of(
        "VLLM_USE_V1=0 vllm serve Qwen/Qwen2.5-7B-Instruct --max-model-len 8192\n" + V0_ERROR
    )
    assert situation.engine_mode == "v0"


def test_a_v1_paste_has_no_v0_mode():
    text = (
        "(EngineCore_DP0 pid=12) ValueError: To serve at least one request with the models's max seq len "
        "(262144), (24.0 GiB KV cache is needed, which is larger than the available KV cache memory "
        "(3.18 GiB). Based on the available memory, the estimated maximum model length is 34736."
    )
    situation = situation_of(text)
    assert situation.engine_mode is None
    budget = budget_for(situation)
    assert budget is None or budget.estimate.v0 is False
