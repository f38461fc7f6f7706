"""Reply review: every held-out paste's reply in one Markdown file, plus mechanical checks on the text.

Each record of tests/data/wild_*.jsonl goes through the path of ``gpu-garden triage``
(adapters/cli.py cmd_triage): ``bot.redact.redact``, ``GardenBot.triage(addressed=True)`` with the
redaction notice, then ``bot.formatter.to_markdown`` (the chat-sized reply the CLI prints by default).
The full reply (``to_markdown(full=True)``, what ``--full`` prints) is checked too.  The Markdown file
holds id, source and the reply, so a person can read all of them in one go.

Checks (a table of offenders; "report" marks the ones that are only listed, not counted as defects):

- ``unfilled``: a sentence with a ``{placeholder}``, ``None``, ``nan`` or ``-0``;
- ``duplicate``: the same sentence twice in one reply (chat or full);
- ``echo``: a fix whose effect repeats its change word for word ("**Fix:** X: X.");
- ``title_as_cause``: the reply's cause is its title again (every sentence of the cause was dropped);
- ``orphan_or``: the first advice line or the first fix begins with "or" (the line before it was dropped);
- ``dangling_start``: the cause begins with a pronoun ("Its size grows ...") whose sentence was dropped;
- ``also_repeats``: the "Also in the paste" note names the reply's own title, or one finding twice in
  two spellings (the same words once the parentheses and the "llama.cpp / ggml" prefix are left out);
- ``empty_heading``: a heading (``## ...``, a ``**...**`` line, "Same model elsewhere:") with nothing under it;
- ``other_engine``: the cause (the summary) names an engine other than the paste's (an engine the
  paste's one runs on, e.g. llama.cpp under Ollama, is allowed);
- ``foreign_flag``: an advice line for the paste's own engine names a flag that knowledge/levers.yaml
  gives another engine and not this one (vLLM flags in an Ollama reply);
- ``number`` (report): a number in the reply's prose that is neither in the paste (also rounded, converted
  between MiB, GiB and bytes, or the sum or difference of two of its numbers) nor in the knowledge base's
  text, and is not a token cap rounded to whole 256-token blocks: the rest are computed by the calculator;
- ``over_2000`` (report): the chat reply is over Discord's 2,000-character message limit before the adapter
  splits it.

Run: .venv/bin/python bench/reply_review.py [--out replies.md] [--numbers] [--json]
"""

from __future__ import annotations

import argparse
import json
import sys
import tempfile
from collections import Counter
from dataclasses import dataclass, field
from functools import cache
from pathlib import Path

import re2

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from bot.core import GardenBot, Paste  # noqa: E402
from bot.formatter import to_markdown  # noqa: E402
from bot.redact import redact, with_notice  # noqa: E402
from knowledge.levers import levers  # noqa: E402

DATA = ROOT / "tests" / "data"
DISCORD_LIMIT = 2000  # Discord's message content limit (shared reference: Discord/Slack limits)
DEFECTS = (
    "unfilled", "duplicate", "echo", "title_as_cause", "orphan_or", "dangling_start", "also_repeats",
    "empty_heading", "other_engine", "foreign_flag",
)  # fmt: skip
REPORTS = ("number", "over_2000")

# how a reply spells each engine, and the engines a paste's engine runs on (it may name those)
ENGINE_WORDS = {
    "vllm": ("vLLM",),
    "llama.cpp": ("llama.cpp", "llama-server", "llama-cli"),
    "ollama": ("Ollama",),
    "sglang": ("SGLang",),
    "tgi": ("TGI", "text-generation-inference"),
}
RUNS_ON = {
    "llama.cpp": {"ollama"},  # a llama.cpp cause may name the runtimes that bundle it
    "ollama": {"llama.cpp"},
    "lmstudio": {"llama.cpp"},
    "koboldcpp": {"llama.cpp"},
    "llama-cpp-python": {"llama.cpp"},
    "localai": {"llama.cpp", "vllm"},
    "aphrodite": {"vllm"},
    "vllm.rs": {"vllm"},
}
# the engine whose flag set applies to a paste's engine (forks and wrappers take their base's flags)
FLAG_ENGINE = {"llama-cpp-python": "llama.cpp", "koboldcpp": "llama.cpp", "aphrodite": "vllm"}

_PLACEHOLDER = re2.compile(r"\{[A-Za-z_][A-Za-z0-9_]*\}")
_UNFILLED = re2.compile(r"(?:^|[^A-Za-z0-9_.])(None|nan|-0(?:\.0+)?)(?:$|[^A-Za-z0-9_.]|\.(?:\s|$))")
_SENTENCE_END = re2.compile(r"(?:[.!?])(?:\s+|$)")
_FENCE = re2.compile(r"^`{3,}")
_HEADING = re2.compile(r"^(?:#{1,6} .+|\*\*[^*]+\*\*:?|Same model elsewhere:)$")
_FLAG = re2.compile(r"(?:^|[\s`(])(--?[a-z][a-z0-9-]*)")
# a flag of another program (python -c) or one named with its engine ("SGLang --disable-cuda-graph")
_NAMED = re2.compile(
    r"(?:python3?|vLLM|SGLang|llama\.cpp|Ollama|TGI):? `?--?[a-z][a-z0-9-]*"
    r"|--?[a-z][a-z0-9-]* in (?:vLLM|SGLang|llama\.cpp|Ollama|TGI)"
)
_NUMBER = re2.compile(r"(?:^|[^A-Za-z0-9_.\-/])(\d[\d,]*(?:\.\d+)?)(?:$|[^A-Za-z0-9_])")
_PASTE_NUMBER = re2.compile(r"\d[\d,]*(?:\.\d+)?")


@dataclass
class Review:
    id: str
    source: str
    engine: str
    family: str
    chat: str
    full: str
    kind: str = ""
    found: dict[str, list[str]] = field(default_factory=dict)

    def add(self, kind: str, what: str) -> None:
        self.found.setdefault(kind, []).append(what)


def records() -> list[dict]:
    out: list[dict] = []
    for path in sorted(DATA.glob("wild_*.jsonl")):
        out += [json.loads(line) for line in path.read_text().splitlines() if line.strip()]
    return out


def reply_for(bot: GardenBot, text: str) -> tuple[str, str, str]:
    """(chat reply, full reply, the reply's kind) on the CLI's path; empty when the bot does not answer."""
    cleaned = redact(text)
    paste = Paste(cleaned.text, False, 0, cleaned.prefix_cuts)
    reply = with_notice(bot.triage(paste, addressed=True), cleaned.kinds)
    if reply is None:
        return "", "", ""
    return to_markdown(reply), to_markdown(reply, full=True), reply.kind


def prose(markdown: str) -> list[str]:
    """The reply's lines outside code fences (the memory bar's block is a fence too)."""
    lines: list[str] = []
    inside = False
    for line in markdown.split("\n"):
        if _FENCE.match(line.strip()):
            inside = not inside
            continue
        if not inside:
            lines.append(line)
    return lines


def sentences(lines: list[str]) -> list[str]:
    out: list[str] = []
    for line in lines:
        text = line.strip().strip("_*-").strip()
        start = 0
        for m in _SENTENCE_END.finditer(text):
            out.append(text[start : m.end()].strip())
            start = m.end()
        if text[start:].strip():
            out.append(text[start:].strip())
    return [s for s in out if s]


def flag_sets() -> dict[str, set[str]]:
    flags: dict[str, set[str]] = {}
    for lever in levers().levers:
        for engine, spelling in lever.engines.items():
            names = {spelling.flag, *spelling.also} - {None}
            flags.setdefault(engine, set()).update(n for n in names if n and n.startswith("-"))
    return flags


def check_unfilled(r: Review) -> None:
    for s in sentences(prose(r.full)):
        if _PLACEHOLDER.search(s) or _UNFILLED.search(s):
            r.add("unfilled", s)


def check_duplicates(r: Review) -> None:
    for label, text in (("chat", r.chat), ("full", r.full)):
        counts = Counter(s for s in sentences(prose(text)) if len(s) > 25)
        for s, n in counts.items():
            if n > 1:
                r.add("duplicate", f"{label} x{n}: {s}")


_PRONOUNS = {"It", "Its", "They", "Their", "This is", "That is", "This was", "That was"}
_FIX_LINE = re2.compile(r"^\*\*(?:Fix|Or):\*\* (.+?)(?: \([^()]*command\))?: (.+?)\.(?: Cost: .*)?$")


def check_echo(r: Review) -> None:
    for line in prose(r.chat):
        m = _FIX_LINE.match(line.strip())
        if m and m.group(1).strip().lower() == m.group(2).strip().lower():
            r.add("echo", line.strip())


def check_cause_and_or(r: Review) -> None:
    lines = r.chat.split("\n")
    title = lines[0].removeprefix("## ").strip()
    cause = summary_of(r.chat)
    if cause == title:
        r.add("title_as_cause", title)
    if cause.split(" ", 1)[0] in _PRONOUNS or " ".join(cause.split(" ", 2)[:2]) in _PRONOUNS:
        r.add("dangling_start", cause[:150])
    for i, line in enumerate(lines):
        first_item = line.startswith("- ") and i > 0 and not lines[i - 1].startswith("- ")
        if (first_item and line[2:].startswith("or ")) or line.startswith("**Fix:** or "):
            r.add("orphan_or", line.strip())


_PARENS = re2.compile(r"\s*\([^()]*\)")
_ALSO = "_Also in the paste: "


def _plain_title(title: str) -> str:
    return _PARENS.sub("", title).split(": ", 1)[-1].strip().lower()


def check_also(r: Review) -> None:
    lines = r.chat.split("\n")
    title = lines[0].removeprefix("## ").strip()
    for line in lines:
        if line.startswith(_ALSO):
            names = line.removeprefix(_ALSO).rstrip("_").split("; ")
            plain = [_plain_title(n) for n in names]
            if title in names or _plain_title(title) in plain or len(set(plain)) < len(plain):
                r.add("also_repeats", f"title {title!r}: {line[:150]}")


def check_headings(r: Review) -> None:
    for label, text in (("chat", r.chat), ("full", r.full)):
        lines = text.rstrip("\n").split("\n")
        for i, line in enumerate(lines):
            if not _HEADING.match(line.strip()) or (i == 0 and line.startswith("## ")):
                continue
            rest = next((x.strip() for x in lines[i + 1 :] if x.strip()), "")
            if not rest or _HEADING.match(rest):
                r.add("empty_heading", f"{label}: {line.strip()}")


def summary_of(full: str) -> str:
    """The cause: the paragraph under the title, up to the first section heading."""
    body: list[str] = []
    for line in full.split("\n")[1:]:
        if _HEADING.match(line.strip()):
            break
        body.append(line)
    return " ".join(body).strip()


def check_engine(r: Review) -> None:
    allowed = {r.engine} | RUNS_ON.get(r.engine, set())
    if r.engine not in ENGINE_WORDS or r.kind != "diagnosis":
        return  # PyTorch, MLX, ...: a cause may well name the engine the script ran under
    cause = summary_of(r.full)
    for engine, words in ENGINE_WORDS.items():
        if engine in allowed:
            continue
        for word in words:
            if re2.search(rf"(?:^|[^A-Za-z0-9]){re2.escape(word)}(?:$|[^A-Za-z0-9])", cause):
                r.add("other_engine", f"{word}: {cause[:160]}")


def advice_lines(chat: str) -> list[str]:
    """The chat reply's own-engine advice: everything except the 'Same model elsewhere' list."""
    out: list[str] = []
    elsewhere = False
    for line in chat.split("\n"):
        if line.strip() == "Same model elsewhere:":
            elsewhere = True
            continue
        if elsewhere and line.startswith("- on "):
            continue
        elsewhere = False
        out.append(line)
    return out


def check_flags(r: Review, flags: dict[str, set[str]]) -> None:
    own = flags.get(FLAG_ENGINE.get(r.engine, r.engine))
    if own is None:
        return
    foreign = set().union(*(f for e, f in flags.items() if e != FLAG_ENGINE.get(r.engine, r.engine)))
    seen: set[str] = set()
    for line in advice_lines(r.chat):
        for m in _FLAG.finditer(_NAMED.sub(" ", line)):
            flag = m.group(1)
            if flag in foreign and flag not in own and flag not in seen:
                seen.add(flag)
                r.add("foreign_flag", f"{flag}: {line.strip()[:140]}")


def _variants(value: str) -> set[str]:
    plain = value.replace(",", "")
    out = {plain}
    if "." in plain:
        out.add(plain.rstrip("0").rstrip("."))
    return out


@cache
def knowledge_numbers() -> frozenset[str]:
    """Numbers the knowledge base's own text states (a sourced fact: Docker's 64 MB, CUDA 12.8, a PR)."""
    files = [*(ROOT / "knowledge" / "signatures").glob("*.yaml"), ROOT / "knowledge" / "levers.yaml"]
    found: set[str] = set()
    for path in files:
        for m in _PASTE_NUMBER.finditer(path.read_text()):
            found |= _variants(m.group(0))
    return frozenset(found)


def _rounded(value: float) -> set[str]:
    return {f"{value:.{n}f}" for n in range(3)} | ({str(int(value))} if value.is_integer() else set())


def paste_numbers(paste: str) -> set[str]:
    """Every number the paste prints, as a reply may round it, convert it (MiB / GiB / bytes) or take the
    difference or sum of two of them."""
    values: list[float] = []
    for m in _PASTE_NUMBER.finditer(paste):
        raw = m.group(0).replace(",", "").rstrip(".")
        try:
            values.append(float(raw))
        except ValueError:
            continue
    values = list(dict.fromkeys(values))[:300]
    known: set[str] = set()
    for v in values:
        known |= _rounded(v) | _rounded(v / 1024) | _rounded(v * 1024) | _rounded(v / 2**30)
    for i, a in enumerate(values):
        for b in values[i + 1 :]:
            known |= _rounded(abs(a - b)) | _rounded(a + b)
    return known


def check_numbers(r: Review, paste: str) -> None:
    known = paste_numbers(paste) | knowledge_numbers()
    missing: list[str] = []
    for line in prose(r.chat):
        for m in _NUMBER.finditer(line):
            value = m.group(1).rstrip(",")
            plain = value.replace(",", "")
            if not plain or (plain.isdigit() and (int(plain) < 10 or int(plain) % 256 == 0)):
                continue  # a small count, or a token cap the planner rounded to whole blocks
            if not (_variants(value) & known) and value not in missing:
                missing.append(value)
    if missing:
        r.add("number", ", ".join(missing))


def review(rec: dict, bot: GardenBot, flags: dict[str, set[str]]) -> Review:
    chat, full, kind = reply_for(bot, rec["text"])
    r = Review(
        rec["id"], rec.get("source", ""), rec.get("engine", ""), rec.get("family", ""), chat, full, kind
    )
    if not chat:
        return r
    check_unfilled(r)
    check_duplicates(r)
    check_echo(r)
    check_cause_and_or(r)
    check_also(r)
    check_headings(r)
    check_engine(r)
    check_flags(r, flags)
    check_numbers(r, rec["text"])
    if len(chat) > DISCORD_LIMIT:
        r.add("over_2000", f"{len(chat)} characters")
    return r


def write_markdown(reviews: list[Review], out: Path) -> None:
    parts = ["# Replies to the held-out pastes (tests/data/wild_*.jsonl)", ""]
    for r in reviews:
        parts += [f"## {r.id}", "", f"- source: {r.source}", f"- engine: {r.engine}; family: {r.family}"]
        flagged = ", ".join(k for k in (*DEFECTS, *REPORTS) if k in r.found)
        parts += [f"- checks: {flagged or 'clean'}", "", "<blockquote>", ""]
        parts += [r.chat.strip() or "_(no reply)_", "", "</blockquote>", ""]
    out.write_text("\n".join(parts) + "\n")


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    default = Path(tempfile.gettempdir()) / "reply_review.md"
    ap.add_argument("--out", type=Path, default=default, help=f"the Markdown file (default {default})")
    ap.add_argument("--numbers", action="store_true", help="list the unexplained numbers too")
    ap.add_argument("--json", action="store_true", help="counts and offenders as JSON")
    args = ap.parse_args()
    bot, flags = GardenBot(), flag_sets()
    reviews = [review(rec, bot, flags) for rec in records()]
    write_markdown(reviews, args.out)
    counts = {k: sum(1 for r in reviews if k in r.found) for k in (*DEFECTS, *REPORTS)}
    if args.json:
        offenders = {r.id: r.found for r in reviews if r.found}
        json.dump({"replies": len(reviews), "counts": counts, "offenders": offenders}, sys.stdout, indent=2)
        print()
        return 0
    shown = DEFECTS + (REPORTS if args.numbers else ("over_2000",))
    print(f"{'check':<14} {'id':<34} detail")
    for r in reviews:
        for kind in shown:
            for what in r.found.get(kind, []):
                print(f"{kind:<14} {r.id:<34} {what[:150]}")
    answered = sum(1 for r in reviews if r.chat)
    print(f"\n{len(reviews)} pastes, {answered} replies; replies with a finding, by check:")
    for kind, n in counts.items():
        print(f"  {kind:<14} {n}{'  (report only)' if kind in REPORTS else ''}")
    print(f"replies written to {args.out}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
