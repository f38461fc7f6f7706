"""A prompt longer than the context the server holds: no output budget helps, so the fix is the bound the
error itself prints (the prompt plus the answer within it); transformers gets max_new_tokens sized to the
model's positions."""

from __future__ import annotations

from tests.bot.diagnosis.helpers import ranked_fixes


def test_vllm_decoder_prompt_over_max_model_len():
    text = (
        "ValueError: The decoder prompt (length 12324) is longer than the maximum model length of 8192. "
        "Make sure that `max_model_len` is no smaller than the number of text tokens."
    )
    fix = ranked_fixes(text)[0]
    assert (fix.change, fix.command) == ("send a shorter prompt: `prompt_tokens + max_tokens <= 8192`", "")
    assert "4,132 over" in fix.effect


def test_vllm_v0_prompt_limit_bounds_the_prompt_alone():
    text = "WARNING 07-12 15:03:35 scheduler.py:194] Input prompt (3622 tokens) is too long and exceeds limit of 2560"
    assert ranked_fixes(text)[0].change == "send a shorter prompt: `prompt_tokens <= 2560`"


def test_llama_cpp_python_prompt_over_n_ctx():
    text = "ValueError: Prompt exceeds n_ctx: 2892 > 2048"
    assert ranked_fixes(text)[0].change == "send a shorter prompt: `prompt_tokens + max_tokens <= 2048`"


def test_a_prompt_under_the_limit_gets_an_output_budget_instead():
    text = (
        "ValueError: The decoder prompt (length 7000) is longer than the maximum model length of 8192. "
        "Make sure that `max_model_len` is no smaller than the number of text tokens."
    )
    assert all("prompt_tokens" not in f.change for f in ranked_fixes(text))


def test_transformers_generation_capped_at_the_positions():
    text = (
        "This is a friendly reminder - the current text generation call will exceed the model's predefined "
        "maximum length (2048). Depending on the model, you may observe exceptions, performance degradation, "
        "or nothing at all."
    )
    assert (
        ranked_fixes(text)[0].command
        == 'model.generate(**inputs, max_new_tokens=2048 - inputs["input_ids"].shape[-1])'
    )
