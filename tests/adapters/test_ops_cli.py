"""Operator commands: check-config, knowledge list / test.  Secrets never printed."""

from __future__ import annotations

import io
from pathlib import Path

import pytest

from adapters.cli import main

ROOT = Path(__file__).resolve().parents[2]

GOOD_PACK = """engine: custom
signatures:
  - id: acme.quota
    category: gpu_oom
    title: "ACME cluster: GPU quota exceeded"
    patterns: ["QuotaExceeded: namespace (?P<namespace>[a-z0-9-]+) asked for (?P<asked_gib>[0-9.]+) GiB"]
    captures: {namespace: text, asked_gib: gib}
    cause: "Your namespace {namespace} hit its GPU quota; see the wiki page GPU-Quotas."
    examples:
      - text: "QuotaExceeded: namespace ml-team asked for 80 GiB"
        params: {namespace: ml-team, asked_gib: 80.0}
      - text: "quota fine"
        expect: no_match
"""


@pytest.fixture(autouse=True)
def clean_env(monkeypatch, tmp_path):
    for var in (
        "GPU_GARDEN_DISCORD_TOKEN",
        "GPU_GARDEN_SLACK_BOT_TOKEN",
        "GPU_GARDEN_SLACK_APP_TOKEN",
        "GPU_GARDEN_SLACK_SIGNING_SECRET",
        "GPU_GARDEN_SLACK_MODE",
        "GPU_GARDEN_KNOWLEDGE_DIR",
        "GPU_GARDEN_DATABASE",
        "GPU_GARDEN_CONFIG",
        "GPU_GARDEN_PLATFORM",
    ):
        monkeypatch.delenv(var, raising=False)
    monkeypatch.chdir(tmp_path)


def run(argv):
    out = io.StringIO()
    code = main(argv, stdin=io.StringIO(), stdout=out)
    return code, out.getvalue()


DISCORD_TOKEN = "MTAwMDAwMDAwMDAwMDAwMDAw.GabCde.abcdefghijklmnopqrstuvwxyz0123"


def test_check_config_clean_machine(monkeypatch, tmp_path):
    monkeypatch.setenv("GPU_GARDEN_DISCORD_TOKEN", DISCORD_TOKEN)
    code, out = run(["check-config"])
    assert code == 0 and out.endswith("configuration is valid\n")
    assert not (tmp_path / "gpu-garden.sqlite3").exists()  # checking changes nothing


def test_check_config_untouched_env_example_is_an_error(tmp_path):
    (tmp_path / ".env").write_text((ROOT / ".env.example").read_text())
    code, out = run(["check-config"])
    assert code == 1
    assert "error: no platform token is set (GPU_GARDEN_DISCORD_TOKEN or GPU_GARDEN_SLACK_BOT_TOKEN)" in out
    assert out.endswith("1 problem(s) found\n")


@pytest.mark.parametrize("how", ["flag", "env"])
def test_check_config_slack_service_without_a_slack_token_is_an_error(monkeypatch, how):
    monkeypatch.setenv("GPU_GARDEN_DISCORD_TOKEN", DISCORD_TOKEN)  # .env holds Discord's token only
    argv = ["check-config"]
    if how == "flag":
        argv += ["--platform", "slack"]
    else:
        monkeypatch.setenv("GPU_GARDEN_PLATFORM", "slack")
    code, out = run(argv)
    assert code == 1
    assert "error: the slack service needs GPU_GARDEN_SLACK_BOT_TOKEN; it is not set\n" in out
    monkeypatch.delenv("GPU_GARDEN_PLATFORM", raising=False)
    assert run(["check-config", "--platform", "discord"])[0] == 0


def test_check_config_database_folder_the_bot_creates_is_fine(monkeypatch, tmp_path):
    monkeypatch.setenv("GPU_GARDEN_DISCORD_TOKEN", DISCORD_TOKEN)
    monkeypatch.setenv("GPU_GARDEN_DATABASE", str(tmp_path / "data" / "sub" / "bot.sqlite3"))
    code, out = run(["check-config"])
    assert code == 0, out
    assert f"ok: database {tmp_path / 'data' / 'sub' / 'bot.sqlite3'} will be created on first start" in out
    assert not (tmp_path / "data").exists()
    (tmp_path / "blocker").write_text("x")
    monkeypatch.setenv("GPU_GARDEN_DATABASE", str(tmp_path / "blocker" / "sub" / "bot.sqlite3"))
    code, out = run(["check-config"])
    assert code == 1
    assert f"cannot be created: {tmp_path / 'blocker'} is not a folder" in out


def test_stats_on_a_fresh_deployment_says_nothing_yet(monkeypatch, tmp_path):
    monkeypatch.setenv("GPU_GARDEN_DATABASE", str(tmp_path / "data" / "bot.sqlite3"))
    code, out = run(["stats"])
    assert code == 0
    assert out.startswith("GPU Garden stats: nothing yet")
    assert not (tmp_path / "data").exists()


def test_check_config_wrong_token_kinds_never_prints_them(monkeypatch):
    monkeypatch.setenv("GPU_GARDEN_SLACK_BOT_TOKEN", "xapp-1-A111-222-secretvalue")
    monkeypatch.setenv("GPU_GARDEN_SLACK_APP_TOKEN", "xoxb-111-222-othersecret")
    monkeypatch.setenv("GPU_GARDEN_DISCORD_TOKEN", "xoxb-333-444-thirdsecret")
    code, out = run(["check-config"])
    assert code == 1
    assert "holds an app-level token" in out and "holds a bot token" in out and "holds a Slack token" in out
    for secret in ("secretvalue", "othersecret", "thirdsecret"):
        assert secret not in out


def test_check_config_http_mode_needs_signing_secret(monkeypatch):
    monkeypatch.setenv("GPU_GARDEN_SLACK_BOT_TOKEN", "xoxb-1-2-abc")
    monkeypatch.setenv("GPU_GARDEN_SLACK_MODE", "http")
    code, out = run(["check-config"])
    assert code == 1 and "SIGNING_SECRET" in out


def test_check_config_reports_bad_pack_with_file_and_entry(monkeypatch, tmp_path):
    packs = tmp_path / "packs"
    packs.mkdir()
    (packs / "bad.yaml").write_text(
        "engine: custom\nsignatures:\n  - id: acme.broken\n    category: nonsense\n"
    )
    monkeypatch.setenv("GPU_GARDEN_KNOWLEDGE_DIR", str(packs))
    code, out = run(["check-config"])
    assert code == 1
    assert "bad.yaml" in out and "acme.broken" in out and "category" in out


def test_knowledge_list_includes_operator_pack(monkeypatch, tmp_path):
    packs = tmp_path / "packs"
    packs.mkdir()
    (packs / "acme.yaml").write_text(GOOD_PACK)
    monkeypatch.setenv("GPU_GARDEN_KNOWLEDGE_DIR", str(packs))
    code, out = run(["knowledge", "list"])
    assert code == 0 and "acme.quota" in out and "vllm.kv_cache_too_small.v1" in out


def test_knowledge_test_runs_examples(tmp_path):
    pack = tmp_path / "acme.yaml"
    pack.write_text(GOOD_PACK)
    code, out = run(["knowledge", "test", str(pack)])
    assert code == 0 and "2 passed, 0 failed" in out
    pack.write_text(
        GOOD_PACK.replace("params: {namespace: ml-team, asked_gib: 80.0}", "params: {asked_gib: 81.0}")
    )
    code, out = run(["knowledge", "test", str(pack)])
    assert code == 1 and "asked_gib: expected 81.0" in out


def test_operator_pack_answers_in_the_bot(monkeypatch, tmp_path):
    from bot.core import GardenBot, Paste
    from bot.detector import Detector
    from knowledge.loader import load_with_extra

    packs = tmp_path / "packs"
    packs.mkdir()
    (packs / "acme.yaml").write_text(GOOD_PACK)
    bot = GardenBot(detector=Detector(load_with_extra(packs)))
    reply = bot.triage(Paste("QuotaExceeded: namespace ml-team asked for 80 GiB", False, []))
    assert reply is not None and "GPU-Quotas" in reply.summary and "ml-team" in reply.summary


def test_stats_from_the_database(monkeypatch, tmp_path):
    from bot.storage import Storage

    db = tmp_path / "bot.sqlite3"
    store = Storage(db)
    store.record_event("discord", "reply", "vllm.kv_cache_too_small.v1", "kv_cache_too_small", 4.0)
    store.record_feedback("discord", "r1", "u1", "vllm.kv_cache_too_small.v1", False)
    store.close()
    monkeypatch.setenv("GPU_GARDEN_DATABASE", str(db))
    code, out = run(["stats", "--since", "24h"])
    assert code == 0 and "vllm.kv_cache_too_small.v1" in out
    code, _ = run(["stats", "--since", "soon"])
    assert code == 2


async def test_runner_serves_health_and_metrics(monkeypatch, tmp_path):
    """The runner starts /healthz and /metrics when a port is set, and stops cleanly."""
    import asyncio

    import aiohttp

    from adapters import runner
    from bot.settings import load_settings

    monkeypatch.setenv("GPU_GARDEN_HEALTH_PORT", "0")
    monkeypatch.setenv("GPU_GARDEN_DATABASE", str(tmp_path / "bot.sqlite3"))
    settings = load_settings()
    started: list = []

    from adapters import health_server

    real_start = health_server.start_health_server

    async def spy(*args, **kwargs):
        server = await real_start(*args, **kwargs)
        started.append(server)
        return server

    monkeypatch.setattr(health_server, "start_health_server", spy)
    task = asyncio.create_task(runner.serve(settings, []))
    for _ in range(100):
        if started:
            break
        await asyncio.sleep(0.02)
    port = health_server.bound_port(started[0])
    async with aiohttp.ClientSession() as http, http.get(f"http://127.0.0.1:{port}/metrics") as resp:
        assert resp.status == 200 and "gpu_garden" in await resp.text()
    task.cancel()
    await asyncio.gather(task, return_exceptions=True)


async def test_runner_waits_before_exiting_on_a_fast_failure(monkeypatch, tmp_path):
    """A platform that fails at once (bad token) makes the runner pause before exiting non-zero."""
    import sys
    import time
    import types

    from adapters import runner
    from bot.settings import load_settings

    async def failing_serve(settings, service, health):
        raise RuntimeError("401 Unauthorized")

    fake = types.ModuleType("fake_platform")
    fake.serve = failing_serve
    monkeypatch.setitem(sys.modules, "fake_platform", fake)
    monkeypatch.setitem(runner.PLATFORM_MODULES, "fake", "fake_platform")
    monkeypatch.setenv("GPU_GARDEN_DATABASE", str(tmp_path / "bot.sqlite3"))
    start = time.monotonic()
    code = await runner.serve(load_settings(), ["fake"], crash_backoff=0.3)
    assert code == 1
    assert time.monotonic() - start >= 0.3


def test_flags_beat_environment_for_the_platform_commands(monkeypatch, tmp_path):
    from adapters.cli import _settings, build_parser

    monkeypatch.setenv("GPU_GARDEN_DATABASE", str(tmp_path / "from-env.sqlite3"))
    monkeypatch.setenv("GPU_GARDEN_LOG_LEVEL", "WARNING")
    args = build_parser().parse_args(["slack", "--database", str(tmp_path / "from-flag.sqlite3")])
    settings = _settings(args.config, args)
    assert settings.database.name == "from-flag.sqlite3"
    assert settings.log_level == "WARNING"  # no flag given: the environment stands
