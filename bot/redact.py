"""Find secrets in a paste and replace them before anything else reads it.

The rules are data (bot/secret_rules.py): the formats users paste most, gitleaks' rules, then secrets
recognised by where they sit (``*_TOKEN=``, ``--api-key``, ``user:password@``, ``Authorization:``,
JSON key fields).  One keyword pass picks the rules that can match; each then runs once over the
text (RE2, linear time).  The reply names every kind found and says to rotate them; the secret itself
is never echoed, logged or stored."""

from __future__ import annotations

import bisect
import itertools
import operator
from array import array
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from unicodedata import east_asian_width

import re2

from bot import normalize as norm
from bot.normalize import _RECORD_START, strip_prefixes, visible, wrapped_mid_record
from bot.reply import Reply
from bot.secret_rules import RuleSet, default_rules
from bot.unwrap import unwrap


@dataclass(frozen=True)
class Span:
    """A secret's byte range in the paste and the kind of secret it is."""

    start: int
    end: int
    kind: str


def find_spans(data: bytes | bytearray, rules: RuleSet | None = None) -> list[Span]:
    """The secrets in ``data`` (byte offsets), sorted and merged.  Rules run in precedence order; a match
    that overlaps an earlier rule's widens what is removed but keeps the earlier rule's kind."""
    rules = rules or default_rules()
    starts: list[int] = []
    found: list[Span] = []
    widen: list[tuple[int, int]] = []
    for index in rules.matching(data):
        rule = rules.rules[index]
        for m in rule.pattern.finditer(data):
            span = rule.secret_span(m)
            if span is None:
                continue
            s, e = span
            at = bisect.bisect_right(starts, s)
            if (at > 0 and found[at - 1].end > s) or (at < len(found) and found[at].start < e):
                widen.append((s, e))
                continue
            starts.insert(at, s)
            found.insert(at, Span(s, e, rule.kind))
    if widen:
        found = _merge(found, widen)
    return found


def _merge(found: list[Span], widen: list[tuple[int, int]]) -> list[Span]:
    """Each run of overlapping spans as one span, named by the run's first named span."""
    pieces = sorted([(s.start, s.end, s.kind) for s in found] + [(s, e, "") for s, e in widen])
    merged: list[list] = []
    for s, e, kind in pieces:
        if merged and s < merged[-1][1]:
            last = merged[-1]
            last[1] = max(last[1], e)
            last[2] = last[2] or kind
        else:
            merged.append([s, e, kind])
    return [Span(s, e, kind) for s, e, kind in merged if kind]


@dataclass(frozen=True)
class Redaction:
    """The paste with its secrets replaced, and which kinds were found."""

    text: str
    kinds: tuple[str, ...]  # kinds found, in order of first appearance
    # each line's prefix length in ``text``, for the detector's normalisation (bot.normalize.normalize),
    # which then reads ``text`` as it is: stripped once, and never joined after the search
    prefix_cuts: array | None = None

    @property
    def found(self) -> bool:
        return bool(self.kinds)

    def warning(self) -> str:
        """The rotate notice: every kind found, by name."""
        names = [f"{'an' if k[:1].lower() in 'aeiou' else 'a'} {k}" for k in self.kinds]
        listed = names[0] if len(names) == 1 else ", ".join(names[:-1]) + " and " + names[-1]
        them = "it" if len(names) == 1 else "them"
        return (
            f"Your paste contained {listed}. I removed {them} before reading the paste and repeat none of "
            f"{them}, but anyone who read the channel has seen {them}: rotate {them} now."
        )


def redact(text: str) -> Redaction:
    """Secrets replaced by ``[kind removed]``.  The text is first read the way the detector reads a paste
    (zero-width characters removed, fullwidth letters folded, colour codes stripped, then bot.unwrap:
    ``←[0m`` codes, quote bars, lists, glued records, CRI pieces joined), and the detector reads the
    result as it is (Redaction.prefix_cuts; the lines it joins are searched again: redact_joins); a secret
    a terminal wrapped across lines, or a key block whose every line has a log prefix, is found too."""
    text = unwrap(visible(text))
    kinds: list[str] = []
    multiline = "\n" in text
    if multiline and "PRIVATE KEY-----" in text:
        text = _redact_key_blocks(text, kinds)
    text, cuts = _redact_wrapped(text, kinds) if multiline else (text, None)
    data = text.encode("utf-8")  # the one-line pass
    text = text if (out := _replaced(data, kinds)) is data else out.decode("utf-8", "replace")
    if kinds or cuts is None:  # a secret removed: the cuts measured another text
        cuts = norm.measured_prefix_cuts(text)
    return Redaction(text, tuple(kinds), cuts)


def _replaced(data: bytes, kinds: list[str]) -> bytes:
    """``data`` with every secret replaced by ``[kind removed]`` (``data`` itself when it holds none)."""
    out, pos = list[bytes](), 0
    for span in find_spans(data):
        out += [data[pos : span.start], f"[{span.kind} removed]".encode()]
        pos = span.end
        if span.kind not in kinds:
            kinds.append(span.kind)
    return b"".join([*out, data[pos:]]) if out else data


def redact_joins(read: norm.Normalized) -> tuple[norm.Normalized, tuple[str, ...]]:
    """The detector's wrap-joined views searched again: it joins lines the wrapped pass does not read
    together (any two in a paste with a prefix), and a secret those joins rebuilt is removed there."""
    kinds: list[str] = []
    joined = [norm.View(v.first_physical, _replaced(v.data, kinds)) for v in read.views[1:]]
    return (norm.Normalized((read.views[0], *joined)) if kinds else read), tuple(kinds)


WRAP_WINDOW = 64  # lines of one wrapped run read together (a 2 KiB token at 32 columns)
WRAP_MIN_LENGTH = 40  # a line shorter than the narrowest terminal was not wrapped
Run = tuple[int, int, bool]  # first and last line, and whether the first is only context
Strip = Callable[[bytes], bytes]
TAB_SLACK = 8  # a tab, four spaces here, took up to eight columns on the terminal
STRIP_CHUNK = 1 << 20  # characters of text stripped of prefixes at a time
# what str.strip removes and bytes.strip does not (bytes.strip: " \t\n\r\x0b\x0c")
_WIDE_SPACE = re2.compile("[\x1c-\x1f\x85\xa0\u1680\u2000-\u200a\u2028\u2029\u202f\u205f\u3000]")


def _widths(lines: list[str]) -> list[int]:
    """The terminal columns each line takes (a wide CJK or fullwidth character two), at C level if ASCII."""
    widths = list(map(len, lines))
    for k in itertools.compress(itertools.count(), map(operator.not_, map(str.isascii, lines))):
        widths[k] += sum(east_asian_width(c) in "WF" for c in lines[k])
    return widths


def _stripped_lines(text: str) -> tuple[list[bytes], list[int], bool, array]:
    """The lines without their log prefixes, as the detector reads them (no mark left in their place),
    in UTF-8; each raw line's width in terminal columns; whether one holds whitespace that bytes.strip
    keeps; how many characters each line's prefixes took (Redaction.prefix_cuts).  A MiB at a time, cut
    at a newline (no prefix holds one: the same lines as in one pass)."""
    lines: list[bytes] = []
    raw: list[int] = []
    cuts, wide = array("q"), False
    for chunk in norm.line_pieces(text, STRIP_CHUNK):
        ascii = chunk.isascii()  # a terminal wraps at a width in columns
        rows = chunk.split("\n")
        lengths = list(map(len, rows))
        raw += lengths if ascii else _widths(rows)
        stripped = strip_prefixes(chunk, mark="")  # a prefix is cut from a line's start: the rest is kept
        data = stripped.encode("utf-8")
        wide = wide or _WIDE_SPACE.search(data) is not None
        part = data.split(b"\n")
        kept = map(len, part if ascii else stripped.split("\n"))
        cuts.extend(map(operator.sub, lengths, kept))
        lines += part
    return lines, raw, wide, cuts


def _stripper(method: str, wide: bool) -> Strip:
    """``str.strip``/``rstrip``/``lstrip`` on UTF-8 (through a str when a line holds wider whitespace)."""
    wide_strip = lambda line: getattr(line.decode("utf-8"), method)().encode("utf-8")  # noqa: E731
    return wide_strip if wide else getattr(bytes, method)


def _remove(raw: list[str], pieces: list[tuple[int, str]], mark: str) -> bool:
    """Remove each (line, piece) from the raw lines (the first piece becomes ``mark``); False, and
    nothing changed, when a piece cannot be found."""
    found = [raw[j].find(piece) if n else raw[j].rfind(piece) for n, (j, piece) in enumerate(pieces)]
    if any(at < 0 for at in found):
        return False
    for n, ((j, piece), at) in enumerate(zip(pieces, found, strict=True)):
        raw[j] = raw[j][:at] + ("" if n else mark) + raw[j][at + len(piece) :]
    return True


def _runs(joins: bytearray, steady: bytearray) -> list[Run]:
    """(first, last) line of each run a terminal may have wrapped (``joins[k]``: line k continues on the
    next, ``steady[k]``: also as a run's third line or later, see :func:`_joins`); a run is also read
    without its last line (its first may be wider, by a prefix the wrap did not count)."""
    runs: list[Run] = []
    k, n = joins.find(1), len(joins) + 1
    while k >= 0:
        last = k + 1 if k + 1 >= n - 1 or not joins[k + 1] else k + 2
        if last == k + 2:  # from the third line on, a line shorter than the one before it ends the run
            stop = steady.find(0, last, min(n - 1, k + WRAP_WINDOW - 1))
            last = min(n - 1, k + WRAP_WINDOW - 1) if stop < 0 else stop
        # the line before names what follows (<mapboxToken>, "hf_token":): read with the run
        context = k > 0 and (not runs or runs[-1][1] < k - 1)
        runs.append((k - 1 if context else k, last, context))
        if last - k >= 2:  # the first line may be wider (a prefix): the wrap may end a line earlier
            runs.append((k - 1 if context else k, last - 1, context))
        k = joins.find(1, last)  # the last line may continue on the next: it opens the next run
    return runs


def _joins(raw: list[int], stripped: list[bytes], lines: list[bytes]) -> tuple[bytearray, bytearray]:
    """Whether each line k continues on the next, as the detector joins them (raw line k, prefix
    included, is WRAP_MIN_LENGTH wide, the next raw line no wider, not empty, and no new record unless a wrap cut one mid-sentence), and
    whether it does so as a run's third line or later too (a terminal wraps at one width: no shorter
    than the line before it).  Every line at once, with C-level maps."""
    wide = map(operator.ge, raw, itertools.repeat(WRAP_MIN_LENGTH))  # a terminal wraps the raw line
    narrow = map(operator.le, raw[1:], map(operator.add, raw, itertools.repeat(TAB_SLACK)))
    joins = bytearray(map(operator.and_, map(operator.and_, wide, narrow), map(bool, stripped[1:])))
    after = list(itertools.compress(itertools.count(1), joins))  # lines the one before may join: new records?
    for j in itertools.compress(
        after, map(_RECORD_START.match, map(bytes.decode, map(lines.__getitem__, after)))
    ):
        joins[j - 1] = wrapped_mid_record(raw[j - 1], lines[j - 1].decode("utf-8"), lines[j].decode("utf-8"))
    steady = map(operator.ge, map(operator.add, raw[1:], itertools.repeat(TAB_SLACK)), raw)
    return joins, bytearray(b"\0") + bytearray(map(operator.and_, joins[1:], steady))


def _redact_wrapped(text: str, kinds: list[str]) -> tuple[str, array]:
    """A secret that a terminal wrapped across lines (``--hf-token hf_abc`` / ``def...``): no piece
    matches alone, and the detector may join the lines and show it whole.  Each run of wrapped lines
    (log prefixes removed) is read joined with nothing and with a space (a wrap may have split a word
    or replaced a space), and every piece of a secret found across lines is removed.  This runs before
    the one-line pass, so that pass cannot remove half a secret and leave the rest unrecognisable.
    Returns the text and each of its lines' prefix length."""
    lines, raw_len, wide, cuts = _stripped_lines(text)  # raw lines only if a piece is removed
    strip, rstrip, lstrip = (_stripper(method, wide) for method in ("strip", "rstrip", "lstrip"))
    stripped = list(map(strip, lines))
    runs = _runs(*_joins(raw_len, stripped, lines))
    if not runs or len(lines) != len(raw_len):
        return text, cuts
    del raw_len
    raw: list[str] | None = None
    for batch, next_first in _batches(runs, lines):
        windows = _windows(lines, batch, stripped, rstrip, lstrip)
        lines[:next_first] = stripped[:next_first] = [b""] * next_first  # read: let them go
        raw = _remove_wrapped(text, raw, batch, windows, kinds)
    return (text if raw is None else "\n".join(raw)), cuts


WINDOW_BATCH = 1 << 20  # bytes of runs read together: the windows of a long log are not all held at once


def _batches(runs: list[Run], lines: list[bytes]) -> Iterator[tuple[list[Run], int]]:
    """The runs in batches of about WINDOW_BATCH bytes, each with the first line a later batch reads."""
    ends = list(itertools.accumulate(map(len, lines), initial=0))
    total = list(itertools.accumulate(ends[b + 1] - ends[a] for a, b, _c in runs))  # bytes up to each run
    pos = 0
    while pos < len(runs):
        end = max(pos + 1, bisect.bisect_right(total, (total[pos - 1] if pos else 0) + WINDOW_BATCH, pos))
        yield runs[pos:end], runs[end][0] if end < len(runs) else 0
        pos = end


def _remove_wrapped(
    text: str, raw: list[str] | None, runs: list[Run], windows: tuple[bytearray, list[int]], kinds: list[str]
) -> list[str] | None:
    """Every piece of a secret the runs' windows hold across lines removed from the raw lines (split
    from ``text`` on the first one found); the raw lines, or None while none was found."""
    nul_glued, nul_starts = windows
    for glue in (b"", b" "):
        gone = itertools.accumulate((b - a for a, b, _c in runs), initial=0)
        starts = nul_starts if glue else list(map(operator.sub, nul_starts, gone))
        # each run's NULs gone (a run starts that many bytes earlier); that copy dropped once searched
        for span in find_spans(nul_glued.replace(b"\0", glue)):
            w = bisect.bisect_right(starts, span.start) - 1
            s, e = span.start - starts[w], span.end - starts[w]
            first, _last, context = runs[w]
            parts = bytes(nul_glued[nul_starts[w] : nul_starts[w + 1]]).removesuffix(b"\n").split(b"\0")
            pos, pieces = 0, []
            for n, part in enumerate(parts):  # each line's piece of the secret
                if pos < e and (piece := part[max(s, pos) - pos : e - pos]):
                    pieces.append((first + n, piece.decode("utf-8")))
                pos += len(part) + len(glue)
            if len(pieces) < 2 or (context and pieces[0][0] == first):
                continue  # within one line (the one-line pass removes it), or reaching into the context line
            if raw is None:
                raw = text.split("\n")
            if _remove(raw, pieces, f"[{span.kind} removed]") and span.kind not in kinds:
                kinds.append(span.kind)
    return raw


def _windows(
    lines: list[bytes], runs: list[Run], stripped: list[bytes], rstrip: Strip, lstrip: Strip
) -> tuple[bytearray, list[int]]:
    """Each run's first line without its trailing space, inner ones stripped, last without its leading
    space, joined with NUL (gone since :func:`visible`: the caller puts each glue in its place), one run
    per line, and where each run starts."""
    starts = [0]
    out = bytearray()
    for a, b, _c in runs:
        out += b"\0".join([rstrip(lines[a]), *stripped[a + 1 : b], lstrip(lines[b])])
        out += b"\n"
        starts.append(len(out))
    del out[-1:]  # no newline after the last run
    starts[-1] -= 1
    return out, starts


def _redact_key_blocks(text: str, kinds: list[str]) -> str:
    """A private key whose every line carries a log prefix (``app-1  | MIIE...``): found in the
    prefix-stripped lines, and its base64 removed from each raw line."""
    raw = text.split("\n")
    lines = strip_prefixes(text, mark="").split("\n")
    if len(lines) != len(raw):
        return text
    rule = next(r for r in default_rules().rules if r.id == "private-key")
    kind, pattern = rule.kind, rule.pattern
    stripped = "\n".join(lines)
    starts = list(itertools.accumulate((len(line) + 1 for line in lines[:-1]), initial=0))
    for m in pattern.finditer(stripped):
        first = bisect.bisect_right(starts, m.start()) - 1
        last = bisect.bisect_right(starts, max(m.start(), m.end() - 1)) - 1
        pieces = []
        for k in range(first, last + 1):
            a = max(m.start(), starts[k]) - starts[k]
            b = min(m.end(), starts[k] + len(lines[k])) - starts[k]
            piece = lines[k][a:b].strip()
            if piece:
                pieces.append((k, piece))
        if _remove(raw, pieces, f"[{kind} removed]") and kind not in kinds:
            kinds.append(kind)
    return "\n".join(raw)


def with_notice(reply: Reply | None, kinds: tuple[str, ...] | list[str]) -> Reply | None:
    """The reply with one rotate notice first, naming every kind so far (a notice alone if no reply)."""
    merged = tuple(dict.fromkeys([*(reply.secrets if reply else ()), *kinds]))
    if not kinds or (reply is not None and merged == reply.secrets):
        return reply
    warning = Redaction("", merged).warning()
    if reply is None or (reply.kind == "notice" and reply.secrets):  # a notice alone: only the new one
        return Reply(kind="notice", title="A secret was in your message", summary=warning, secrets=merged)
    reply.notes[: bool(reply.secrets)] = [warning]  # the earlier notice replaced
    reply.secrets = merged
    return reply
