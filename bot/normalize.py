"""Turn a raw paste into text the signatures can match.

- decode bytes leniently, drop NULs, zero-width and bidi-control characters, NFKC-fold look-alike digits;
- strip ANSI colour sequences (also with the escape byte lost: ``[34m``);
- undo what other tools did to the paste (bot/unwrap.py: ``←[0m``, quotes, lists, glued records, doubled lines);
- strip log prefixes (knowledge/log_prefixes.yaml: vLLM, Ray, docker compose, journald, CI, ...), nested too;
- re-join hard-wrapped lines into logical lines.  A wrap may have split a word (``KV cach`` / ``e``)
  or replaced a space, so two joined views are produced: one joined with nothing, one with a space.
  They hold only the re-joined lines; the plain view holds everything.

Linear time on any input, and no work where there is nothing to do: a pass whose trigger is absent
(a non-ASCII character, an escape byte, a carriage return) is skipped, the prefix pattern is anchored on
a literal newline, prefixes redaction already measured are cut by length (``prefix_cuts``), and per-line
work is done by C-level ``map``/``split``/``join``, a MiB at a time.  Every quantifier in the Python ``re``
patterns is possessive or bounded (tests/bot/test_normalize.py checks it), so they never backtrack."""

from __future__ import annotations

import bisect
import operator
import re
import unicodedata
from array import array
from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass
from functools import cached_property, partial
from itertools import accumulate, chain, compress, count, islice, repeat
from operator import add

import re2

from bot.unwrap import unwrap
from knowledge.log_prefixes import log_prefixes

# NULs, the mark we use, zero-width and bidi-control characters: removed before anything else
_INVISIBLE_CHARS = "\x00\x02\u00ad\u061c\u2060\ufeff" + "".join(
    map(chr, [*range(0x200B, 0x2010), *range(0x202A, 0x202F), *range(0x2066, 0x206A)])
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

# Log prefixes (knowledge/log_prefixes.yaml), each possessive: no backtracking
PREFIX_PATTERNS = [p.pattern for p in log_prefixes().prefixes]
MAX_PREFIX_LAYERS = log_prefixes().max_layers
# anchored on a literal newline (the text gets one in front): the engine scans for "\n" and tries the
# prefixes only there, instead of testing a line-start assertion at every character
_PREFIX_M = re.compile(
    "\n(?:" + "|".join(f"(?:{p})" for p in PREFIX_PATTERNS) + f"){{1,{MAX_PREFIX_LAYERS}}}+"
)
_MARK = "\x02"

WRAP_MIN_LENGTH = 60
TERMINAL_WRAP = 80
_RECORD_CHARS = frozenset(" \t$#>*-[(|`")
_RECORD_WORDS = tuple('Traceback|File "|During handling|The above exception|INFO|ERROR|WARN|DEBUG'.split("|"))
_IDENT = re.compile(r"[A-Za-z_][A-Za-z0-9_.]*+")
# whether a (non-empty) physical line starts a new record rather than continuing a wrapped one: it starts
# with one of _RECORD_CHARS or _RECORD_WORDS, an identifier ending in Error/Exception/Warning/Exit, one
# followed by "=", a lower-case one followed by ": ", or a list number ("12. ")
_FIRST = "[" + re.escape("".join(sorted(_RECORD_CHARS))) + "]|" + "|".join(map(re.escape, _RECORD_WORDS))
_RECORD_START = re.compile(
    _FIRST
    # an identifier (the whole run: possessive) that ends in one of these words
    + r"|(?=[A-Za-z_])[A-Za-z0-9_.]*+(?:(?<=Error)|(?<=Exception)|(?<=Warning)|(?<=Exit))"
    # a lower-case identifier (one letter at least: str.islower) and ": "
    + r"|(?=[0-9_.]*+[a-z])[a-z_][a-z0-9_.]*+: "
    + r"|[A-Za-z_][A-Za-z0-9_.]*+="  # an identifier and "="
    + r"|[0-9]{1,3}\. "  # a numbered list item
)
_NUMBERED = re.compile(r"[0-9]{1,3}\. ")
_ENDS_RECORD = frozenset(".:;!?)]}>")
_CLOSES_QUOTE = frozenset([*" .,:;)'\"", ""])  # what follows a closing backtick, or the line's end


_ENCODE = partial(str.encode, encoding="utf-8", errors="surrogatepass")


def _utf8(lines: Iterable[str]) -> bytes:
    """The lines joined with newlines in UTF-8, 8192 at a time: no whole str of two bytes a character."""
    rest = iter(lines)
    return b"\n".join([_ENCODE("\n".join(part)) for part in iter(lambda: list(islice(rest, 8192)), [])])


def line_pieces(text: str, size: int = 1 << 20) -> Iterator[str]:
    """``text`` in pieces of about ``size`` characters, cut at newlines (each newline dropped)."""
    pos = 0
    while pos <= len(text):
        cut = text.find("\n", pos + size) % (len(text) + 1)  # no newline left (-1): the end
        yield text[pos:cut]
        pos = cut + 1


@dataclass(frozen=True)
class View:
    """One rendering of the paste, kept as UTF-8 ``data`` plus where each logical line starts.
    Patterns search the bytes (RE2 would otherwise re-encode the whole text on every search), so match
    offsets are byte offsets into ``data``.  ``text`` and the line offsets are computed on first use: a
    paste with no finding never needs them, and a non-ASCII paste is not held twice (as a ``str``, two or
    four bytes a character)."""

    first_physical: Sequence[int]  # physical line number (0-based) of each logical line
    data: bytes = b""

    @cached_property
    def text(self) -> str:
        return self.data.decode("utf-8", "surrogatepass")

    @cached_property
    def byte_starts(self) -> array:
        """Byte offset of each logical line in ``data``: the lengths before it, each with its newline."""
        return array("q", accumulate(map(add, map(len, self.data.split(b"\n")), repeat(1)), initial=0))[:-1]

    def line_at(self, byte_offset: int) -> int:
        """The logical line holding a byte offset of ``data``."""
        return max(0, bisect.bisect_right(self.byte_starts, byte_offset) - 1)

    def logical_line(self, index: int) -> str:
        starts = self.byte_starts
        end = starts[index + 1] - 1 if index + 1 < len(starts) else len(self.data)
        return self.data[starts[index] : end].decode("utf-8", "surrogatepass")


@dataclass(frozen=True)
class Normalized:
    """A paste's views for the detector: its physical lines, then its wrap-joined ones."""

    views: tuple[View, ...]  # [0] = physical lines, then wrap-joined views (if any line was joined)


def clean_text(text: str) -> str:
    """Invisible characters removed, look-alikes folded, line ends and tabs made plain; each step only
    when its trigger is in the text (an ASCII text needs none of the Unicode ones)."""
    if text.isascii():
        text = text.replace("\x00", "").replace("\x02", "") if "\x00" in text or "\x02" in text else text
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
    return text.replace("\t", "    ") if "\t" in text else text


def visible(text: str) -> str:
    """The text as every pattern sees it: invisible characters gone, look-alikes folded, ANSI stripped.
    The redactor reads this too, so a secret split by zero-width spaces is found before it is joined."""
    text = clean_text(text)
    if "\x1b" in text:
        return _ANSI.sub("", text)
    if "[" in text and _ANSI_LOST_UTF8.search(_ENCODE(text)) is not None:
        return _ANSI_LOST_ONLY.sub("", text)  # the escape byte was lost: "[34m"
    return text


def _clean_lines(text: str, cuts: array | None) -> tuple[list[str], bytearray, bytearray]:
    """Each line without its prefixes and trailing blanks, whether it had a prefix (cut by ``cuts`` if
    given), and whether it ended in a blank (a terminal that wrapped there cut at a space)."""
    lines: list[str] = []
    ended_blank = bytearray()
    if cuts is not None:
        rests, count = map(slice, cuts, repeat(None)), 0  # line[cut:], one per line in order
        for rows in (piece.split("\n") for piece in line_pieces(text)):
            _strip_into(lines, ended_blank, list(map(str.__getitem__, rows, rests)))
            count += len(rows)
        if count == len(lines) == len(cuts):
            return lines, bytearray(map(bool, cuts)), ended_blank
        lines, ended_blank = [], bytearray()  # not this text's lines after all (never expected): strip them
    prefixed = bytearray()
    for marked in (piece.split("\n") for piece in line_pieces(strip_prefixes(text))):
        prefixed += bytearray(map(str.startswith, marked, repeat(_MARK)))  # a mark can only open a line
        _strip_into(lines, ended_blank, list(map(str.removeprefix, marked, repeat(_MARK))))
    return lines, prefixed, ended_blank


def measured_prefix_cuts(text: str) -> array:
    """How many characters each line's log prefixes take (bot.redact.Redaction.prefix_cuts)."""
    rows = map(len, strip_prefixes(text, mark="").split("\n"))
    return array("q", map(operator.sub, map(len, text.split("\n")), rows))


def _strip_into(lines: list[str], ended_blank: bytearray, rows: list[str]) -> None:
    stripped = list(map(str.rstrip, rows))
    ended_blank += bytearray(map(operator.ne, map(len, rows), map(len, stripped)))
    lines += stripped


def strip_prefixes(text: str, mark: str = _MARK) -> str:
    """Remove every line's log prefixes, leaving ``mark`` on lines that had one."""
    end = text.find("\n")  # the first line, matched with a newline in front (no prefix spans one)
    head = _PREFIX_M.match("\n" + (text if end < 0 else text[:end]))
    if head is not None:
        text = mark + text[head.end() - 1 :]
    return _PREFIX_M.sub("\n" + mark, text)


def wrapped_mid_record(prev_raw_length: int, prev: str, line: str) -> bool:
    """A terminal wrap can leave ``failed: out of memory``, ``h_memory=17.98GiB``, ``-PCIE-16GB``, a closing
    backtick, `` needed`` or ``92. Make sure`` at the start of a line: the previous physical line is
    terminal-wide (``prev_raw_length``, prefixes included) and stops mid-sentence (``prev`` is that
    line cleaned, so it ends where the raw line does once trailing blanks are cut)."""
    if prev_raw_length < TERMINAL_WRAP or line.startswith("  "):
        return False
    if line.startswith(" ") or prev[-1:] in _ENDS_RECORD:
        return line.startswith(" ")  # a cut at a blank, even after "(131072)" or "device 0:"
    quote = line[0] == "`" and line[1:2] in _CLOSES_QUOTE  # a code span's closing backtick ("` but")
    if line[0] == "-" or quote or (_NUMBERED.match(line) and prev[-1:].isdigit()):
        return True
    m = _IDENT.match(line)
    return m is not None and line[m.end() : m.end() + 1] in (":", "=")


def normalize(data: bytes | str, prefix_cuts: array | None = None) -> Normalized:
    """``prefix_cuts``: how many characters each line's prefixes take in ``data``, as redaction measured
    them (bot.redact.Redaction.prefix_cuts) on the text it made :func:`visible` and unwrapped: that
    text is read as it is (joining more of it could rebuild a secret the redactor never saw)."""
    text = data.decode("utf-8", errors="replace") if isinstance(data, bytes) else data
    raw_text = text if prefix_cuts is not None else unwrap(visible(text))
    lines, prefixed, ended_blank = _clean_lines(raw_text, prefix_cuts)
    joins = _find_joins(lines, prefixed if prefixed.find(1) >= 0 else None, raw_text)
    del raw_text
    views = [View(range(len(lines)), _utf8(lines))]
    if joins:
        groups = _join_groups(joins)
        views += [_joined_view(lines, groups, glue, ended_blank) for glue in ("", " ")]
    return Normalized(tuple(views))


def _find_joins(cleaned: list[str], prefixed: bytearray | None, raw_text: str) -> list[int]:
    """The physical lines that continue the line before them (a hard wrap), in order: not empty, not
    prefixed, after a line not empty (WRAP_MIN_LENGTH long if no line has a prefix), and no new record
    unless a wrap cut one mid-sentence; C-level maps, Python only for the candidates that look like one."""
    if prefixed is None:
        before = map(operator.ge, map(len, cleaned), repeat(WRAP_MIN_LENGTH))
    else:
        before = map(operator.and_, map(bool, cleaned), map(operator.not_, prefixed[1:]))
    candidates = list(compress(count(1), map(operator.and_, before, map(bool, cleaned[1:]))))
    records = list(compress(candidates, map(_RECORD_START.match, map(cleaned.__getitem__, candidates))))
    if not records:
        return candidates
    raw_lengths = array("q", map(len, chain.from_iterable(p.split("\n") for p in line_pieces(raw_text))))
    cut = {j for j in records if not wrapped_mid_record(raw_lengths[j - 1], cleaned[j - 1], cleaned[j])}
    return [j for j in candidates if j not in cut] if cut else candidates


def _join_groups(joins: list[int]) -> tuple[list[int], list[int]]:
    """The first and last physical line of each logical line of several: a join the one before does not
    continue opens one (at the line before it), a join the next does not continue closes it."""
    plus_one = list(map(operator.add, joins, repeat(1)))
    opens = map(operator.ne, chain([-1], plus_one), joins)
    closes = map(operator.ne, plus_one, chain(islice(joins, 1, None), [-1]))
    return list(map(operator.sub, compress(joins, opens), repeat(1))), list(compress(joins, closes))


def _joined_view(lines: list[str], groups: tuple[list[int], list[int]], glue: str, blank: bytearray) -> View:
    """Only the re-joined logical lines: all a wrap-tolerant pattern needs beyond the plain view.  Joined
    with a space, or with nothing except where the cut was at a blank (one side kept it: a terminal cuts a
    line mid-word and at spaces alike, and one message can hold both cuts)."""
    pairs = zip(*groups, strict=True)
    if glue:
        logical = (glue.join([lines[a], *map(str.lstrip, lines[a + 1 : b + 1])]) for a, b in pairs)
    else:
        logical = ("".join([lines[a], *map(_glued, lines[a + 1 : b + 1], blank[a : b])]) for a, b in pairs)  # fmt: skip
    return View(tuple(groups[0]), _utf8(logical))


def _glued(line: str, blank_before: int) -> str:
    """A continuation line as it joins the one before: after a space if either side had the blank."""
    rest = line.lstrip()
    return " " + rest if blank_before or len(rest) < len(line) else rest
