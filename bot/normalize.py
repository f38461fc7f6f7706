"""Turn a raw paste into text the signatures can match.

- decode bytes leniently, drop NULs, zero-width and bidi-control characters, NFKC-fold look-alike digits;
- strip ANSI colour sequences (also with the escape byte lost: ``[34m``);
- strip log prefixes (vLLM, Ray, torchrun, docker compose, journald, Go slog, SGLang, llama.cpp timestamps,
  CI timestamps) — repeatedly, since they nest;
- re-join hard-wrapped lines into logical lines.  A wrap may have split a word (``KV cach`` / ``e``)
  or replaced a space, so two joined views are produced: one joined with nothing, one with a space.

Every regex here is RE2 (linear time).
"""

from __future__ import annotations

import unicodedata
from dataclasses import dataclass

import re2

_INVISIBLE = dict.fromkeys(
    [
        0x00,
        0x200B,
        0x200C,
        0x200D,
        0x2060,
        0xFEFF,
        0x00AD,
        0x200E,
        0x200F,
        0x061C,
        *range(0x202A, 0x202F),
        *range(0x2066, 0x206A),
    ]
)

_ANSI = re2.compile(
    r"\x1b\[[0-9;?]*[A-Za-z]|\x1b\][^\x07\n]*\x07|\x1b[()][A-Z0-9]|\[[0-9]{1,3}(?:;[0-9]{1,3}){0,4}m"
)

_PREFIXES = [
    # CI / Buildkite: "  | [2025-03-10T15:07:20Z] "
    r"\s*\|\s+",
    r"\[[0-9]{4}-[0-9]{2}-[0-9]{2}T[0-9:.]+Z?\]\s*",
    # SGLang / generic bracketed timestamps: "[2025-07-02 07:41:58 DP0 TP0] "
    r"\[[0-9]{4}-[0-9]{2}-[0-9]{2}[ T][0-9:.,]+(?: [A-Z]+[0-9]+)*\]\s*",
    # docker compose: "vllm-1  | ", "ollama  | "
    r"[A-Za-z0-9][A-Za-z0-9_.-]{0,40}\s+\|\s",
    # podman / tagged: "[llama-cpp] | "
    r"\[[A-Za-z0-9_. -]{1,30}\]\s+\|\s",
    # journald: "Aug 08 23:02:37 host ollama[1617]: "
    r"[A-Z][a-z]{2} +[0-9]{1,2} [0-9:]{8} \S+ [A-Za-z0-9_.-]+(?:\[[0-9]+\])?: ",
    # Go slog (keep msg= and the key=value fields after it)
    r"time=\S+ level=[A-Za-z]+ source=\S+ ",
    # worker prefixes: "(VllmWorker rank=3 pid=1090) ", "(EngineCore_DP0 pid=1133552) ",
    # "(RayWorkerWrapper pid=1463574, ip=192.168.10.60) ", also with the "(" lost
    r"\(?[A-Za-z][A-Za-z0-9_]*(?: rank=[0-9]+)? pid=[0-9]+(?:, ip=[0-9a-fA-F.:]+)?\)\s*",
    # vLLM logger: "INFO 04-12 08:21:19 [worker.py:267] " and older "INFO 08-19 07:51:03 model_runner.py:732] "
    r"(?:INFO|WARNING|ERROR|DEBUG|CRITICAL) [0-9]{2}-[0-9]{2} [0-9:.]+ (?:\[[A-Za-z0-9_.]+:[0-9]+\]|[A-Za-z0-9_.]+:[0-9]+\])\s*",
    # torchrun: "[rank0]: "
    r"\[(?:rank|default)[0-9]+\]:\s?",
    # fastchat: "2024-01-22 14:32:27 | ERROR | stderr | "
    r"[0-9]{4}-[0-9]{2}-[0-9]{2} [0-9:,.]+ \| [A-Z]+ \| [A-Za-z0-9_]+ \| ",
    # Python logging / Ray: "2024-01-22 14:32:19,671 INFO worker.py:1540 -- "
    r"[0-9]{4}-[0-9]{2}-[0-9]{2}[ T][0-9:,.]+Z?\s+(?:(?:INFO|WARNING|WARN|ERROR|DEBUG)\s+)?(?:[A-Za-z0-9_.]+:[0-9]+ -- )?",
    # llama.cpp timestamps: "1.06.520.077 E "
    r"[0-9]+\.[0-9]{2}\.[0-9]{3}\.[0-9]{3} [IWEDT] ",
    # Aphrodite / uvicorn: "INFO:     "
    r"(?:INFO|WARNING|ERROR|DEBUG):\s+",
]
_PREFIX = re2.compile("^(?:" + "|".join(f"(?:{p})" for p in _PREFIXES) + ")")

# A physical line that starts a new record (not a wrapped continuation of the previous one).
_RECORD_START = re2.compile(
    r"^(?:\s|Traceback|File \"|During handling|The above exception|[A-Za-z_][A-Za-z0-9_.]*(?:Error|Exception|Warning|Exit)\b"
    r"|INFO|ERROR|WARN|DEBUG|[a-z_][a-z0-9_]*: |[A-Za-z_][A-Za-z0-9_]*=|[$#>*-]|[0-9]+\. |\[|\(|\||`)"
)

MAX_PREFIX_PASSES = 4
WRAP_MIN_LENGTH = 60


@dataclass(frozen=True)
class View:
    """One rendering of the paste: ``text`` plus the physical line where each logical line starts."""

    text: str
    line_starts: tuple[int, ...]  # offset of each logical line in text
    first_physical: tuple[int, ...]  # physical line number (0-based) of each logical line

    def line_at(self, offset: int) -> int:
        import bisect

        return max(0, bisect.bisect_right(self.line_starts, offset) - 1)

    def logical_line(self, index: int) -> str:
        start = self.line_starts[index]
        end = self.line_starts[index + 1] - 1 if index + 1 < len(self.line_starts) else len(self.text)
        return self.text[start:end]


@dataclass(frozen=True)
class Normalized:
    lines: tuple[str, ...]  # cleaned physical lines
    views: tuple[View, ...]  # [0] = physical lines, then wrap-joined views (if any line was joined)
    truncated: bool = False


def decode(data: bytes | str) -> str:
    if isinstance(data, bytes):
        data = data.decode("utf-8", errors="replace")
    return data


def clean_text(text: str) -> str:
    text = unicodedata.normalize("NFKC", text.translate(_INVISIBLE))
    return text.replace("\r\n", "\n").replace("\r", "\n").replace("\t", "    ")


def strip_line(line: str) -> tuple[str, bool]:
    line = _ANSI.sub("", line) if ("[" in line) else line
    prefixed = False
    for _ in range(MAX_PREFIX_PASSES):
        m = _PREFIX.search(line)
        if not m or m.end() == 0:
            break
        line = line[m.end() :]
        prefixed = True
    return line.rstrip(), prefixed


def normalize(data: bytes | str) -> Normalized:
    text = clean_text(decode(data))
    physical = text.split("\n")
    cleaned: list[str] = []
    prefixed: list[bool] = []
    for raw in physical:
        line, had = strip_line(raw)
        cleaned.append(line)
        prefixed.append(had)
    any_prefixed = any(prefixed)

    joins: list[bool] = [False] * len(cleaned)  # joins[i]: line i continues line i-1
    for i in range(1, len(cleaned)):
        line, prev = cleaned[i], cleaned[i - 1]
        if not line or not prev or prefixed[i]:
            continue
        if not (any_prefixed or len(prev) >= WRAP_MIN_LENGTH):
            continue
        if _RECORD_START.search(line) and not _wrapped_mid_record(prev, line):
            continue
        joins[i] = True

    views = [_build_view(cleaned, [False] * len(cleaned), "")]
    if any(joins):
        views.append(_build_view(cleaned, joins, ""))
        views.append(_build_view(cleaned, joins, " "))
    return Normalized(tuple(cleaned), tuple(views))


_ENDS_RECORD = re2.compile(r"[.:;!?)\]}>]\s*$")
_WORD_COLON = re2.compile(r"^(?: ?[a-z_][a-z0-9_]*: | [a-z])")
TERMINAL_WRAP = 80


def _wrapped_mid_record(prev: str, line: str) -> bool:
    """A terminal wrap can leave ``failed: out of memory`` or `` needed`` at the start of a line: the
    previous line is terminal-wide and stops mid-sentence."""
    return len(prev) >= TERMINAL_WRAP and not _ENDS_RECORD.search(prev) and bool(_WORD_COLON.search(line))


def _build_view(lines: list[str], joins: list[bool], glue: str) -> View:
    parts: list[str] = []
    starts: list[int] = []
    first: list[int] = []
    offset = 0
    for i, line in enumerate(lines):
        if joins[i]:
            piece = glue + line.lstrip() if glue else line.lstrip()
            parts.append(piece)
            offset += len(piece)
            continue
        if i:
            parts.append("\n")
            offset += 1
        starts.append(offset)
        first.append(i)
        parts.append(line)
        offset += len(line)
    return View("".join(parts), tuple(starts), tuple(first))
