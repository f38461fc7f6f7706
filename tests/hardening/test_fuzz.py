"""Property-based fuzzing (hypothesis): pastes built from log-like fragments - every signature's own
examples with their numbers replaced by hostile ones, log prefixes, ANSI codes, hard wraps, invisible
characters - and plain random bytes.  Whatever the paste: redaction, detection, diagnosis and the three
renderings never raise and always finish; no fix command holds a negative, NaN, infinite or absurd
number; a planted secret is never echoed.

Example counts are modest so the whole hardening suite stays well under a minute on two cores;
``HYPOTHESIS_PROFILE=long`` runs twenty times more."""

from __future__ import annotations

import os
import re

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from bot.message import IncomingMessage
from bot.service import GardenService
from bot.settings import Limits
from tests.hardening.hostile import bad_numbers, leaked, rendered_texts, secret_samples, signature_examples

settings.register_profile(
    "hardening",
    max_examples=60,
    deadline=None,  # no timing assertions in unit tests: termination is the property, not speed
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
    derandomize=True,  # the same examples on every run (CI is reproducible); "long" explores
    database=None,
)
settings.register_profile(
    "long",
    parent=settings.get_profile("hardening"),
    max_examples=1200,
    derandomize=False,
)
settings.load_profile(os.environ.get("HYPOTHESIS_PROFILE", "hardening"))

EXAMPLES = [e[:600] for e in signature_examples()]
SECRETS = secret_samples()
SERVICE = GardenService(limits=Limits(user_per_minute=10**9, channel_per_minute=10**9))
_NUM = re.compile(r"[0-9]+(?:[.,][0-9]+)*")

PREFIXES = [
    "",
    "INFO 04-12 08:21:19 [worker.py:267] ",
    "(VllmWorker rank=3 pid=1090) ERROR 04-12 08:21:19 [core.py:1] ",
    "vllm-1  | ",
    "[rank0]: ",
    "time=2025-08-08T23:02:37.145+01:00 level=INFO source=server.go:135 ",
    "2024-01-22 14:32:19,671 INFO worker.py:1540 -- ",
    "Aug 08 23:02:37 host ollama[1617]: ",
    "  | [2025-03-10T15:07:20Z] ",
    "1.06.520.077 E ",
]
NOISE = [
    "\x1b[31m",
    "\x1b[0m",
    "[34m",
    "\x1b]0;title\x07",
    "\u200b",
    "\u202e",
    "\u2066",
    "\ufeff",
    "\x00",
    "\r",
    "\t",
    "```",
    "@everyone",
]


@st.composite
def numbers(draw) -> str:
    """Numbers as engines and people print them, and as nobody should."""
    kind = draw(st.sampled_from(["int", "sep", "comma", "float", "huge", "neg", "word", "exp", "unicode"]))
    n = draw(st.integers(min_value=0, max_value=10**12))
    if kind == "int":
        return str(n)
    if kind == "sep":
        return f"{n:,}"
    if kind == "comma":
        return f"{n % 100000},{n % 100:02d}"
    if kind == "float":
        return repr(draw(st.floats(allow_nan=True, allow_infinity=True)))
    if kind == "huge":
        return str(draw(st.integers(min_value=10**12, max_value=10**40)))
    if kind == "neg":
        return f"-{n}"
    if kind == "word":
        return draw(st.sampled_from(["NaN", "nan", "inf", "-inf", "Infinity", "1e309", "0", "0.0", "-0"]))
    if kind == "exp":
        return f"{n % 1000}e{draw(st.integers(-400, 400))}"
    return "".join(chr(0xFF10 + int(c)) for c in str(n))  # fullwidth digits


@st.composite
def log_pastes(draw) -> str:
    lines = []
    for _ in range(draw(st.integers(1, 4))):
        example = draw(st.sampled_from(EXAMPLES))
        example = _NUM.sub(lambda _m: draw(numbers()), example)
        prefix = draw(st.sampled_from(PREFIXES))
        text = prefix + example
        if draw(st.booleans()):  # hard wrap at a terminal width, or anywhere
            width = draw(st.sampled_from([40, 80, 120, draw(st.integers(5, 200))]))
            text = "\n".join(text[i : i + width] for i in range(0, len(text), width))
        if draw(st.booleans()):  # noise spliced in
            for _ in range(draw(st.integers(1, 5))):
                at = draw(st.integers(0, len(text)))
                text = text[:at] + draw(st.sampled_from(NOISE)) + text[at:]
        lines.append(text)
    return "\n".join(lines)


def answer(text: str, **kw):
    msg = IncomingMessage(platform="test", text=text, mentioned=True, **kw)
    reply, kinds = SERVICE._answer(msg)
    texts = rendered_texts(reply) if reply is not None else {}
    return reply, kinds, texts


@given(log_pastes())
def test_log_like_pastes_never_crash_and_give_sane_numbers(text):
    reply, _kinds, texts = answer(text)
    assert reply is not None  # addressed: always some answer
    assert bad_numbers(reply, text) == [], [b.text for b in bad_numbers(reply, text)]
    for rendered in texts.values():
        assert "\x00" not in rendered and "\u202e" not in rendered


@given(st.binary(max_size=4096), st.sampled_from(["utf-8", "latin-1", "surrogateescape"]))
def test_random_bytes_never_crash(data, how):
    text = (
        data.decode("utf-8", "surrogateescape") if how == "surrogateescape" else data.decode(how, "replace")
    )
    reply, _kinds, _texts = answer(text)
    assert reply is not None
    assert bad_numbers(reply, text) == []


@given(
    log_pastes(),
    st.sampled_from(SECRETS),
    st.integers(0, 10**6),
    st.sampled_from([" ", "\n", "\t", " '", '="']),
)
def test_a_planted_secret_is_never_echoed(text, secret, where, sep):
    lines = text.split("\n")
    at = where % (len(lines) + 1)
    planted = "\n".join([*lines[:at], sep + secret.text + sep.strip()[::-1], *lines[at:]])
    reply, kinds, texts = answer(planted)
    # named (a secret whose value runs into the next wrapped line may be named by the generic rule that
    # caught it, e.g. "API key" for an AWS secret key: the rotate notice still covers it), never echoed
    assert kinds or not secret_fragments_present(planted, secret)
    for name, rendered in texts.items():
        assert not leaked(rendered, [secret]), name
    assert not leaked(repr(reply), [secret])


def secret_fragments_present(text: str, secret) -> bool:
    return bool(leaked(text, [secret]))


PREFIXED = ["", "INFO 04-12 08:21:19 [a.py:1] ", "vllm-1  | ", "[rank0]: "]


@given(st.sampled_from(SECRETS), st.integers(40, 160), st.sampled_from(PREFIXED))
def test_a_secret_wrapped_across_lines_is_never_echoed(secret, width, prefix):
    """A terminal wraps a long command line mid-token; the detector re-joins wrapped lines, so the
    halves of the secret must not come back together in the reply (nor be echoed half by half)."""
    planted = secret.text if secret.kind != "private key" else secret.value.replace("\n", " ")
    command = f"vllm serve Qwen/Qwen2.5-7B-Instruct --max-model-len 131072 {planted} --port 8000"
    if secret.kind == "private key":  # a key is a block of lines of its own, each with the log prefix
        wrapped = "\n".join(prefix + line for line in ["$ cat key.pem", *secret.value.split("\n")])
    else:
        wrapped = "\n".join(prefix + command[i : i + width] for i in range(0, len(command), width))
    kv = (
        "ValueError: The model's max seq len (131072) is larger than the maximum number of tokens that can be "
        "stored in KV cache (5728)."
    )
    planted = wrapped + "\n" + prefix + kv
    _reply, _kinds, texts = answer(planted)
    for name, rendered in texts.items():
        assert not leaked(rendered, [secret]), name
