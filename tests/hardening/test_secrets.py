"""Secrets inside a paste are never echoed: not in the reply (any platform's rendering), not in the logs,
not in the SQLite file; the reply names the kind and says to rotate it."""

from __future__ import annotations

import io
import json
import logging
import sys
from pathlib import Path

import pytest

from bot.message import Attachment, IncomingMessage, SlashCommand
from bot.redact import redact
from bot.service import GardenService
from bot.settings import Limits
from bot.storage import Storage
from bot.vram import answer as answer_vram
from tests.hardening.hostile import (
    ERRORS,
    KV_PASTE,
    Secret,
    leaked,
    rendered_texts,
    secret_samples,
)
from tests.hardening.planted import echoed, planted

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


def _rebuilt_variants(secret: Secret) -> dict[str, tuple[str, bool]]:
    """The secret cut by what the reading of a paste removes or joins after the visible text (bot.unwrap),
    and whether the redactor must then find it whole: it reads the paste the way the detector does, and the
    detector reads the redacted text as it is (a lost colour code inside a removed one stays as pasted)."""
    value, stamp = secret.value, "2025-05-02T10:11:12.34{}Z stdout {} "
    return {
        "console arrows": (f"{KV_PASTE} {value[:10]}\u2190[0m\u2190[1m{value[10:]}", True),
        "CRI partial line": (
            f"{stamp.format(5, 'P')}{KV_PASTE} {value[:10]}\n{stamp.format(6, 'F')}{value[10:]} "
            + "and more " * 12,
            True,
        ),
        "a code inside a lost one": (f"{KV_PASTE} {value[:10]}[\x1b[0m0m{value[10:]}", False),
        # a paste with a prefix: the detector joins lines the wrapped pass does not read together
        "joined after a prefix": (
            f"vllm-1  | INFO x\ntorch.OutOfMemoryError: CUDA out of\nmemory. {value[:10]}\n{value[10:]}",
            False,
        ),
    }


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


# --- the planted-secret corpus (every gitleaks rule's examples, every placement) through every output --

CORPUS = planted(per_rule=1)
CORPUS_BY_RULE: dict[str, list] = {}
for _p in CORPUS:
    CORPUS_BY_RULE.setdefault(_p.rule, []).append(_p)


def corpus_paste(items) -> str:
    """The placements as one paste, with an error the bot answers with a fix command."""
    return "\n\n".join(p.text for p in items) + "\n" + KV_PASTE


def assert_notice_names_every_kind(out) -> None:
    assert out.secrets
    notice = out.reply.notes[0] if out.reply.notes else out.reply.summary
    assert all(kind in notice for kind in out.secrets), notice
    assert "rotate" in notice and "I did not repeat it" not in notice


@pytest.mark.parametrize("rule", sorted(CORPUS_BY_RULE))
async def test_corpus_through_the_service_and_every_rendering(rule, caplog):
    caplog.set_level(logging.DEBUG)
    items = CORPUS_BY_RULE[rule]
    svc = GardenService(limits=OPEN)
    out = await svc.handle(IncomingMessage(platform="test", text=corpus_paste(items), mentioned=True))
    assert out.kind == "reply"
    assert echoed(everything_said(out), items) == []
    assert_notice_names_every_kind(out)
    assert echoed(caplog.text, items) == []


def test_corpus_through_the_cli_text_json_and_terminal(tmp_path):
    from adapters.cli import main, run_terminal

    log = tmp_path / "server.log"
    log.write_text(corpus_paste(CORPUS), encoding="utf-8")
    for argv in (["triage", str(log)], ["triage", "--json", str(log)], ["triage", "--brief", str(log)]):
        out = io.StringIO()
        assert main(argv, stdin=io.StringIO(""), stdout=out) == 0
        assert echoed(out.getvalue(), CORPUS) == [], argv
    result = json.loads(_cli(["triage", "--json", str(log)]))
    assert result["secrets"] and all(kind in result["notice"] for kind in result["secrets"])
    for rule, items in CORPUS_BY_RULE.items():
        out = io.StringIO()
        run_terminal(io.StringIO(corpus_paste(items) + "\n\n/quit\n"), out, interactive=False)
        assert echoed(out.getvalue(), items) == [], rule
        assert "rotate" in out.getvalue()


def _cli(argv: list[str]) -> str:
    from adapters.cli import main

    out = io.StringIO()
    main(argv, stdin=io.StringIO(""), stdout=out)
    return out.getvalue()


def test_corpus_in_logs_at_debug_in_both_formats():
    from bot import logs

    root = logging.getLogger()
    saved = (root.handlers[:], root.level)
    log = logging.getLogger("gpu_garden.slack.bolt")
    try:
        for fmt in ("text", "json"):
            stream = io.StringIO()
            logs.configure("DEBUG", fmt, stream)
            for item in CORPUS:
                log.debug("on_message invoked: (message: %s)", json.dumps({"text": item.text}))
                log.debug(item.text)
                try:
                    raise ValueError(f"while reading the paste:\n{item.text}")
                except ValueError:
                    log.exception("failed")
            assert echoed(stream.getvalue(), CORPUS) == [], fmt
    finally:
        root.handlers[:], root.level = saved


@pytest.mark.parametrize("option", ["model", "gpu"])
async def test_corpus_as_vram_options_is_never_echoed(option):
    svc = GardenService(limits=OPEN)
    bare = [p for p in CORPUS if p.placement == "example"]
    for item in bare:
        args = {"gpu": "4090", "model": "qwen-7b", option: item.secret}
        out = await svc.handle(IncomingMessage(platform="test", command=SlashCommand("vram", args=args)))
        assert out.reply is not None
        assert echoed(everything_said(out), [item]) == [], item.rule
        raw = await svc.handle(
            IncomingMessage(
                platform="test", command=SlashCommand("vram", raw=f"gpu:4090 {option}:{item.secret}")
            )
        )
        assert echoed(everything_said(raw), [item]) == [], item.rule


def test_cli_vram_never_repeats_a_secret(capsys):
    from adapters.cli import main

    for item in [p for p in CORPUS if p.placement == "example"][:40]:
        code = main(
            ["vram", "--gpu", "4090", "--model", item.secret], stdin=io.StringIO(""), stdout=io.StringIO()
        )
        err = capsys.readouterr().err
        assert code != 0 and echoed(err, [item]) == [], item.rule


def test_a_token_no_rule_knows_is_not_echoed_as_a_model_name():
    svc_reply = answer_vram({"gpu": "4090", "model": "aB3dE5fG7hJ9kL1mN3pQ5rS7tU9"})
    assert "aB3dE5fG7hJ9kL1mN3pQ5rS7tU9" not in svc_reply.summary
    assert svc_reply.summary == "unknown model (that value)"


def test_the_redacted_paste_itself_holds_no_planted_secret():
    """Every planted secret in one paste, each followed by others: a rule that ends on ``$`` must still
    match mid-paste (sidekiq-sensitive-url kept 'https://cafebabe:…@gems.contribsys.com' but the last)."""
    assert echoed(redact(corpus_paste(CORPUS)).text, CORPUS) == []


def test_a_rule_ending_on_end_of_text_matches_at_a_line_end_on_a_long_paste():
    # from 1 MiB the rules that can match are picked by one RE2 Set pass over their regexes
    url = "https://cafebabe:deadbeef@gems.contribsys.com"
    for filler in ("", "INFO starting engine\n" * 60_000):
        text = filler + f"bundle config gems.contribsys.com {url}\nERROR: CUDA out of memory\n"
        assert "cafebabe" not in redact(text).text


@pytest.mark.parametrize("secret", HIDEABLE, ids=[s.kind for s in HIDEABLE])
async def test_a_secret_the_reading_would_rebuild_is_never_shown(secret, tmp_path):
    from adapters.cli import main

    for how, (text, found) in _rebuilt_variants(secret).items():
        cleaned = redact(text)
        assert (secret.kind in cleaned.kinds) is found, how
        out = await GardenService(limits=OPEN).handle(
            IncomingMessage(platform="test", text=text, mentioned=True)
        )
        assert out.reply is not None and not leaked(everything_said(out), [secret]), how
        assert (secret.kind in everything_said(out)) is (found or how.startswith("joined")), how
        log = tmp_path / "paste.log"
        log.write_text(text)
        for flags in ([], ["--json"]):
            said = io.StringIO()
            assert main(["triage", *flags, str(log)], stdout=said) == 0
            assert not leaked(said.getvalue(), [secret]) and secret.value not in said.getvalue(), (how, flags)


ONE_LINE_AND_JOINED = (
    "export HF_TOKEN=hf_AbCdEfGhIjKlMnOpQrStUvWxYz0123456789\n"  # found by redaction, on its line
    "vllm-1  | INFO x\ntorch.OutOfMemoryError: CUDA out of\n"  # a prefix: the detector joins the lines below
    "memory. ghp_AbCdEfGhIj\nKlMnOpQrStUvWxYz0123456789AbCd\n"
)
BOTH_NOTICE = (
    "Your paste contained a GitHub token and a Hugging Face token. I removed them before reading the paste "
    "and repeat none of them, but anyone who read the channel has seen them: rotate them now."
)


async def test_secrets_found_by_redaction_and_in_joined_lines_get_one_notice(tmp_path):
    from adapters.cli import main

    out = await GardenService(limits=OPEN).handle(
        IncomingMessage(platform="test", text=ONE_LINE_AND_JOINED, mentioned=True)
    )
    assert out.reply is not None and out.reply.notes[0] == BOTH_NOTICE
    assert sum("rotate" in note for note in out.reply.notes) == 1
    assert out.secrets == ("GitHub token", "Hugging Face token")
    log = tmp_path / "paste.log"
    log.write_text(ONE_LINE_AND_JOINED)
    said = io.StringIO()
    assert main(["triage", str(log)], stdout=said) == 0
    assert said.getvalue().count("rotate") == 1 and f"_{BOTH_NOTICE}_" in said.getvalue()


def test_a_notice_alone_names_every_kind_once():
    from bot.redact import with_notice

    notice = with_notice(with_notice(None, ["GitHub token"]), ["Hugging Face token", "GitHub token"])
    assert notice is not None and notice.summary == BOTH_NOTICE and notice.notes == []
