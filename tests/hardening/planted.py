"""The planted-secret corpus: every gitleaks rule's own positive examples (tests/data/secrets/
gitleaks_examples.jsonl, imported with the rules by scripts/import_gitleaks.py), and each example's
secret alone in every placement a paste puts one: an environment prefix, an engine flag, a JSON field,
a URL's userinfo, an Authorization header, and hard-wrapped at 80 columns as a terminal shows it."""

from __future__ import annotations

import json
import re
from collections.abc import Iterable
from dataclasses import dataclass
from functools import cache
from pathlib import Path

from bot.secret_rules import default_rules

EXAMPLES = Path(__file__).resolve().parent.parent / "data" / "secrets" / "gitleaks_examples.jsonl"
COMMAND = "vllm serve Qwen/Qwen2.5-7B-Instruct --max-model-len 131072"
WIDTH = 80


@dataclass(frozen=True)
class Planted:
    rule: str  # the gitleaks rule whose example it is
    placement: str
    text: str  # as it sits in a paste
    secret: str  # what must never be seen again


@cache
def examples() -> tuple[tuple[str, str], ...]:
    rows = [json.loads(line) for line in EXAMPLES.read_text(encoding="utf-8").splitlines() if line]
    return tuple((r["rule"], r["text"]) for r in rows)


def secrets_in(rule_id: str, text: str) -> list[str]:
    """The secrets the rule itself finds in its example (its secret group, as gitleaks reports it)."""
    rule = next(r for r in default_rules().rules if r.id == rule_id)
    data = text.encode("utf-8")
    out = []
    for m in rule.pattern.finditer(data):
        span = rule.secret_span(m)
        if span is not None:
            out.append(data[span[0] : span[1]].decode("utf-8"))
    return out


def wrap(text: str, width: int = WIDTH) -> str:
    """Hard-wrapped as a terminal shows a long line (no word breaks)."""
    return "\n".join(
        line[i : i + width] or "" for line in text.split("\n") for i in range(0, max(len(line), 1), width)
    )


def placements(secret: str) -> dict[str, str]:
    """The secret alone, where pastes carry one."""
    out = {
        "wrapped at 80 columns": wrap(
            f"INFO 04-12 08:21:19 [api_server.py:1] args: {COMMAND} --api-key {secret}"
        )
    }
    if re.search(r"\s", secret):
        return out
    out |= {
        "env prefix": f"MY_SERVICE_API_KEY={secret} {COMMAND}",
        "flag": f"{COMMAND} --api-key {secret}",
        "header": f"Authorization: Bearer {secret}",
    }
    if '"' not in secret and "\\" not in secret:
        out["JSON field"] = json.dumps({"api_key": secret, "model": "Qwen/Qwen2.5-7B-Instruct"})
    if not re.search(r"[/@?#'\"<>]", secret):
        out["URL"] = f"curl https://admin:{secret}@example.com/v1/models"
    return out


def planted(per_rule: int | None = None) -> list[Planted]:
    """Every example as given and wrapped, and its secret in every placement; ``per_rule`` caps the
    examples taken from each rule (None: all)."""
    out: list[Planted] = []
    taken: dict[str, int] = {}
    for rule, text in examples():
        if per_rule is not None and taken.get(rule, 0) >= per_rule:
            continue
        taken[rule] = taken.get(rule, 0) + 1
        for secret in dict.fromkeys(secrets_in(rule, text)):
            out.append(Planted(rule, "example", text, secret))
            if any(len(line) > WIDTH for line in text.split("\n")):
                out.append(Planted(rule, "example wrapped at 80 columns", wrap(text), secret))
            out += [Planted(rule, where, t, secret) for where, t in placements(secret).items()]
    return out


def fragments(secret: str) -> list[str]:
    """What must never be seen again: the secret, and each distinctive run of it (16+ characters)."""
    runs = [run[:24] for run in re.findall(r"[A-Za-z0-9_+/=.-]{16,}", secret) if "PRIVATE" not in run]
    return [secret, *runs] if len(secret) >= 8 else runs


def echoed(text: str, items: Iterable[Planted]) -> list[Planted]:
    """The planted secrets ``text`` repeats (as written, or JSON-escaped)."""
    out = []
    for p in items:
        frags = fragments(p.secret)
        frags += [json.dumps(f)[1:-1] for f in frags]
        if any(f and f in text for f in frags):
            out.append(p)
    return out
