"""A quantization whose kernels need a newer GPU: the same checkpoint on an older kernel, a vLLM release
whose kernels run here, or the checkpoint format this GPU reads (knowledge/features.yaml
quant_min_capability)."""

from __future__ import annotations

from bot.detector import detect
from bot.diagnosis import diagnose
from tests.bot.diagnosis.helpers import ranked_fixes


def test_gptq_marlin_on_turing_uses_the_gptq_kernel():
    text = (
        "vllm serve TheBloke/Llama-2-13B-GPTQ --quantization gptq_marlin\n"
        "ValueError: The quantization method gptq_marlin is not supported for the current GPU. "
        "Minimum capability: 80. Current capability: 75."
    )
    fix = ranked_fixes(text)[0]
    assert fix.command == "vllm serve TheBloke/Llama-2-13B-GPTQ --quantization gptq"
    assert fix.verification["min_capability"] == 6.0


def test_fp8_on_ampere_with_an_old_minimum_points_at_the_release_that_runs_it():
    text = (
        "ValueError: The quantization method fp8 is not supported for the current GPU. "
        "Minimum capability: 90. Current capability: 86"
    )
    assert ranked_fixes(text)[0].command == 'pip install -U "vllm>=0.11.0"'


def test_awq_on_volta_searches_the_hub_for_a_gptq_checkpoint_of_the_named_model():
    text = (
        "vllm serve TheBloke/Mistral-7B-Instruct-v0.2-AWQ --quantization awq\n"
        "The quantization method awq is not supported for the current GPU. Minimum capability: 75. "
        "Current capability: 70."
    )
    fix = ranked_fixes(text)[0]
    assert fix.command == (
        'python -c "from huggingface_hub import list_models; '
        "print(*[m.id for m in list_models(search='Mistral-7B-Instruct-v0.2', limit=500) "
        "if 'gptq' in m.id.lower()], sep=chr(10))\""
    )
    assert fix.verification["min_capability"] == 6.0


def test_no_placeholder_command_when_the_paste_names_no_model():
    text = (
        "RuntimeError: ('Quantization scheme is not supported for ', 'the current GPU. Min capability: 80. ', "
        "'Current capability: 75.')"
    )
    reply = diagnose(detect(text))
    assert reply is not None
    assert all("<" not in f.command for f in reply.fixes)
