"""The pastes on which the production redactor must give exactly the output of the frozen copy
(tests/bot/frozen/redact_v0.py): every corpus and held-out paste, the planted secrets as given and
hard-wrapped at terminal widths from 32 to 100 columns (with and without a log prefix on each line),
all of them joined into long pastes, and the bench's large shapes.  Shared by
tests/hardening/test_redact_equivalence.py and ``bench/redact_throughput.py --check``."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path

from tests.hardening.planted import planted, wrap

DATA = Path(__file__).resolve().parent.parent / "data"
CORPORA = ("dev.jsonl", "wild_engines.jsonl", "wild_logs.jsonl", "wild_wordings.jsonl")
WIDTHS = (32, 41, 47, 64, 73, 80, 100)  # narrow terminals to wide ones, some not a multiple of 8
PREFIX = "vllm-1  | INFO 04-12 08:21:19 [api_server.py:1] "
FILLER = "INFO 04-12 08:21:19 [gpu_model_runner.py:1067] Model loading took 14.99 GiB and 5.1 seconds"


def corpus() -> Iterator[tuple[str, str]]:
    for name in CORPORA:
        for n, line in enumerate((DATA / name).read_text(encoding="utf-8").splitlines()):
            if line.strip():
                yield f"{name}:{n}", json.loads(line)["text"]


def planted_texts(widths: tuple[int, ...] = WIDTHS) -> Iterator[tuple[str, str]]:
    """Each rule's first example in every placement, as given and wrapped at each width."""
    for p in planted(per_rule=1):
        yield f"{p.rule}/{p.placement}", p.text
        for width in widths:
            wrapped = wrap(p.text, width)
            yield f"{p.rule}/{p.placement}/{width}", wrapped
            yield (
                f"{p.rule}/{p.placement}/{width}/prefixed",
                "\n".join(PREFIX + x for x in wrapped.split("\n")),
            )


def joined(texts: list[str], gap: int) -> str:
    """The texts in one paste, ``gap`` engine log lines between each."""
    return "\n".join(f"{FILLER}\n" * gap + t for t in texts)


def cases(widths: tuple[int, ...] = WIDTHS) -> Iterator[tuple[str, str]]:
    yield from corpus()
    items = list(planted_texts(widths))
    yield from items
    every = [t for _n, t in items]
    yield "planted joined", joined(every[::7], 0)
    yield "planted joined, 3 lines apart", joined(every[1::7], 3)
    yield "planted joined, 40 lines apart", joined(every[2::7], 40)
