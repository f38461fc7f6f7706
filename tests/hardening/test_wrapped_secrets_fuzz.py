"""Tokens hard-wrapped at terminal widths among log lines of every shape (prefixed, short, blank,
indented): once redacted, no piece of a token is left, neither its head nor its wrapped tail.  Seeded, so
a failure names its case; it found a tail left after a prefixed line whose unprefixed rest is shorter
than a terminal, and after a chain of wider lines that ended on the token's first line."""

from __future__ import annotations

import random

import pytest

from bot.redact import redact

FILLERS = [
    "INFO 04-12 08:21:19 [gpu_model_runner.py:1067] Model loading took 14.99 GiB and 5.1 seconds",
    'vllm-1  | INFO:     127.0.0.1:53422 - "POST /v1/chat/completions HTTP/1.1" 200 OK',
    "srv  update_slots: id  0 | task 1234 | prompt done, n_past = 2048, n_tokens = 512",
    "(EngineCore_DP0 pid=1133552) INFO 10-03 16:22:17 [loggers.py:123] Engine 000: Avg prompt throughput: 12.3",
    "short line",
    "",
    "   x = 1",
]
HEADS = [
    "INFO 04-12 08:21:19 [api_server.py:1] args: vllm serve m --hf-token ",
    "export HF_TOKEN=",
    "vllm-1  | --api-key ",
    "Authorization: Bearer ",
    "(APIServer pid=1) INFO 07-06 10:54:37 [api_utils.py:273] non-default args: {'hf_token': '",
]
TAILS = ["", " --port 8000", "'", " and more text follows here to fill"]
WIDTHS = [40, 50, 60, 70, 79, 80, 81, 100, 120]
PIECE = 12  # characters of a token that must not survive


def case(rng: random.Random) -> tuple[str, str]:
    token = "hf_" + "".join(
        rng.choice("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz") for _ in range(34)
    )
    line = rng.choice(HEADS) + token + rng.choice(TAILS)
    width = rng.choice(WIDTHS)
    wrapped = [line[i : i + width] for i in range(0, len(line), width)]
    before = [rng.choice(FILLERS) for _ in range(rng.randint(0, 6))]
    after = [rng.choice(FILLERS) for _ in range(rng.randint(0, 3))]
    return token, "\n".join(before + wrapped + after)


@pytest.mark.parametrize("seed", range(4))
def test_no_piece_of_a_wrapped_token_survives(seed):
    rng = random.Random(seed)
    for n in range(150):
        token, text = case(rng)
        out = redact(text).text
        left = [token[i : i + PIECE] for i in range(len(token) - PIECE + 1) if token[i : i + PIECE] in out]
        assert not left, (seed, n, text)
