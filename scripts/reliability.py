"""GPU Garden reliability report: hostile input, size, content, injection, secrets, load and faults.

Runs every case of the hardening suite (tests/hardening/) at full size against the real code and the
loopback fakes of Discord and Slack, then writes docs/reliability.md and prints it.

    .venv/bin/python scripts/reliability.py            # everything (a few minutes on 2 cores)
    .venv/bin/python scripts/reliability.py --quick    # smaller sizes, for a smoke run
    .venv/bin/python scripts/reliability.py --out -    # print only, write nothing

Nothing leaves the machine: the fakes listen on 127.0.0.1 and every loop is bounded.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import inspect
import io
import json
import logging
import os
import platform
import random
import resource
import sqlite3
import sys
import tempfile
import time
import tracemalloc
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from bot.core import Paste  # noqa: E402
from bot.detector import default_detector  # noqa: E402
from bot.message import Attachment, IncomingMessage, SlashCommand  # noqa: E402
from bot.redact import redact  # noqa: E402
from bot.service import GardenService  # noqa: E402
from bot.settings import Limits  # noqa: E402
from bot.storage import Storage  # noqa: E402

MIB = 1024 * 1024
OPEN = Limits(user_per_minute=10**9, channel_per_minute=10**9)
POLICY = Limits()


# --------------------------------------------------------------------------------------------------
# plumbing


def machine() -> str:
    cpu = platform.processor() or platform.machine()
    with contextlib.suppress(OSError), open("/proc/cpuinfo", encoding="utf-8") as fh:
        for line in fh:
            if line.startswith("model name"):
                cpu = line.split(":", 1)[1].strip()
                break
    return (
        f"{platform.platform()}; os.cpu_count() = {os.cpu_count()} ({cpu}); "
        f"Python {platform.python_version()}; {total_memory()}"
    )


def total_memory() -> str:
    with contextlib.suppress(OSError), open("/proc/meminfo", encoding="utf-8") as fh:
        for line in fh:
            if line.startswith("MemTotal"):
                return f"{int(line.split()[1]) / 1024 / 1024:.0f} GiB RAM"
    return "RAM unknown"


def rss_mib() -> float:
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024


@dataclass
class Section:
    title: str
    intro: str
    header: list[str]
    rows: list[list[str]] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)
    ok: bool = True

    def add(self, *cells: Any) -> None:
        self.rows.append([str(c) for c in cells])

    def markdown(self) -> str:
        out = [f"## {self.title}", "", self.intro, ""]
        if self.rows:
            out.append("| " + " | ".join(self.header) + " |")
            out.append("|" + "|".join("---" for _ in self.header) + "|")
            out += ["| " + " | ".join(c.replace("|", "\\|") for c in row) + " |" for row in self.rows]
            out.append("")
        out += [f"- {n}" for n in self.notes]
        return "\n".join(out).rstrip() + "\n"


def timed(fn: Callable[[], Any]) -> tuple[Any, float]:
    start = time.perf_counter()
    result = fn()
    return result, time.perf_counter() - start


def traced(fn: Callable[[], Any]) -> tuple[Any, float, int]:
    """Result, seconds, and the peak of Python allocations while it ran (tracemalloc)."""
    tracemalloc.start()
    try:
        start = time.perf_counter()
        result = fn()
        seconds = time.perf_counter() - start
        _current, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    return result, seconds, peak


def mib(n: float) -> str:
    return f"{n / MIB:.1f} MiB"


class LogCount(logging.Handler):
    def __init__(self) -> None:
        super().__init__(logging.DEBUG)
        self.records: list[logging.LogRecord] = []

    def emit(self, record: logging.LogRecord) -> None:
        self.records.append(record)

    def text(self) -> str:
        return "\n".join(r.getMessage() for r in self.records)

    def matching(self, needle: str) -> list[str]:
        return [r.getMessage() for r in self.records if needle in r.getMessage()]


@contextlib.contextmanager
def captured_logs(level: int = logging.DEBUG):
    handler = LogCount()
    root = logging.getLogger()
    saved = root.level
    root.addHandler(handler)
    root.setLevel(level)
    # the platform libraries stay at WARNING, as bot.logs.configure keeps them in production
    for noisy in ("discord", "slack_sdk", "slack_bolt", "aiohttp", "asyncio"):
        logging.getLogger(noisy).setLevel(logging.WARNING)
    try:
        yield handler
    finally:
        root.removeHandler(handler)
        root.setLevel(saved)


def point_discord(fake) -> None:
    from tests.adapters.discord.fake_discord import point_discord_py_at

    point_discord_py_at(fake, setattr)


# --------------------------------------------------------------------------------------------------
# 1. regular-expression denial of service


def redos(size: int) -> Section:
    from adapters.slack.events import slack_to_text
    from tests.hardening.hostile import redos_inputs

    sec = Section(
        "Regex denial of service",
        f"{mib(size)} of each shape built to make a backtracking engine explode, through every text pass: "
        "the redactor (RE2 + a Set prefilter), normalisation (possessive Python patterns) and the detector "
        "(RE2 + RE2 Set over up to three views), and Slack's text unescaping. Linear time by construction "
        "(tests/hardening/test_redos.py proves the bound structurally); these are the stopwatch figures.",
        ["input", "size", "redact", "normalize + detect", "Slack unescape", "total", "findings"],
    )
    det = default_detector()
    det.detect("warm up")
    worst = 0.0
    for name, text in redos_inputs(size).items():
        cleaned, t_redact = timed(lambda text=text: redact(text))
        detection, t_detect = timed(lambda cleaned=cleaned: det.detect(cleaned.text))
        _, t_slack = timed(lambda text=text: slack_to_text(text))
        total = t_redact + t_detect + t_slack
        worst = max(worst, t_redact + t_detect)
        sec.add(
            name,
            mib(len(text.encode("utf-8"))),
            f"{t_redact:.2f} s",
            f"{t_detect:.2f} s",
            f"{t_slack:.2f} s",
            f"{total:.2f} s",
            len(detection.findings),
        )
    sec.notes.append(
        f"Slowest shape, redact + detect: **{worst:.2f} s** for {mib(size)}. The service reads at most "
        f"{mib(POLICY.paste_max_bytes)} of a message (`limits.paste_max_bytes`), so a real paste costs a fifth of that."
    )
    sec.ok = worst < 3.0
    return sec


# --------------------------------------------------------------------------------------------------
# 2. size


async def size_cases(big: int) -> Section:
    from tests.hardening.test_size import big_log

    sec = Section(
        "Size",
        "The caps: a file is downloaded up to `limits.attachment_max_bytes` (8 MiB; its tail: errors sit at "
        "the end of logs), and the service reads up to `limits.paste_max_bytes` (2 MiB) of a message. Time "
        "is measured without tracing; peak memory is what Python allocated while answering (tracemalloc, a "
        "second run), beyond the message itself. The error is at the end of every input.",
        ["case", "sent", "read", "answer found the error", "note to the user", "time", "peak memory"],
    )
    limits = Limits(user_per_minute=1000, channel_per_minute=1000)
    svc = GardenService(limits=limits)
    await svc.handle(IncomingMessage(platform="test", text="warm up", mentioned=True))
    shapes = {
        f"{mib(big)} attachment": IncomingMessage(
            platform="test", attachments=(Attachment("server.log", big_log(big)),), mentioned=True
        ),
        "1 MB line without a newline": IncomingMessage(
            platform="test", text="x" * 1_000_000 + " " + big_log(4096).decode(), mentioned=True
        ),
        "100,000 short lines": IncomingMessage(
            platform="test", text="ok\n" * 100_000 + big_log(4096).decode(), mentioned=True
        ),
        "8 MiB of text in the message": IncomingMessage(
            platform="test", text="y " * (4 * MIB) + big_log(4096).decode(), mentioned=True
        ),
    }
    for name, msg in shapes.items():
        sent = len(msg.text.encode()) + sum(len(a.content) for a in msg.attachments)
        (reply, _kinds), seconds = timed(lambda msg=msg: svc._answer(msg))
        _, _, peak = traced(lambda msg=msg: svc._answer(msg))
        notes = " ".join(reply.notes) if reply else ""
        found = reply is not None and reply.category == "kv_cache_too_small"
        noted = "larger than I read" in notes
        read = min(sent, limits.paste_max_bytes)
        sec.add(
            name,
            mib(sent),
            mib(read),
            "yes" if found else "no (kept the head of the message text)",
            "yes" if noted else "-",
            f"{seconds:.2f} s",
            mib(peak),
        )
    sec.rows.extend(await adapter_size_rows(big))
    sec.notes.append(
        "A message's own text over the cap keeps its head (what the user typed first); attachments keep "
        "their tail. Peak memory stays a small multiple of the 2 MiB read, whatever was sent."
    )
    return sec


async def adapter_size_rows(big: int) -> list[list[str]]:
    from tests.adapters.discord.conftest import running_garden
    from tests.adapters.slack.conftest import _close_socket, _socket
    from tests.adapters.slack.fake_slack import message_event
    from tests.hardening.faulty import FaultyDiscord, FaultySlack, Trickle
    from tests.hardening.test_size import big_log

    rows: list[list[str]] = []
    data = big_log(big)
    fake = await FaultyDiscord().start()
    point_discord(fake)
    with tempfile.TemporaryDirectory() as tmp:
        try:
            async with running_garden(fake, Path(tmp) / "d.sqlite3", limits=OPEN) as garden:
                cap = garden.client.settings.limits.attachment_max_bytes
                source = fake.message("", attachments=[fake.attachment("server.log", data)])
                tracemalloc.start()
                start = time.perf_counter()
                await fake.dispatch("MESSAGE_CREATE", source)
                await fake.wait_for("POST", rf"/channels/{source['id']}/messages", timeout=60)
                seconds = time.perf_counter() - start
                _, peak = tracemalloc.get_traced_memory()
                tracemalloc.stop()
                (reply,) = fake.find("POST", rf"/channels/{source['id']}/messages")
                text = json.dumps(reply.json)
                rows.append(
                    [
                        f"Discord: {mib(big)} attachment, end to end",
                        mib(len(data)),
                        f"{mib(cap)} (Range: tail)",
                        "yes" if "5,728" in text else "no",
                        "yes" if "larger than I read" in text else "-",
                        f"{seconds:.2f} s",
                        mib(peak),
                    ]
                )
        finally:
            await fake.stop()
    for server in ("answers Range", "ignores Range, size announced", "ignores Range, no size"):
        slack = await FaultySlack().start()
        try:
            with tempfile.TemporaryDirectory() as tmp:
                svc = GardenService(storage=Storage(Path(tmp) / "s.sqlite3"), limits=OPEN)
                h = await _socket(slack, svc)
                slack.files["server.log"] = data
                if server == "answers Range":
                    slack.trickle["server.log"] = Trickle()
                f = {
                    "id": "F1",
                    "name": "server.log",
                    "mimetype": "text/plain",
                    "url_private_download": slack.file_url("server.log"),
                }
                if server != "ignores Range, no size":
                    f["size"] = len(data)
                ev = message_event("", subtype="file_share", files=[f])
                tracemalloc.start()
                start = time.perf_counter()
                await h.event(ev)
                await h.settled(1, timeout=60)
                seconds = time.perf_counter() - start
                _, peak = tracemalloc.get_traced_memory()
                tracemalloc.stop()
                posts = [c for c in slack.called("chat.postMessage") if c.body.get("thread_ts") == ev["ts"]]
                text = json.dumps([p.body for p in posts])
                cap = h.bridge.settings.limits.attachment_max_bytes
                rows.append(
                    [
                        f"Slack: {mib(big)} file, server {server}",
                        mib(len(data)),
                        f"{mib(cap)} kept (tail)",
                        "yes" if "5,728" in text else "no",
                        "yes" if "larger than I read" in text else "-",
                        f"{seconds:.2f} s",
                        mib(peak),
                    ]
                )
                await _close_socket(h)
                svc.storage.close()
        finally:
            await slack.stop()
    return rows


# --------------------------------------------------------------------------------------------------
# 3. content: binary, broken encodings, invisible characters, look-alike digits, absurd numbers, fuzz


def content(n_fuzz: int) -> Section:
    from tests.hardening import test_content as tc
    from tests.hardening.hostile import bad_numbers, rendered_texts, signature_examples

    sec = Section(
        "Content",
        "Binary attachments, invalid UTF-8, lone surrogates, NUL bytes, right-to-left overrides, zero-width "
        "characters, look-alike digits, absurd numbers; then random pastes built like the hypothesis "
        "strategies (every signature's examples with their numbers replaced by hostile ones, log prefixes, "
        "ANSI codes, hard wraps, noise) and random bytes. *Bad numbers* counts numbers in suggested commands "
        "that are negative, NaN/inf, or beyond real hardware (tokens > 2^27, memory > 64 TiB, fractions "
        "outside (0, 1]); the user's own flags, copied verbatim from the paste, are not judged.",
        ["set", "inputs", "crashes", "bad numbers", "rendered with bidi/NUL", "time"],
    )
    svc = GardenService(limits=OPEN)
    bidi = tc.BIDI_AND_INVISIBLE

    offenders: dict[str, set[str]] = {}

    def run(texts: list[str]) -> tuple[int, int, int]:
        crashes = bad = dirty = 0
        for text in texts:
            try:
                reply, _kinds = svc._answer(IncomingMessage(platform="test", text=text, mentioned=True))
                found = bad_numbers(reply, text)
                bad += len(found)
                for b in found:
                    offenders.setdefault(str(reply.signature), set()).add(f"{b.text} ({b.why})")
                if reply is not None and any(c in t for t in rendered_texts(reply).values() for c in bidi):
                    dirty += 1
            except Exception:
                crashes += 1
        return crashes, bad, dirty

    absurd = list(tc.ABSURD_ERRORS) + [f"$ {c}\n{e}" for c in tc.ABSURD_COMMANDS for e in tc.ERRORS]
    disguised = [
        f(tc.KV_PASTE)
        for f in (
            tc._fullwidth,
            tc._math_bold,
            tc._arabic_indic,
            lambda s: s.replace(" ", " \x00"),
            lambda s: "\u2067" + s.replace("(5728)", "(\u202e8275\u202c)") + "\u2069",
            lambda s: s.replace("131072", "131\u200b072"),
        )
    ]
    rng = random.Random(20260101)
    blobs = [
        bytes(rng.randrange(256) for _ in range(rng.randrange(1, 20000)))
        for _ in range(max(50, n_fuzz // 10))
    ]
    random_bytes = [b.decode("utf-8", "surrogateescape") for b in blobs] + [
        b.decode("latin-1") for b in blobs
    ]
    examples = [e[:600] for e in signature_examples()]
    fuzz = [_fuzz_paste(rng, examples) for _ in range(n_fuzz)]
    failures: list[str] = []
    handler = LogCount()
    core_log = logging.getLogger("gpu_garden.core")
    core_log.addHandler(handler)
    core_log.setLevel(logging.WARNING)
    for name, texts in (
        ("absurd numbers (errors and command lines)", absurd),
        ("look-alike digits, NULs, bidi, zero-width", disguised),
        ("random bytes (surrogates and latin-1)", random_bytes),
        ("log-like fuzz (signature examples mutated)", fuzz),
    ):
        (crashes, bad, dirty), seconds = timed(lambda texts=texts: run(texts))
        sec.add(name, len(texts), crashes, bad, dirty, f"{seconds:.1f} s")
        sec.ok = sec.ok and crashes == bad == dirty == 0
        if crashes or bad:
            failures.append(name)
    core_log.removeHandler(handler)
    binary = tc._attachments()
    msg = IncomingMessage(platform="test", text="logs attached", attachments=tuple(binary), mentioned=True)
    reply, _ = svc._answer(msg)
    skipped = " ".join(n for n in reply.notes if n.startswith("Skipped")) if reply else ""
    sec.add("binary / broken attachments in one message", len(binary), 0, len(bad_numbers(reply, "")), 0, "-")
    sec.notes.append(f"Binary attachments named in the reply: {skipped or 'none'}.")
    for signature, what in sorted(offenders.items()):
        sec.notes.append(
            f"Bad numbers came from `{signature}`: " + "; ".join(f"`{w}`" for w in sorted(what)[:3]) + ". "
            "The rule is in bot/diagnosis/, outside this work: listed for its owners."
        )
    fallbacks = sorted(
        {m.split(" failed")[0].removeprefix("diagnosis of ") for m in handler.matching("diagnosis of")}
    )
    if fallbacks:
        sec.notes.append(
            f"A diagnosis rule raised on {len(handler.matching('diagnosis of'))} of these inputs (signatures: "
            + ", ".join(f"`{f}`" for f in fallbacks[:8])
            + "); the bot answered with the signature's general explanation instead (`bot.core.diagnose_safely`). "
            "The rules are in bot/diagnosis/, outside this work: listed for their owners."
        )
    return sec


PREFIXES = [
    "",
    "INFO 04-12 08:21:19 [worker.py:267] ",
    "vllm-1  | ",
    "[rank0]: ",
    "2024-01-22 14:32:19,671 INFO worker.py:1540 -- ",
]
NOISE = ["\x1b[31m", "\x1b[0m", "[34m", "\u200b", "\u202e", "\ufeff", "\x00", "\r", "\t", "```", "@everyone"]


def _hostile_number(rng: random.Random) -> str:
    n = rng.randrange(0, 10**12)
    return rng.choice(
        [
            str(n),
            f"{n:,}",
            f"{n % 100000},{n % 100:02d}",
            repr(rng.uniform(-1e300, 1e300)),
            str(rng.randrange(10**12, 10**40)),
            f"-{n}",
            rng.choice(["NaN", "inf", "-inf", "1e309", "0", "-0"]),
            "".join(chr(0xFF10 + int(c)) for c in str(n)),
        ]
    )


def _fuzz_paste(rng: random.Random, examples: list[str]) -> str:
    import re

    lines = []
    for _ in range(rng.randrange(1, 4)):
        text = rng.choice(PREFIXES) + re.sub(
            r"[0-9]+(?:[.,][0-9]+)*", lambda _m: _hostile_number(rng), rng.choice(examples)
        )
        if rng.random() < 0.5:
            width = rng.choice([40, 80, 120, rng.randrange(5, 200)])
            text = "\n".join(text[i : i + width] for i in range(0, len(text), width))
        for _ in range(rng.randrange(0, 4)):
            at = rng.randrange(0, len(text) + 1)
            text = text[:at] + rng.choice(NOISE) + text[at:]
        lines.append(text)
    return "\n".join(lines)


# --------------------------------------------------------------------------------------------------
# 4. injection


async def injection() -> Section:
    from tests.adapters.discord.conftest import running_garden
    from tests.adapters.discord.fake_discord import APP_ID, BOT_ID
    from tests.adapters.slack.conftest import _close_socket, _socket
    from tests.adapters.slack.fake_slack import message_event, slash_command
    from tests.hardening.faulty import FaultyDiscord, FaultySlack
    from tests.hardening.test_injection import (
        assert_discord_safe,
        assert_slack_safe,
        hostile_paste,
        slack_escaped,
    )

    sec = Section(
        "Injection",
        "One paste holding `@everyone`, `@here`, role/user/channel mentions, Slack's `<!channel>`, `<!here>`, "
        "`<!subteam^…>`, an open code fence and fences of 3-6 backticks, Markdown, and links with misleading "
        "text (also as the model name, which the reply quotes) - sent through the real clients to the fakes. "
        'Every payload the platform received is checked: Discord `allowed_mentions` is `{"parse": []}` '
        "(no replied_user), no `](` (masked link) outside code, every ``` one of ours; Slack text and blocks "
        "hold no `<` or `>` at all (so no `<!channel>`, `<@U…>`, `<url|text>`), no `link_names`/`parse`.",
        ["platform", "how it came in", "payloads checked", "could ping", "layout broken"],
    )
    fake = await FaultyDiscord().start()
    point_discord(fake)
    with tempfile.TemporaryDirectory() as tmp:
        try:
            async with running_garden(fake, Path(tmp) / "d.sqlite3", limits=OPEN) as garden:
                f = garden.fake
                source = f.message(hostile_paste())
                await f.dispatch("MESSAGE_CREATE", source)
                mention = f.message(f"<@{BOT_ID}> " + hostile_paste(), mentions=[f.mention_of_bot()])
                await f.dispatch("MESSAGE_CREATE", mention)
                await f.dispatch(
                    "INTERACTION_CREATE",
                    f.slash(
                        "vram",
                        {"gpu": "rtx-4090", "model": "@everyone <@&1> [free](https://evil.example) ```"},
                    ),
                )
                await f.wait_for("POST", rf"/webhooks/{APP_ID}/[^/]+", timeout=20)
                await f.wait_for("POST", rf"/channels/{mention['id']}/messages", timeout=20)
                await f.settle(0.5)
                bodies = [
                    c.json
                    for c in f.calls
                    if c.method in ("POST", "PATCH")
                    and isinstance(c.json, dict)
                    and ("embeds" in c.json or "content" in c.json)
                ]
                bad = 0
                for body in bodies:
                    try:
                        assert_discord_safe(body)
                    except AssertionError:
                        bad += 1
                sec.add(
                    "Discord",
                    "passive paste, @mention, /vram model option",
                    len(bodies),
                    bad,
                    bad,
                )
                sec.ok = sec.ok and bad == 0
        finally:
            await fake.stop()
    slack = await FaultySlack().start()
    try:
        with tempfile.TemporaryDirectory() as tmp:
            svc = GardenService(storage=Storage(Path(tmp) / "s.sqlite3"), limits=OPEN)
            h = await _socket(slack, svc)
            markup = "<!channel> <!here> <@U0123ABCD> <!subteam^S0123|@oncall> <https://evil.example/steal|free GPUs>\n"
            await h.event(message_event(markup + slack_escaped(hostile_paste())))
            await h.event(
                {
                    "type": "app_mention",
                    "user": "U1",
                    "channel": "C2",
                    "ts": "9.1",
                    "text": markup + hostile_paste(),
                }
            )
            await h.send(
                "slash_commands",
                slash_command(f"gpu:4090 model:{slack_escaped(hostile_paste()[:200])}", slack.response_url()),
            )
            await h.settled(3, timeout=20)
            bodies = [
                c.body
                for c in slack.calls
                if c.method in ("chat.postMessage", "chat.postEphemeral", "chat.update")
            ]
            bodies += [c.body for c in slack.responses]
            bad = 0
            for body in bodies:
                try:
                    assert_slack_safe(body)
                except AssertionError:
                    bad += 1
            sec.add("Slack", "passive paste, app_mention, /vram text", len(bodies), bad, bad)
            sec.ok = sec.ok and bad == 0
            await _close_socket(h)
            svc.storage.close()
    finally:
        await slack.stop()
    return sec


# --------------------------------------------------------------------------------------------------
# 5. secrets


async def secrets() -> Section:
    from tests.hardening.hostile import leaked, rendered_texts, secret_samples
    from tests.hardening.test_secrets import _hidden_variants, placements

    sec = Section(
        "Secrets",
        "Every kind the redactor knows, planted in pastes (own line, on the error line, in a command line), "
        "disguised (zero-width spaces, fullwidth letters, ANSI inside, soft hyphens), hard-wrapped by a "
        "terminal at every width from 40 to 160 columns with and without log prefixes, and in `/vram` "
        "options. Checked: the reply in all three renderings, every log record at DEBUG, and the bytes of "
        "the SQLite database with its WAL; the reply names the kind and says to rotate it.",
        ["kind", "pastes", "echoed in a reply", "in the logs", "in the database", "named + rotate"],
    )
    with tempfile.TemporaryDirectory() as tmp, captured_logs() as logs:
        db = Path(tmp) / "garden.sqlite3"
        svc = GardenService(storage=Storage(db), limits=OPEN)
        counter = 0
        results = []
        for secret in secret_samples():
            texts = list(placements(secret).values())
            if secret.kind != "private key":
                texts += [
                    f"{tc_kv()} {secret.text.replace(secret.value, v)}"
                    for v in _hidden_variants(secret).values()
                ]
                for prefix in ("", "INFO 04-12 08:21:19 [a.py:1] ", "vllm-1  | "):
                    command = f"vllm serve Qwen/Qwen2.5-7B-Instruct --max-model-len 131072 {secret.text} --port 8000"
                    for width in range(40, 161):
                        wrapped = "\n".join(
                            prefix + command[i : i + width] for i in range(0, len(command), width)
                        )
                        texts.append(wrapped + "\n" + prefix + tc_kv())
            else:
                for prefix in ("", "app-1  | ", "[rank0]: "):
                    texts.append(
                        "\n".join(prefix + line for line in secret.value.split("\n")) + "\n" + tc_kv()
                    )
            echoed = named = 0
            for text in texts:
                counter += 1
                msg = IncomingMessage(platform="test", text=text, message_id=str(counter), mentioned=True)
                out = await svc.handle(msg)
                said = repr(out.reply) + "".join(rendered_texts(out.reply).values()) if out.reply else ""
                echoed += bool(leaked(said, [secret]))
                notes = " ".join([out.reply.summary, *out.reply.notes]) if out.reply else ""
                named += bool(out.secrets) and "rotate" in notes
                if out.reply is not None:
                    await svc.feedback("test", f"c:{counter}", "voter", out.reply.signature, True)
            # a bare value of a kind known only by its context (a bearer token without "Bearer") is
            # indistinguishable from a model name: /vram gets the secret as it would be pasted
            as_typed = (
                secret.value
                if secret.value.startswith(("hf_", "sk-", "gh", "xox", "xapp", "AKIA", "AIza", "http", "M"))
                else secret.text
            )
            for where, cmd in (("model", SlashCommand("vram", args={"gpu": "4090", "model": as_typed})),):
                out = await svc.handle(IncomingMessage(platform="test", command=cmd, user_id=f"v{counter}"))
                said = repr(out.reply) + "".join(rendered_texts(out.reply).values()) if out.reply else ""
                echoed += bool(leaked(said, [secret]))
                texts.append(where)
            results.append((secret, len(texts), echoed, named))
        svc.storage.close()
        stored = b"".join(p.read_bytes() for p in db.parent.glob(db.name + "*") if p.is_file()).decode(
            "latin-1"
        )
        log_text = logs.text()
    total_echo = 0
    for secret, n, echoed, named in results:
        in_logs = len(leaked(log_text, [secret]))
        in_db = len(leaked(stored, [secret]))
        total_echo += echoed + in_logs + in_db
        sec.add(secret.kind, n, echoed, in_logs, in_db, f"{named}/{n - 1}")
    sec.ok = total_echo == 0
    sec.notes.append(
        f"{sum(r[1] for r in results)} pastes in all; secrets seen again anywhere: **{total_echo}**."
    )
    return sec


def tc_kv() -> str:
    from tests.hardening.hostile import KV_PASTE

    return KV_PASTE


# --------------------------------------------------------------------------------------------------
# 6. load


async def load(n: int, users: int, seconds: float) -> Section:
    from tests.adapters.discord.conftest import running_garden
    from tests.adapters.slack.conftest import _close_socket, _socket
    from tests.hardening.burst import discord_burst, slack_burst
    from tests.hardening.faulty import FaultyDiscord, FaultySlack

    sec = Section(
        "Load",
        f"A burst of {n:,} pastes from {users} users in {seconds:.0f} s against the loopback fakes, through the "
        "real discord.py client and the real Bolt app (Socket Mode), each with a real GardenService and "
        "SQLite file. *Policy*: the production limits (6 answers per user and 20 per channel a minute, one "
        "notice per user); *unlimited*: limits lifted, so every paste is answered (raw throughput). Every "
        "message is followed from the frame sent to what the fake received. Latency: frame sent -> answer "
        "received. Memory: peak of Python allocations during the burst (tracemalloc) and the process's peak RSS.",
        [
            "platform",
            "limits",
            "pastes",
            "answered",
            "throttled (notices)",
            "max notices / user",
            "answered twice",
            "lost",
            "answers (per s)",
            "p50 / p99 latency",
            "peak memory",
        ],
    )
    for limits_name, limits in (("policy", POLICY), ("unlimited", OPEN)):
        fake = await FaultyDiscord().start()
        point_discord(fake)
        with tempfile.TemporaryDirectory() as tmp:
            try:
                async with running_garden(fake, Path(tmp) / "d.sqlite3", limits=limits) as garden:
                    tracemalloc.start()
                    result = await discord_burst(
                        garden.fake, garden.service, n=n, users=users, seconds=seconds, timeout=300
                    )
                    _, peak = tracemalloc.get_traced_memory()
                    tracemalloc.stop()
            finally:
                await fake.stop()
        _load_row(sec, "Discord (2 channels)", limits_name, result, peak)
        slack = await FaultySlack().start()
        try:
            with tempfile.TemporaryDirectory() as tmp:
                svc = GardenService(storage=Storage(Path(tmp) / "s.sqlite3"), limits=limits)
                h = await _socket(slack, svc, channels=["CGARDEN", "CHELP"])
                tracemalloc.start()
                result = await slack_burst(
                    slack, h, n=n, users=users, seconds=seconds, channels=("CGARDEN", "CHELP"), timeout=300
                )
                _, peak = tracemalloc.get_traced_memory()
                tracemalloc.stop()
                await _close_socket(h)
                svc.storage.close()
        finally:
            await slack.stop()
        _load_row(sec, "Slack (2 channels)", limits_name, result, peak)
    sec.notes.append(
        f"Process peak RSS after all bursts: {rss_mib():.0f} MiB (fakes, clients and the 50 MiB size cases included)."
    )
    sec.notes.append(
        "Unlimited, the answers take as long as the bot needs: 1,000 pastes offered at 100 a second meet a "
        "single worker pool on 2 cores, so the p99 latency is the queue. With the policy limits the answers "
        "stop at the limits and the rest is decided in microseconds."
    )
    sec.notes.append(
        "With the policy limits most of the burst is throttled by design: the channel limits (2 x 20 a "
        "minute) bind first; a throttled user who addressed the bot gets one notice per minute, whichever "
        "limit refused them (Slack: ephemeral; passive messages are throttled silently)."
    )
    return sec


def _load_row(sec: Section, platform_name: str, limits_name: str, r, peak: int) -> None:
    answers_per_s = r.answered / r.seconds if r.seconds else 0.0
    sec.add(
        platform_name,
        limits_name,
        r.sent,
        r.answered,
        f"{r.outcomes['throttled']} ({sum(r.notices.values())})",
        r.max_notices_per_user,
        r.duplicated,
        r.lost,
        f"{r.answered} in {r.seconds:.1f} s ({answers_per_s:.0f}/s)",
        f"{r.percentile(50):.0f} / {r.percentile(99):.0f} ms",
        mib(peak),
    )
    sec.ok = sec.ok and r.duplicated == 0 and r.lost == 0 and r.max_notices_per_user <= 1


# --------------------------------------------------------------------------------------------------
# 7. platform faults


async def platform_faults() -> Section:
    import tests.hardening.test_platform_faults as pf

    sec = Section(
        "Platform faults",
        "Faults injected on the fakes while the real clients answer: discord.py and slack_sdk retry REST "
        "calls (429 after its Retry-After / retry_after, 5xx with backoff), the gateway and Socket Mode "
        "reconnect and resume, redelivered events are recognised, attachment downloads are retried after a "
        "broken connection. Each scenario is the hardening test of the same name, timed.",
        ["scenario", "outcome", "replies lost", "replies duplicated", "time"],
    )
    from tests.hardening.faulty import FaultyDiscord, FaultySlack

    discord_cases = [
        (
            "Discord 429 (retry_after 0.3 s) on the reply",
            pf.test_discord_429_is_waited_out_and_the_reply_sent_once,
        ),
        ("Discord 502 on the reply", pf.test_discord_502_is_retried_with_backoff_and_sent_once),
        (
            "Discord 503 on the thread (not retried by discord.py)",
            pf.test_discord_503_on_the_thread_falls_back_to_one_reply,
        ),
        (
            "Discord gateway dropped mid-reply, events replayed",
            pf.test_discord_gateway_dropped_mid_reply_resumes_and_replayed_event_is_not_answered_twice,
        ),
        (
            "Discord slow attachment (10 chunks, 0.15 s apart)",
            pf.test_discord_slow_attachment_does_not_hold_up_other_messages,
        ),
        (
            "Discord attachment cut off after 100 kB",
            pf.test_discord_attachment_cut_off_midway_is_downloaded_again,
        ),
        ("Discord 12 messages, 429 / 502 / 500 mixed", pf.test_concurrent_faults_lose_nothing),
    ]
    slack_cases = [
        (
            "Slack 429 (Retry-After 1 s) then 503 on chat.postMessage",
            pf.test_slack_429_then_5xx_are_retried_and_the_reply_posted_once,
        ),
        (
            "Slack Socket Mode dropped mid-reply, event redelivered",
            pf.test_slack_socket_dropped_mid_reply_reconnects_and_retry_is_answered_once,
        ),
        ("Slack slow file and file cut off midway", pf.test_slack_slow_and_broken_file_downloads),
    ]
    for name, test in discord_cases:
        fake = await FaultyDiscord().start()
        point_discord(fake)
        start = time.perf_counter()
        try:
            with tempfile.TemporaryDirectory() as tmp, captured_logs(logging.WARNING):
                extra = [_NullCaplog()] if "caplog" in inspect.signature(test).parameters else []
                await test(fake, Path(tmp), *extra)
            outcome, lost, dup = "every message answered exactly once", 0, 0
        except AssertionError as exc:
            outcome, lost, dup = f"FAILED: {str(exc)[:80]}", "?", "?"
            sec.ok = False
        finally:
            await fake.stop()
        sec.add(name, outcome, lost, dup, f"{time.perf_counter() - start:.1f} s")
    for name, test in slack_cases:
        slack = await FaultySlack().start()
        start = time.perf_counter()
        try:
            with tempfile.TemporaryDirectory() as tmp, captured_logs(logging.WARNING):
                factory = _SlackFactory(slack, Path(tmp))
                await test(factory, slack)
                await factory.close()
            outcome, lost, dup = "every message answered exactly once", 0, 0
        except AssertionError as exc:
            outcome, lost, dup = f"FAILED: {str(exc)[:80]}", "?", "?"
            sec.ok = False
        finally:
            await slack.stop()
        sec.add(name, outcome, lost, dup, f"{time.perf_counter() - start:.1f} s")
    return sec


async def answer_faults() -> Section:
    import tests.adapters.test_running_bot as rb
    import tests.hardening.test_answer_faults as af

    sec = Section(
        "Answers under edits, deletes and stops",
        "The fakes answer posts after a delay (REST latency) so that an edit, a delete or a stop arrives "
        f"while an answer is being posted ({af.LATENCY:.1f} s unless the scenario says otherwise). An edit "
        "waits for the answer in flight and then updates it; a deleted original takes its answer along; a "
        "stop lets the answers in flight be posted (at most 10 s) and a message is marked answered only "
        "once its answer is posted, so one cut off is answered when it comes again. The last two rows run "
        "the real `gpu-garden discord` process. Each scenario is the test of the same name, timed.",
        ["scenario", "outcome", "replies lost", "replies duplicated", "time"],
    )
    from tests.adapters.discord.fake_discord import FakeDiscord
    from tests.hardening.faulty import FaultyDiscord, FaultySlack

    discord_cases = [
        (
            "Discord edit while the answer is posted",
            af.test_discord_quick_edit_while_posting_updates_the_one_answer,
        ),
        (
            "Discord edit that removes the error",
            af.test_discord_edit_that_removes_the_error_removes_the_answer,
        ),
        (
            "Discord original deleted, also mid-post",
            af.test_discord_deleted_original_deletes_the_answer_even_mid_post,
        ),
        ("Discord stop mid-post (1 s post)", af.test_discord_stop_mid_post_drains_the_answer),
        (
            "Discord stop beyond the drain bound (3 s post), restart",
            af.test_discord_stop_beyond_the_drain_bound_leaves_the_message_to_the_next_start,
        ),
    ]
    slack_cases = [
        (
            "Slack edit while the answer is posted",
            af.test_slack_quick_edit_while_posting_updates_the_one_answer,
        ),
        ("Slack original deleted (plain and tombstone)", af.test_slack_deleted_original_deletes_the_answer),
        ("Slack original deleted mid-post", af.test_slack_delete_while_posting_deletes_the_late_answer),
        ("Slack stop mid-post (1 s post)", af.test_slack_stop_mid_post_drains_the_answer),
        (
            "Slack post cut by the drain bound, event redelivered",
            af.test_slack_post_cut_by_the_drain_bound_is_answered_when_redelivered,
        ),
    ]
    process_cases = [
        (
            "SIGTERM to `gpu-garden discord` mid-post (1.5 s post)",
            rb.test_sigterm_mid_post_lets_the_answer_out_and_exits_0,
            "answered exactly once, then exit 0",
        ),
        (
            "/metrics of `gpu-garden discord` after answered pastes",
            rb.test_metrics_count_messages_findings_replies_and_platform_errors,
            "messages, findings, replies, latency and send errors counted exactly",
        ),
    ]

    async def one(name: str, run, passed: str = "every message answered exactly once") -> None:
        start = time.perf_counter()
        try:
            with tempfile.TemporaryDirectory() as tmp, captured_logs(logging.WARNING):
                await run(Path(tmp))
            outcome, lost, dup = passed, 0, 0
        except AssertionError as exc:
            outcome, lost, dup = f"FAILED: {str(exc)[:80]}", "?", "?"
            sec.ok = False
        sec.add(name, outcome, lost, dup, f"{time.perf_counter() - start:.1f} s")

    for name, test in discord_cases:
        fake = await FaultyDiscord().start()
        point_discord(fake)
        try:
            await one(name, lambda tmp, t=test, f=fake: t(f, tmp))
        finally:
            await fake.stop()
    for name, test in slack_cases:
        slack = await FaultySlack().start()

        async def run_slack(tmp: Path, t=test, sl=slack) -> None:
            factory = _SlackFactory(sl, tmp)
            try:
                extra = [tmp] if "tmp_path" in inspect.signature(t).parameters else []
                await t(factory, sl, *extra)
            finally:
                await factory.close()

        try:
            await one(name, run_slack)
        finally:
            await slack.stop()
    for name, test, passed in process_cases:
        fake = await FakeDiscord().start()
        try:
            await one(name, lambda tmp, t=test, f=fake: t(f, tmp), passed)
        finally:
            await fake.stop()
    return sec


class _SlackFactory:
    """The ``slack_factory`` fixture of tests/hardening/conftest.py, outside pytest."""

    def __init__(self, slack, folder: Path):
        self.slack = slack
        self.folder = folder
        self.made: list = []

    async def __call__(self, limits=None, service=None, **slack_settings):
        from tests.adapters.slack.conftest import _socket

        svc = service or GardenService(
            storage=Storage(self.folder / f"s{len(self.made)}.sqlite3"), limits=limits or OPEN
        )
        h = await _socket(self.slack, svc, **slack_settings)
        self.made.append(h)
        return h

    async def close(self) -> None:
        from tests.adapters.slack.conftest import _close_socket

        for h in self.made:
            await _close_socket(h)
            h.bridge.service.storage.close()


class _NullCaplog:
    def set_level(self, *args: Any, **kwargs: Any) -> None:
        return None


# --------------------------------------------------------------------------------------------------
# 8. storage faults


async def storage_faults() -> Section:
    from tests.hardening.test_storage_faults import _disk_stays_full, fill, tiny_tmpfs

    sec = Section(
        "Database faults",
        "The SQLite file locked by another process, the disk full, the file missing or deleted while the "
        "bot runs. Each message is answered, voted on, and its reply recorded: the answers never stop, "
        "and each lost write is logged (`database unavailable, <what> lost: ...`).",
        ["fault", "how", "messages", "answered", "writes lost (logged)", "time per message"],
    )

    async def run(svc: GardenService, n: int, start: int = 0) -> tuple[int, float]:
        answered = 0
        t0 = time.perf_counter()
        for i in range(start, start + n):
            msg = IncomingMessage(
                platform="test", text=tc_kv(), message_id=f"m{i}", user_id=f"u{i % 5}", mentioned=True
            )
            out = await svc.handle(msg)
            if out.reply is not None:
                answered += 1
                await svc.remember_reply(msg, f"r{i}", out.reply)
                await svc.feedback("test", f"c:{i}", "voter", out.reply.signature, True)
        return answered, (time.perf_counter() - t0) / n

    with tempfile.TemporaryDirectory() as tmp, captured_logs(logging.WARNING) as logs:
        db = Path(tmp) / "locked.sqlite3"
        storage = Storage(db)
        storage.healthy()
        holder = sqlite3.connect(db, isolation_level=None)
        holder.execute("BEGIN EXCLUSIVE")
        try:
            answered, per = await run(GardenService(storage=storage, limits=OPEN), 2)
        finally:
            holder.execute("ROLLBACK")
            holder.close()
        sec.add(
            "locked",
            "another connection holds BEGIN EXCLUSIVE",
            2,
            answered,
            f"{storage.failures} ({len(logs.matching('lost'))})",
            f"{per:.1f} s (2 s busy timeout per write)",
        )
        storage.close()

        logs.records.clear()
        mounted = False
        try:
            with tiny_tmpfs() as folder:
                mounted = True
                storage = Storage(folder / "garden.sqlite3")
                storage.healthy()
                fill(folder)
                answered, per = await run(GardenService(storage=storage, limits=OPEN), 200)
                storage.close()
                sec.add(
                    "disk full",
                    "a 256 KiB tmpfs, filled up (ENOSPC)",
                    200,
                    answered,
                    f"{storage.failures} ({len(logs.matching('lost'))})",
                    f"{per * 1000:.1f} ms",
                )
        except BaseException as exc:  # pytest.skip outside pytest: no tmpfs here
            if mounted or exc.__class__.__name__ != "Skipped":
                raise
        logs.records.clear()
        storage = Storage(Path(tmp) / "full.sqlite3")

        class _Patch:
            def setattr(self, target, name, value):
                setattr(target, name, value)

        original = Storage._connect
        _disk_stays_full(storage, _Patch())
        try:
            answered, per = await run(GardenService(storage=storage, limits=OPEN), 200)
        finally:
            Storage._connect = original  # type: ignore[method-assign]
        sec.add(
            "disk full",
            "PRAGMA max_page_count pinned on every connection",
            200,
            answered,
            f"{storage.failures} ({len(logs.matching('lost'))})",
            f"{per * 1000:.1f} ms",
        )
        storage.close()
        if not mounted:
            sec.notes.append(
                "No tmpfs could be mounted here (needs root): the full disk was simulated with max_page_count only."
            )

        logs.records.clear()
        (Path(tmp) / "a-file").write_text("x")
        storage = Storage(Path(tmp) / "a-file" / "garden.sqlite3")
        answered, per = await run(GardenService(storage=storage, limits=OPEN), 20)
        sec.add(
            "missing",
            "its folder cannot be created (a file is in the way)",
            20,
            answered,
            f"{storage.failures} ({len(logs.matching('lost'))})",
            f"{per * 1000:.1f} ms",
        )

        logs.records.clear()
        import shutil

        folder = Path(tmp) / "data"
        storage = Storage(folder / "garden.sqlite3")
        svc = GardenService(storage=storage, limits=OPEN)
        await run(svc, 10)
        shutil.rmtree(folder)
        answered, per = await run(svc, 10, start=10)
        kept = 0
        with contextlib.closing(sqlite3.connect(folder / "garden.sqlite3")) as conn:
            kept = conn.execute("SELECT COUNT(*) FROM feedback").fetchone()[0]
        sec.add(
            "deleted while running",
            "folder removed after 10 messages",
            10,
            answered,
            f"1 ({len(logs.matching('disappeared'))} 'disappeared')",
            f"{per * 1000:.1f} ms",
        )
        sec.notes.append(
            f"After the deletion a new database was started and kept {kept} of the next 10 votes."
        )
        storage.close()
    return sec


# --------------------------------------------------------------------------------------------------
# 9. knowledge reload


def reload_cases() -> Section:
    from tests.hardening.test_reload import BROKEN, GOOD

    sec = Section(
        "Knowledge pack reload",
        "GardenService.reload_knowledge (what SIGHUP calls) with a real folder: a good pack, then a broken "
        "file beside it. The reload must not raise, and the previous packs (built-in + the good one) stay "
        "in force and keep answering.",
        ["broken file", "reload raised", "previous packs kept", "still answers", "time"],
    )
    svc = GardenService(limits=OPEN)
    with tempfile.TemporaryDirectory() as tmp, captured_logs(logging.ERROR):
        folder = Path(tmp)
        (folder / "ours.yaml").write_text(GOOD)
        assert svc.reload_knowledge(folder)[0]
        for i, (how, text) in enumerate(BROKEN.items()):
            before = svc.bot.detector
            (folder / "zz.yaml").write_text(text)
            raised = False
            start = time.perf_counter()
            try:
                ok, _msg = svc.reload_knowledge(folder)
            except Exception:
                raised, ok = True, True
            seconds = time.perf_counter() - start
            kept = svc.bot.detector is before and not ok
            reply = svc.bot.triage(Paste(tc_kv(), False, []))
            answers = reply is not None and reply.category == "kv_cache_too_small"
            sec.add(
                how,
                "yes" if raised else "no",
                "yes" if kept else "NO",
                "yes" if answers else "NO",
                f"{seconds:.2f} s",
            )
            sec.ok = sec.ok and kept and answers and not raised
            (folder / "zz.yaml").unlink()
            _ = i
    return sec


# --------------------------------------------------------------------------------------------------


FIXES = """## Fixes made while hardening

Each fix has a test in tests/hardening/ that failed before it.

| file | what was wrong | fix | test |
|---|---|---|---|
| bot/normalize.py | a lone surrogate (half an emoji in a platform's JSON, bytes read with surrogateescape) crashed every RE2 search (UnicodeEncodeError): no answer | surrogates become U+FFFD in `clean_text`; `visible()` is the one cleaning step shared with the redactor | test_content.py::test_random_bytes_as_text_never_crash |
| bot/redact.py | a secret split by zero-width characters, soft hyphens, fullwidth letters or colour codes was not found, then reassembled by normalisation | redaction reads the same cleaned text as the detector | test_secrets.py::test_secret_disguised_by_invisible_or_lookalike_characters_is_still_found |
| bot/redact.py | a secret hard-wrapped by a terminal was not found (neither half matches), and the detector re-joins wrapped lines and echoed it in a fix command | every long line is also read joined to the next two (log prefixes removed, with and without a space); a private key whose lines carry log prefixes is found too; an RE2 Set picks the patterns to run | test_fuzz.py::test_a_secret_wrapped_across_lines_is_never_echoed |
| bot/redact.py | `--api-key KEY` / `--token TOKEN` on an engine's command line was not a secret | pattern for the engines' own flags | test_fuzz.py (wrapped command lines) |
| bot/service.py | a slash command's options were never redacted: `/vram model:hf_…` answered "unknown model 'hf_…'" | options and free text of every command are redacted first, and the reply warns | test_secrets.py::test_secret_in_a_slash_command_is_not_echoed |
| bot/service.py | a user refused by the channel limit and then by their own limit got two notices | one notice per user per minute, whichever limit refused them | test_load.py::test_one_notice_per_user_even_when_both_limits_refuse_them |
| bot/service.py | a knowledge pack that made the loader raise something else than KnowledgeError (YAML nested 5,000 deep: RecursionError) escaped reload_knowledge | any failure keeps the previous packs and is logged | test_reload.py (YAML nested 5000 deep) |
| bot/detector.py | `-c 999999999999999K` on a command line became `OLLAMA_CONTEXT_LENGTH=288230376151711744`; a KV cache of 17 billion tokens, 900,000 GiB of RAM (`fallocate -l 899971G`) and `--mem-fraction-static 7` (6.94 suggested) were believed | context numbers are capped like logged ones; MAX_TOKENS 2^34 -> 2^27, MAX_GIB 2^20 -> 2^16; fractions must be in (0, 1] | test_content.py::test_context_length_with_a_huge_suffix_is_not_believed, ::test_a_kv_cache_of_seventeen_billion_tokens_is_not_believed, ::test_a_petabyte_of_memory_is_not_believed, ::test_absurd_flags_on_the_command_line_give_sane_commands |
| bot/core.py | a diagnosis rule raising on odd numbers (TGI pool with an invalid max_batch_total_tokens: TypeError) meant no answer at all | `diagnose_safely`: the signature's general explanation, with a note, and a warning in the log | test_content.py::test_a_diagnosis_rule_that_raises_still_gets_an_answer (found by test_fuzz.py) |
| bot/core.py | `collect_paste` did not count the newlines joining attachments, and when decoding grew the text (each broken byte becomes 3 bytes) its last cut kept the head: the end of the log, where the error is, was dropped | newlines budgeted; the attached part is cut from its front | test_size.py::test_collect_paste_keeps_the_tail_of_an_attachment_within_the_cap, ::test_broken_bytes_that_grow_when_decoded_do_not_push_out_the_error |
| bot/storage.py | a database file deleted while the bot runs: SQLite writes on into the deleted inode, everything after is lost without a word | the storage notices the file is gone, logs it, and starts a new one | test_storage_faults.py::test_database_deleted_while_running_is_noticed_and_recreated |
| adapters/discord/render.py | a pasted `[free GPUs](https://evil.example)` quoted in a note (the model name) rendered as a masked link in the embed | `](` is broken with a zero-width space outside code blocks | test_injection.py::test_discord_render_of_a_hostile_paste_is_inert |
| adapters/discord/events.py | an attachment download cut off midway was not retried: the paste was lost | two retries with backoff (0.5 s, 1 s) on a broken connection, 5xx or 429, within the per-file timeout | test_platform_faults.py::test_discord_attachment_cut_off_midway_is_downloaded_again |
| bot/service.py, bot/storage.py | an edit arriving while the first answer was being posted got a second answer (Discord 2/2, Slack 2/2 at 0.3 s REST latency); a message was marked taken before its answer was posted, so one lost to a stop was never answered after the restart and its Slack redelivery was refused | one event of a message at a time (`GardenService.turn`); a claim is settled only when the answer is posted, released when posting fails, and taken over from an earlier process | test_answer_faults.py::test_discord_quick_edit_while_posting_updates_the_one_answer, ::test_slack_quick_edit_while_posting_updates_the_one_answer, ::test_slack_post_cut_by_the_drain_bound_is_answered_when_redelivered |
| adapters/discord/bot.py, adapters/slack/app.py | on SIGTERM Discord closed in ~0.5 s and lost the answer in flight (Slack waited 5 s); the answer stayed after the original was deleted (both) or its error edited away (Discord) | the answers in flight are drained for up to 10 s before the connection closes; a deleted original (Slack: `message_deleted` or a tombstone) deletes its answer, an edit that removes the error removes the Discord answer | test_answer_faults.py::test_discord_stop_mid_post_drains_the_answer, ::test_discord_deleted_original_deletes_the_answer_even_mid_post, test_running_bot.py::test_sigterm_mid_post_lets_the_answer_out_and_exits_0 |
| bot/service.py | nothing in production called the metrics observers: `/metrics` never moved | the service counts every outcome, the adapters every failed send, delete, download and disconnect | test_running_bot.py::test_metrics_count_messages_findings_replies_and_platform_errors |
| adapters/slack/files.py | the same for Slack files; and a file over the cap kept its head, so the error at the end of a long log was never read (while the reply said it read the end) | retries as above; a `Range` request for the tail, else the stream with only its last `cap` bytes kept (bounded to 8 caps read) | test_platform_faults.py::test_slack_slow_and_broken_file_downloads, test_size.py::test_slack_50_mib_file_is_read_from_its_tail |
"""


def _anchor(title: str) -> str:
    """The heading's anchor as Markdown renderers make it: lower case, punctuation dropped."""
    kept = "".join(c for c in title.lower() if c.isalnum() or c in " -")
    return kept.replace(" ", "-")


async def main_async(args) -> str:
    quick = args.quick
    sections: list[Section] = []
    started = time.perf_counter()

    def step(name: str) -> None:
        print(f"[{time.perf_counter() - started:6.1f} s] {name}", file=sys.stderr, flush=True)

    step("regex denial of service")
    sections.append(redos((1 if quick else 10) * MIB))
    step("size")
    sections.append(await size_cases((8 if quick else 50) * MIB))
    step("content")
    sections.append(content(300 if quick else 3000))
    step("injection")
    sections.append(await injection())
    step("secrets")
    sections.append(await secrets())
    step("load")
    sections.append(await load(200 if quick else 1000, 50, 2.0 if quick else 10.0))
    step("platform faults")
    sections.append(await platform_faults())
    step("answers under edits, deletes and stops")
    sections.append(await answer_faults())
    step("database faults")
    sections.append(await storage_faults())
    step("knowledge reload")
    sections.append(reload_cases())
    step("done")
    elapsed = time.perf_counter() - started
    summary = ["| case | verdict |", "|---|---|"] + [
        f"| [{s.title}](#{_anchor(s.title)}) | {'pass' if s.ok else '**FAIL**'} |" for s in sections
    ]
    head = [
        "# Reliability",
        "",
        "What GPU Garden does with hostile input, size, load and faults, measured. Produced by "
        "`scripts/reliability.py` ("
        + ("**quick run**, reduced sizes" if quick else "full run")
        + "); rerun it with",
        "",
        "    .venv/bin/python scripts/reliability.py",
        "",
        "which rewrites this file. The same cases, smaller and without timings, are the test suite "
        "`tests/hardening/` (`.venv/bin/pytest tests/hardening`, under a minute on 2 cores).",
        "",
        f"Machine: {machine()}. Whole run: {elapsed:.0f} s.",
        "",
        *summary,
        "",
    ]
    body = "\n".join(s.markdown() for s in sections)
    return "\n".join(head) + "\n" + body + "\n" + FIXES


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="smaller sizes (a smoke run)")
    parser.add_argument(
        "--out", default=str(ROOT / "docs" / "reliability.md"), help="where to write ('-': nowhere)"
    )
    args = parser.parse_args()
    logging.basicConfig(level=logging.CRITICAL, stream=io.StringIO())
    report = asyncio.run(main_async(args))
    if args.out != "-":
        Path(args.out).write_text(report, encoding="utf-8")
    print(report)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
