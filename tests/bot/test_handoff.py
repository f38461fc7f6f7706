"""Redaction hands the length of every line's prefixes in the text it read over to normalisation
(bot.normalize.hand_over): the views must be those of a fresh normalisation, the cuts used only for that
very text object, once."""

from __future__ import annotations

from array import array

from bot import normalize as N
from bot.redact import redact

LINE = "vllm-1  | INFO 04-12 08:21:19 [worker.py:267] Model loading took 14.99 GiB and 5.1 seconds"
# the last line continues a prefixed one (joined only when normalize knows the line before had a prefix)
LONG = "\n".join([LINE] * 4000 + ["ERROR 04-12 08:21:20 [core.py:1] CUDA out of memory while", "loading"])


def _views(norm: N.Normalized) -> list[tuple[bytes, list[int]]]:
    return [(v.data, list(v.first_physical)) for v in norm.views]


def test_redaction_hands_over_what_normalize_would_compute():
    cleaned = redact(LONG)
    assert cleaned.text is LONG  # nothing to clean, nothing removed: the text read is the one returned
    assert [key for key, _pieces in N._HANDOFF] == [LONG]
    handed = _views(N.normalize(cleaned.text))
    assert N._HANDOFF == []  # taken once
    fresh = _views(N.normalize("".join(cleaned.text)))  # an equal text, another object
    assert handed == fresh
    assert fresh[0][0].split(b"\n")[0] == b"Model loading took 14.99 GiB and 5.1 seconds"
    assert fresh[1] == (b"CUDA out of memory whileloading", [4000])


def test_cuts_are_used_for_that_object_only():
    text = "x" * N.HANDOFF_MIN + "\n[rank0]: y"
    N.hand_over(text, array("q", [0, 3]))
    other = "".join(text)  # equal, not the same object
    assert other is not text
    assert N.normalize(other).views[0].data.endswith(b"\ny")
    assert N._HANDOFF == []  # a miss drops the entry too
    N.hand_over(text, array("q", [0, 3]))
    assert N.normalize(text).views[0].data.endswith(b"\nnk0]: y")  # the same object: the cuts are read
    N.hand_over(text, array("q", [0]))  # not one cut a line: stripped as if none was handed over
    assert N.normalize(text).views[0].data.endswith(b"\ny")


def test_a_short_text_is_not_handed_over():
    redact("[rank0]: hello\n[rank0]: world")
    assert N._HANDOFF == []


def test_no_handoff_when_redaction_changed_the_text():
    secret = "HF_TOKEN=hf_" + "AbCdEfGh12" * 4
    cleaned = redact(LONG + "\n" + secret)
    assert cleaned.found and N._HANDOFF == []
    wrapped = LONG + "\n--hf-token hf_AbCdEfGh12AbCdEfGh12AbCdEf\nGh12AbCdEfGh12AbCdEfGh12\n"
    cleaned = redact(wrapped)
    assert cleaned.found and N._HANDOFF == []
