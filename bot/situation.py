"""The situation a paste describes, read once: engine and fork, version, GPUs, model, the user's real
command and the settings in force.  Every value carries its source (your log, your words, catalog,
estimated, computed, default) so replies can say where each number came from."""

from __future__ import annotations

from contextlib import suppress
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

import re2

from bot.detector import Detection, Finding
from bot.gpu_mentions import gpu_backend, gpu_mentions
from bot.safe_text import safe_fields
from bot.shell import Command, find_command
from calculator.commands import SETTING_FLAGS, spellings
from calculator.from_log import speculative_config, speculative_cut
from calculator.plan import Sourced
from calculator.resolve import ModelMatch, NameNotFound, resolve_gpu, resolve_model
from calculator.spec_decode import SPEC_CUT_NOTE, SpecDecode, unknown_draft_note
from knowledge.features import (
    Version,
    engine_mode,
    fork_of,
    host_of,
    parse_version,
    release_at_log_date,
    version_hints,
)
from knowledge.log_lines import release_range
from knowledge.schema import SETTING_CONTEXT_FIELDS as CONTEXT_FIELDS

if TYPE_CHECKING:
    from calculator.catalog import GPU
    from knowledge.levers import Backend


@dataclass
class Gpus:
    """The GPUs the paste shows: how many, which, and what memory the engine sees."""

    count: Sourced | None = None
    name: Sourced | None = None
    per_device_gib: Sourced | None = None  # what the engine sees as total on one device
    gpu: GPU | None = None  # the catalog entry
    note: str = ""
    backend: Backend | None = None  # the GPU stack (bot/gpu_mentions.gpu_backend)

    @property
    def n(self) -> int:
        return int(self.count.value) if self.count else 1


@dataclass
class Situation:
    """What the paste says about the user's setup: engine, version, command, GPUs, model."""

    root: Finding
    engine: str
    fork: str | None
    version: Version | None
    version_src: Sourced | None
    command: Command | None
    gpus: Gpus
    model_name: str | None
    model: ModelMatch | None
    settings: dict[str, Sourced]
    params: dict[str, Any]
    context: dict[str, Any]
    notes: list[str] = field(default_factory=list)
    engine_mode: str | None = None  # vLLM "v0" / "v1" when a marker proves it (knowledge/features.yaml)
    spec: SpecDecode | None = None  # vLLM's speculative config as the paste shows it (its drafter's KV)

    def setting(self, name: str) -> Any:
        s = self.settings.get(name)
        return s.value if s else None

    def get(self, name: str, default: Any = None) -> Any:
        """A number the paste printed (any finding's capture, then the context)."""
        return self.params[name] if name in self.params else self.context.get(name, default)


def _version(
    detection: Detection, root: Finding, engine: str, text: str
) -> tuple[Version | None, Sourced | None]:
    printed = detection.context.get("engine_version")
    v = parse_version(str(printed)) if printed else None
    if v is not None:
        return v, Sourced(str(printed), "log", "printed in your log")
    dated = release_at_log_date(engine, detection.raw)
    by_date = None
    if dated is not None:
        how = f"from your log's date ({dated[1]}): the newest release then"
        by_date = parse_version(dated[0]), Sourced(f"<={dated[0]}", "estimated", how)
    markers = [m for m in version_hints(engine, text) if m.since or m.until]
    lines = release_range(detection.raw) if engine == "vllm" else None
    if lines is not None:  # the range the log's source lines allow, narrowed by the markers it fits
        low, high = parse_version(lines.since) or (0, 0, 0), parse_version(lines.last) or (0, 0, 0)
        fits = [
            (v, m.since) for m in markers if m.since and (v := parse_version(m.since)) and low < v <= high
        ]
        low, since = max([(low, lines.since), *fits])
        return low, Sourced(lines.text(since), "estimated", "from your log's source line numbers")
    for marker in markers:
        bound = marker.since or marker.until
        v = parse_version(marker.since) if marker.since else _before(parse_version(marker.until))
        if by_date and marker.until and v and by_date[0] and by_date[0] < v:
            return by_date  # the log's date bounds it tighter than the marker
        return v, Sourced(f"{'>=' if marker.since else '<'}{bound}", "estimated", f"from {marker.how}")
    if by_date:
        return by_date
    if root.versions:
        v = parse_version(root.versions.lstrip("<>="))
        if root.versions.startswith("<") and not root.versions.startswith("<="):
            v = _before(v)
        return v, Sourced(root.versions, "estimated", "from the error's wording")
    return None, None


def _before(v: Version | None) -> Version | None:
    if v is None:
        return None
    major, minor, _patch = v
    return (major, max(0, minor - 1), 99) if minor else (max(0, major - 1), 99, 99)


def _read_gpus(detection: Detection, text: str) -> Gpus:
    ctx = detection.context
    gpus = Gpus()
    mentions = gpu_mentions(text)
    if name := ctx.get("gpu"):
        gpus.name = Sourced(str(name), "log")
    for m in mentions:
        if gpus.name is None and m.name:
            gpus.name = Sourced(m.name, "user" if m.where == "your words" else "log", m.where)
        if gpus.count is None and m.count:
            gpus.count = Sourced(m.count, "user" if m.where == "your words" else "log", m.where)
        if gpus.per_device_gib is None and m.memory_gib and m.where == "nvidia-smi":
            gpus.per_device_gib = Sourced(round(m.memory_gib, 2), "log", "nvidia-smi")
    if ctx.get("gpu_count"):
        gpus.count = Sourced(int(ctx.get("gpu_count")), "log")
    if ctx.get("gpu_total_gib"):
        gpus.per_device_gib = Sourced(float(ctx.get("gpu_total_gib")), "log")
    if gpus.name is not None:
        size = next((m.memory_gib for m in mentions if m.where == "your words" and m.memory_gib), None)
        gpus.gpu, gpus.note = _resolve_gpu(str(gpus.name.value), size)
    if gpus.per_device_gib is None and gpus.gpu is not None:
        gpus.per_device_gib = Sourced(round(gpus.gpu.total_gib, 2), "catalog", gpus.gpu.name)
    gpus.backend = gpu_backend(text, gpus.gpu.vendor if gpus.gpu else None)
    return gpus


def _resolve_gpu(query: str, size_gb: float | None) -> tuple[GPU | None, str]:
    for q in ([f"{query} {int(size_gb)}gb"] if size_gb else []) + [query]:
        try:
            return resolve_gpu(q), ""
        except NameNotFound as exc:
            if exc.ambiguous and exc.candidates:
                last = f"{query} could be {', '.join(exc.candidates[:3])}: the numbers assume nothing about which"
                continue
            last = f"the GPU {query} is not in my catalog"
    return None, last


_QUANT_SUFFIX = re2.compile(
    r"(?i)[-_.](?:i?q[0-9]_[a-z0-9_]+|f16|bf16|fp16|f32|q8_0|mxfp4|awq|gptq(?:-int[48])?|fp8(?:-dynamic)?|nvfp4)$"
)


def model_query(name: str) -> str:
    """A path names its model by its last component (``/data/qwen/Qwen1.5-32B-Chat-AWQ``,
    ``models/Meta-Llama-3.1-8B-Instruct-Q4_K_M.gguf``); file extensions are dropped."""
    name = name.strip().strip("\"'").rstrip("/\\")
    if ("/" in name and (name.startswith(("/", ".", "~")) or name.count("/") > 1)) or "\\" in name:
        name = name.replace("\\", "/").split("/")[-1]
    for ext in (".gguf", ".bin", ".safetensors"):
        name = name.removesuffix(ext)
    return name


def resolve_pasted_model(name: str) -> ModelMatch:
    """The catalog entry for a name from a paste; Ollama blob paths name no model."""
    if "/blobs/sha256-" in name or name.startswith("sha256-"):
        raise NameNotFound("model", name, [])
    query = model_query(name)
    for candidate in (query, _QUANT_SUFFIX.sub("", query)):
        try:
            return resolve_model(candidate)
        except NameNotFound:
            continue
    raise NameNotFound("model", query, [])


def _model(name: str | None, notes: list[str], text: str) -> ModelMatch | None:
    """The catalog entry for the model the paste names; else the geometry its own log prints."""
    found: ModelMatch | None = None
    if name:
        with suppress(NameNotFound):
            found = resolve_pasted_model(name)
    if found is None:
        from bot.model_sources import from_paste

        read = from_paste(text)
        if read is not None:
            notes.extend(read.notes[:1])
            return ModelMatch(read.model, read.variant, "")
        if name:
            notes.append(f"the model {name} is not in my catalog; its numbers come from your log only")
        return None
    if found.note:
        notes.append(found.note)
    return found


def _settings(engine: str, command: Command | None, context: dict[str, Any]) -> dict[str, Sourced]:
    out: dict[str, Sourced] = {}
    for setting, field_name in CONTEXT_FIELDS.get(engine, {}).items():
        if context.get(field_name) is not None:
            out[setting] = Sourced(context[field_name], "log")
    if command is not None and command.engine == engine:
        for setting, flag in SETTING_FLAGS.get(engine, {}).items():
            raw = command.flag(*spellings(engine, flag))
            if raw is None:
                continue
            value = _setting_value(setting, raw)
            if value is not None:
                out[setting] = Sourced(value, "user", "your command")
    return out


def _setting_value(setting: str, raw: str) -> Any:
    if setting in ("eager", "no_kv_offload"):
        return raw == "" or raw.lower() in ("1", "true", "on")
    if setting in ("max_len", "tp", "pp", "max_seqs", "batched_tokens", "gpu_layers", "parallel", "ubatch"):
        num = raw.lower().removesuffix("k")
        if not num.isdigit():
            return None
        value = int(num) * (1024 if raw.lower().endswith("k") else 1)
        return value if 0 < value < 1 << 27 else None
    if setting == "util":
        try:
            util = float(raw)
        except ValueError:
            return None
        return util if 0 < util <= 1 else None
    return raw


# flags that make an engine print something and exit without loading a model (llama.cpp common/arg.cpp:
# --list-devices "print list of available devices and exit", --version, -h/--help; vLLM's --version, --help):
# a command with one is the user's look at the machine, not the run that failed, so no fix is built on it
_QUERY_FLAGS = frozenset({"--list-devices", "--version", "--help", "-h"})


def read(detection: Detection, root: Finding) -> Situation:
    text = detection.normalized.views[0].text
    command = find_command(text)
    if command is not None and any(tok.partition("=")[0] in _QUERY_FLAGS for tok in command.argv):
        command = None
    engine = command.engine if command is not None and root.engine in ("custom", "pytorch") else root.engine
    engine = host_of(engine, detection.raw if isinstance(detection.raw, str) else "") or engine
    notes: list[str] = []
    context = safe_fields(dict(detection.context.fields))  # a GPU name or model id that is not one stays out
    params: dict[str, Any] = dict(root.params)
    for f in detection.findings:
        for k, v in f.params.items():
            params.setdefault(k, v)
    params = safe_fields(params)
    model_name = context.get("model")
    if command is not None and command.engine == engine:
        spelled = command.flag(*spellings(engine, SETTING_FLAGS.get(engine, {}).get("model", "--model")))
        model_name = spelled or _positional_model(command) or model_name
    model = _model(str(model_name) if model_name else None, notes, text)
    version, version_src = _version(detection, root, engine, text)
    gpus = _read_gpus(detection, text)
    if gpus.note:
        notes.append(gpus.note)
    if gpus.gpu is not None and gpus.gpu.assumed:
        notes.append(gpus.gpu.assumed)
    spec = speculative_config(text) if engine == "vllm" else None
    if spec is not None and model is not None and (note := unknown_draft_note(model.model, spec)):
        notes.append(note)
    elif spec is None and engine == "vllm" and speculative_cut(text):
        notes.append(SPEC_CUT_NOTE)
    return Situation(
        root=root,
        engine=engine,
        fork=fork_of(engine, text),
        version=version,
        version_src=version_src,
        command=command if command is not None and command.engine == engine else None,
        gpus=gpus,
        model_name=str(model_name) if model_name else None,
        model=model,
        settings=_settings(engine, command, context),
        params=params,
        context=context,
        notes=notes,
        engine_mode=engine_mode(engine, text),
        spec=spec,
    )


def _positional_model(command: Command) -> str | None:
    if command.interface == "python":
        value = command.kwargs.get("model")
        return str(value) if value else None
    argv = command.argv
    if len(argv) >= 3 and argv[1] in ("serve", "run") and not argv[2].startswith("-"):
        return argv[2]
    return None
