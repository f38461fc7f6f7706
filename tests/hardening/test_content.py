"""Hostile content: binary files, broken UTF-8, NULs, bidi overrides, zero-width characters, look-alike
digits and absurd numbers.  No crash, and no nonsense in the reply: every number in a suggested command
is finite, non-negative and within what real hardware and models have."""

from __future__ import annotations

import os
import random

import pytest

from bot.core import GardenBot, Paste
from bot.message import Attachment, IncomingMessage
from bot.service import GardenService
from bot.settings import Limits
from tests.hardening.hostile import (
    CUDA_PASTE,
    ERRORS,
    KV_PASTE,
    OLLAMA_PASTE,
    bad_numbers,
    rendered_texts,
)

OPEN = Limits(user_per_minute=10_000, channel_per_minute=10_000)
BIDI_AND_INVISIBLE = "\u202a\u202b\u202c\u202d\u202e\u2066\u2067\u2068\u2069\u200e\u200f\u2060\ufeff\x00"


def triage(text: str):
    return GardenBot().triage(Paste(text, False, []), addressed=True)


def assert_sane(reply, paste: str) -> None:
    assert reply is not None
    assert bad_numbers(reply, paste) == []
    for name, text in rendered_texts(reply).items():
        assert not any(c in text for c in BIDI_AND_INVISIBLE), name
        for word in ("nan GiB", "inf GiB", "-inf", "NaN tokens"):
            assert word not in text, (name, word)


# --- absurd numbers -------------------------------------------------------------------------------

ABSURD_ERRORS = [
    KV_PASTE.replace("(131072)", "(99999999999999999999)"),
    KV_PASTE.replace("(5728)", "(17179869184)"),
    KV_PASTE.replace("(131072)", "(0)").replace("(5728)", "(0)"),
    KV_PASTE.replace("(5728)", "(1e309)"),
    KV_PASTE.replace("(131072)", "(-131072)"),
    KV_PASTE.replace("(131072)", "(131,072)").replace("(5728)", "(5.728)"),
    OLLAMA_PASTE.replace("42.1", "-42.1"),
    OLLAMA_PASTE.replace("31.2", "NaN"),
    OLLAMA_PASTE.replace("42.1", "inf"),
    OLLAMA_PASTE.replace("42.1", "900000.5"),
    OLLAMA_PASTE.replace("42.1", "42,1").replace("31.2", "31,2"),
    CUDA_PASTE.replace("2.00 GiB", "900000.00 GiB"),
    CUDA_PASTE.replace("23.64 GiB", "900000 GiB"),
    CUDA_PASTE.replace("2.00 GiB", "0.00 GiB").replace("23.64", "0"),
    CUDA_PASTE.replace("1.20 GiB", "-1.20 GiB"),
    "ValueError: To serve at least one request with the models's max seq len (131072), (0.0001 GiB KV cache is "
    "needed, which is larger than the available KV cache memory (90000 GiB). Based on the available memory, "
    "the estimated maximum model length is 99999999999.",
]
ABSURD_COMMANDS = [
    "llama-server -m qwen2.5-7b-q4_k_m.gguf -c 999999999999999K -ngl 99999999",
    "vllm serve Qwen/Qwen2.5-7B-Instruct --max-model-len 999999999999999M --tensor-parallel-size 99999999999",
    "vllm serve Qwen/Qwen2.5-7B-Instruct --max-model-len -5 --gpu-memory-utilization NaN",
    "vllm serve Qwen/Qwen2.5-7B-Instruct --max-model-len 1e30 --gpu-memory-utilization -0.9 -tp 0",
    "OLLAMA_CONTEXT_LENGTH=999999999999999 OLLAMA_NUM_PARALLEL=-4 ollama serve",
    "python -m sglang.launch_server --model-path x --context-length 99999999999999 --mem-fraction-static 7",
]


@pytest.mark.parametrize("text", ABSURD_ERRORS)
def test_absurd_numbers_in_the_error_give_sane_commands(text):
    reply = triage(text)
    assert_sane(reply, text)


@pytest.mark.parametrize("command", ABSURD_COMMANDS)
@pytest.mark.parametrize("error", ERRORS, ids=["kv", "ollama", "cuda", "llama.cpp"])
def test_absurd_flags_on_the_command_line_give_sane_commands(command, error):
    text = f"$ {command}\n{error}"
    assert_sane(triage(text), text)


def test_context_length_with_a_huge_suffix_is_not_believed():
    """``-c 999999999999999K`` once became OLLAMA_CONTEXT_LENGTH=288230376151711744 in a fix."""
    text = f"$ {ABSURD_COMMANDS[0]}\n{OLLAMA_PASTE}"
    reply = triage(text)
    assert all("288230376151711744" not in f.command for f in reply.fixes)
    assert bad_numbers(reply, text) == []


def test_a_kv_cache_of_seventeen_billion_tokens_is_not_believed():
    reply = triage(ABSURD_ERRORS[1])
    assert all("17179869184" not in f.command for f in reply.fixes)


def test_a_petabyte_of_memory_is_not_believed():
    """900,000 GiB of RAM once became ``fallocate -l 899971G`` (a 900 TB swap file)."""
    reply = triage(ABSURD_ERRORS[9])
    assert all("899971G" not in f.command for f in reply.fixes)


# --- look-alike digits and invisible characters ----------------------------------------------------


def _fullwidth(s: str) -> str:
    return "".join(chr(ord(c) + 0xFEE0) if c.isdigit() else c for c in s)


def _math_bold(s: str) -> str:
    return "".join(chr(ord(c) - ord("0") + 0x1D7CE) if c.isdigit() else c for c in s)


def _arabic_indic(s: str) -> str:
    return "".join(chr(ord(c) - ord("0") + 0x0660) if c.isdigit() else c for c in s)


@pytest.mark.parametrize(
    ("how", "disguise", "recognised"),
    [
        ("fullwidth digits", _fullwidth, True),
        ("mathematical bold digits", _math_bold, True),
        ("zero-width space in every number", lambda s: s.replace("131072", "131\u200b072"), True),
        (
            "right-to-left override around the numbers",
            lambda s: s.replace("(5728)", "(\u202e8275\u202c)"),
            True,
        ),
        ("bidi isolates", lambda s: "\u2067" + s + "\u2069", True),
        ("NUL bytes", lambda s: s.replace(" ", " \x00"), True),
        ("byte-order marks", lambda s: "\ufeff" + s.replace("KV", "K\ufeffV"), True),
        ("Arabic-Indic digits (not folded: no finding, no crash)", _arabic_indic, False),
    ],
)
def test_disguised_digits_are_read_or_ignored_never_misread(how, disguise, recognised):
    text = disguise(KV_PASTE)
    reply = triage(text)
    assert_sane(reply, text)
    if recognised:
        assert reply.category == "kv_cache_too_small", how
    if reply.kind == "diagnosis":
        title = reply.title
        # a right-to-left override reverses what is shown, not what is read: 8275 is the number
        assert "131,072" in title or "131072" in title or "max_model_len" in title, how


# --- binary and broken attachments -----------------------------------------------------------------


def _attachments() -> list[Attachment]:
    rng = random.Random(9)
    noise = bytes(rng.randrange(256) for _ in range(200_000))
    return [
        Attachment("screenshot.png", b"\x89PNG\r\n\x1a\n" + noise, "image/png"),
        Attachment("server.log", b"\x00\x01\x02" + noise),  # binary with a text name
        Attachment("dump.log.gz", b"\x1f\x8b\x08\x00" + noise, "application/gzip"),
        Attachment("latin1.log", KV_PASTE.encode() + b"\n caf\xe9 \xff\xfe broken \xc3\x28 utf-8\n"),
        Attachment("utf16.txt", KV_PASTE.encode("utf-16")),
        Attachment("nul-late.log", KV_PASTE.encode() + b"\n" + b"ok\n" * 3000 + b"\x00\x00tail"),
        Attachment("noext", os.urandom(4096)),
        Attachment("empty.txt", b""),
    ]


async def test_binary_and_broken_attachments_never_crash_and_are_named():
    svc = GardenService(limits=OPEN)
    atts = _attachments()
    msg = IncomingMessage(
        platform="test", text="it broke, logs attached", attachments=tuple(atts), mentioned=True
    )
    out = await svc.handle(msg)
    assert out.kind == "reply" and out.reply is not None
    assert_sane(out.reply, KV_PASTE)
    skipped = " ".join(n for n in out.reply.notes if n.startswith("Skipped"))
    for name in ("screenshot.png", "server.log", "dump.log.gz"):
        assert name in skipped
    # the readable ones were read despite their broken bytes
    assert out.reply.category == "kv_cache_too_small"


@pytest.mark.parametrize("seed", range(6))
async def test_random_bytes_as_text_never_crash(seed):
    rng = random.Random(seed)
    blob = bytes(rng.randrange(256) for _ in range(50_000))
    svc = GardenService(limits=OPEN)
    text = blob.decode("utf-8", "surrogateescape")  # lone surrogates: not even encodable as UTF-8
    for candidate in (text, blob.decode("latin-1"), blob.decode("utf-8", "replace")):
        out = await svc.handle(
            IncomingMessage(platform="test", text=candidate + "\n" + KV_PASTE, mentioned=True)
        )
        assert out.reply is not None
        assert_sane(out.reply, KV_PASTE)


def test_a_diagnosis_rule_that_raises_still_gets_an_answer(monkeypatch, caplog):
    """A rule that fails on what a paste holds (found by fuzzing: the TGI pool rule on an invalid
    max_batch_total_tokens) must cost the computed fixes, not the whole answer."""
    import bot.diagnosis as diagnosis

    def broken_rule(_facts):
        raise TypeError("int() argument must be a real number, not 'NoneType'")

    monkeypatch.setitem(diagnosis.FORMS, "capacity_short", broken_rule)
    reply = triage(KV_PASTE)
    assert reply is not None and reply.signature == "vllm.kv_cache_too_small.v0"
    assert not reply.fixes and any("did not add up" in n for n in reply.notes)
    assert "diagnosis of vllm.kv_cache_too_small.v0 failed (TypeError)" in caplog.text


def test_a_torch_oom_with_only_the_process_figures_believed_is_still_diagnosed(caplog):
    """Absurd request and capacity figures are dropped; the rule then has no opening sentence and must
    not fail on the other-process one (it raised TypeError before)."""
    paste = (
        "torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 99999999999 TiB. GPU 0 has a total "
        "capacity of 99999999999 TiB of which 99999999999 TiB is free. Process 1234 has 14.20 GiB memory "
        "in use. Including non-PyTorch memory, this process has 8.30 GiB memory in use. Of the allocated "
        "memory 6.10 GiB is allocated by PyTorch, and 1.40 GiB is reserved by PyTorch but unallocated."
    )
    reply = triage(paste)
    assert reply is not None and reply.signature == "pytorch.cuda_oom.v0"
    assert "failed" not in caplog.text
    assert not any("did not add up" in n for n in reply.notes)
    assert_sane(reply, paste)
