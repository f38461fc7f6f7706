"""A plan as the command the user types: their own command line (same engine only) with just the
changed settings, or a minimal one; ``LLM(...)`` keyword arguments for vLLM's Python API; Ollama's
environment and per-model parameters."""

from __future__ import annotations

from bot.formatter import ENGINE_LABEL
from bot.reply import Fix
from bot.shell import Command, render
from bot.situation import Situation
from calculator.commands import FLAG_GROUPS
from calculator.plan import Plan
from calculator.units import GIB
from knowledge.features import supports
from knowledge.levers import Lever, levers


def _lever_for_knob(knob: str, engine: str, value: object) -> Lever | None:
    for lev in levers().levers:
        if lev.knob != knob or engine not in lev.engines:
            continue
        fixed = lev.engines[engine].value
        if knob == "max_len" and (fixed == "auto") != (value == "auto"):
            continue
        if knob == "util" and lev.id != "raise_util":
            continue
        return lev
    return None


def _value(knob: str, plan: Plan) -> object:
    value = getattr(plan, knob)
    if knob == "kv_cache_gib" and value is not None:
        return str(int(value * GIB))
    if knob == "util" and value is not None:
        return f"{value:.2f}"
    return value


def changes_for(
    engine: str, plan0: Plan, plan: Plan
) -> tuple[dict[str, str | None], dict[str, str], dict[str, str]]:
    """(flags, env, per-model params) that turn ``plan0`` into ``plan`` on ``engine``."""
    flags: dict[str, str | None] = {}
    env: dict[str, str] = {}
    params: dict[str, str] = {}
    for knob in plan.__dataclass_fields__:
        new, old = getattr(plan, knob), getattr(plan0, knob)
        if new == old or (knob == "parallel" and engine == "vllm"):
            continue
        lev = _lever_for_knob(knob, engine, new)
        if lev is None:
            continue
        spelling = lev.engines[engine]
        value = spelling.value if spelling.value is not None else _value(knob, plan)
        text = "" if value is True else str(value)
        if spelling.flag:
            flags[spelling.flag] = text
            flags.update(spelling.also)
        elif spelling.env:
            env[spelling.env] = text
        if spelling.param:
            params[spelling.param] = text
    return flags, env, params


def _base(situation: Situation, engine: str) -> Command:
    if situation.command is not None and situation.command.engine == engine:
        return situation.command
    model = situation.model_name or (situation.model.label if situation.model else "<model>")
    argv = {
        "vllm": ["vllm", "serve", model],
        "sglang": ["python", "-m", "sglang.launch_server", "--model-path", model],
        "llama.cpp": ["llama-server", "-m", model if model.endswith(".gguf") else _gguf_name(situation)],
        "tgi": ["text-generation-launcher", "--model-id", model],
    }[engine]
    return Command(engine, "cli", [], argv)


def _gguf_name(situation: Situation) -> str:
    """The GGUF file the llama.cpp budget assumed (the model's Q4_K_M), by its usual file name."""
    if situation.model is None:
        return "MODEL.gguf"
    return situation.model.model.id.split("/")[-1] + "-Q4_K_M.gguf"


def user_command(
    situation: Situation, engine: str, flags: dict[str, str | None], env: dict[str, str] | None = None
) -> str:
    """The user's command for ``engine`` (or a minimal one) with only ``flags`` and ``env`` changed."""
    groups, switches = FLAG_GROUPS.get(engine, ([], set()))
    return render(_base(situation, engine), flags, groups, switches, env)


def fa_on(situation: Situation) -> str:
    """The -fa value that turns flash attention on: ``on`` where -fa takes a value, nothing before."""
    version = situation.version if situation.engine == "llama.cpp" else None
    return "" if supports(version, "llamacpp.fa_value", situation.fork) is False else "on"


def _flash_attn(situation: Situation, flags: dict[str, str | None]) -> None:
    """A quantized V cache needs flash attention on."""
    if flags.get("-ctv") not in (None, "f16", "f32", "bf16"):
        flags["-fa"] = fa_on(situation)


def command_for(situation: Situation, engine: str, plan0: Plan, plan: Plan) -> str | None:
    flags, env, params = changes_for(engine, plan0, plan)
    if not (flags or env or params):
        return None
    if engine == "ollama":
        return _ollama(situation, env, params)
    if engine == "llama.cpp":
        _flash_attn(situation, flags)
    return user_command(situation, engine, flags, env)


def _ollama(situation: Situation, env: dict[str, str], params: dict[str, str]) -> str:
    tag = _ollama_tag(situation)
    if (
        "OLLAMA_KV_CACHE_TYPE" in env
        and supports(situation.version, "ollama.kv_type_needs_flash_env") is not False
    ):
        env = {**env, "OLLAMA_FLASH_ATTENTION": "1"}
    lines = []
    if "OLLAMA_CONTEXT_LENGTH" in env:
        params.pop("num_ctx", None)
    if env:
        lines.append(" ".join(f"{k}={v}" for k, v in env.items()) + " ollama serve")
    if params or tag != "<model>":
        lines.append(f"ollama run {tag}")
    lines += [f">>> /set parameter {k} {v}" for k, v in params.items()]
    return "\n".join(lines)


def _ollama_tag(situation: Situation) -> str:
    command = situation.command
    if command is not None and command.engine == "ollama" and len(command.argv) > 2:
        return command.argv[2]
    name = situation.model_name or ""
    if ":" in name and "/" not in name:
        return name
    if situation.model is not None:
        tag = next((v.ollama for v in situation.model.model.variants if v.ollama), None)
        if tag:
            return tag
    return "<model>"


PLACEHOLDERS = ("<model>", "MODEL.gguf")


def as_addition(fix: Fix) -> Fix:
    """A command built on a placeholder (no command and no model in the paste) would not start as
    printed: it becomes the action of adding its environment and flags to the user's own command."""
    mark = next((m for m in PLACEHOLDERS if m in fix.command), None)
    if mark is None or "\n" in fix.command:
        return fix
    head, _, tail = fix.command.partition(mark)
    env = " ".join(t for t in head.split() if "=" in t and not t.startswith("-"))
    tail = tail.strip()
    said = " and ".join([*([f"set `{env}`"] if env else []), *([f"add `{tail}`"] if tail else [])])
    where = ENGINE_LABEL.get(fix.engine, fix.engine)
    fix.change = f"{fix.change} ({said} to your {where} command)" if said else fix.change
    fix.command, fix.adds = "", f"{env} {tail}".strip()
    return fix
