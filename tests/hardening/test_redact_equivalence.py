"""The redactor's fast paths give exactly the output of the algorithm they replaced (a frozen copy in
tests/bot/frozen/redact_v0.py): the same text and the same kinds, on real pastes, planted secrets
wrapped at many widths, and random line shapes built to hit every branch of the run finder.  The
redactor now searches the paste as the detector reads it (bot.unwrap after the visible text), so the
frozen copy is given that reading."""

from __future__ import annotations

import random
from array import array

import pytest

from bot import redact as fast
from bot.normalize import strip_prefixes, visible
from bot.unwrap import unwrap
from tests.bot.frozen import redact_v0 as frozen
from tests.hardening.redact_equivalence import FILLER, PREFIX, corpus, joined, planted_texts


def same(text: str) -> tuple[tuple[str, tuple[str, ...]], tuple[str, tuple[str, ...]]]:
    a, b = frozen.redact(unwrap(visible(text))), fast.redact(text)
    return (a.text, a.kinds), (b.text, b.kinds)


def test_every_corpus_paste_is_redacted_as_before():
    for name, text in corpus():
        before, now = same(text)
        assert now == before, name


def test_planted_secrets_wrapped_at_two_widths_are_redacted_as_before():
    items = list(planted_texts((37, 80)))[::5]  # bench/redact_throughput.py --check takes them all
    assert len(items) > 1000
    for name, text in items:
        before, now = same(text)
        assert now == before, name
    texts = [t for _n, t in items]
    before, now = same(joined(texts, 3))
    assert now == before and len(now[1]) > 50


PIECES = [
    "",
    "   ",
    "ValueError: no",
    '  File "x.py", line 3',
    "-PCIE-16GB",
    " needed",
    "h_memory=17.98GiB",
    "92. Make sure",
    "INFO 04-12 08:21:19 [worker.py:267] ",
    "[rank0]: ",
    PREFIX,
    "hf_AbCdEfGh12AbCdEfGh12AbCdEfGh12",
    "token=",
    "\t",
]


def random_text(rng: random.Random) -> str:
    """Lines of random widths around the run finder's thresholds, made of record starts, prefixes,
    blanks, tabs and token pieces."""
    lines = []
    width = rng.choice([39, 40, 41, 47, 79, 80, 81, 120])
    for _ in range(rng.randint(1, 200)):
        head = "".join(rng.choice(PIECES) for _ in range(rng.randint(0, 2)))
        body = "".join(rng.choice("abcdefXYZ0123456789_-+/= .:") for _ in range(width + rng.randint(-12, 12)))
        lines.append((head + body)[: max(0, width + rng.randint(-10, 10))] if rng.random() < 0.9 else head)
    return "\n".join(lines)


def runs(text: str) -> list[fast.Run]:
    lines, raw, wide, _marked = fast._stripped_lines(text)
    return fast._runs(*fast._joins(raw, list(map(fast._stripper("strip", wide), lines)), lines))


@pytest.mark.parametrize("seed", range(40))
def test_runs_are_found_as_before_on_random_shapes(seed):
    rng = random.Random(seed)
    for _ in range(50):
        text = visible(random_text(rng))
        assert runs(text) == frozen._runs(frozen._stripped_lines(text), list(map(len, text.split("\n"))))


def test_a_run_longer_than_the_window_is_cut_as_before():
    # one chain of 200 equal lines: windows of WRAP_WINDOW lines, each starting on the last one's end
    text = "\n".join(FILLER for _ in range(200))
    found = runs(text)
    assert found == frozen._runs(frozen._stripped_lines(text), list(map(len, text.split("\n"))))
    assert found[:3] == [(0, 63, False), (0, 62, False), (63, 126, False)]


def test_lines_are_stripped_as_one_pass_does_across_chunks(monkeypatch):
    rows = [
        PREFIX + "ValueError: x" if i % 3 else "INFO 04-12 08:21:19 [a.py:1] " + FILLER for i in range(3000)
    ]
    text = "\n".join(rows)
    whole = fast._stripped_lines(text)
    monkeypatch.setattr(fast, "STRIP_CHUNK", 1000)  # a cut every few lines
    assert fast._stripped_lines(text) == whole
    lines, raw, wide, cuts = whole
    rests = strip_prefixes(text, mark="").split("\n")  # what each line keeps: the detector gets the cuts
    assert list(cuts) == [len(row) - len(rest) for row, rest in zip(rows, rests, strict=True)]
    assert cuts[:3] == array("q", [76, len(PREFIX), len(PREFIX)])  # 29 + the prefix FILLER opens with
    assert lines == strip_prefixes(text, mark="").encode().split(b"\n") and raw == list(map(len, rows))
    assert not wide
    assert runs(text) == frozen._runs(frozen._stripped_lines(text), raw)


def test_a_secret_wrapped_inside_a_long_chain_is_removed_as_before():
    secret = "hf_" + "AbCdEfGh12" * 6
    line = FILLER + " --hf-token " + secret
    for cut in (60, 63, 64, 65, 100, 127, 128):  # the secret's line lands on and around window edges
        rows = [FILLER] * cut + [line[:80], line[80:]] + [FILLER] * 10
        before, now = same("\n".join(rows))
        assert now == before and secret[:20] not in now[0], cut


@pytest.mark.parametrize("space", ["\x1c", "\x1f", "\x85", "\u2028", "\u1680", "\x0b", "\u00a0"])
def test_lines_ending_in_any_whitespace_str_strips_are_cut_as_before(space):
    # the runs are read as UTF-8: str.strip's whitespace (beyond bytes.strip's) must still be cut
    secret = "hf_" + "AbCdEfGh12" * 6
    line = f"{FILLER} --hf-token {secret}"
    rows = [FILLER, line[:80] + space, space + line[80:] + space, FILLER + space, space * 3]
    before, now = same("\n".join(rows))
    assert now == before and secret[:20] not in now[0]
    assert fast._stripper("strip", True)(f"{space} y{space}".encode()) == b"y"


@pytest.mark.parametrize("cut", [80, 93, 100])  # the rest no wider than the wrapped line
def test_a_wrapped_secret_after_wide_characters_is_cut_at_the_same_places(cut):
    # windows are read as UTF-8 bytes: a secret's pieces must come out where the characters are
    secret = "hf_" + "AbCdEfGh12" * 6
    line = f"INFO 04-12 08:21:19 [api.py:1] modèle → «Qwen» 日本語 --hf-token {secret} done"
    quoted = f'(APIServer pid=1) "api_key": "Ab3dE5gH7jK9 mN1pQ3sT→Ab3dE5gH7jK9mN1pQ3sT" 模型 {FILLER}'
    text = "\n".join([FILLER + " é", line[:cut], line[cut:], quoted[:cut], quoted[cut:], "→ end"])
    before, now = same(text)
    assert now == before and secret[:20] not in now[0] and secret[-20:] not in now[0]
