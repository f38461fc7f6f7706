"""The held-out pastes behind other log shippers' line formats: does the finding survive the wrapper?

Takes every record of tests/data/wild_*.jsonl (the files bench/recall.py scores) whose root finding is
right today by bench/recall.py's rule (a memory/context paste whose root has the family's category, a
negative answered by its own category), re-renders its text the way each tool below would have shown
it, and reports per wrapper how many still get the same root signature and the same extracted numbers
(every numeric value a finding or the context carries, compared with the unwrapped paste's), and how
many keep every line the detector reads of the unwrapped paste (the prefixes wholly stripped; a
hard wrap changes lines by design, so that column is not its measure).

The formats are the tools' own, from their source or docs:

- kubectl logs --timestamps: the kubelet writes RFC 3339 with nine fractional digits
  (kubernetes/kubernetes pkg/kubelet/kuberuntime/logs/logs.go, timeFormatOut "2006-01-02T15:04:05.000000000Z07:00");
- kubectl logs --prefix: ``[pod/NAME/CONTAINER] `` (kubernetes/kubectl pkg/cmd/logs/logs.go addPrefixIfNeeded,
  ``fmt.Sprintf("[pod/%s/%s] ", ref.Name, containerName)``), put in front of the server's (timestamped) line;
- the CRI log file (/var/log/pods/...): ``TIMESTAMP STREAM TAG CONTENT``, tag F (full) or P (partial)
  (logs.go parseCRILog: "2016-10-06T00:17:09.669794202Z stdout P log content 1"); containerd writes P
  for a line longer than max_container_log_line_size (16384), so ``CRI file (P + F)`` cuts every line
  over 40 characters in two at its middle to exercise the re-join a real 16 KiB line needs;
- docker logs -t: ``msg.Timestamp.Format(jsonmessage.RFC3339NanoFixed)+" "`` (moby daemon/logs.go);
- docker compose v2: ``fmt.Sprintf("%-"+width+"s | ", name)``, width the longest service name plus one
  (docker/compose cmd/formatter/logs.go setPrefix, computeWidth), coloured as a whole with
  ``\\033[<code>m`` ... ``\\033[0m`` (cmd/formatter/colors.go ansiColor), also with the escape byte lost;
- journalctl default (short): ``%b %d %H:%M:%S HOST IDENTIFIER[PID]: `` (systemd src/shared/logs-show.c
  output_short); ``-o short-iso``: ``%Y-%m-%dT%H:%M:%S%z`` ("+0000": no colon, systemd/systemd#26639);
  ``-o short-precise``: the short form with microseconds (journalctl(1));
- a systemd ``--user`` unit read with ``journalctl --user -u``: the same short form, the identifier
  the unit's command (``python3.11[PID]``);
- GitHub Actions raw logs: every line ``YYYY-MM-DDTHH:MM:SS.fffffffZ `` (seven fractional digits), the
  step in ``##[group]`` / ``##[endgroup]``, ``##[error]`` for an annotation (``::error::`` workflow
  command, docs.github.com "Workflow commands for GitHub Actions");
- GitLab CI: ``\\e[0Ksection_start:UNIX:NAME\\r\\e[0KHeader`` ... ``\\e[0Ksection_end:UNIX:NAME\\r\\e[0K``
  (docs.gitlab.com ci/jobs "Custom collapsible sections"), and the raw log with job-log timestamps
  ``2024-06-26T09:52:17.271593Z 00O `` (stream 00/01, O/E; docs.gitlab.com ci/jobs/job_logs "Job log timestamps");
- Grafana's "Download logs" (.txt) of a Loki or CloudWatch query: ``dateTimeFormatISO(row.timeEpochMs) + '\\t'
  + row.entry`` after the meta lines (grafana/grafana public/app/features/inspector/utils/download.ts);
- Windows PowerShell 5.1 ``| Tee-Object -FilePath``: the file is UTF-16LE with a BOM and CRLF line ends
  (learn.microsoft.com Tee-Object, "-Encoding" notes); decoded properly, and read back as UTF-8 bytes;
- a terminal hard wrap at 80 and 120 columns (the line cut at the column, mid-word);
- a Slack / Discord quote: ``> `` on every line;
- a Markdown list item: ``- `` or ``1. `` on the first line, the rest indented to the item's text;
- a Markdown list of the log's lines, as a chat user bullets a paste: ``- ``, ``* `` or ``1. ``, ``2. ``, ...
  (CommonMark 0.31 "List items": a bullet ``-``/``+``/``*`` or 1-9 digits and ``.``/``)``, then a space),
  also inside a quote (``> - ``);
- a code block with a language tag (```` ```log ````, ```` ```python ````: CommonMark "Fenced code blocks",
  the info string), bare or inside a quote (``> ```text``);
- a multi-line quote: ``>>> `` once, in front of the first line (Discord's "Markdown Text 101": everything
  after it is quoted; a message typed so in Slack reaches the bot as typed), also around a code block.
- nested: kubectl --prefix around docker compose; journald around vLLM's worker prefix
  (``(EngineCore_DP0 pid=N) ``, vllm/utils ``_add_prefix`` on every line of a worker's output).

A shipper prefixes the records it was given: the lines a later hard wrap made (those the unwrapped
paste's normalisation re-joins) get no prefix of their own, and a paste quoted as a whole is shipped
inside its quote (the bar in front of everything the shipper wrote).  The timestamps are made up (one
millisecond apart); nothing else about a line changes.

Run: .venv/bin/python bench/prefix_recall.py [--misses] [--json]
"""

from __future__ import annotations

import argparse
import json
import re
import sys
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta, timezone
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from bench.recall import FAMILY_CATEGORY, NEGATIVE, extracted_values, held_out_files  # noqa: E402
from bot.detector import Detection, detect  # noqa: E402
from bot.normalize import _clean_lines, _find_joins, visible  # noqa: E402
from bot.unwrap import quote_bars, unwrap  # noqa: E402
from knowledge.schema import CONFIG_CATEGORIES  # noqa: E402

START = datetime(2025, 7, 2, 7, 41, 58, 123456, tzinfo=UTC)
QUOTE_BAR = re.compile(r"[ \t]{0,3}(?:(?:\u258e|>)[ \t]?){1,8}")  # bot/unwrap.py's _QUOTE, one line
CRI_MAX_LINE = 16384  # containerd max_container_log_line_size default
COMPOSE_CYAN = "36"  # the first colour of compose's rainbow (cmd/formatter/colors.go)


def _stamps(n: int) -> list[datetime]:
    return [START + timedelta(milliseconds=i) for i in range(n)]


def continuations(text: str) -> frozenset[int]:
    """The physical lines of a paste that continue a hard-wrapped record, as its normalisation re-joins
    them.  A shipper prefixes each record it was given; the wrap came later (the terminal, the issue's
    renderer), so those lines carry no prefix of their own."""
    raw = unwrap(visible(text))
    if raw.count("\n") != text.count("\n"):
        return frozenset()  # unwrap split or dropped lines: no line-for-line map
    lines, prefixed, _blank = _clean_lines(raw, None)
    return frozenset(_find_joins(lines, prefixed if prefixed.find(1) >= 0 else None, raw))


def per_line(render: Callable[[int, datetime, str], str]) -> Callable[[str], str]:
    """A wrapper that puts something in front of every record (``render(index, time, line)``)."""

    def wrap(text: str) -> str:
        lines, joined = text.split("\n"), continuations(text)
        stamps = _stamps(len(lines))
        return "\n".join(line if i in joined else render(i, stamps[i], line) for i, line in enumerate(lines))

    return wrap


def under_quote(wrap: Callable[[str], str]) -> Callable[[str], str]:
    """A shipper's output as a chat quoted it: when the paste was quoted as a whole (bot/unwrap.py's rule),
    the shipper wrote the lines inside the quote, so the quote bar goes in front of everything it wrote."""

    def quoted(text: str) -> str:
        if quote_bars(visible(text)) == visible(text):
            return wrap(text)
        bars = [m.group() if (m := QUOTE_BAR.match(line)) else "" for line in text.split("\n")]
        inner = "\n".join(line[len(bar) :] for line, bar in zip(text.split("\n"), bars, strict=True))
        bar = next(filter(None, bars))
        return bar + wrap(inner).replace("\n", "\n" + bar)

    return quoted


def nano(t: datetime) -> str:
    return t.strftime("%Y-%m-%dT%H:%M:%S.") + f"{t.microsecond:06d}789Z"


def compose(name: str, width: int, colour: str | None = None) -> str:
    prefix = f"{name:<{width}} | "
    return prefix if colour is None else f"\x1b[{colour}m{prefix}\x1b[0m"


def journald_short(t: datetime, host: str = "gpu-node", ident: str = "vllm[2871]") -> str:
    return t.strftime("%b %d %H:%M:%S") + f" {host} {ident}: "


def cri(stream: str = "stdout", cut_middle: bool = False) -> Callable[[str], str]:
    def render(i: int, t: datetime, line: str) -> str:
        pieces = [line[k : k + CRI_MAX_LINE] for k in range(0, max(len(line), 1), CRI_MAX_LINE)]
        if cut_middle and len(line) > 40:
            pieces = [line[: len(line) // 2], line[len(line) // 2 :]]
        return "\n".join(
            f"{nano(t)} {stream} {'P' if k < len(pieces) - 1 else 'F'} {p}" for k, p in enumerate(pieces)
        )

    return per_line(render)


def actions_stamp(t: datetime) -> str:
    return t.strftime("%Y-%m-%dT%H:%M:%S.") + f"{t.microsecond:06d}0Z "


def github_actions(text: str, error: bool = False) -> str:
    body = per_line(lambda i, t, s: actions_stamp(t) + ("##[error]" if error else "") + s)(text)
    end = START + timedelta(seconds=1)
    head = actions_stamp(START) + "##[group]Run vllm serve $MODEL\n"
    tail = f"\n{actions_stamp(end)}##[endgroup]\n{actions_stamp(end)}##[error]Process completed with exit code 1."
    return head + body + ("" if error else tail)


def gitlab_sections(text: str) -> str:
    start = int(START.timestamp())
    return (
        f"\x1b[0Ksection_start:{start}:serve\r\x1b[0K\x1b[0;36mStart the server\x1b[0;m\n"
        + text
        + f"\n\x1b[0Ksection_end:{start + 2}:serve\r\x1b[0K"
    )


def grafana_txt(text: str, tz: timezone) -> str:
    rows = per_line(lambda i, t, s: t.astimezone(tz).isoformat(timespec="seconds") + "\t" + s)(text)
    return 'Common labels: {"container":"vllm","namespace":"inference"}\n\n\n' + rows + "\n"


def powershell_tee(text: str, as_utf8_bytes: bool = False) -> str:
    data = ("\ufeff" + text.replace("\n", "\r\n") + "\r\n").encode("utf-16-le")
    return data.decode("utf-8", "replace") if as_utf8_bytes else data.decode("utf-16-le")


def hard_wrap(width: int) -> Callable[[str], str]:
    def wrap(text: str) -> str:
        rows = []
        for line in text.split("\n"):
            rows += [line[i : i + width] for i in range(0, max(len(line), 1), width)]
        return "\n".join(rows)

    return wrap


def list_item(marker: str) -> Callable[[str], str]:
    indent = " " * len(marker)
    return lambda text: marker + text.replace("\n", "\n" + indent)


def bullets(marker: str | None, quote: str = "") -> Callable[[str], str]:
    """Every non-empty line a list item: ``marker``, or ``1. ``, ``2. ``, ... when it is None."""

    def wrap(text: str) -> str:
        lines, rows, n = text.split("\n"), [], 0
        for line in lines:
            n += bool(line.strip())
            rows.append(quote + (marker or f"{n}. ") + line if line.strip() else quote.rstrip())
        return "\n".join(rows)

    return wrap


def fenced(tag: str, quote: str = "") -> Callable[[str], str]:
    """A code block opened with a language tag; ``quote`` on every line (``> ``) or once (``>>> ``)."""
    if quote == ">>> ":
        return lambda text: f">>> ```{tag}\n{text}\n```"
    return lambda text: quote + f"```{tag}\n{text}\n```".replace("\n", "\n" + quote)


WIDTH = len("vllm-1") + 1  # compose: the longest name plus one
POD = "[pod/vllm-7c9f8d6b5d-x2x4q/vllm] "
WRAPPERS: dict[str, Callable[[str], str]] = {
    "kubectl --timestamps": per_line(lambda i, t, s: f"{nano(t)} {s}"),
    "kubectl --prefix": per_line(lambda i, t, s: POD + s),
    "kubectl --prefix --timestamps": per_line(lambda i, t, s: f"{POD}{nano(t)} {s}"),
    "CRI file (F)": cri(),
    "CRI file (stderr F)": cri("stderr"),
    "CRI file (P + F)": cri(cut_middle=True),
    "docker logs -t": per_line(lambda i, t, s: f"{nano(t)} {s}"),
    "compose v2": per_line(lambda i, t, s: compose("vllm-1", WIDTH) + s),
    "compose v2 (2 services)": per_line(lambda i, t, s: compose("vllm-1", len("open-webui-1") + 1) + s),
    "compose v2 colour": per_line(lambda i, t, s: compose("vllm-1", WIDTH, COMPOSE_CYAN) + s),
    "compose v2 colour, ESC lost": per_line(
        lambda i, t, s: compose("vllm-1", WIDTH, COMPOSE_CYAN).replace("\x1b", "") + s
    ),
    "journalctl": per_line(lambda i, t, s: journald_short(t) + s),
    "journalctl -o short-iso": per_line(
        lambda i, t, s: t.strftime("%Y-%m-%dT%H:%M:%S%z") + " gpu-node vllm[2871]: " + s
    ),
    "journalctl -o short-precise": per_line(
        lambda i, t, s: t.strftime("%b %d %H:%M:%S.%f") + " gpu-node vllm[2871]: " + s
    ),
    "journalctl --user -u (unit)": per_line(
        lambda i, t, s: journald_short(t, "workstation", "python3.11[4321]") + s
    ),
    "GitHub Actions raw": github_actions,
    "GitHub Actions ##[error]": lambda s: github_actions(s, error=True),
    "GitLab CI sections": gitlab_sections,
    "GitLab CI timestamps": per_line(lambda i, t, s: t.strftime("%Y-%m-%dT%H:%M:%S.%fZ") + " 01E " + s),
    "Grafana/Loki txt (UTC)": lambda s: grafana_txt(s, UTC),
    "Grafana/Loki txt (+02:00)": lambda s: grafana_txt(s, timezone(timedelta(hours=2))),
    "PowerShell Tee-Object": powershell_tee,
    "PowerShell Tee-Object as UTF-8": lambda s: powershell_tee(s, as_utf8_bytes=True),
    "hard wrap 80": hard_wrap(80),
    "hard wrap 120": hard_wrap(120),
    "chat quote '> '": lambda s: "> " + s.replace("\n", "\n> "),
    "Markdown '- ' item": list_item("- "),
    "Markdown '1. ' item": list_item("1. "),
    "Markdown '- ' every line": bullets("- "),
    "Markdown '* ' every line": bullets("* "),
    "Markdown '1. 2. ' every line": bullets(None),
    "chat quote '> - ' every line": bullets("- ", "> "),
    "chat quote '> 1. ' every line": bullets(None, "> "),
    "Markdown ```log fence": fenced("log"),
    "chat quote '> ```python' fence": fenced("python", "> "),
    "chat quote '>>> '": lambda s: ">>> " + s,
    "chat quote '>>> ```text' fence": fenced("text", ">>> "),
    "kubectl --prefix > compose": per_line(lambda i, t, s: POD + compose("vllm-1", WIDTH) + s),
    "journald > vLLM worker": per_line(lambda i, t, s: journald_short(t) + "(EngineCore_DP0 pid=2871) " + s),
}
DISPLAY = ("hard wrap", "chat quote", "Markdown")  # what a screen or a chat does to the paste, not a shipper
WRAPPERS = {k: w if k.startswith(DISPLAY) else under_quote(w) for k, w in WRAPPERS.items()}


def right_today(record: dict, detection: Detection) -> bool:
    """bench/recall.py's rule: the root finding is the family's category (a negative's own category)."""
    root, family = detection.root, record["family"]
    if root is None:
        return False
    if family.startswith(NEGATIVE):
        expected = family.removeprefix(NEGATIVE)
        return expected in CONFIG_CATEGORIES and root.category == expected
    return root.category == FAMILY_CATEGORY.get(family)


def numbers(detection: Detection) -> dict:
    return {
        k: v
        for k, v in extracted_values(detection).items()
        if isinstance(v, int | float) and not isinstance(v, bool)
    }


@dataclass
class WrapperScore:
    name: str
    same_root: int = 0
    same_numbers: int = 0
    same_lines: int = 0
    misses: list[str] = field(default_factory=list)


def plain_lines(detection: Detection) -> set[str]:
    """The non-empty lines the detector reads (its plain view), stripped: with every prefix gone, a wrapped
    paste holds all of the unwrapped paste's (a wrapper may add its own, as Actions' ##[group] line).
    Stripped, because a timestamp prefix takes the blanks after it (a traceback's indentation) too."""
    return set(filter(None, map(str.strip, detection.normalized.views[0].text.split("\n"))))


def score(records: list[dict]) -> tuple[int, list[WrapperScore]]:
    baseline = []
    for r in records:
        d = detect(r["text"])
        if right_today(r, d):
            baseline.append((r, d.root.signature if d.root else None, numbers(d), plain_lines(d)))
    scores = []
    for name, wrap in WRAPPERS.items():
        s = WrapperScore(name)
        for r, root, nums, lines in baseline:
            d = detect(wrap(r["text"]))
            got_root = d.root.signature if d.root else None
            got = numbers(d)
            s.same_root += got_root == root
            s.same_numbers += got == nums
            s.same_lines += lines <= plain_lines(d)
            if got_root != root:
                s.misses.append(f"{r['id']}: root {got_root} (was {root})")
            elif got != nums:
                diff = {
                    k: (nums.get(k), got.get(k))
                    for k in nums.keys() | got.keys()
                    if nums.get(k) != got.get(k)
                }
                s.misses.append(f"{r['id']}: numbers differ {diff}")
        scores.append(s)
    return len(baseline), scores


def load() -> list[dict]:
    return [
        json.loads(line)
        for p in held_out_files()
        for line in p.read_text(encoding="utf-8").splitlines()
        if line.strip()
    ]


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--misses", action="store_true", help="list every paste a wrapper changes")
    parser.add_argument("--json", action="store_true", help="print the scores as JSON")
    args = parser.parse_args(argv)
    n, scores = score(load())
    if args.json:
        print(json.dumps({"pastes": n, "wrappers": [s.__dict__ for s in scores]}, indent=2))
        return 0
    print(f"{n} held-out pastes whose root finding is right unwrapped")
    print(f"{'wrapper':<34}{'same root':>11}{'same numbers':>14}{'lines kept':>12}")
    for s in scores:
        print(f"{s.name:<34}{s.same_root:>6}/{n:<4}{s.same_numbers:>9}/{n:<4}{s.same_lines:>7}/{n:<4}")
        if args.misses:
            print("\n".join(f"    {m}" for m in s.misses))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
