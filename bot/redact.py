"""Find secrets in a paste and replace them before anything else reads it.

The reply then says which kinds were found and that they should be rotated; the secret itself is
never echoed, logged or stored.  All patterns are RE2 (linear time).
"""

from __future__ import annotations

import bisect
import itertools
from dataclasses import dataclass

import re2

from bot.normalize import _MARK, strip_prefixes, visible

# (kind, pattern); the whole match is replaced
_PATTERNS: list[tuple[str, str]] = [
    (
        "private key",
        r"-----BEGIN [A-Z ]*PRIVATE KEY-----[A-Za-z0-9+/=\s]*(?:-----END [A-Z ]*PRIVATE KEY-----)?",
    ),
    ("Hugging Face token", r"\bhf_[A-Za-z0-9]{30,}"),
    ("Anthropic API key", r"\bsk-ant-[A-Za-z0-9_-]{20,}"),
    ("OpenAI-style API key", r"\bsk-(?:proj-|svcacct-|admin-)?[A-Za-z0-9_-]{20,}"),
    ("AWS access key id", r"\b(?:AKIA|ASIA)[0-9A-Z]{16}\b"),
    ("AWS secret access key", r"(?i)aws_?secret_?access_?key[\"']?\s*[:=]\s*[\"']?[A-Za-z0-9/+=]{40}"),
    ("GitHub token", r"\b(?:gh[pousr]_[A-Za-z0-9]{36,}|github_pat_[A-Za-z0-9_]{40,})"),
    ("Slack token", r"\bxox[abposr]-[A-Za-z0-9-]{10,}"),
    ("Slack app token", r"\bxapp-[0-9]-[A-Za-z0-9-]{10,}"),
    ("Slack webhook URL", r"https://hooks\.slack\.com/services/[A-Za-z0-9/_-]{20,}"),
    ("Discord token", r"\b[MNO][A-Za-z0-9_-]{23,27}\.[A-Za-z0-9_-]{6}\.[A-Za-z0-9_-]{27,40}\b"),
    (
        "Discord webhook URL",
        r"https://(?:ptb\.|canary\.)?discord(?:app)?\.com/api/webhooks/[0-9]+/[A-Za-z0-9_-]{20,}",
    ),
    ("Google API key", r"\bAIza[0-9A-Za-z_-]{35}\b"),
    ("bearer token", r"(?i)\bbearer\s+[A-Za-z0-9._~+/-]{20,}=*"),
    (
        "API key",
        r"(?i)\b(?:api[_-]?key|access[_-]?token|secret[_-]?key|hf_token|hugging_face_hub_token|openai_api_key)[\"']?\s*[:=]\s*[\"']?[A-Za-z0-9._~+/-]{16,}",
    ),
    # the engines' own flags: vllm serve --api-key KEY, huggingface-cli login --token TOKEN
    ("API key", r"--(?:api-key|hf-token|hf_token|token|access-token)(?:[ \t]+|=)[\"']?[A-Za-z0-9._~+/-]{8,}"),
]
_COMPILED = [(kind, re2.compile(p)) for kind, p in _PATTERNS]


def _compile_set():
    """One RE2 Set of every pattern: which of them match anywhere, in one pass over the text."""
    options = re2.Options()
    options.max_mem = 64 << 20
    candidate = re2.Set.SearchSet(options)
    try:
        for _kind, p in _PATTERNS:
            candidate.Add(p)
        candidate.Compile()
    except re2.error:
        return None
    return candidate


_SET = _compile_set()


def _matching(data: bytes) -> list[int]:
    """Indexes into _COMPILED of the patterns that match somewhere in ``data``, in order."""
    if _SET is None:
        return [i for i, (_kind, p) in enumerate(_COMPILED) if p.search(data) is not None]
    return sorted(_SET.Match(data) or ())


@dataclass(frozen=True)
class Redaction:
    text: str
    kinds: tuple[str, ...]  # kinds found, in order of first appearance

    @property
    def found(self) -> bool:
        return bool(self.kinds)

    def warning(self) -> str:
        return (
            "Your paste contained "
            + ", ".join(f"a {k}" for k in self.kinds)
            + ". I did not repeat it, but anyone who read the channel has seen it: rotate it now."
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
    for index in _matching(text.encode("utf-8")):
        kind, pattern = _COMPILED[index]
        if pattern.search(text) is None:
            continue  # an earlier kind's removal took it
        text = pattern.sub(f"[{kind} removed]", text)
        if kind not in kinds:
            kinds.append(kind)
    if multiline:
        text = _redact_wrapped(text, kinds)
    return Redaction(text, tuple(kinds))


WRAP_WINDOW = 3  # a secret wrapped over up to three lines (a 100-character token at 40 columns)
WRAP_MIN_LENGTH = 40  # a line shorter than the narrowest terminal was not wrapped


def _stripped_lines(text: str) -> list[str]:
    """The lines without their log prefixes, as the detector reads them."""
    return [line.removeprefix(_MARK) for line in strip_prefixes(text).split("\n")]


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


def _redact_wrapped(text: str, kinds: list[str]) -> str:
    """A secret that a terminal wrapped across lines (``--hf-token hf_abc`` / ``def...``): no piece
    matches alone, and the detector may join the lines and show it whole.  Each long line is tried with
    the next two (log prefixes removed, joined with nothing and with a space, as a wrap may have split
    a word or replaced a space), and every piece of a secret found across them is removed."""
    raw = text.split("\n")
    lines = _stripped_lines(text)
    n = len(lines)
    if n != len(raw):
        return text
    right = [line.rstrip() for line in lines]
    both = [line.strip() for line in lines]
    left = [line.lstrip() for line in lines]
    firsts = [k for k in range(n - 1) if len(lines[k]) >= WRAP_MIN_LENGTH]  # terminals wrap long lines

    def parts(k: int, glue: str) -> list[tuple[int, int, int, str]]:
        """(start, end, line, text) of each line's part in the window that starts at line k."""
        last = min(k + WRAP_WINDOW, n) - 1
        out: list[tuple[int, int, int, str]] = []
        pos = 0
        for j in range(k, last + 1):
            part = right[j] if j == k else both[j] if j < last else left[j]
            pos += len(glue) if j > k else 0
            out.append((pos, pos + len(part), j, part))
            pos += len(part)
        return out

    for glue in ("", " "):
        windows = [
            right[k] + glue + (both[k + 1] + glue + left[k + 2] if k + 2 < n else left[k + 1]) for k in firsts
        ]
        if not windows:
            break
        starts = list(itertools.accumulate((len(w) + 1 for w in windows[:-1]), initial=0))
        joined = "\n".join(windows)
        data = joined.encode("utf-8")
        ascii_only = len(data) == len(joined)
        for index in _matching(data):
            kind, pattern = _COMPILED[index]
            for m in pattern.finditer(data):
                start, end = m.start(), m.end()
                if not ascii_only:  # byte offsets to character offsets (matches are rare)
                    start = len(data[:start].decode("utf-8", "ignore"))
                    end = start + len(data[m.start() : m.end()].decode("utf-8", "ignore"))
                w = bisect.bisect_right(starts, start) - 1
                s, e = start - starts[w], end - starts[w]
                layout = parts(firsts[w], glue)
                if not (s < layout[0][1] < e):
                    continue  # starts on a later line (its own window) or within one line (done)
                pieces = [
                    (j, part[max(s, a) - a : min(e, b) - a]) for a, b, j, part in layout if a < e and s < b
                ]
                pieces = [(j, piece) for j, piece in pieces if piece]
                if _remove(raw, pieces, f"[{kind} removed]") and kind not in kinds:
                    kinds.append(kind)
    return "\n".join(raw)


def _redact_key_blocks(text: str, kinds: list[str]) -> str:
    """A private key whose every line carries a log prefix (``app-1  | MIIE...``): found in the
    prefix-stripped lines, and its base64 removed from each raw line."""
    raw = text.split("\n")
    lines = _stripped_lines(text)
    if len(lines) != len(raw):
        return text
    kind, pattern = next((k, p) for k, p in _COMPILED if k == "private key")
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
