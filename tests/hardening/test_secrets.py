"""Secrets inside a paste are never echoed: not in the reply (any platform's rendering), not in the logs,
not in the SQLite file; the reply names the kind and says to rotate it."""

from __future__ import annotations

import io
import logging
import sys
from pathlib import Path

import pytest

from bot.message import Attachment, IncomingMessage, SlashCommand
from bot.redact import redact
from bot.service import GardenService
from bot.settings import Limits
from bot.storage import Storage
from tests.hardening.hostile import (
    ERRORS,
    KV_PASTE,
    Secret,
    leaked,
    rendered_texts,
    secret_samples,
)

SECRETS = secret_samples()
OPEN = Limits(user_per_minute=10_000, channel_per_minute=10_000)


def db_bytes(db: Path) -> bytes:
    """The database and its WAL / shared-memory files, as stored on disk."""
    return b"".join(p.read_bytes() for p in db.parent.glob(db.name + "*") if p.is_file())


def everything_said(outcome) -> str:
    parts = [repr(outcome.reply), outcome.notice or ""]
    if outcome.reply is not None:
        parts += rendered_texts(outcome.reply).values()
    return "\n".join(parts)


def placements(secret: Secret) -> dict[str, str]:
    return {
        "own line": f"{secret.text}\n{KV_PASTE}",
        "on the error line": f"{KV_PASTE} {secret.text}",
        "in a command line": f"vllm serve Qwen/Qwen2.5-7B-Instruct --api-key {secret.text}\n{KV_PASTE}",
    }


@pytest.mark.parametrize("secret", SECRETS, ids=[s.kind for s in SECRETS])
async def test_secret_is_never_echoed_logged_or_stored(secret, tmp_path, caplog):
    caplog.set_level(logging.DEBUG)
    db = tmp_path / "garden.sqlite3"
    svc = GardenService(storage=Storage(db), limits=OPEN)
    for i, (where, text) in enumerate(placements(secret).items()):
        msg = IncomingMessage(platform="test", text=text, message_id=str(i), mentioned=True)
        out = await svc.handle(msg)
        assert out.kind == "reply", where
        said = everything_said(out)
        assert not leaked(said, [secret]), where
        assert secret.kind in out.secrets, where
        warning = out.reply.notes[0] if out.reply.notes else out.reply.summary
        assert secret.kind in warning and "rotate" in warning, where
        await svc.feedback("test", f"c:{i}", "u", out.reply.signature, True)
    svc.storage.close()
    assert not leaked(caplog.text, [secret])
    assert not leaked(db_bytes(db).decode("latin-1"), [secret])


async def test_every_kind_at_once_in_an_attachment_is_named():
    svc = GardenService(limits=OPEN)
    blob = "\n".join(s.text for s in SECRETS) + "\n" + "\n".join(ERRORS)
    msg = IncomingMessage(
        platform="test",
        text="see the log",
        attachments=(Attachment("server.log", blob.encode()),),
        mentioned=True,
    )
    out = await svc.handle(msg)
    assert not leaked(everything_said(out), SECRETS)
    assert set(out.secrets) == {s.kind for s in SECRETS}


def _hidden_variants(secret: Secret) -> dict[str, str]:
    """The same secret, disguised by characters the normaliser later removes or folds."""
    value = secret.value
    zw = "\u200b".join(value[i : i + 8] for i in range(0, len(value), 8))
    fullwidth = "".join(chr(ord(c) + 0xFEE0) if "!" <= c <= "~" else c for c in value)
    ansi = value[:10] + "\x1b[0m" + value[10:]
    soft = "\u00ad".join(value[i : i + 6] for i in range(0, len(value), 6))
    return {
        "zero-width spaces": zw,
        "fullwidth letters": fullwidth,
        "ANSI reset inside": ansi,
        "soft hyphens": soft,
    }


HIDEABLE = [s for s in SECRETS if s.kind in ("Hugging Face token", "GitHub token", "OpenAI-style API key")]


@pytest.mark.parametrize("secret", HIDEABLE, ids=[s.kind for s in HIDEABLE])
async def test_secret_disguised_by_invisible_or_lookalike_characters_is_still_found(secret):
    """The detector reads the paste after removing zero-width characters, folding fullwidth letters and
    stripping colour codes; the redactor must see the same text, or it misses what the reply then shows."""
    for how, disguised in _hidden_variants(secret).items():
        text = secret.text.replace(secret.value, disguised)
        cleaned = redact(text)
        assert secret.kind in cleaned.kinds, how
        assert not leaked(cleaned.text, [secret]), how
        out = await GardenService(limits=OPEN).handle(
            IncomingMessage(platform="test", text=f"{KV_PASTE} {text}", mentioned=True)
        )
        assert not leaked(everything_said(out), [secret]), how


@pytest.mark.parametrize(
    "command",
    [
        lambda s: SlashCommand("vram", raw=f"gpu:4090 model:{s}"),
        lambda s: SlashCommand("vram", args={"gpu": "4090", "model": s}),
        lambda s: SlashCommand("vram", args={"gpu": s, "model": "qwen-7b"}),
        lambda s: SlashCommand("triage", raw=f"{KV_PASTE} {s}"),
    ],
    ids=["vram raw", "vram model option", "vram gpu option", "triage"],
)
async def test_secret_in_a_slash_command_is_not_echoed(command, caplog):
    """/vram echoes an unknown model or GPU name back ("unknown model '...'"): a token pasted there
    must be removed first, like in a paste."""
    caplog.set_level(logging.DEBUG)
    secret = SECRETS[0]
    svc = GardenService(limits=OPEN)
    out = await svc.handle(IncomingMessage(platform="test", command=command(secret.value)))
    assert out.reply is not None
    assert not leaked(everything_said(out), [secret])
    assert secret.kind in out.secrets
    assert any("rotate" in n for n in [out.reply.summary, *out.reply.notes])
    assert not leaked(caplog.text, [secret])


def test_production_log_lines_are_redacted(monkeypatch):
    """bot.logs.configure installs a filter: even a message that carries a secret is written redacted."""
    from bot import logs

    stream = io.StringIO()
    monkeypatch.setattr(sys, "stderr", stream)
    root = logging.getLogger()
    saved = (root.handlers[:], root.level)
    try:
        logs.configure("DEBUG", "json")
        for secret in SECRETS:
            logging.getLogger("gpu_garden.test").warning("user said %s", secret.text)
    finally:
        root.handlers[:], root.level = saved
    assert not leaked(stream.getvalue(), SECRETS)
    assert stream.getvalue().count("removed]") >= len(SECRETS)
