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


# qwen-code#371 (tests/data/wild_2026.jsonl qwencode371-slot-9m-prompt): a 9-million-token prompt
LLAMA_SERVER_9M = (
    "slot update_slots: id  0 | task 2119 | new prompt, n_ctx_slot = 131072, n_keep = 0, n_prompt_tokens = 8960912\n"
    "srv    send_error: task id = 2119, error: the request exceeds the available context size. try increasing "
    "the context size or enable context shift\n"
)


def test_a_request_over_the_slot_says_the_bound_and_what_an_unsized_context_needs():
    fit, bound = ranked_fixes(LLAMA_SERVER_9M)
    # one KV buffer for the slots: with -np N and split buffers each slot would get -c / N
    # --fit is on by default: only the context and the one KV buffer are added
    assert fit.adds == "-c 8961024 --kv-unified"
    assert fit.effect.endswith(
        "it starts only if the KV cache of 8,961,024 tokens fits in your GPU and CPU memory"
    )
    assert (bound.change, bound.command) == ("send at most 131,072 tokens in one request", "")
    assert bound.effect == "the request is 8,829,840 tokens over what the server holds"


def test_no_longer_context_is_offered_past_the_models_trained_one():
    # the same request, with the model's trained context in the log (llama.cpp print_info)
    text = "print_info: n_ctx_train      = 262144\n" + LLAMA_SERVER_9M
    fixes = ranked_fixes(text)
    assert not any("--fit" in (f.adds or f.command) for f in fixes)
    assert [f.change for f in fixes][:1] == ["send at most 131,072 tokens in one request"]


def test_a_user_s_fit_off_is_turned_back_on_for_the_longer_context():
    text = (
        "llama-server -m x.gguf -c 4096 -fit off\n"
        "slot update_slots: id  0 | task 7 | new prompt, n_ctx_slot = 4096, n_keep = 0, n_prompt_tokens = 5000\n"
        "srv    send_error: task id = 7, error: the request exceeds the available context size. try increasing "
        "the context size or enable context shift\n"
    )
    assert ranked_fixes(text)[0].command == "llama-server -m x.gguf -c 5120 --kv-unified --fit on"
