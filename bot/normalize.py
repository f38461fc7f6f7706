"""Turn a raw paste into text the signatures can match.

- decode bytes leniently, drop NULs, zero-width and bidi-control characters, NFKC-fold look-alike digits;
- strip ANSI colour sequences (also with the escape byte lost: ``[34m``);
- undo what other tools did to the paste (bot/unwrap.py: ``←[0m``, quote bars, glued records, doubled lines);
- strip log prefixes (vLLM, Ray, torchrun, docker compose, journald, Go slog, SGLang, llama.cpp timestamps,
  CI timestamps) — nested ones too;
- re-join hard-wrapped lines into logical lines.  A wrap may have split a word (``KV cach`` / ``e``)
  or replaced a space, so two joined views are produced: one joined with nothing, one with a space.
  They hold only the re-joined lines; the plain view holds everything.

Linear time on any input: the ANSI pass is RE2.  The line-anchored prefix and record-start patterns run
on Python's ``re`` because they are applied once per line and must be fast; every quantifier in them is
possessive or bounded by a small constant, so they never backtrack (tests/bot/test_normalize.py checks
this structurally).
"""

from __future__ import annotations

import bisect
import re
import unicodedata
from dataclasses import dataclass

from bot.unwrap import unwrap

# NULs, the mark we use, zero-width and bidi-control characters: removed before anything else
_INVISIBLE = re.compile("[\x00\x02\u00ad\u061c\u200b-\u200f\u202a-\u202e\u2060\u2066-\u2069\ufeff]")

_SURROGATE = re.compile("[\ud800-\udfff]")

# ANSI colour/control sequences, also with the escape byte lost ("[34m"); possessive, so linear
_ANSI = re.compile(
    r"\x1b\[[0-9;?]*+[A-Za-z]|\x1b\][^\x07\n]*+\x07|\x1b[()][A-Z0-9]|\[[0-9]{1,3}(?:;[0-9]{1,3}){0,4}+m"
)

# Log prefixes, each possessive (no backtracking): every quantified class is followed by a character
# it cannot match, so possessive and greedy agree.
PREFIX_PATTERNS = [
    # CI / Buildkite: "  | [2025-03-10T15:07:20Z] "
    r"[ \t]*+\|[ \t]++",
    r"\[[0-9]{4}-[0-9]{2}-[0-9]{2}T[0-9:.]++Z?\][ \t]*+",
    # SGLang / generic bracketed timestamps: "[2025-07-02 07:41:58 DP0 TP0] "
    r"\[[0-9]{4}-[0-9]{2}-[0-9]{2}[ T][0-9:.,]++(?: [A-Z]++[0-9]++)*+\][ \t]*+",
    # docker compose: "vllm-1  | ", "ollama  | "
    r"[A-Za-z0-9][A-Za-z0-9_.-]{0,40}+[ \t]++\|[ \t]",
    # podman / tagged: "[llama-cpp] | "
    r"\[[A-Za-z0-9_.-][A-Za-z0-9_. -]{0,29}+\][ \t]++\|[ \t]",
    # journald: "Aug 08 23:02:37 host ollama[1617]: " (also a lower-case locale month: "dec 08 ...")
    r"[A-Za-z][a-z]{2} ++[0-9]{1,2} [0-9:]{8} [^ \t\n]++ [A-Za-z0-9_.-]++(?:\[[0-9]++\])?: ",
    # Go slog (msg= and the key=value fields after it are kept)
    r"time=[^ \t\n]++ level=[A-Za-z]++ source=[^ \t\n]++ ",
    # worker prefixes: "(VllmWorker rank=3 pid=1090) ", "(EngineCore_DP0 pid=1133552) ",
    # "(RayWorkerWrapper pid=1463574, ip=192.168.10.60) ", also with the "(" lost
    r"\(?[A-Za-z][A-Za-z0-9_]*+(?: rank=[0-9]++)? pid=[0-9]++(?:, ip=[0-9a-fA-F.:]++)?\)[ \t]*+",
    # vLLM logger: "INFO 04-12 08:21:19 [worker.py:267] " ("[v1/engine/core.py:842]" with VLLM_LOGGING's
    # relative paths) and older "INFO 08-19 07:51:03 model_runner.py:732] "
    r"(?:INFO|WARNING|ERROR|DEBUG|CRITICAL) [0-9]{2}-[0-9]{2} [0-9:.]++ (?:\[[A-Za-z0-9_./]++:[0-9]++\]|[A-Za-z0-9_.]++:[0-9]++\])[ \t]*+",
    # torchrun: "[rank0]: "
    r"\[(?:rank|default)[0-9]++\]:[ \t]?",
    # fastchat: "2024-01-22 14:32:27 | ERROR | stderr | "
    r"[0-9]{4}-[0-9]{2}-[0-9]{2} [0-9:,.]++ \| [A-Z]++ \| [A-Za-z0-9_]++ \| ",
    # Python logging / Ray: "2024-01-22 14:32:19,671 INFO worker.py:1540 -- "
    r"[0-9]{4}-[0-9]{2}-[0-9]{2}[ T][0-9:,.]++Z?[ \t]++(?:(?:INFO|WARNING|WARN|ERROR|DEBUG)[ \t]++)?(?:[A-Za-z0-9_.]++:[0-9]++ -- )?",
    # llama.cpp timestamps: "1.06.520.077 E "
    r"[0-9]++\.[0-9]{2}\.[0-9]{3}\.[0-9]{3} [IWEDT] ",
    # Aphrodite / uvicorn: "INFO:     "
    r"(?:INFO|WARNING|ERROR|DEBUG):[ \t]++",
    # Lemonade (after its timestamp): "[Info] (Process) ", "[Error] (WrappedServer) "
    r"\[(?:Info|Warn|Warning|Error|Debug|Trace|Fatal)\] \([A-Za-z][A-Za-z0-9_]*+\) ",
    # a container name in brackets (docker logs -t, Lemonade in Docker): "[lemonade-server-app-1] "
    # (compose replicas end in "-N": "[llama-cpp] " is LocalAI's backend tag, not a prefix)
    r"\[(?:[A-Za-z0-9_.]++-)++[0-9]++\] ",
    # LocalAI (zerolog console): "3:44PM DBG ", then "GRPC(<model>-127.0.0.1:44793): stderr "
    r"[0-9]{1,2}:[0-9]{2}[AP]M (?:TRC|DBG|INF|WRN|ERR|FTL) ",
    r"GRPC\([^)\n]{1,200}+\): std(?:err|out) ",
    # Google Cloud Logging / GKE copy: "INFO 2025-11-19T20:16:36.096625454Z [resource.labels.containerName: vllm] "
    r"(?:DEFAULT|DEBUG|INFO|NOTICE|WARNING|ERROR|CRITICAL) [0-9]{4}-[0-9]{2}-[0-9]{2}T[0-9:.]++Z \[[^\]\n]{1,120}+\] ",
    # Home Assistant (after its timestamp and level): "(MainThread) [homeassistant.components.ollama] "
    r"\([A-Za-z][A-Za-z0-9_-]{0,40}+\) \[[a-z][a-z0-9_.]{0,100}+\] ",
]
MAX_PREFIX_LAYERS = 6
_PREFIX_M = re.compile(
    "(?m)^(?:" + "|".join(f"(?:{p})" for p in PREFIX_PATTERNS) + f"){{1,{MAX_PREFIX_LAYERS}}}+"
)
_MARK = "\x02"

WRAP_MIN_LENGTH = 60
TERMINAL_WRAP = 80
_RECORD_CHARS = frozenset(" \t$#>*-[(|`")
_RECORD_WORDS = (
    "Traceback",
    'File "',
    "During handling",
    "The above exception",
    "INFO",
    "ERROR",
    "WARN",
    "DEBUG",
)
_IDENT = re.compile(r"[A-Za-z_][A-Za-z0-9_.]*+")
_NUMBERED = re.compile(r"[0-9]{1,3}\. ")
_ENDS_RECORD = frozenset(".:;!?)]}>")


@dataclass(frozen=True)
class View:
    """One rendering of the paste: ``text`` plus where each logical line starts.

    ``data`` is the same text in UTF-8: patterns search bytes (RE2 would otherwise re-encode the whole
    text on every search), so match offsets are byte offsets into ``data``.
    """

    text: str
    line_starts: tuple[int, ...]  # char offset of each logical line in text
    first_physical: tuple[int, ...]  # physical line number (0-based) of each logical line
    data: bytes = b""
    byte_starts: tuple[int, ...] = ()

    @classmethod
    def build(cls, lines: list[str], first_physical: tuple[int, ...]) -> View:
        text = "\n".join(lines)
        data = text.encode("utf-8", "surrogatepass")
        starts: list[int] = []
        offset = 0
        for line in lines:
            starts.append(offset)
            offset += len(line) + 1
        if len(data) == len(text):  # ASCII: byte and char offsets agree
            byte_starts = tuple(starts)
        else:
            byte_starts_list: list[int] = []
            offset = 0
            for line in lines:
                byte_starts_list.append(offset)
                offset += len(line.encode("utf-8", "surrogatepass")) + 1
            byte_starts = tuple(byte_starts_list)
        return cls(text, tuple(starts), first_physical, data, byte_starts)

    def line_at(self, byte_offset: int) -> int:
        """The logical line holding a byte offset of ``data``."""
        return max(0, bisect.bisect_right(self.byte_starts, byte_offset) - 1)

    def logical_line(self, index: int) -> str:
        start = self.line_starts[index]
        end = self.line_starts[index + 1] - 1 if index + 1 < len(self.line_starts) else len(self.text)
        return self.text[start:end]


@dataclass(frozen=True)
class Normalized:
    lines: tuple[str, ...]  # cleaned physical lines
    views: tuple[View, ...]  # [0] = physical lines, then wrap-joined views (if any line was joined)


def decode(data: bytes | str) -> str:
    if isinstance(data, bytes):
        data = data.decode("utf-8", errors="replace")
    return data


def clean_text(text: str) -> str:
    # lone surrogates (half an emoji in a platform's JSON, bytes decoded with surrogateescape) cannot be
    # encoded as UTF-8, which every pattern search does: they become U+FFFD like other broken bytes
    text = unicodedata.normalize("NFKC", _INVISIBLE.sub("", _SURROGATE.sub("\ufffd", text)))
    return text.replace("\r\n", "\n").replace("\r", "\n").replace("\t", "    ")


def visible(text: str) -> str:
    """The text as every pattern sees it: invisible characters gone, look-alikes folded, ANSI stripped.
    The redactor reads this too, so a secret split by zero-width spaces is found before it is joined."""
    return _ANSI.sub("", clean_text(text))


def strip_prefixes(text: str) -> str:
    """Remove every line's log prefixes, leaving a mark on lines that had one."""
    return _PREFIX_M.sub(_MARK, text)


def is_record_start(line: str) -> bool:
    """Whether a physical line starts a new record rather than continuing a wrapped one."""
    if line[0] in _RECORD_CHARS or line.startswith(_RECORD_WORDS):
        return True
    m = _IDENT.match(line)
    if m is not None:
        word = m.group()
        after = line[m.end() : m.end() + 2]
        if word.endswith(("Error", "Exception", "Warning", "Exit")):
            return True
        if (after == ": " and word.islower()) or after[:1] == "=":
            return True
    return _NUMBERED.match(line) is not None


def wrapped_mid_record(prev_raw: str, line: str) -> bool:
    """A terminal wrap can leave ``failed: out of memory``, ``h_memory=17.98GiB``, ``-PCIE-16GB``,
    `` needed`` or ``92. Make sure`` at the start of a line: the previous physical line is
    terminal-wide and stops mid-sentence."""
    if len(prev_raw) < TERMINAL_WRAP or prev_raw.rstrip()[-1:] in _ENDS_RECORD:
        return False
    if line.startswith(" ") and not line.startswith("  "):
        return True
    if line[0] == "-" or (_NUMBERED.match(line) and prev_raw.rstrip()[-1:].isdigit()):
        return True
    m = _IDENT.match(line)
    return m is not None and line[m.end() : m.end() + 1] in (":", "=")


def normalize(data: bytes | str) -> Normalized:
    raw_text = unwrap(visible(decode(data)))  # undo quote bars, glued records, doubled lines
    raw_lines = raw_text.split("\n")
    cleaned: list[str] = []
    prefixed: list[bool] = []
    for line in strip_prefixes(raw_text).split("\n"):
        had = line.startswith(_MARK)
        cleaned.append((line[1:] if had else line).rstrip())
        prefixed.append(had)
    joins = _find_joins(cleaned, prefixed, raw_lines)
    views = [_plain_view(cleaned)]
    if any(joins):
        groups = _join_groups(joins)
        views.append(_joined_view(cleaned, groups, ""))
        views.append(_joined_view(cleaned, groups, " "))
    return Normalized(tuple(cleaned), tuple(views))


def _find_joins(cleaned: list[str], prefixed: list[bool], raw_lines: list[str]) -> list[bool]:
    """joins[i]: physical line i continues line i-1 (a hard wrap)."""
    any_prefixed = any(prefixed)
    joins = [False] * len(cleaned)
    for i in range(1, len(cleaned)):
        line, prev = cleaned[i], cleaned[i - 1]
        if not line or not prev or prefixed[i]:
            continue
        if not (any_prefixed or len(prev) >= WRAP_MIN_LENGTH):
            continue
        if is_record_start(line) and not wrapped_mid_record(raw_lines[i - 1], line):
            continue
        joins[i] = True
    return joins


def _plain_view(lines: list[str]) -> View:
    return View.build(lines, tuple(range(len(lines))))


def _join_groups(joins: list[bool]) -> list[tuple[int, int]]:
    """(first, last) physical line of every logical line made of more than one physical line."""
    groups: list[tuple[int, int]] = []
    i = 1
    while i < len(joins):
        if joins[i]:
            first = i - 1
            while i < len(joins) and joins[i]:
                i += 1
            groups.append((first, i - 1))
        else:
            i += 1
    return groups


def _joined_view(lines: list[str], groups: list[tuple[int, int]], glue: str) -> View:
    """Only the re-joined logical lines: all a wrap-tolerant pattern needs beyond the plain view."""
    logical = [
        lines[a]
        + "".join(glue + lines[k].lstrip() if glue else lines[k].lstrip() for k in range(a + 1, b + 1))
        for a, b in groups
    ]
    return View.build(logical, tuple(a for a, _b in groups))
