"""The RE2 Set pre-pass of the detector: a failed pass must never read as "no finding"."""

from __future__ import annotations

from bot.detector import Detector
from bot.normalize import normalize
from knowledge import load_builtin

OOM = "torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 2.00 GiB.\n"


class FailedSet:
    """What google-re2's ``Set.Match`` returns when RE2's DFA runs out of memory: the same ``None``
    as for a text with no match at all."""

    def Match(self, data: bytes) -> None:  # the RE2 binding's name
        return None


def test_a_successful_pass_reports_its_hits() -> None:
    det = Detector(load_builtin())
    hits = det.bank.scan(normalize(OOM))
    assert hits[0] is not None
    assert det.bank._sentinel in hits[0]


def test_a_clean_text_still_gives_a_known_answer() -> None:
    det = Detector(load_builtin())
    assert det.bank.scan(normalize("hello\n")) == [frozenset({det.bank._sentinel})]


def test_a_failed_set_pass_falls_back_to_every_pattern() -> None:
    det = Detector(load_builtin())
    expected = [f.signature for f in det.detect(OOM).findings]
    det.bank._set = FailedSet()
    assert det.bank.scan(normalize(OOM)) == [None]
    assert [f.signature for f in det.detect(OOM).findings] == expected
    assert expected[0] == "pytorch.cuda_oom_short.v0"


def test_patterns_compile_on_first_use_only() -> None:
    det = Detector(load_builtin())
    lazy = det.bank.compiled
    assert len(lazy) > 100 and all(c is None for c in lazy._compiled)
    det.detect(OOM)
    compiled = sum(c is not None for c in lazy._compiled)
    assert 0 < compiled < len(lazy) // 4  # the Set's hits and the context rules' hits, not every pattern
    assert lazy[0] is lazy[0] and lazy[0].pattern == lazy._sources[0]
