"""docs/deploy.md, end to end: its commands, in order and as written, on a copy of the repository.

The commands are taken from the guide (each must appear in it verbatim, so the guide and this test
cannot drift apart) and run with bash where a container engine answers ``docker info`` and Compose
is installed; elsewhere the engine part skips.  Placeholders the guide leaves to the operator (the
base image name, a token) are filled in after the verbatim check.  Nothing reaches a real platform:
the started bot fails to connect (no network) and its logs are read instead.
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import uuid
from collections.abc import Iterator
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
GUIDE = (ROOT / "docs" / "deploy.md").read_text(encoding="utf-8")
KV = (
    "ValueError: The model's max seq len (131072) is larger than the maximum number of tokens that can be "
    "stored in KV cache (5728). Try increasing gpu_memory_utilization or decreasing max_model_len when "
    "initializing the engine.\n"
)

ENV = "cp .env.example .env && chmod 600 .env"
CHECK = "docker compose run --rm discord gpu-garden check-config"
KEEP_BASE = "echo 'GPU_GARDEN_BASE_IMAGE=gpu-garden-base:bookworm' >> .env"
BUILD = "docker compose --profile discord --profile slack build"
SECRETS = [
    "mkdir -p secrets && chmod 700 secrets",
    'read -rs -p "Discord token: " TOKEN && printf \'%s\' "$TOKEN" > secrets/discord_token && unset TOKEN',
    "sudo chown 10001:10001 secrets/discord_token && sudo chmod 400 secrets/discord_token",
]
STATS = "docker compose run --rm discord gpu-garden stats --since 7d"
TRIAGE = "docker compose run --rm discord gpu-garden triage - < error.log"
UP = "docker compose --profile discord up -d"
LOGS = (
    'docker compose logs --no-log-prefix discord | jq -R -r \'fromjson? | select(.level != "INFO") | '
    '"\\(.time) \\(.level) \\(.message)"\''
)
DOWN = "docker compose --profile discord --profile slack down"
STEPS = [ENV, CHECK, KEEP_BASE, BUILD, *SECRETS, STATS, TRIAGE, UP, LOGS, DOWN]


def yaml_blocks(title: str) -> list[str]:
    """The guide's ```yaml blocks that start with ``# title``."""
    blocks = re.findall(r"```yaml\n(.*?)```", GUIDE, flags=re.DOTALL)
    return [b for b in blocks if b.startswith(f"# {title}\n")]


def test_every_command_run_here_is_in_the_guide():
    for step in STEPS:
        assert step in GUIDE, step
    (secrets_override,) = [b for b in yaml_blocks("docker-compose.override.yml") if "secrets:" in b]
    assert "GPU_GARDEN_DISCORD_TOKEN_FILE: /run/secrets/discord_token" in secrets_override
    assert "build --pull" in GUIDE  # the registry variant stays documented beside the offline one


def _run(cmd: str, cwd: Path, timeout: float = 600, **kw) -> subprocess.CompletedProcess:
    return subprocess.run(["bash", "-c", cmd], cwd=cwd, capture_output=True, text=True, timeout=timeout, **kw)


def _engine() -> bool:
    if shutil.which("docker") is None:
        return False
    try:
        return subprocess.run(["docker", "info"], capture_output=True, timeout=20).returncode == 0
    except (OSError, subprocess.TimeoutExpired):
        return False


def _compose() -> str | None:
    for cmd in ("docker compose", "docker-compose"):
        try:
            if subprocess.run(f"{cmd} version", shell=True, capture_output=True, timeout=30).returncode == 0:
                return cmd
        except (OSError, subprocess.TimeoutExpired):
            continue
    return None


@pytest.fixture(scope="module")
def site(tmp_path_factory) -> Iterator[tuple[Path, dict[str, str]]]:
    """A copy of the repository to deploy from, and the placeholders to fill in."""
    if not _engine():
        pytest.skip("no Docker engine answers `docker info`")
    compose = _compose()
    if compose is None:
        pytest.skip("neither `docker compose` nor `docker-compose` is installed")
    folder = tmp_path_factory.mktemp("site")
    ignore = shutil.ignore_patterns(
        ".venv", ".git", "__pycache__", "*.egg-info", "*.sqlite3", ".env", "build"
    )
    for item in (
        "pyproject.toml",
        "README.md",
        "Dockerfile",
        ".dockerignore",
        "docker-compose.yml",
        ".env.example",
    ):
        shutil.copy2(ROOT / item, folder / item)
    for package in ("bot", "adapters", "calculator", "knowledge"):
        shutil.copytree(ROOT / package, folder / package, ignore=ignore)
    if os.environ.get("GPU_GARDEN_TEST_WHEELHOUSE"):
        shutil.copytree(os.environ["GPU_GARDEN_TEST_WHEELHOUSE"], folder / "wheels")
    (folder / "error.log").write_text(KV, encoding="utf-8")
    fill = {
        "docker compose": compose,
        "gpu-garden-base:bookworm": os.environ.get("GPU_GARDEN_TEST_BASE_IMAGE", "python:3.12-slim"),
        "sudo ": "" if os.geteuid() == 0 else "sudo ",
    }
    project = f"ggguide{uuid.uuid4().hex[:8]}"
    os.environ["COMPOSE_PROJECT_NAME"] = project
    try:
        yield folder, fill
    finally:
        _run(f"{compose} --profile discord --profile slack down -v", folder)
        os.environ.pop("COMPOSE_PROJECT_NAME", None)


def step(site: tuple[Path, dict[str, str]], command: str, **kw) -> subprocess.CompletedProcess:
    assert command in GUIDE, command
    folder, fill = site
    for placeholder, value in fill.items():
        command = command.replace(placeholder, value)
    return _run(command, folder, **kw)


def test_the_guide_end_to_end(site):
    folder, _fill = site
    assert step(site, ENV).returncode == 0
    assert step(site, KEEP_BASE).returncode == 0
    built = step(site, BUILD, timeout=1800)
    assert built.returncode == 0, (built.stdout + built.stderr)[-3000:]
    untouched = step(site, CHECK)
    assert untouched.returncode == 1
    assert "the discord service needs GPU_GARDEN_DISCORD_TOKEN" in untouched.stdout
    token = ".".join(["MTAwMDAwMDAwMDAwMDAwMDAw", "GabCde", "x" * 38])  # the shape only, never valid
    for command in SECRETS:
        done = step(site, command, input=token + "\n")
        assert done.returncode == 0, done.stderr
    (override,) = [b for b in yaml_blocks("docker-compose.override.yml") if "secrets:" in b]
    (folder / "docker-compose.override.yml").write_text(override, encoding="utf-8")
    checked = step(site, CHECK)
    assert checked.returncode == 0, checked.stdout + checked.stderr
    assert "ok: Discord token present" in checked.stdout
    stats = step(site, STATS)
    assert stats.returncode == 0 and "nothing yet" in stats.stdout, stats.stdout + stats.stderr
    triage = step(site, TRIAGE)
    assert triage.returncode == 0 and "--max-model-len" in triage.stdout, triage.stderr
    assert step(site, UP).returncode == 0  # no network: it fails to connect, logs why, and waits
    logs = ""
    for _ in range(60):
        logs = step(site, LOGS).stdout if shutil.which("jq") else ""
        if "ERROR" in logs:
            break
        subprocess.run(["sleep", "1"])
    if shutil.which("jq"):
        assert "ERROR" in logs and token not in logs
    assert step(site, DOWN).returncode == 0
    left = _run(f"{_fill['docker compose']} --profile discord ps -q", folder)
    assert left.stdout.strip() == ""
