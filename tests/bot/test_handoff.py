"""Redaction hands the length of every line's prefixes in the text it returns over to normalisation
(bot.redact.Redaction.prefix_cuts, read by bot.normalize.normalize): the views must be those of a fresh
normalisation, the cuts are used only when they fit the text, and they come with every redacted text."""

from __future__ import annotations

from array import array

from bot import normalize as N
from bot.core import GardenBot, Paste
from bot.redact import redact

LINE = "vllm-1  | INFO 04-12 08:21:19 [worker.py:267] Model loading took 14.99 GiB and 5.1 seconds"
# the last line continues a prefixed one (joined only when normalize knows the line before had a prefix)
LONG = "\n".join([LINE] * 4000 + ["ERROR 04-12 08:21:20 [core.py:1] CUDA out of memory while", "loading"])


def _views(norm: N.Normalized) -> list[tuple[bytes, list[int]]]:
    return [(v.data, list(v.first_physical)) for v in norm.views]


def test_redaction_hands_over_what_normalize_would_compute():
    cleaned = redact(LONG)
    assert cleaned.text is LONG  # nothing to clean, nothing removed: the text read is the one returned
    assert cleaned.prefix_cuts is not None and len(cleaned.prefix_cuts) == 4002
    handed = _views(N.normalize(cleaned.text, cleaned.prefix_cuts))
    fresh = _views(N.normalize(cleaned.text))
    assert handed == fresh
    assert fresh[0][0].split(b"\n")[0] == b"Model loading took 14.99 GiB and 5.1 seconds"
    assert fresh[1] == (b"CUDA out of memory whileloading", [4000])


def test_a_text_redaction_cleaned_is_handed_over_as_it_would_be_read():
    # colour codes and a fullwidth digit: redaction returns the visible text, which normalize reads as is
    coloured = LONG.replace("INFO", "\x1b[32mINFO\x1b[0m").replace("14.99", "１4.99")
    cleaned = redact(coloured)
    assert cleaned.prefix_cuts is not None and "\x1b" not in cleaned.text
    assert _views(N.normalize(cleaned.text, cleaned.prefix_cuts)) == _views(N.normalize(coloured))


def test_the_bot_reads_the_cuts_a_paste_carries():
    cleaned = redact(LONG)
    handed = GardenBot().detector.detect(cleaned.text)
    paste = Paste(cleaned.text, False, [], cleaned.prefix_cuts)
    assert GardenBot().detector.detect(paste.text, paste.prefix_cuts).findings == handed.findings


def test_cuts_are_used_only_when_they_fit_the_text():
    text = "x" * 1000 + "\n[rank0]: y"
    assert N.normalize(text).views[0].data.endswith(b"\ny")
    assert N.normalize(text, array("q", [0, 3])).views[0].data.endswith(b"\nnk0]: y")  # the cuts are read
    # not one cut a line: stripped as if none was handed over
    assert N.normalize(text, array("q", [0])).views[0].data.endswith(b"\ny")


def test_a_short_text_is_handed_over_too():
    assert list(redact("[rank0]: hello\n[rank0]: world").prefix_cuts or []) == [9, 9]
    assert list(redact("[rank0]: hello").prefix_cuts or []) == [9]


def test_the_cuts_are_measured_again_on_a_text_a_secret_was_removed_from():
    secret = "HF_TOKEN=hf_" + "AbCdEfGh12" * 4
    cleaned = redact(LONG + "\n[rank0]: " + secret)
    assert cleaned.found and cleaned.text.endswith("\n[rank0]: HF_TOKEN=[Hugging Face token removed]")
    assert cleaned.prefix_cuts is not None and list(cleaned.prefix_cuts[-3:]) == [33, 0, 9]
    wrapped = LONG + "\n--hf-token hf_AbCdEfGh12AbCdEfGh12AbCdEf\nGh12AbCdEfGh12AbCdEfGh12\n"
    cleaned = redact(wrapped)
    assert cleaned.found and cleaned.prefix_cuts is not None
    assert _views(N.normalize(cleaned.text, cleaned.prefix_cuts)) == _views(N.normalize(cleaned.text))
