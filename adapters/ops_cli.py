"""Operator commands: ``check-config``, ``knowledge list|test FILE``, ``stats``, ``healthcheck``.

They validate and report without connecting to any platform, and never print a secret.
``check-config --platform slack`` (or ``GPU_GARDEN_PLATFORM=slack``, which docker-compose.yml sets per
service) checks what that service needs; without it, at least one platform must be configured.
"""

from __future__ import annotations

import os
import sqlite3
from pathlib import Path
from typing import TextIO

import re2

from bot.settings import Settings, SettingsError, load_settings

_DISCORD_TOKEN = re2.compile(r"^[A-Za-z0-9_-]{20,}\.[A-Za-z0-9_-]{4,}\.[A-Za-z0-9_-]{20,}$")
_HEX32 = re2.compile(r"^[0-9a-f]{32}$")


PLATFORM_ENV = "GPU_GARDEN_PLATFORM"
NEEDED_TOKEN = {"discord": "GPU_GARDEN_DISCORD_TOKEN", "slack": "GPU_GARDEN_SLACK_BOT_TOKEN"}


def check_config(config: Path | None, out: TextIO, platform: str | None = None) -> int:
    """Validate everything without connecting; one line per problem; exit 1 when anything is wrong."""
    problems: list[str] = []
    notes: list[str] = []
    try:
        settings = load_settings(config_file=config)
    except SettingsError as exc:
        out.write(f"error: settings: {exc}\n")
        return 1
    problems += _enabled_problems(settings, platform or os.environ.get(PLATFORM_ENV) or None)
    problems += _platform_problems(settings, notes)
    problems += _knowledge_problems(settings, notes)
    problems += _path_problems(settings, notes)
    for note in notes:
        out.write(f"ok: {note}\n")
    for problem in problems:
        out.write(f"error: {problem}\n")
    out.write("configuration is valid\n" if not problems else f"{len(problems)} problem(s) found\n")
    return 1 if problems else 0


def _enabled_problems(s: Settings, platform: str | None) -> list[str]:
    """The platform this service runs must have its token; with none named, one platform at least
    (an untouched .env.example has no token at all: the bot would have nothing to connect to)."""
    enabled = {"discord": s.discord_enabled, "slack": s.slack_enabled}
    if platform is not None:
        if platform not in enabled:
            return [f"{PLATFORM_ENV}={platform}: use discord or slack"]
        if not enabled[platform]:
            return [f"the {platform} service needs {NEEDED_TOKEN[platform]}; it is not set"]
        return []
    if not any(enabled.values()):
        return [
            "no platform token is set (GPU_GARDEN_DISCORD_TOKEN or GPU_GARDEN_SLACK_BOT_TOKEN): "
            "fill in .env for the platform you deploy (`gpu-garden` alone runs in the terminal)"
        ]
    return []


def _secret(value) -> str | None:
    return value.get_secret_value().strip() if value is not None else None


def _platform_problems(s: Settings, notes: list[str]) -> list[str]:
    problems: list[str] = []
    token = _secret(s.discord.token)
    if token is not None:
        if token.startswith(("xoxb-", "xapp-", "xoxp-")):
            problems.append("GPU_GARDEN_DISCORD_TOKEN holds a Slack token")
        elif not _DISCORD_TOKEN.search(token):
            problems.append(
                "GPU_GARDEN_DISCORD_TOKEN does not look like a Discord bot token (three dot-separated parts)"
            )
        else:
            notes.append("Discord token present")
        bad = [c for c in s.discord.channels if not c.isdigit()]
        if bad:
            problems.append(f"GPU_GARDEN_DISCORD_CHANNELS: {len(bad)} entries are not numeric channel ids")
        if s.discord.passive and s.discord.channels:
            notes.append(
                f"Discord passive mode in {len(s.discord.channels)} channel(s): enable the Message Content intent"
            )
    bot_token, app_token, secret = (
        _secret(s.slack.bot_token),
        _secret(s.slack.app_token),
        _secret(s.slack.signing_secret),
    )
    if bot_token is not None or app_token is not None or secret is not None:
        if bot_token is None:
            problems.append("GPU_GARDEN_SLACK_BOT_TOKEN is missing (an xoxb- token)")
        elif bot_token.startswith("xapp-"):
            problems.append(
                "GPU_GARDEN_SLACK_BOT_TOKEN holds an app-level token (xapp-); the bot token starts with xoxb-"
            )
        elif not bot_token.startswith("xoxb-"):
            problems.append("GPU_GARDEN_SLACK_BOT_TOKEN should start with xoxb-")
        else:
            notes.append("Slack bot token present")
        if s.slack.mode == "socket":
            if app_token is None:
                problems.append(
                    "Socket Mode needs GPU_GARDEN_SLACK_APP_TOKEN (an xapp- token with connections:write)"
                )
            elif app_token.startswith("xoxb-"):
                problems.append(
                    "GPU_GARDEN_SLACK_APP_TOKEN holds a bot token (xoxb-); the app-level token starts with xapp-"
                )
            elif not app_token.startswith("xapp-"):
                problems.append("GPU_GARDEN_SLACK_APP_TOKEN should start with xapp-")
        else:
            if secret is None:
                problems.append("HTTP mode needs GPU_GARDEN_SLACK_SIGNING_SECRET")
            elif not _HEX32.search(secret):
                problems.append("GPU_GARDEN_SLACK_SIGNING_SECRET should be 32 hex characters")
    return problems


def _knowledge_problems(s: Settings, notes: list[str]) -> list[str]:
    from knowledge.loader import KnowledgeError, load_with_extra

    try:
        kb = load_with_extra(s.knowledge_dir)
    except KnowledgeError as exc:
        return [f"knowledge: {exc}"]
    notes.append(f"{len(kb.signatures)} signatures from {len(kb.files)} files")
    return []


def _path_problems(s: Settings, notes: list[str]) -> list[str]:
    problems: list[str] = []
    db = s.database
    folder = db.parent if str(db.parent) else Path(".")
    existing = _nearest_existing(folder)
    if not existing.is_dir():
        problems.append(f"database folder {folder} cannot be created: {existing} is not a folder")
    elif not os.access(existing, os.W_OK | os.X_OK):
        what = "is not writable" if existing == folder else f"cannot be created ({existing} is not writable)"
        problems.append(f"database folder {folder} {what}")
    elif db.exists():
        try:  # read-only: checking must not change anything
            sqlite3.connect(f"file:{db}?mode=ro", uri=True).execute("PRAGMA schema_version").fetchone()
            notes.append(f"database {db} opens")
        except sqlite3.Error as exc:
            problems.append(f"database {db}: {exc}")
    else:
        notes.append(f"database {db} will be created on first start")
    if s.health_file is not None and not os.access(s.health_file.parent, os.W_OK):
        problems.append(f"health file folder {s.health_file.parent} is not writable")
    return problems


def _nearest_existing(folder: Path) -> Path:
    """The folder itself, or its closest ancestor that exists (the bot creates the rest on start)."""
    current = folder
    while not current.exists() and current != current.parent:
        current = current.parent
    return current


def knowledge_list(config: Path | None, out: TextIO) -> int:
    from knowledge.loader import KnowledgeError, load_with_extra

    try:
        settings = load_settings(config_file=config)
        kb = load_with_extra(settings.knowledge_dir)
    except (SettingsError, KnowledgeError) as exc:
        out.write(f"error: {exc}\n")
        return 1
    for loaded in kb.signatures:
        sig = loaded.signature
        out.write(f"{sig.id:55} {loaded.engine:10} {sig.category:26} {loaded.origin}\n")
    out.write(f"{len(kb.signatures)} signatures from {len(kb.files)} files\n")
    return 0


def knowledge_test(path: Path, out: TextIO) -> int:
    """Validate one pack and run its examples against the built-in signatures plus the pack."""
    from bot.detector import Detector
    from knowledge.loader import KnowledgeError, _builtin_texts, load_knowledge

    try:
        text = path.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as exc:
        out.write(f"error: {path}: cannot be read ({exc.__class__.__name__})\n")
        return 1
    try:
        kb = load_knowledge([*_builtin_texts(), (str(path), text)])
    except KnowledgeError as exc:
        out.write(f"error: {exc}\n")
        return 1
    detector = Detector(kb)
    failures = 0
    total = 0
    for loaded in kb.signatures:
        if loaded.origin != str(path):
            continue
        for i, example in enumerate(loaded.signature.examples):
            total += 1
            found = {f.signature: f for f in detector.detect(example.text).findings}
            hit = found.get(loaded.signature.id)
            problem = None
            if example.expect == "no_match":
                problem = "matched but should not" if hit else None
            elif hit is None:
                problem = "not detected"
            else:
                for name, want in example.params.items():
                    got = hit.params.get(name)
                    if (
                        got is None
                        or (isinstance(want, float) and abs(float(got) - want) > abs(want) * 1e-3)
                        or (not isinstance(want, float) and got != want)
                    ):
                        problem = f"{name}: expected {want!r}, got {got!r}"
                        break
            failures += problem is not None
            out.write(
                f"{'FAIL' if problem else 'ok  '} {loaded.signature.id} example {i}"
                + (f": {problem}" if problem else "")
                + "\n"
            )
    out.write(f"{total - failures} passed, {failures} failed\n")
    return 1 if failures else 0
