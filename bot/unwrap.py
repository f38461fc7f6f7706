"""Undo what other tools did to a paste before the engine's own lines can be read.

Each transform is one small function; :func:`unwrap` runs them in order on the visible text (after
invisible characters and real ANSI sequences are gone, before log prefixes are stripped):

- a Windows console that shows ANSI colour codes as ``←[0m`` (the escape byte rendered as an arrow);
- chat quote bars: every non-empty line starts with ``▎ `` or ``> `` (Discord, Slack, e-mail replies);
  a multi-line quote's ``>>> `` in front of the first line; Markdown list markers (``- ``, ``1. ``);
- log lines whose newlines were lost, so several records run together on one line
  (``... engine.(EngineCore_DP0 pid=3) ERROR 01-28 00:18:18 [core.py:935] ...``);
- CloudWatch console copies that print every message twice: once after its timestamp, once alone;
  the Kubernetes CRI log file's partial (``P``) pieces of one long line, joined again.

All patterns are RE2 (linear time), the list marker's bounded Python ``re``; the line passes are single scans.
"""

from __future__ import annotations

import operator
import re
from collections import Counter
from itertools import compress, count

import re2

# "←[0m", "←[1;36m": the ESC byte shown as U+2190 by cmd.exe / PowerShell without VT processing
_ARROW_ANSI = re2.compile(r"\x{2190}\[[0-9;?]{0,20}[A-Za-z]")
ARROWS_MIN = 2

# quote bars: Discord/Slack "▎ " (U+258E) or blockquote "> " on every quoted line, one per level ("> > ")
_QUOTE = re2.compile(r"(?m)^[ \t]{0,3}(?:(?:\x{258E}|>)[ \t]?){1,8}")
QUOTED_SHARE = 0.8  # the bar counts only when (nearly) every non-empty line has it

# a list item's marker (CommonMark 0.31 "List items": up to 3 blanks, "-", "+" or "*", or 1-9 digits and "."
# or ")", then a blank); blank lines; the trigger: a marked line, then (blank lines) another or an indented one
_MARKER = r"^[ \t]{0,3}([-+*]|[0-9]{1,9}([.)]))[ \t]"
_ITEM = re.compile(_MARKER, re.M)
_BLANK_LINES = re.compile(r"(\n(?:[ \t]*+\n)++)")
_ITEMS = re2.compile(f"(?m){_MARKER}[^\n]*\n(?:[ \t]*\n)*(?:{_MARKER[1:]}| )".encode())

# a log record glued to the end of the previous one: a vLLM worker prefix or logger header, an SGLang
# bracketed timestamp or a Go slog header, found mid-line right after the end of a message (a word,
# a number or closing punctuation).  Not after "]", ")", "|" or ":": those end the prefixes that
# legitimately stack in front of such a header ("vllm-1  | ERROR 11-18 ...", "ollama[1617]: time=..."),
# nor after a shipper's RFC 3339 stamp and stream tag ("...789Z stdout F ", "...Z 00O "): matched, not split.
_GLUED = re2.compile(
    r"(?:[0-9]{2}:[0-9]{2}(?:\.[0-9]{1,9})?(?:Z|[+-][0-9]{2}:?[0-9]{2})(?: std(?:out|err) [FP]| [0-9a-f]{2}[OE]\+?)?"
    r"|([A-Za-z0-9.,;!?'\"`]))[ \t]?("
    r"\([A-Za-z][A-Za-z0-9_]{0,40} pid=[0-9]{1,10}\)[ \t]+(?:INFO|WARNING|ERROR|DEBUG|CRITICAL) [0-9]{2}-[0-9]{2} "
    r"|(?:INFO|WARNING|ERROR|DEBUG|CRITICAL) [0-9]{2}-[0-9]{2} [0-9:.]{8,15} \[[A-Za-z0-9_./]{1,80}:[0-9]{1,6}\]"
    r"|\[[0-9]{4}-[0-9]{2}-[0-9]{2} [0-9:]{8}(?: [A-Z]{2,4}[0-9]{1,4}){0,4}\] "
    r"|time=[0-9]{4}-[0-9]{2}-[0-9]{2}T[0-9:.+-]{8,40}Z? level=[A-Z]{4,5} source="
    r")"
)

# CloudWatch: "2025-05-02T10:11:12.345Z    <message>" followed by "<message>" again; the CRI file: a line longer
# than the runtime's buffer as "P" pieces, then "F" (kubelet parseCRILog: "...202Z stdout P log content 1")
_STAMP = r"[0-9]{4}-[0-9]{2}-[0-9]{2}T[0-9:.]{8,18}(?:Z|[+-][0-9:]{4,5})?[ \t]+"
_CW_ANY = re2.compile("(?m)^" + _STAMP + "[^\n]+\n")
_CW_STAMP = re2.compile("^" + _STAMP + "(?:(std(?:out|err)) ([PF]) )?")


def arrow_ansi(text: str) -> str:
    """Remove ``←[0m``-style codes.  The colour codes themselves (``[0m``) are already gone when this
    runs (normalize strips ANSI with a lost escape byte), leaving bare arrows: when a paste has several,
    they are that console's escape bytes, not text."""
    if "\u2190" not in text:
        return text
    text = _ARROW_ANSI.sub("", text)
    return text.replace("\u2190", "") if text.count("\u2190") >= ARROWS_MIN else text


def quote_bars(text: str) -> str:
    if text.startswith(">>> ") and "\n>>> " not in text:
        text = text[4:]  # a multi-line quote: once, for everything after it (which may be quoted too)
    if "\u258e" not in text and "\n>" not in text and not text.lstrip().startswith(">"):
        return text  # no bar anywhere: skip the line scan
    needed = QUOTED_SHARE * sum(map(bool, map(str.strip, text.split("\n"))))  # of the non-empty lines
    if not needed or text.count(">") + text.count("\u258e") < needed:
        return text  # too few bars in the whole text for most lines to start with one
    # one match per quoted line at most (the pattern cannot cross a newline); counted in the UTF-8 bytes
    quoted = sum(1 for _m in _QUOTE.finditer(text.encode("utf-8", "surrogatepass")))
    return _QUOTE.sub("", text) if quoted >= needed else text


def list_markers(text: str) -> str:
    """Strip the markers off a paste bulleted or numbered line by line (every line of a run of non-blank lines
    has one of one kind, two in the paste at least); dedent one item holding a run.  A ``- `` on some stays."""
    if _ITEMS.search(text.encode("utf-8", "surrogatepass")) is None:
        return text
    runs = _BLANK_LINES.split(text)  # the runs at even places, the blank lines between at odd ones
    total = Counter(listed := list(map(_list_kind, runs[::2])))
    for r, (run, kind) in enumerate(zip(runs[::2], listed, strict=True)):
        if (first := _ITEM.match(run)) is None:
            continue  # a list's run starts with a marker
        breaks, pad = run.count("\n"), "\n" + " " * first.end()
        if kind and total[kind] + breaks > 1:
            runs[2 * r] = _ITEM.sub("", run)
        elif breaks and run.count(pad) == breaks:  # one item: its other lines indented to its text
            runs[2 * r] = run[first.end() :].replace(pad, "\n")
    return text if (out := "".join(runs)) == text else quote_bars(out)  # and a quote in the list: "- > "


def _list_kind(run: str) -> str:
    """The marker kind (the bullet, or "." / ")") on every line of a run, else "" (its 2nd line tried first)."""
    kinds = [m[2] or m[1] for m in _ITEM.finditer(run)] if _ITEM.match(run, run.find("\n") + 1) else []
    return kinds[0] if len(kinds) == run.count("\n") + 1 and len(set(kinds)) == 1 else ""


def glued_records(text: str) -> str:
    """A newline in front of every glued header (the blank before it dropped).  Searched in UTF-8 bytes
    and spliced by offsets: RE2 on a ``str`` maps every match's offsets back to characters."""
    data = text.encode("utf-8", "surrogatepass")
    pieces: list[bytes] = []
    end = 0
    for m in _GLUED.finditer(data):
        if m.start(1) >= 0:  # a message's end, not a shipper's stamp
            pieces += (data[end : m.end(1)], b"\n")
            end = m.start(2)
    return b"".join([*pieces, data[end:]]).decode("utf-8", "surrogatepass") if pieces else text


def cloudwatch_duplicates(text: str) -> str:
    """Drop a line repeating the previous one's message minus its stamp; join a CRI "P" piece to the next."""
    if _CW_ANY.search(text) is None:
        return text  # no line starts with an ISO timestamp: skip the line scan
    lines = text.split("\n")  # two at least: a stamped line matched above ends in a newline
    # only a line that starts with four digits can carry the stamp: the others are not matched
    stamped = compress(count(), map(str.isdigit, map(operator.itemgetter(slice(4)), lines[:-1])))
    dropped = set()
    for i in stamped:
        prev, line = lines[i], lines[i + 1]
        stamp = _CW_STAMP.match(prev)
        if stamp and stamp[2] == "P" and (piece := _CW_STAMP.match(line)) and piece[1] == stamp[1]:
            lines[i + 1] = line[: piece.end()] + prev[stamp.end() :] + line[piece.end() :]
            dropped.add(i)
        elif line and stamp is not None and prev[stamp.end() :].strip() == line.strip():
            dropped.add(i + 1)
    return "\n".join(line for i, line in enumerate(lines) if i not in dropped) if dropped else text


def unwrap(text: str) -> str:
    return cloudwatch_duplicates(glued_records(list_markers(quote_bars(arrow_ansi(text)))))
