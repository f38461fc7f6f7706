"""``gpu-garden``: the terminal adapter and the command-line entry point.

gpu-garden                      the bot in this terminal (paste, then an empty line or Ctrl-D)
gpu-garden triage FILE|- [--json] [--brief] [--full]
gpu-garden vram --gpu G --model M [...] [--json]
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, TextIO

# Only what building the parser needs is imported here: ``--help`` never loads the core, ``vram`` never
# loads the detector or the knowledge base; each command imports its own modules.
if TYPE_CHECKING:
    from bot.core import GardenBot, Paste
    from bot.reply import Reply

EXIT_OK, EXIT_NO_INPUT, EXIT_USAGE = 0, 1, 2


class CliError(Exception):
    def __init__(self, message: str, code: int = EXIT_USAGE):
        super().__init__(message)
        self.code = code


def _read_tail(fh, budget: int) -> tuple[bytes, bool]:
    """The last ``budget`` bytes of a stream (errors sit at the end of logs), and whether it was cut."""
    kept = b""
    cut = False
    while True:
        chunk = fh.read(1 << 20)
        if not chunk:
            return kept, cut
        kept += chunk
        if len(kept) > budget:
            kept = kept[-budget:]
            cut = True


def read_inputs(paths: Sequence[str], stdin: TextIO, limit: int | None = None) -> Paste:
    from bot.core import DEFAULT_PASTE_LIMIT, Paste
    from bot.textdecode import decode_text, needs_sniffing

    limit = DEFAULT_PASTE_LIMIT if limit is None else limit
    chunks: list[bytes] = []
    truncated = False
    for path in paths or ["-"]:
        if path == "-":
            if hasattr(stdin, "buffer"):
                data, cut = _read_tail(stdin.buffer, limit)
            else:
                text = stdin.read()
                data, cut = text.encode()[-limit:], len(text.encode()) > limit
        else:
            p = Path(path)
            if not p.exists():
                raise CliError(f"{path}: no such file")
            if p.is_dir():
                raise CliError(f"{path}: is a directory")
            try:
                with p.open("rb") as fh:
                    size = p.stat().st_size
                    if size > limit:
                        fh.seek(size - limit)
                    data, cut = fh.read(limit), size > limit
            except OSError as exc:
                raise CliError(f"{path}: cannot read ({exc.strerror})") from exc
        truncated = truncated or cut
        chunks.append(data)
    # each file decoded on its own, as the platforms decode attachments (UTF-16 PowerShell logs)
    joined = b"\n".join(
        (decode_text(c) or c.decode("utf-8", "replace")).encode("utf-8") if needs_sniffing(c) else c
        for c in chunks
    )
    if len(joined) > limit:
        joined, truncated = joined[-limit:], True
    return Paste(joined.decode("utf-8", errors="replace"), truncated, [])


def triage_json(bot: GardenBot, paste: Paste) -> dict:
    detection = bot.detector.detect(paste.text, paste.prefix_cuts)  # the redacted text read as it is
    if detection.root is None:
        reply = None
    else:
        from bot.diagnosis import diagnose

        reply = diagnose(detection)
    findings = []
    for i, f in enumerate(detection.findings):
        fixes = []
        if i == 0 and reply is not None:
            fixes = [
                {
                    "engine": x.engine,
                    "change": x.change,
                    "command": x.command,
                    "adds": x.adds,
                    "effect": x.effect,
                    "cost": x.cost,
                    "verification": x.verification,
                }
                for x in sorted(reply.fixes, key=lambda fix: fix.rank)
            ]
        findings.append(
            {
                "signature": f.signature,
                "category": f.category,
                "engine": f.engine,
                "severity": f.severity,
                "title": f.title,
                "params": f.params,
                "evidence": f.evidence,
                "line": f.line + 1,
                "fixes": fixes,
            }
        )
    return {"findings": findings, "context": detection.context.fields, "secrets": list(detection.secrets)}


def paste_limit(settings) -> int:
    """The bots' ``limits.paste_max_bytes`` when it is configured; otherwise the terminal's own default
    (a whole log file piped in, not a chat message)."""
    from bot.core import DEFAULT_PASTE_LIMIT

    configured = "limits.paste_max_bytes" in settings.given
    return settings.limits.paste_max_bytes if configured else DEFAULT_PASTE_LIMIT


def build_bot(settings) -> GardenBot:
    """The bot with the same knowledge folder, Hub lookup and paste limit the platform bots use."""
    from bot.core import GardenBot
    from bot.detector import Detector, default_detector
    from knowledge.loader import KnowledgeError, load_with_extra

    try:
        detector = (
            default_detector()
            if settings.knowledge_dir is None
            else Detector(load_with_extra(settings.knowledge_dir))
        )
    except KnowledgeError as exc:
        raise CliError(f"knowledge: {exc}") from exc
    lookup = None  # the catalog; the model sources are imported when a /vram asks for a model
    if settings.hub_lookup:

        def lookup(name: str):  # catalog first, then the Hub for org/name ids
            from bot.model_sources import resolve_model_arg

            return resolve_model_arg(name, allow_hub=True, cache_dir=settings.hub_cache_dir)

    return GardenBot(detector=detector, paste_limit=paste_limit(settings), model_lookup=lookup)


def cmd_triage(args: argparse.Namespace, stdin: TextIO, stdout: TextIO) -> int:
    settings = _settings(None)
    paste = read_inputs(args.files, stdin, paste_limit(settings))
    if not paste.text.strip():
        raise CliError("nothing to triage: the input is empty", EXIT_NO_INPUT)
    bot = build_bot(settings)
    from bot.formatter import to_markdown
    from bot.redact import Redaction, redact, with_notice

    cleaned = redact(paste.text)  # before anything reads it: fixes copy the user's command line
    paste = type(paste)(cleaned.text, paste.truncated, paste.skipped, cleaned.prefix_cuts)
    if args.json:
        import json

        result = triage_json(bot, paste)
        kinds = tuple(dict.fromkeys([*cleaned.kinds, *result["secrets"]]))  # and what wrap joins rebuilt
        result["secrets"] = list(kinds)
        result["notice"] = Redaction("", kinds).warning() if kinds else None
        json.dump(result, stdout, indent=2, default=str)
        stdout.write("\n")
        return EXIT_OK
    reply = with_notice(bot.triage(paste, addressed=True), cleaned.kinds)
    assert reply is not None
    stdout.write(to_markdown(reply, brief=args.brief, full=args.full))
    return EXIT_OK


VRAM_FIELDS = {
    "gpus": "gpus",
    "engine": "engine",
    "tp": "tp",
    "pp": "pp",
    "gpu_memory_gib": "gpu_memory_gib",
    "gpu_memory_utilization": "gpu_memory_utilization",
    "max_model_len": "max_model_len",
    "kv_cache_dtype": "kv_cache_dtype",
    "kv_cache_memory": "kv_cache_memory_gib",
    "max_num_seqs": "max_num_seqs",
    "max_num_batched_tokens": "max_num_batched_tokens",
    "vllm_version": "vllm_version",
    "ctx_size": "ctx_size",
    "cache_type_k": "cache_type_k",
    "cache_type_v": "cache_type_v",
    "parallel": "parallel",
}


def cmd_match(args: argparse.Namespace, stdout: TextIO) -> int:
    """Only --model (which GPUs serve it) or only --gpu (which models fit it)."""
    import json

    from bot.formatter import to_markdown
    from bot.model_sources import ModelSourceError, resolve_model_arg
    from bot.vram import match_gpus_reply, match_models_reply
    from calculator.resolve import NameNotFound

    fields: dict = {"engine": args.engine or "vllm"}
    if args.max_model_len:
        fields["max_model_len"] = args.max_model_len
    if args.kv_cache_dtype:
        fields["kv_cache_dtype"] = args.kv_cache_dtype
    if args.gpus:
        fields["gpus"] = args.gpus
    settings = _settings(None, args)

    def lookup(name: str):
        return resolve_model_arg(
            name, allow_local=True, allow_hub=settings.hub_lookup, cache_dir=settings.hub_cache_dir
        )

    try:
        if args.model:
            reply = match_gpus_reply({**fields, "model": args.model}, lookup)
        else:
            reply = match_models_reply({**fields, "gpu": args.gpu})
    except (NameNotFound, ModelSourceError) as exc:
        from bot.vram import unechoed

        raise CliError(unechoed(str(exc), {"model": args.model, "gpu": args.gpu}, "")) from exc
    if args.json:
        stdout.write(json.dumps(reply.data, indent=2) + "\n")
    else:
        stdout.write(to_markdown(reply))
    return EXIT_OK


def _refuse_secrets(args: argparse.Namespace) -> None:
    """--model / --gpu that hold a secret: said so, and the value not repeated.  A printable ASCII value
    without ``[`` is what the redactor's cleanup leaves as it is, so the secret rules alone decide it;
    anything else, or a rule that finds a secret, goes through the whole redaction."""
    from bot.secret_rules import default_rules

    rules = default_rules()
    for flag in ("model", "gpu"):
        value = getattr(args, flag)
        if not value:
            continue
        data = value.encode()
        if value.isascii() and value.isprintable() and "[" not in value:
            hits = (
                rules.rules[i].secret_span(m)
                for i in rules.matching(data)
                for m in rules.rules[i].pattern.finditer(data)
            )
            if all(span is None for span in hits):
                continue
        from bot.redact import redact

        if (found := redact(value)).found:
            raise CliError(f"--{flag}: {found.warning()}")


def cmd_vram(args: argparse.Namespace, stdout: TextIO) -> int:
    _refuse_secrets(args)
    if not args.model and not args.gpu:
        raise CliError(
            "vram needs --model and/or --gpu (e.g. gpu-garden vram --gpu 4090 --model qwen2.5-coder-32b-awq)"
        )
    if not args.model or not args.gpu:
        return cmd_match(args, stdout)
    from bot.formatter import to_markdown
    from bot.model_sources import ModelSourceError, resolve_model_arg
    from bot.vram import vram_reply
    from calculator.checks import FieldError
    from calculator.estimate import VramRequest, estimate_for, result_json
    from calculator.resolve import NameNotFound, resolve_gpu

    fields: dict = {"model": args.model, "gpu": args.gpu, "enforce_eager": args.enforce_eager}
    for attr, field in VRAM_FIELDS.items():
        value = getattr(args, attr)
        if value is not None:
            fields[field] = value
    settings = _settings(None, args)
    try:
        found = resolve_model_arg(
            args.model, allow_local=True, allow_hub=settings.hub_lookup, cache_dir=settings.hub_cache_dir
        )
        result = estimate_for(found.model, found.variant, resolve_gpu(args.gpu), VramRequest(**fields))
    except (NameNotFound, ModelSourceError) as exc:
        from bot.vram import unechoed

        raise CliError(unechoed(str(exc), {"model": args.model, "gpu": args.gpu}, "")) from exc
    except FieldError as exc:
        raise CliError(f"--{exc.loc[0].replace('_', '-')}: {exc.msg}") from exc
    except ValueError as exc:
        raise CliError(str(exc)) from exc
    if args.json:
        stdout.write(result_json(result) + "\n")
    else:
        stdout.write(to_markdown(vram_reply(result)))
        stdout.write("".join(f"\nNote: {note}\n" for note in found.notes))
    return EXIT_OK


COMMANDS = ("vram", "help", "triage")  # a line starting with any other /word is a path in a paste
QUIT = ("quit", "exit", "q")
PROMPT = "Paste an error (end with an empty line or Ctrl-D), or type /vram gpu:4090 model:qwen-32b-awq, /help, /quit\n"


def run_terminal(stdin: TextIO, stdout: TextIO, interactive: bool, bot: GardenBot | None = None) -> int:
    """The same bot the chat platforms get, in this terminal."""
    from bot.formatter import to_markdown
    from bot.message import IncomingMessage, SlashCommand
    from bot.redact import redact, with_notice

    if bot is None:
        from bot.core import GardenBot

        bot = GardenBot()
    if interactive:
        stdout.write("GPU Garden (terminal). " + PROMPT)
    buffer: list[str] = []

    def flush() -> None:
        text = "\n".join(buffer)
        buffer.clear()
        if not text.strip():
            return
        cleaned = redact(text)
        reply = bot.handle(IncomingMessage(platform="terminal", text=cleaned.text, mentioned=True))
        reply = with_notice(reply, cleaned.kinds)
        if reply is not None:
            stdout.write("\n" + to_markdown(reply) + "\n")
            stdout.flush()

    for raw in stdin:
        line = raw.rstrip("\n")
        stripped = line.strip()
        name, _, rest = stripped[1:].partition(" ")
        if not buffer and stripped.startswith("/") and name.lower() in COMMANDS + QUIT:
            if name.lower() in QUIT:
                return EXIT_OK
            cleaned = redact(rest)
            command = SlashCommand(name=name.lower(), raw=cleaned.text)
            reply = bot.handle(IncomingMessage(platform="terminal", command=command, mentioned=True))
            reply = with_notice(reply, cleaned.kinds)
            if reply is not None:
                stdout.write("\n" + to_markdown(reply) + "\n")
                stdout.flush()
            continue
        if not stripped and buffer:
            flush()
            continue
        buffer.append(line)
    flush()
    return EXIT_OK


# settings that can also be given as flags (highest precedence) to the commands that run the bot
SETTING_FLAGS = {
    "database": ("--database", Path, "SQLite database file"),
    "knowledge_dir": ("--knowledge-dir", Path, "folder of extra knowledge packs (YAML)"),
    "log_level": ("--log-level", str, "DEBUG, INFO, WARNING or ERROR"),
    "log_format": ("--log-format", str, "text or json"),
    "health_port": ("--health-port", int, "serve /healthz and /metrics on this port"),
}


def add_setting_flags(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--config", type=Path, help="YAML settings file")
    for field, (flag, kind, text) in SETTING_FLAGS.items():
        parser.add_argument(flag, dest=f"setting_{field}", type=kind, help=text)
    add_hub_flag(parser)


def add_hub_flag(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--no-hub",
        dest="setting_hub_lookup",
        action="store_false",
        default=None,
        help="never look unknown org/name models up on the Hugging Face Hub",
    )


def _settings(config: Path | None, args: argparse.Namespace | None = None):
    from bot.settings import SettingsError, load_settings

    fields = [*SETTING_FLAGS, "hub_lookup"]
    overrides = {f: getattr(args, f"setting_{f}", None) for f in fields} if args is not None else {}
    try:
        return load_settings(config_file=config, **overrides)
    except SettingsError as exc:
        raise CliError(f"settings: {exc}") from exc


def setup_logging(settings) -> None:
    import logging

    from bot.logs import configure

    configure(settings.log_level, settings.log_format)
    logging.getLogger("gpu_garden").debug("logging configured")


def _serve(settings, platforms: list[str]) -> int:
    import asyncio

    from adapters.runner import serve

    setup_logging(settings)
    return asyncio.run(serve(settings, platforms))


def cmd_healthcheck(args: argparse.Namespace, stdout: TextIO) -> int:
    from bot.health import check_heartbeat

    settings = _settings(None)
    if settings.health_file is None:
        raise CliError("GPU_GARDEN_HEALTH_FILE is not set: there is no heartbeat to check", 1)
    if check_heartbeat(settings.health_file, args.max_age):
        stdout.write("healthy\n")
        return EXIT_OK
    stdout.write(f"unhealthy: no heartbeat in the last {args.max_age:g} s\n")
    return 1


def cmd_stats(args: argparse.Namespace, stdout: TextIO) -> int:
    from bot.stats import parse_period, report
    from bot.storage import Storage

    try:
        since = parse_period(args.since)
    except ValueError as exc:
        raise CliError(str(exc)) from exc
    settings = _settings(args.config)
    if not settings.database.exists():  # a fresh deployment: nothing answered yet is not an error
        stdout.write(
            f"GPU Garden stats: nothing yet (the bot creates {settings.database} on its first start).\n"
        )
        return EXIT_OK
    stdout.write(report(Storage(settings.database), since, top=args.top) + "\n")
    return EXIT_OK


def cmd_platform(args: argparse.Namespace) -> int:
    sync = getattr(args, "action", None) == "sync-commands"
    try:
        settings = _settings(args.config, args)
    except CliError as exc:
        if sync:
            raise
        import asyncio

        from adapters.runner import fail_before_start

        return asyncio.run(fail_before_start(str(exc)))  # JSON when asked, and the fast-failure pause
    if args.command == "discord":
        if sync:
            if settings.discord.token is None:
                raise CliError("GPU_GARDEN_DISCORD_TOKEN is not set")
            import asyncio

            from adapters.discord import sync_commands

            setup_logging(settings)
            return asyncio.run(sync_commands(settings, args.guild))
        return _serve(settings, ["discord"])  # a missing token is logged by the runner, then the pause
    return _serve(settings, ["slack"])


def _triage_flags(t: argparse.ArgumentParser) -> None:
    t.add_argument("files", nargs="*", help="log files; - or nothing reads stdin")
    t.add_argument("--json", action="store_true", help="print findings as JSON")
    t.add_argument("--brief", action="store_true", help="title, the key point and the fix")
    t.add_argument(
        "--full", action="store_true", help="everything: why, numbers with sources, memory, every fix"
    )


def _vram_flags(v: argparse.ArgumentParser) -> None:
    v.add_argument("--model", "-m")
    v.add_argument("--gpu", "-g")
    v.add_argument("--gpus", type=int)
    v.add_argument("--engine", choices=["vllm", "llama.cpp", "ollama", "sglang"])
    v.add_argument("--tp", type=int)
    v.add_argument("--pp", type=int)
    v.add_argument(
        "--gpu-memory-gib", type=float, dest="gpu_memory_gib", help="override the card's memory (GiB)"
    )
    v.add_argument("--gpu-memory-utilization", type=float, dest="gpu_memory_utilization")
    v.add_argument("--max-model-len", type=int, dest="max_model_len")
    v.add_argument("--kv-cache-dtype", dest="kv_cache_dtype")
    v.add_argument(
        "--kv-cache-memory", type=float, dest="kv_cache_memory", help="fixed KV budget per GPU, GiB"
    )
    v.add_argument("--max-num-seqs", type=int, dest="max_num_seqs")
    v.add_argument("--max-num-batched-tokens", type=int, dest="max_num_batched_tokens")
    v.add_argument("--enforce-eager", action="store_true", dest="enforce_eager")
    v.add_argument("--vllm-version", dest="vllm_version")
    v.add_argument("--ctx-size", "-c", type=int, dest="ctx_size")
    v.add_argument("--cache-type-k", "-ctk", dest="cache_type_k")
    v.add_argument("--cache-type-v", "-ctv", dest="cache_type_v")
    v.add_argument("--parallel", "-np", type=int)
    v.add_argument("--json", action="store_true")
    add_hub_flag(v)


def _healthcheck_flags(hc: argparse.ArgumentParser) -> None:
    hc.add_argument("--max-age", type=float, default=90.0, help="seconds")


def _stats_flags(st: argparse.ArgumentParser) -> None:
    st.add_argument("--since", default="7d", help="period: 30m, 24h, 7d")
    st.add_argument("--top", type=int, default=10)
    st.add_argument("--config", type=Path, help="YAML settings file")


def _check_config_flags(cc: argparse.ArgumentParser) -> None:
    cc.add_argument("--config", type=Path, help="YAML settings file")
    cc.add_argument(
        "--platform",
        choices=("discord", "slack"),
        help="check what this service needs (else GPU_GARDEN_PLATFORM)",
    )


def _knowledge_flags(kn: argparse.ArgumentParser) -> None:
    kn.add_argument("--config", type=Path, help="YAML settings file")
    ksub = kn.add_subparsers(dest="action", required=True)
    ksub.add_parser("list", help="every signature in force (built-in and the operator's folder)")
    kt = ksub.add_parser("test", help="validate a pack and run its examples")
    kt.add_argument("file", type=Path)


def _discord_flags(p: argparse.ArgumentParser) -> None:
    add_setting_flags(p)
    dsub = p.add_subparsers(dest="action")
    sync = dsub.add_parser("sync-commands", help="register /vram, /triage and the context menu")
    sync.add_argument("--guild", help="sync to one guild (instant) instead of globally")


# each command: its help line and what adds its arguments (only the command being run gets them)
SUBCOMMANDS: dict[str, tuple[str, Callable[[argparse.ArgumentParser], None]]] = {
    "triage": ("diagnose a pasted log (files or - for stdin)", _triage_flags),
    "vram": ("does a model fit on a GPU, with what context and flags", _vram_flags),
    "healthcheck": (
        "exit 0 while the bot's heartbeat file is fresh (container healthcheck)",
        _healthcheck_flags,
    ),
    "stats": ("most frequent signatures and worst-rated answers from the database", _stats_flags),
    "check-config": ("validate settings, tokens and knowledge packs without connecting", _check_config_flags),
    "knowledge": ("list the loaded signatures or test a knowledge pack", _knowledge_flags),
    "discord": ("run the Discord bot (tokens from the environment or --config)", _discord_flags),
    "slack": ("run the Slack bot (tokens from the environment or --config)", add_setting_flags),
}


def _command_named(words: Sequence[str]) -> str | None:
    """The command the arguments run, when their first word names one (before it the top-level
    parser takes only -h); None otherwise, and then every command gets its arguments."""
    first = next((w for w in words if not w.startswith("-")), None)
    return first if first in SUBCOMMANDS else None


def build_parser(argv: Sequence[str] | None = None) -> argparse.ArgumentParser:
    """The parser; with ``argv``, only the command it names gets its arguments (building all of them is
    a good part of a cold start), which parses ``argv`` exactly as the whole parser does.  When that
    command is the first word (no top-level ``-h`` before it: nothing prints the list of commands), the
    other commands get no parser at all; the usage line still names them all."""
    parser = argparse.ArgumentParser(
        prog="gpu-garden",
        description="Reads pasted vLLM / llama.cpp / Ollama / SGLang errors and answers with the memory math and fixes.",
    )
    wanted = _command_named(argv) if argv is not None else None
    alone = wanted is not None and argv is not None and argv[0] == wanted
    # the prog argparse would work out by formatting the usage (which imports shutil for the terminal's
    # width); alone, the list of commands the usage line shows (argparse lists the parsers it has)
    listed = "{" + ",".join(SUBCOMMANDS) + "}" if alone else None
    sub = parser.add_subparsers(dest="command", prog="gpu-garden", metavar=listed)
    for name, (text, add_flags) in SUBCOMMANDS.items():
        if alone and name != wanted:
            continue
        command = sub.add_parser(name, help=text)
        if wanted is None or wanted == name:
            add_flags(command)
    return parser


def main(argv: Sequence[str] | None = None, stdin: TextIO | None = None, stdout: TextIO | None = None) -> int:
    stdin = stdin or sys.stdin
    stdout = stdout or sys.stdout
    words = sys.argv[1:] if argv is None else list(argv)
    parser = build_parser(words)
    args = parser.parse_args(words)
    try:
        if args.command == "triage":
            return cmd_triage(args, stdin, stdout)
        if args.command == "vram":
            return cmd_vram(args, stdout)
        if args.command in ("discord", "slack"):
            return cmd_platform(args)
        if args.command == "healthcheck":
            return cmd_healthcheck(args, stdout)
        if args.command == "stats":
            return cmd_stats(args, stdout)
        if args.command == "check-config":
            from adapters.ops_cli import check_config

            return check_config(args.config, stdout, args.platform)
        if args.command == "knowledge":
            from adapters.ops_cli import knowledge_list, knowledge_test

            if args.action == "list":
                return knowledge_list(args.config, stdout)
            return knowledge_test(args.file, stdout)
        settings = _settings(None)
        platforms = [
            p for p, on in (("discord", settings.discord_enabled), ("slack", settings.slack_enabled)) if on
        ]
        if platforms:
            return _serve(settings, platforms)
        return run_terminal(stdin, stdout, interactive=stdin.isatty(), bot=build_bot(settings))
    except CliError as exc:
        from bot.redact import redact

        sys.stderr.write(f"gpu-garden: {redact(str(exc)).text}\n")
        return exc.code
    except KeyboardInterrupt:
        return 130


def _reply_error(reply: Reply) -> str:
    return f"{reply.title}: {reply.summary}"


if __name__ == "__main__":
    raise SystemExit(main())
