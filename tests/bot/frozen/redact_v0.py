"""A frozen copy of ``bot.redact.redact`` as of 809767d (before the run-finding and window fast paths),
kept only to check that the production redactor gives exactly the same output
(tests/hardening/test_redact_equivalence.py, bench/redact_throughput.py --check).  Not used by bot/.
Three changes of behaviour were made here as in bot/redact.py: a run's last line opens the next run, a line
is wide enough to have wrapped by its raw width (prefix included), and
the runs are read in batches of WINDOW_BATCH bytes."""

from __future__ import annotations

import bisect
import itertools
import operator
from dataclasses import dataclass

from bot.normalize import _RECORD_START, strip_prefixes, visible, wrapped_mid_record
from bot.secret_rules import RuleSet, default_rules


@dataclass(frozen=True)
class Span:
    start: int
    end: int
    kind: str


def find_spans(data: bytes, rules: RuleSet | None = None) -> list[Span]:
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
    text: str
    kinds: tuple[str, ...]  # kinds found, in order of first appearance

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
    """Secrets replaced by ``[kind removed]``.  The text is first cleaned the way the detector cleans it
    (zero-width characters removed, fullwidth letters folded, colour codes stripped), so a secret
    disguised by them is found here rather than reassembled later and echoed; a secret that a terminal
    wrapped across lines, or a key block whose every line has a log prefix, is found too."""
    text = visible(text)
    kinds: list[str] = []
    multiline = "\n" in text
    if multiline and "PRIVATE KEY-----" in text:
        text = _redact_key_blocks(text, kinds)
    if multiline:
        text = _redact_wrapped(text, kinds)
    text = _redact_spans(text, kinds)
    return Redaction(text, tuple(kinds))


def _redact_spans(text: str, kinds: list[str]) -> str:
    data = text.encode("utf-8")
    spans = find_spans(data)
    if not spans:
        return text
    out: list[bytes] = []
    pos = 0
    for span in spans:
        out += [data[pos : span.start], f"[{span.kind} removed]".encode()]
        pos = span.end
        if span.kind not in kinds:
            kinds.append(span.kind)
    out.append(data[pos:])
    return b"".join(out).decode("utf-8", "replace")


WRAP_WINDOW = 64  # lines of one wrapped run read together (a 2 KiB token at 32 columns)
WRAP_MIN_LENGTH = 40  # a line shorter than the narrowest terminal was not wrapped
Run = tuple[int, int, bool]  # first and last line, and whether the first is only context
TAB_SLACK = 8  # a tab, four spaces here, took up to eight columns on the terminal


def _stripped_lines(text: str) -> list[str]:
    """The lines without their log prefixes, as the detector reads them (no mark left in their place)."""
    return strip_prefixes(text, mark="").split("\n")


def _remove(raw: list[str], pieces: list[tuple[int, str]], mark: str) -> bool:
    """Remove each (line, piece) from the raw lines (the first piece becomes ``mark``); False, and
    nothing changed, when a piece cannot be found."""
    found = []
    for n, (line_no, piece) in enumerate(pieces):
        line = raw[line_no]
        at = line.rfind(piece) if n == 0 else line.find(piece)
        if at < 0:
            return False
        found.append(at)
    for n, ((line_no, piece), at) in enumerate(zip(pieces, found, strict=True)):
        line = raw[line_no]
        raw[line_no] = line[:at] + (mark if n == 0 else "") + line[at + len(piece) :]
    return True


def _runs(lines: list[str], raw: list[int]) -> list[Run]:
    """(first, last) line of each run a terminal may have wrapped: a long line continues on the next
    unless that one starts a new record (``ValueError:``, ``INFO ...``), as the detector joins them;
    a terminal wraps at one width, so a line shorter than the one before it ends the run (the first
    line may be wider, by a prefix the wrap did not count: a run is also read without its last line).
    ``raw`` holds the length of each raw line (prefixes included)."""
    runs: list[Run] = []
    k, n = 0, len(lines)
    starts = _may_continue(lines, raw)  # the lines a run can start from, found without a Python loop
    at = 0
    while k < n - 1:
        at = bisect.bisect_left(starts, k, at)
        if at == len(starts):
            break
        k = starts[at]  # every line before it ends a run at once (last == k): skipped
        last = k
        while (
            last < n - 1
            and last - k + 1 < WRAP_WINDOW
            and raw[last] >= WRAP_MIN_LENGTH  # the raw line, prefix included, is what a terminal wraps
            and (last <= k + 1 or raw[last] + TAB_SLACK >= raw[last - 1])  # a shorter one ends it
            and raw[last + 1] <= raw[last] + TAB_SLACK  # a wrap is never wider than its line
            and lines[last + 1].strip()
            and (
                _RECORD_START.match(lines[last + 1]) is None
                or wrapped_mid_record(raw[last], lines[last], lines[last + 1])
            )
        ):
            last += 1
        if last > k:
            # the line before names what follows (<mapboxToken>, "hf_token":): read with the run
            context = k > 0 and (not runs or runs[-1][1] < k - 1)
            runs.append((k - 1 if context else k, last, context))
            if last - k >= 2:  # the first line may be wider (a prefix): the wrap may end a line earlier
                runs.append((k - 1 if context else k, last - 1, context))
        # a run's last line may continue on the next (a run cut by a shorter line): it opens the next
        # run (fixed here as in bot/redact.py: a secret wrapped after a chain of wide lines kept its tail)
        k = last if last > k else last + 1
    return runs


def _may_continue(lines: list[str], raw_len: list[int]) -> list[int]:
    """The lines k (before the last) that pass the length tests :func:`_runs` asks of a line before it
    joins line k + 1: at least WRAP_MIN_LENGTH long, and the next raw line no wider than this one."""
    wide = map(operator.ge, raw_len, itertools.repeat(WRAP_MIN_LENGTH))
    narrow = map(operator.le, raw_len[1:], map(operator.add, raw_len, itertools.repeat(TAB_SLACK)))
    return list(itertools.compress(itertools.count(), map(operator.and_, wide, narrow)))


def _parts(lines: list[str], stripped: list[str], first: int, last: int) -> list[str]:
    """Each line's part of a run: the first without its trailing space, the inner ones ``stripped``
    (every line stripped), the last without its leading space."""
    return [lines[first].rstrip(), *stripped[first + 1 : last], lines[last].lstrip()]


def _layout(parts: list[str], first: int, glue: str) -> list[tuple[int, int, int, str]]:
    """(start, end, line, text) of each part in the run joined with ``glue``."""
    out: list[tuple[int, int, int, str]] = []
    pos = 0
    for n, part in enumerate(parts):
        pos += len(glue) if n else 0
        out.append((pos, pos + len(part), first + n, part))
        pos += len(part)
    return out


def _redact_wrapped(text: str, kinds: list[str]) -> str:
    """A secret that a terminal wrapped across lines (``--hf-token hf_abc`` / ``def...``): no piece
    matches alone, and the detector may join the lines and show it whole.  Each run of wrapped lines
    (log prefixes removed) is read joined with nothing and with a space (a wrap may have split a word
    or replaced a space), and every piece of a secret found across lines is removed.  This runs before
    the one-line pass, so that pass cannot remove half a secret and leave the rest unrecognisable."""
    raw_len = list(map(len, text.split("\n")))  # the raw lines themselves only if a piece is removed
    lines = _stripped_lines(text)
    if len(lines) != len(raw_len):
        return text
    runs = _runs(lines, raw_len)
    del raw_len
    if not runs:
        return text
    raw: list[str] | None = None
    stripped = list(map(str.strip, lines))  # mostly the lines themselves: str.strip returns a clean str
    for batch in _batches(runs, lines):
        raw = _redact_batch(text, raw, lines, stripped, batch, kinds)
    return text if raw is None else "\n".join(raw)


WINDOW_BATCH = 1 << 20  # as bot/redact.py: the runs are read a batch of about this many bytes at a time


def _batches(runs: list[Run], lines: list[str]):
    """The runs in order, a batch once their lines (UTF-8) would exceed WINDOW_BATCH bytes (one at least)."""
    batch: list[Run] = []
    size = 0
    for run in runs:
        n = sum(len(lines[j].encode("utf-8", "surrogatepass")) for j in range(run[0], run[1] + 1))
        if batch and size + n > WINDOW_BATCH:
            yield batch
            batch, size = [], 0
        batch.append(run)
        size += n
    if batch:
        yield batch


def _redact_batch(text, raw, lines, stripped, runs, kinds):
    """One batch of runs read joined with nothing and with a space; the raw lines once a piece is removed."""
    nul_glued, sizes = _windows(lines, runs, stripped)
    for glue in ("", " "):
        data = nul_glued.replace(b"\0", glue.encode())
        glued = map(operator.sub, sizes, (b - a for a, b, _c in runs)) if not glue else iter(sizes)
        starts = list(itertools.accumulate(glued, initial=0))
        starts[-1] -= 1  # no newline after the last run
        ascii_only = len(data) == starts[-1]
        for span in find_spans(data):
            kind, start, end = span.kind, span.start, span.end
            if not ascii_only:  # byte offsets to character offsets (matches are rare)
                end = len(data[:end].decode("utf-8", "ignore"))
                start = len(data[:start].decode("utf-8", "ignore"))
            w = bisect.bisect_right(starts, start) - 1
            s, e = start - starts[w], end - starts[w]
            first, last, context = runs[w]
            layout = _layout(_parts(lines, stripped, first, last), first, glue)
            pieces = [(j, part[max(s, a) - a : min(e, b) - a]) for a, b, j, part in layout if a < e and s < b]
            pieces = [(j, piece) for j, piece in pieces if piece]
            if len(pieces) < 2 or (context and pieces[0][0] == first):
                continue  # within one line (the one-line pass removes it), or reaching into the context line
            if raw is None:
                raw = text.split("\n")
            if _remove(raw, pieces, f"[{kind} removed]") and kind not in kinds:
                kinds.append(kind)
    return raw


def _windows(lines: list[str], runs: list[Run], stripped: list[str]) -> tuple[bytes, list[int]]:
    """The runs' lines joined with NUL (gone since :func:`visible`: the caller puts each glue in its
    place), one run per line, as UTF-8, and each run's length in characters plus one; each run encoded
    on its own, so the joined text is never one str (two bytes a character once one is not Latin-1)."""
    chars: list[int] = []
    chunks: list[bytes] = []
    for a, b, _c in runs:
        window = "\0".join(_parts(lines, stripped, a, b))
        chars.append(len(window) + 1)
        chunks.append(window.encode("utf-8"))
    return b"\n".join(chunks), chars


def _redact_key_blocks(text: str, kinds: list[str]) -> str:
    """A private key whose every line carries a log prefix (``app-1  | MIIE...``): found in the
    prefix-stripped lines, and its base64 removed from each raw line."""
    raw = text.split("\n")
    lines = _stripped_lines(text)
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
