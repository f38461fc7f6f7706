"""TGI warm-up could not fit the --max-batch-total-tokens the user set: the fix leaves it unset so TGI
sizes the KV cache itself, keeping the rest of the user's launcher command."""

from __future__ import annotations

from bot.detector import detect
from bot.diagnosis import diagnose

ERROR = (
    "Not enough memory to handle 16000 total tokens with 2 prefill tokens. You need to decrease "
    "`--max-batch-total-tokens` or `--max-batch-prefill-tokens"
)


def test_the_flag_is_removed_from_the_users_command():
    text = (
        "text-generation-launcher --model-id meta-llama/Llama-2-70b-chat-hf --num-shard 8 "
        "--max-batch-total-tokens 16000\n" + ERROR
    )
    reply = diagnose(detect(text))
    assert reply is not None
    assert (
        reply.fixes[0].command
        == "text-generation-launcher --model-id meta-llama/Llama-2-70b-chat-hf --num-shard 8"
    )


def test_without_a_command_the_action_of_dropping_the_flag():
    # no command and no model in the paste: nothing to print that would start; the action says what to drop
    reply = diagnose(detect(ERROR))
    assert reply is not None
    assert reply.fixes[0].command == "" and reply.fixes[0].adds == ""
