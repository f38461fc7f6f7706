"""Recall on held-out real pastes: every tests/data/wild_*.jsonl file, reported file by file.

Each record has the fields of tests/data/dev.jsonl (id, source, engine, family, text, facts).  A family
names what the paste is: a memory or context error (``vllm_max_seq_len_kv``, ``torch_cuda_oom``, ...) or,
prefixed ``negative_``, a failure that is not about memory (``negative_nccl_shared_memory``: the part after
the prefix is the category that should answer it).  Per file it reports:

- memory/context recall: the root finding's category is the family's;
- wrong memory diagnoses on negatives: any finding of a memory category (the rule of tests/test_corpus.py);
- negatives answered: the root finding is the family's own non-memory category;
- numbers extracted: of the facts the paste prints, the share a finding (or the context) carries exactly.

The records are not signature examples, so this measures what the knowledge base was not written against.

Run: .venv/bin/python bench/recall.py [--misses] [--json]
"""

from __future__ import annotations

import argparse
import json
import sys
from dataclasses import dataclass, field
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from bot.detector import Detection, detect  # noqa: E402
from knowledge.schema import CONFIG_CATEGORIES, MEMORY_CATEGORIES  # noqa: E402

DATA = ROOT / "tests" / "data"

# family -> the category that must be the root finding: the one map the tests check too
from tests.test_wild import WILD_FAMILY_CATEGORY as FAMILY_CATEGORY  # noqa: E402

# a fact's name in the corpus -> the name a finding carries it under, where the two differ
FACT_ALIASES = {"max_seq_len": "max_model_len", "gpu_total_gib": "total_gib"}
NEGATIVE = "negative_"


@dataclass
class FileScore:
    name: str
    positives: int = 0
    recognised: int = 0
    negatives: int = 0
    wrong_memory: int = 0
    answered: int = 0
    numbers: int = 0
    extracted: int = 0
    misses: list[str] = field(default_factory=list)

    def as_dict(self) -> dict:
        return {
            "file": self.name,
            "memory_context_recall": _share(self.recognised, self.positives),
            "positives": self.positives,
            "recognised": self.recognised,
            "negatives": self.negatives,
            "wrong_memory_diagnoses": self.wrong_memory,
            "negatives_answered": self.answered,
            "numbers_printed": self.numbers,
            "numbers_extracted": self.extracted,
            "numbers_share": _share(self.extracted, self.numbers),
            "misses": self.misses,
        }


def _share(part: int, whole: int) -> float | None:
    return round(100 * part / whole, 1) if whole else None


def printed(text: str, value: object) -> bool:
    """Whether the paste prints this number (as tests/test_corpus.py decides it)."""
    if not isinstance(value, int | float) or isinstance(value, bool):
        return False
    text = text.replace(",", "")
    candidates = {f"{value}", f"{value:g}", f"{float(value):.2f}", f"{float(value):.1f}"}
    return any(c in text for c in candidates)


def extracted_values(detection: Detection) -> dict:
    values: dict = {}
    for finding in detection.findings:
        for k, v in finding.params.items():
            values.setdefault(k, v)
    for k, v in detection.context.fields.items():
        values.setdefault(k, v)
    return values


def same(a: object, b: object) -> bool:
    if isinstance(a, int | float) and isinstance(b, int | float):
        return abs(a - b) <= 1e-3 * max(abs(a), abs(b), 1e-9)
    return a == b


def score_numbers(record: dict, detection: Detection, score: FileScore) -> None:
    values = extracted_values(detection)
    for fact, value in record.get("facts", {}).items():
        if not printed(record["text"], value):
            continue
        score.numbers += 1
        got = values.get(FACT_ALIASES.get(fact, fact))
        if got is not None and same(got, value):
            score.extracted += 1
        else:
            score.misses.append(f"{record['id']}: number {fact}={value} not extracted (got {got})")


def score_record(record: dict, score: FileScore) -> None:
    detection = detect(record["text"])
    family = record["family"]
    root = detection.root
    if family.startswith(NEGATIVE):
        score.negatives += 1
        memory = [f.signature for f in detection.findings if f.category in MEMORY_CATEGORIES]
        expected = family.removeprefix(NEGATIVE)
        if memory:
            score.wrong_memory += 1
            score.misses.append(f"{record['id']}: memory finding on a non-memory failure {memory}")
        if root is not None and root.category == expected and expected in CONFIG_CATEGORIES:
            score.answered += 1
        elif expected in CONFIG_CATEGORIES:
            score.misses.append(
                f"{record['id']}: not answered as {expected} (root {root and root.signature})"
            )
    else:
        score.positives += 1
        expected = FAMILY_CATEGORY.get(family)
        if root is not None and root.category == expected:
            score.recognised += 1
        else:
            score.misses.append(f"{record['id']}: expected {expected}, root {root and root.signature}")
    score_numbers(record, detection, score)


def score_file(path: Path) -> FileScore:
    score = FileScore(path.name)
    for line in path.read_text(encoding="utf-8").splitlines():
        if line.strip():
            score_record(json.loads(line), score)
    return score


def _fmt(value: float | None) -> str:
    return "-" if value is None else f"{value:.1f} %"


def report(scores: list[FileScore], misses: bool) -> str:
    lines = [
        f"{'file':<26}{'recall':>10}{'pos':>6}{'neg':>6}{'wrong mem':>11}{'answered':>10}{'numbers':>10}{'n':>6}"
    ]
    for s in scores:
        d = s.as_dict()
        lines.append(
            f"{s.name:<26}{_fmt(d['memory_context_recall']):>10}{s.positives:>6}{s.negatives:>6}"
            f"{s.wrong_memory:>11}{s.answered:>10}{_fmt(d['numbers_share']):>10}{s.numbers:>6}"
        )
        if misses:
            lines.extend(f"    {m}" for m in s.misses)
    return "\n".join(lines)


def held_out_files() -> list[Path]:
    """The held-out paste files with family labels (wild_logs.jsonl is the calculator's held-out set,
    bench/wild_accuracy.py: no detector family labels)."""
    return [p for p in sorted(DATA.glob("wild_*.jsonl")) if p.name != "wild_logs.jsonl"]


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--misses", action="store_true", help="list every miss under its file")
    parser.add_argument("--json", action="store_true", help="print the scores as JSON")
    args = parser.parse_args(argv)
    files = held_out_files()
    if not files:
        print(f"no wild_*.jsonl in {DATA}", file=sys.stderr)
        return 1
    scores = [score_file(p) for p in files]
    if args.json:
        print(json.dumps([s.as_dict() for s in scores], indent=2))
    else:
        print(report(scores, args.misses))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
