"""A quantization whose kernels need a newer GPU: the same checkpoint on an older kernel, a vLLM release
whose kernels run here, or the checkpoint format this GPU reads (knowledge/features.yaml
quant_min_capability)."""

from __future__ import annotations

from bot.detector import detect
from bot.diagnosis import diagnose
from bot.reply import Fix


def _fixes(text: str) -> list[Fix]:
    reply = diagnose(detect(text))
    assert reply is not None
    return sorted(reply.fixes, key=lambda f: f.rank)


def test_gptq_marlin_on_turing_uses_the_gptq_kernel():
    text = (
        "vllm serve TheBloke/Llama-2-13B-GPTQ --quantization gptq_marlin\n"
        "ValueError: The quantization method gptq_marlin is not supported for the current GPU. "
        "Minimum capability: 80. Current capability: 75."
    )
    fix = _fixes(text)[0]
    assert fix.command == "vllm serve TheBloke/Llama-2-13B-GPTQ --quantization gptq"
    assert fix.verification["min_capability"] == 6.0


def test_fp8_on_ampere_with_an_old_minimum_points_at_the_release_that_runs_it():
    text = (
        "ValueError: The quantization method fp8 is not supported for the current GPU. "
        "Minimum capability: 90. Current capability: 86"
    )
    assert _fixes(text)[0].command == 'pip install -U "vllm>=0.11.0"'


def test_awq_on_volta_gets_a_gptq_checkpoint():
    text = (
        "The quantization method awq is not supported for the current GPU. Minimum capability: 75. "
        "Current capability: 70."
    )
    fix = _fixes(text)[0]
    assert fix.command == "vllm serve <GPTQ checkpoint of the model> --quantization gptq"
    assert fix.verification["min_capability"] == 6.0


def test_compressed_tensors_scheme_on_turing_gets_an_awq_checkpoint():
    text = (
        "RuntimeError: ('Quantization scheme is not supported for ', 'the current GPU. Min capability: 80. ', "
        "'Current capability: 75.')"
    )
    assert _fixes(text)[0].command == "vllm serve <AWQ checkpoint of the model> --quantization awq"
