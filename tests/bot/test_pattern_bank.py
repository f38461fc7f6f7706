"""The detector's pre-passes: the literal prefilter picks every pattern that can match, the chunked RE2
Sets narrow a long view to the patterns that match, and a failed pass never reads as "no finding"."""

from __future__ import annotations

import pytest
import re2

from bot.detector import Detector, PatternBank
from bot.literals import required
from bot.normalize import normalize
from knowledge import load_builtin
from tests.hardening.hostile import signature_examples

OOM = "torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 2.00 GiB.\n"
LONG = ("INFO 04-12 08:21:19 [worker.py:267] Model loading took 14.99 GiB\n" * 3000) + OOM


class FailedSet:
    """What google-re2's ``Set.Match`` returns when RE2's DFA runs out of memory: the same ``None``
    as for a text with no match at all."""

    def Match(self, data: bytes) -> None:  # the RE2 binding's name
        return None


@pytest.fixture(scope="module")
def kb():
    return load_builtin()


@pytest.mark.parametrize(
    ("pattern", "literals"),
    [
        (r"GGML_ASSERT[:(]?\s*\(?[^\n]*ggml-metal", ("ggml_assert",)),
        (r"(?:CUDA|HIP) out of memory", (" out of memory",)),
        (r"(?:cudaMalloc|hipMalloc)\s*failed", ("cudamalloc", "hipmalloc")),
        (r"(?:Tried )?to allocate", ("to allocate",)),  # the optional words are not required
        (r"\x{2190}\[[0-9]+m\z", ("[",)),  # RE2 escapes read: the arrow is not ASCII, the bracket is
        (r"[[:alpha:]]+ rank", ()),  # a POSIX class: Python would read "[[:alph" as a class then "a"
        (r"(?<name>x)", ()),  # RE2-only syntax Python cannot parse: always a candidate
        (r"a?b*", ()),
    ],
)
def test_required_literals(pattern: str, literals: tuple[str, ...]) -> None:
    assert required(pattern) == literals


def test_every_matching_pattern_is_a_candidate(kb) -> None:
    det = Detector(kb)
    sources = list(det.bank._ids)
    for text in signature_examples():
        for view in normalize(text).views:
            candidates = det.bank.candidates(view.data)
            assert candidates is not None
            matching = {pid for pid, p in enumerate(sources) if re2.search(p, view.data)}
            assert matching <= candidates, text[:80]


def test_a_short_paste_compiles_only_its_candidates(kb) -> None:
    det = Detector(kb)
    assert det.bank._chunks == {}  # no Set of patterns at start
    assert det.detect(OOM).findings[0].signature == "pytorch.cuda_oom_short.v0"
    compiled = sum(c is not None for c in det.bank.compiled._compiled)
    assert 0 < compiled < 20 and det.bank._chunks == {}


def test_a_long_view_gets_exactly_the_matching_patterns(kb) -> None:
    det = Detector(kb)
    data = normalize(LONG).views[0].data
    assert len(data) >= PatternBank.LONG_VIEW
    hits = det.bank.scan(normalize(LONG))[0]
    assert hits == {pid for pid in range(len(det.bank.compiled)) if det.bank.compiled[pid].search(data)}
    assert len(det.bank._chunks) == len(det.bank.compiled) // PatternBank.CHUNK + 1


def test_a_failed_chunk_pass_falls_back_to_its_patterns(kb) -> None:
    det = Detector(kb)
    expected = [f.signature for f in det.detect(LONG).findings]
    hits = det.bank.scan(normalize(LONG))[0]
    assert hits is not None
    det.bank._chunks[1] = (FailedSet(), 0)
    chunk = set(range(PatternBank.CHUNK, 2 * PatternBank.CHUNK))
    assert det.bank.scan(normalize(LONG))[0] == hits | chunk
    assert [f.signature for f in det.detect(LONG).findings] == expected
    assert "pytorch.cuda_oom_short.v0" in expected


def test_a_failed_literal_pass_searches_every_pattern(kb) -> None:
    det = Detector(kb)
    expected = [f.signature for f in det.detect(OOM).findings]
    det.bank._literals = (FailedSet(), 0)
    assert det.bank.scan(normalize(OOM)) == [None]
    assert [f.signature for f in det.detect(OOM).findings] == expected
    assert expected[0] == "pytorch.cuda_oom_short.v0"


def test_a_clean_text_has_no_candidates_beyond_its_literals(kb) -> None:
    det = Detector(kb)
    assert det.bank.scan(normalize("zzzz\n")) == [frozenset()]
