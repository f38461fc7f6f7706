"""Regular-expression denial of service: inputs built to make backtracking engines explode are scanned
without a crash and with bounded work, shown by structure rather than by a stopwatch (the timings, on
10 MiB of each, are in docs/reliability.md from scripts/reliability.py):

- every signature, requires/excludes and context pattern is compiled by RE2 (linear time, no
  backtracking), as is every secret pattern and the number parsers;
- an RE2 Set finds in one pass which patterns can match a view; each pattern then searches each view
  at most once, and there are at most three views (plain, joined, joined with spaces);
- normalisation's Python patterns never backtrack (tests/bot/test_normalize.py proves it per pattern).
"""

from __future__ import annotations

import pytest
import re2

from adapters.slack.events import slack_to_text
from bot import numbers, redact
from bot.detector import Detector, default_detector
from bot.normalize import normalize
from bot.secret_rules import default_rules
from tests.hardening.hostile import redos_inputs

SIZE = 256 * 1024
INPUTS = redos_inputs(SIZE)


def test_every_pattern_is_compiled_by_re2():
    det = default_detector()
    assert det.bank.compiled and all(isinstance(p, re2._Regexp) for p in det.bank.compiled)
    # the literal prefilter and every chunk's one-pass Set compiled within their memory budget
    chunks = range(len(det.bank.compiled) // det.bank.CHUNK + 1)
    assert det.bank._literals[0] is not None and all(det.bank.chunk_set(c)[0] for c in chunks)
    assert all(isinstance(r.pattern, re2._Regexp) for r in default_rules().rules)
    assert all(
        isinstance(p, re2._Regexp) for p in (numbers._THOUSANDS, numbers._DECIMAL_COMMA, numbers._PLAIN)
    )


class CountingPattern:
    """Wraps one compiled pattern and counts its searches (and the bytes each one scanned)."""

    def __init__(self, inner, tally: list[int]):
        self.inner = inner
        self.groups = inner.groups
        self.tally = tally

    def search(self, data, *args):
        self.tally[0] += 1
        self.tally[1] += len(data)
        return self.inner.search(data, *args)


@pytest.fixture(scope="module")
def counting_detector():
    base = default_detector()
    det = Detector(base.kb)
    tally = [0, 0]
    det.bank.compiled = [CountingPattern(p, tally) for p in det.bank.compiled]
    return det, tally


@pytest.mark.parametrize("name", list(INPUTS))
def test_pathological_input_is_scanned_with_bounded_work(name, counting_detector):
    det, tally = counting_detector
    text = INPUTS[name]
    tally[:] = [0, 0]
    detection = det.detect(text)
    views = detection.normalized.views
    assert 1 <= len(views) <= 3
    patterns = len(det.bank.compiled)
    # each pattern searches each view at most once: work <= patterns x (bytes of all views)
    assert tally[0] <= patterns * len(views)
    assert tally[1] <= patterns * sum(len(v.data) for v in views)
    # and the views are not blown up: a tab becomes four spaces, and the re-joined lines appear in at
    # most two more views, so at most 3 x 4 x the paste
    assert sum(len(v.data) for v in views) <= 12 * len(text.encode("utf-8", "replace")) + 16


@pytest.mark.parametrize("name", list(INPUTS))
def test_pathological_input_through_every_text_pass(name):
    text = INPUTS[name]
    cleaned = redact.redact(text)
    assert len(cleaned.text) <= 4 * len(text)  # tabs become four spaces; removals only shrink
    norm = normalize(cleaned.text)
    assert norm.views
    assert isinstance(slack_to_text(text), str)
    assert isinstance(slack_to_text("<" + text.replace("<", "") + "|" + text), str)


def test_pathological_shapes_in_one_paste_still_find_the_real_error():
    from tests.hardening.hostile import KV_PASTE

    mixed = "\n".join(v[:20_000] for v in INPUTS.values()) + "\n" + KV_PASTE
    detection = default_detector().detect(mixed)
    assert detection.root is not None and detection.root.category == "kv_cache_too_small"
