"""Frozen copy (issue 16 equivalence check) of the module at 809767d. Turn a raw paste into text the signatures can match.

- decode bytes leniently, drop NULs, zero-width and bidi-control characters, NFKC-fold look-alike digits;
- strip ANSI colour sequences (also with the escape byte lost: ``[34m``);
- undo what other tools did to the paste (bot/unwrap.py: ``←[0m``, quote bars, glued records, doubled lines);
- strip log prefixes (vLLM, Ray, torchrun, docker compose, journald, Go slog, SGLang, llama.cpp timestamps,
  CI timestamps) — nested ones too;
- re-join hard-wrapped lines into logical lines.  A wrap may have split a word (``KV cach`` / ``e``)
  or replaced a space, so two joined views are produced: one joined with nothing, one with a space.
  They hold only the re-joined lines; the plain view holds everything.

Linear time on any input, and no work where there is nothing to do: a pass whose trigger is absent
(a non-ASCII character, an escape byte, a carriage return, a tab) is skipped, the prefix pattern is
anchored on a literal newline (so the regex engine jumps from line to line instead of trying every
position), and per-line work is done by C-level ``map``/``split``/``join``; Python code runs only for
the few lines that may continue a hard wrap.  Every quantifier in the Python ``re`` patterns is
possessive or bounded by a small constant, so they never backtrack (tests/bot/test_normalize.py checks
this structurally).
"""

from __future__ import annotations

import bisect
import re
import unicodedata
from array import array
from collections.abc import Sequence
from dataclasses import dataclass
from functools import cached_property, partial
from itertools import accumulate, repeat
from operator import add

import re2

from tests.bot.frozen.unwrap_v0 import unwrap

# NULs, the mark we use, zero-width and bidi-control characters: removed before anything else
_INVISIBLE_CHARS = "".join(
    [
        "\x00\x02\u00ad\u061c\u2060\ufeff",
        *map(chr, range(0x200B, 0x2010)),
        *map(chr, range(0x202A, 0x202F)),
        *map(chr, range(0x2066, 0x206A)),
    ]
)
_INVISIBLE = re.compile("[" + re.escape(_INVISIBLE_CHARS) + "]")
# the same characters, looked for by RE2 in the encoded text: one linear pass, faster than re's
_INVISIBLE_UTF8 = re2.compile(b"|".join(re2.escape(ch.encode()) for ch in _INVISIBLE_CHARS))

_SURROGATE = re.compile("[\ud800-\udfff]")

# ANSI colour/control sequences, also with the escape byte lost ("[34m"); possessive, so linear
_ANSI_LOST = r"\[[0-9]{1,3}(?:;[0-9]{1,3}){0,4}+m"
_ANSI = re.compile(r"\x1b\[[0-9;?]*+[A-Za-z]|\x1b\][^\x07\n]*+\x07|\x1b[()][A-Z0-9]|" + _ANSI_LOST)
_ANSI_LOST_ONLY = re.compile(_ANSI_LOST)  # the same pass when the text has no escape byte
# whether that pass has anything to remove, asked of RE2 in the encoded text: a log whose every line
# has a "[worker.py:267]" would otherwise pay a whole-text re pass for nothing (same matches: after a
# digit group comes ";" or "m", so possessive and greedy agree)
_ANSI_LOST_UTF8 = re2.compile(rb"\[[0-9]{1,3}(?:;[0-9]{1,3}){0,4}m")

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
MAX_PREFIX_LAYERS = 6  # Lemonade in Docker stacks five
# anchored on a literal newline (the text gets one in front): the engine scans for "\n" and tries the
# prefixes only there, instead of testing a line-start assertion at every character
_PREFIX_M = re.compile(
    "\n(?:" + "|".join(f"(?:{p})" for p in PREFIX_PATTERNS) + f"){{1,{MAX_PREFIX_LAYERS}}}+"
)
_PREFIX_HEAD = re.compile(_PREFIX_M.pattern[1:])  # the same, for the first line
_MARK = "\x02"

WRAP_MIN_LENGTH = 60
TERMINAL_WRAP = 80
# lines that may continue the line before: not prefixed, after a line that is not empty (and, when the
# paste has no prefixes, at least WRAP_MIN_LENGTH long).  Run on the marked text before trailing blanks
# are cut, so this is a superset; each candidate is then checked exactly.
_CANDIDATE_ANY = re.compile("\n(?=[^\x02\n])(?<=[^\n]\n)")
_CANDIDATE_LONG = re.compile(f"\n(?=[^\x02\n])(?<=[^\n]{{{WRAP_MIN_LENGTH}}}\n)")
_RECORD_CHARS = frozenset(" \t$#>*-[(|`")
_RECORD_WORDS = tuple('Traceback|File "|During handling|The above exception|INFO|ERROR|WARN|DEBUG'.split("|"))
_IDENT = re.compile(r"[A-Za-z_][A-Za-z0-9_.]*+")
_RECORD_START = re.compile(
    "["
    + re.escape("".join(sorted(_RECORD_CHARS)))
    + "]|"
    + "|".join(map(re.escape, _RECORD_WORDS))
    # an identifier (the whole run: possessive) that ends in one of these words
    + r"|(?=[A-Za-z_])[A-Za-z0-9_.]*+(?:(?<=Error)|(?<=Exception)|(?<=Warning)|(?<=Exit))"
    # a lower-case identifier (one letter at least: str.islower) and ": "
    + r"|(?=[0-9_.]*+[a-z])[a-z_][a-z0-9_.]*+: "
    + r"|[A-Za-z_][A-Za-z0-9_.]*+="  # an identifier and "="
    + r"|[0-9]{1,3}\. "  # a numbered list item
)
_NUMBERED = re.compile(r"[0-9]{1,3}\. ")
_ENDS_RECORD = frozenset(".:;!?)]}>")


_ENCODE = partial(str.encode, encoding="utf-8", errors="surrogatepass")


def _offsets(lengths) -> array:
    """Where each of the lines whose lengths are given starts once they are joined with newlines."""
    starts = array("q", accumulate(map(add, lengths, repeat(1)), initial=0))
    starts.pop()
    return starts


@dataclass(frozen=True)
class View:
    """One rendering of the paste, kept as UTF-8 ``data`` plus where each logical line starts.

    Patterns search the bytes (RE2 would otherwise re-encode the whole text on every search), so match
    offsets are byte offsets into ``data``.  ``text`` and the line offsets are computed on first use:
    a paste with no finding never needs them, and a non-ASCII paste is not held twice (a ``str`` with
    one non-Latin-1 character takes two or four bytes per character).
    """

    first_physical: Sequence[int]  # physical line number (0-based) of each logical line
    data: bytes = b""

    @classmethod
    def build(cls, lines: list[str], first_physical: Sequence[int]) -> View:
        return cls(first_physical, _ENCODE("\n".join(lines)))  # the joined str is dropped at once

    @cached_property
    def text(self) -> str:
        return self.data.decode("utf-8", "surrogatepass")

    @cached_property
    def byte_starts(self) -> array:
        """Byte offset of each logical line in ``data``."""
        return _offsets(map(len, self.data.split(b"\n")))

    def line_at(self, byte_offset: int) -> int:
        """The logical line holding a byte offset of ``data``."""
        return max(0, bisect.bisect_right(self.byte_starts, byte_offset) - 1)

    def logical_line(self, index: int) -> str:
        starts = self.byte_starts
        end = starts[index + 1] - 1 if index + 1 < len(starts) else len(self.data)
        return self.data[starts[index] : end].decode("utf-8", "surrogatepass")


@dataclass(frozen=True)
class Normalized:
    views: tuple[View, ...]  # [0] = physical lines, then wrap-joined views (if any line was joined)

    @cached_property
    def lines(self) -> tuple[str, ...]:
        """The cleaned physical lines (split from the plain view on first use, not kept twice)."""
        return tuple(self.views[0].text.split("\n"))


def clean_text(text: str) -> str:
    """Invisible characters removed, look-alikes folded, line ends and tabs made plain; each step only
    when its trigger is in the text (an ASCII text needs none of the Unicode ones)."""
    if text.isascii():
        if "\x00" in text or "\x02" in text:
            text = text.replace("\x00", "").replace("\x02", "")
    else:
        # lone surrogates (half an emoji in a platform's JSON, bytes decoded with surrogateescape) cannot
        # be encoded as UTF-8, which every pattern search does: they become U+FFFD like other broken bytes
        try:
            has_invisible = _INVISIBLE_UTF8.search(text.encode("utf-8")) is not None
        except UnicodeEncodeError:
            text = _SURROGATE.sub("\ufffd", text)
            has_invisible = True
        if has_invisible:
            text = _INVISIBLE.sub("", text)
        text = unicodedata.normalize("NFKC", text)
    if "\r" in text:
        text = text.replace("\r\n", "\n").replace("\r", "\n")
    if "\t" in text:
        text = text.replace("\t", "    ")
    return text


def visible(text: str) -> str:
    """The text as every pattern sees it: invisible characters gone, look-alikes folded, ANSI stripped.
    The redactor reads this too, so a secret split by zero-width spaces is found before it is joined."""
    text = clean_text(text)
    if "\x1b" in text:
        return _ANSI.sub("", text)
    if "[" in text and _ANSI_LOST_UTF8.search(_ENCODE(text)) is not None:
        return _ANSI_LOST_ONLY.sub("", text)  # the escape byte was lost: "[34m"
    return text


def strip_prefixes(text: str, mark: str = _MARK) -> str:
    """Remove every line's log prefixes, leaving ``mark`` on lines that had one."""
    head = _PREFIX_HEAD.match(text)  # the first line has no newline in front of it
    if head is not None:
        text = mark + text[head.end() :]
    return _PREFIX_M.sub("\n" + mark, text)


def is_record_start(line: str) -> bool:
    """Whether a (non-empty) physical line starts a new record rather than continuing a wrapped one:
    it starts with one of ``_RECORD_CHARS`` or ``_RECORD_WORDS``, with an identifier that ends in
    Error/Exception/Warning/Exit, that is followed by ``=``, or that is lower-case and followed by
    ``: ``, or with a list number (``12. ``).  One match of :data:`_RECORD_START`."""
    return _RECORD_START.match(line) is not None


def wrapped_mid_record(prev_raw_length: int, prev: str, line: str) -> bool:
    """A terminal wrap can leave ``failed: out of memory``, ``h_memory=17.98GiB``, ``-PCIE-16GB``,
    `` needed`` or ``92. Make sure`` at the start of a line: the previous physical line is
    terminal-wide (``prev_raw_length``, prefixes included) and stops mid-sentence (``prev`` is that
    line cleaned, so it ends where the raw line does once trailing blanks are cut)."""
    if prev_raw_length < TERMINAL_WRAP or prev[-1:] in _ENDS_RECORD:
        return False
    if line.startswith(" ") and not line.startswith("  "):
        return True
    if line[0] == "-" or (_NUMBERED.match(line) and prev[-1:].isdigit()):
        return True
    m = _IDENT.match(line)
    return m is not None and line[m.end() : m.end() + 1] in (":", "=")


def normalize(data: bytes | str) -> Normalized:
    text = data.decode("utf-8", errors="replace") if isinstance(data, bytes) else data
    raw_text = unwrap(visible(text))  # undo quote bars, glued records, doubled lines
    marked = strip_prefixes(raw_text)
    any_prefixed = _MARK in marked
    rows = (marked.replace(_MARK, "") if any_prefixed else marked).split("\n")
    lines = list(map(str.rstrip, rows))
    # changed with bot/normalize.py: the "" view keeps a space where the cut was at a blank
    ended_blank = [len(row) != len(line) for row, line in zip(rows, lines, strict=True)]
    joins = _find_joins(lines, any_prefixed, marked, raw_text)
    del marked, raw_text
    views = [View.build(lines, range(len(lines)))]
    if joins:
        groups = _join_groups(joins)
        views.append(_joined_view(lines, groups, "", ended_blank))
        views.append(_joined_view(lines, groups, " ", ended_blank))
    return Normalized(tuple(views))


def _find_joins(cleaned: list[str], any_prefixed: bool, marked: str, raw_text: str) -> list[int]:
    """The physical lines that continue the line before them (a hard wrap), in order.  Candidates come
    from a pattern on the marked text, which already leaves out prefixed lines."""
    candidates = (_CANDIDATE_ANY if any_prefixed else _CANDIDATE_LONG).finditer(marked)
    raw_lengths: array | None = None
    joins: list[int] = []
    line, pos = 0, 0
    for m in candidates:
        line += marked.count("\n", pos, m.start()) + 1
        pos = m.end()
        text, prev = cleaned[line], cleaned[line - 1]
        if not text or not prev:
            continue
        if not (any_prefixed or len(prev) >= WRAP_MIN_LENGTH):
            continue
        if is_record_start(text):
            if raw_lengths is None:
                raw_lengths = array("q", map(len, raw_text.split("\n")))
            if not wrapped_mid_record(raw_lengths[line - 1], prev, text):
                continue
        joins.append(line)
    return joins


def _join_groups(joins: list[int]) -> list[tuple[int, int]]:
    """(first, last) physical line of every logical line made of more than one physical line."""
    groups: list[tuple[int, int]] = []
    for i in joins:
        if groups and groups[-1][1] == i - 1:
            groups[-1] = (groups[-1][0], i)
        else:
            groups.append((i - 1, i))
    return groups


def _joined_view(lines: list[str], groups: list[tuple[int, int]], glue: str, ended_blank: list[bool]) -> View:
    """Only the re-joined logical lines: all a wrap-tolerant pattern needs beyond the plain view."""
    logical = []
    for a, b in groups:
        parts = [lines[a]]
        for j in range(a + 1, b + 1):
            blank = ended_blank[j - 1] or lines[j][:1].isspace()
            parts.append((" " if glue or blank else "") + lines[j].lstrip())
        logical.append("".join(parts))
    return View.build(logical, tuple(a for a, _b in groups))
