"""The platform-neutral bot: one IncomingMessage in, one Reply (or silence) out.

Adapters call :meth:`GardenBot.handle`; they never see the detector or the calculator (imported, with
the diagnosis and ``/vram``, only when a finding or a command needs them)."""

from __future__ import annotations

from array import array
from dataclasses import dataclass
from typing import TYPE_CHECKING

from bot.detector import Detection, Detector, default_detector
from bot.redact import with_notice
from bot.reply import Reply
from bot.textdecode import decode_text, needs_sniffing

if TYPE_CHECKING:  # messages come from the platforms (the terminal's triage never builds one)
    from bot.message import IncomingMessage
    from bot.vram import ModelLookup


DEFAULT_PASTE_LIMIT = 20 * 1024 * 1024  # bytes of text the detector reads from one message
TEXT_EXTENSIONS = (".txt", ".log", ".md", ".out", ".err", ".json", ".yaml", ".yml", ".py", ".sh", "")


@dataclass
class Paste:
    """The text read from a message and its attachments, and what was cut or skipped."""

    text: str
    truncated: bool
    skipped: list[str]
    prefix_cuts: array | None = None  # redaction's measure of each line's prefixes (Redaction.prefix_cuts)


def collect_paste(message: IncomingMessage, limit: int = DEFAULT_PASTE_LIMIT) -> Paste:
    """The message text plus its text attachments, capped at ``limit`` bytes; binary files skipped.
    Errors sit at the end of logs, so an attachment over the budget keeps its tail, and so does the
    attached part as a whole when decoding grew it (each broken byte becomes a 3-byte U+FFFD)."""
    skipped: list[str] = []
    truncated = False
    head = message.text
    if len(head.encode("utf-8", "ignore")) > limit:  # keep the end here too: that is where errors are
        head = head.encode("utf-8", "ignore")[-limit:].decode("utf-8", "ignore")
        truncated = True
    budget = limit - len(head.encode("utf-8", "ignore"))
    parts: list[str] = []
    for att in message.attachments:
        name = att.filename.lower()
        ext = "." + name.rsplit(".", 1)[1] if "." in name else ""
        is_text = (att.content_type or "").startswith("text/") or ext in TEXT_EXTENSIONS
        data = att.content
        if is_text and needs_sniffing(data):  # UTF-16 (PowerShell logs) or binary
            text = decode_text(data)
            data = text.encode("utf-8") if text is not None else b""
            is_text = text is not None
        if not is_text:
            skipped.append(att.filename)
            continue
        budget -= 1  # the newline that joins it on
        if len(data) > budget:
            # errors sit at the end of logs: keep the tail
            data = data[len(data) - max(0, budget) :] if budget > 0 else b""
            truncated = True
        budget -= len(data)
        parts.append(data.decode("utf-8", errors="replace"))
        truncated = truncated or att.truncated
    rest = "\n".join(p for p in parts if p)
    room = limit - len(head.encode("utf-8", "ignore")) - (1 if head and rest else 0)
    encoded = rest.encode("utf-8", "ignore")
    if len(encoded) > room:
        rest = encoded[len(encoded) - max(0, room) :].decode("utf-8", "ignore") if room > 0 else ""
        truncated = True
    text = "\n".join(p for p in (head, rest) if p)
    return Paste(text, truncated, skipped)


class GardenBot:
    def __init__(
        self,
        detector: Detector | None = None,
        paste_limit: int = DEFAULT_PASTE_LIMIT,
        model_lookup: ModelLookup | None = None,  # None: the catalog
    ):
        self.detector = detector or default_detector()
        self.paste_limit = paste_limit
        self.model_lookup = model_lookup

    def handle(self, message: IncomingMessage) -> Reply | None:
        if message.is_bot:
            return None
        if message.command is not None:
            name = message.command.name.lower()
            if name == "vram":
                from bot.vram import answer, catalog_lookup

                return answer(message.command.args, message.command.raw, self.model_lookup or catalog_lookup)
            if name == "help":
                return help_reply()
            if name != "triage":
                return Reply(kind="error", title=f"Unknown command /{name}", summary="Try /vram or /triage.")
        paste = collect_paste(message, self.paste_limit)
        if not paste.text.strip():
            if message.addressed:
                return Reply(
                    kind="error",
                    title="Nothing to read",
                    summary="Paste the error output (or attach the log file).",
                )
            return None
        return self.triage(paste, addressed=message.addressed)

    def triage(self, paste: Paste, addressed: bool = True) -> Reply | None:
        detection = self.detector.detect(paste.text, paste.prefix_cuts)
        if not addressed and (detection.root is None or detection.root.severity == "info"):
            return None  # unasked, a log that only reports memory (no failure) gets no reply
        reply = diagnose_safely(detection)
        if reply is None:
            reply = no_finding_reply(sorted({s.engine for s in self.detector.kb.signatures}))
        with_notice(reply, detection.secrets)
        if paste.truncated:
            reply.notes.append(
                f"The paste was larger than I read ({self.paste_limit // (1024 * 1024)} MiB); I read part of it "
                "(the end of long attached logs, where errors are). Paste the lines around the error if I missed it."
            )
        if paste.skipped:
            reply.notes.append("Skipped attachments that are not text: " + ", ".join(paste.skipped[:5]))
        return reply


def diagnose_safely(detection: Detection) -> Reply | None:
    """The diagnosis; if its rule fails on what the paste holds (numbers no engine prints, a missing
    value), the signature's own explanation instead of no answer at all."""
    if detection.root is None:
        return None
    from bot.diagnosis import diagnose, fallback_reply

    try:
        return diagnose(detection)
    except Exception as exc:
        import logging  # only for a failed diagnosis: a start need not import it

        log = logging.getLogger("gpu_garden.core")
        root = detection.root
        log.warning(
            "diagnosis of %s failed (%s); answering with the signature's text",
            root.signature,
            exc.__class__.__name__,
        )
        log.debug("diagnosis failure", exc_info=True)
        reply = fallback_reply(root)
        reply.signature, reply.category = root.signature, root.category
        reply.notes.append(
            "Some numbers in this paste did not add up, so this is the general explanation of this error "
            "without computed fixes. Paste the full error lines if they were cut."
        )
        return reply


def no_finding_reply(engines: list[str]) -> Reply:
    return Reply(
        kind="no_finding",
        title="No known memory or context issue found",
        summary=(
            "I looked for the memory and context errors of "
            + ", ".join(e for e in engines if e != "any")  # "any": the engine-neutral signatures
            + " and found none in this paste. If it failed for another reason (drivers, imports, network), "
            "I have no fix for it; if it is a memory problem, paste the lines around the error."
        ),
    )


def help_reply() -> Reply:
    from bot.vram import USAGE

    intro = (
        "Paste a vLLM, llama.cpp, Ollama or SGLang error (or attach the log) and I explain the memory math"
    )
    return Reply(kind="help", title="GPU Garden", summary=f"{intro} and the fixes. Ask {USAGE}")
