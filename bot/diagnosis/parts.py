"""Pieces every diagnosis form uses: filling the signature's sentences, the facts with their sources,
the memory picture from a budget outcome, advice that changes no budget term, other engines' one-line
fixes, and hardware when no software fix exists."""

from __future__ import annotations

import string
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any, cast

import re2

from bot.diagnosis.budgets import budget_for
from bot.diagnosis.commands import as_addition, user_command
from bot.diagnosis.fixes import Goal, available, candidates, to_fixes
from bot.reply import Fact, Fix, MemoryPicture, MemorySegment, Reply, Section
from bot.situation import Situation
from calculator.plan import Outcome
from calculator.units import fmt_tokens
from knowledge.features import quant_min_capability, supports
from knowledge.levers import lever_for

_SENTENCE_END = re2.compile(r"(?:[.!?])\s+")
# what an unknown {name} becomes until its sentence is dropped: not "?", which would end the sentence there
_UNKNOWN = "\ufffc"
_MISSING = re2.compile(_UNKNOWN)

if TYPE_CHECKING:
    from calculator.catalog import GPU
    from calculator.estimate import EngineName


class _SafeDict(dict):
    def __missing__(self, key: str) -> str:
        return _UNKNOWN


def fmt(value: Any) -> str:
    if isinstance(value, bool):
        return str(value).lower()
    if isinstance(value, int):
        return f"{value:,}"
    if isinstance(value, float):  # a fraction keeps its third decimal: SGLang's "above 0.773" is not 0.77
        places = 3 if abs(value) < 1 else 2
        return f"{value:,.{places}f}".rstrip("0").rstrip(".") if abs(value) < 1e6 else f"{value:,.0f}"
    return str(value)


def fill(template: str, values: dict[str, Any]) -> str:
    """``{name}`` filled; sentences missing a number dropped (a value's own ". " is held by a NUL)."""
    safe = _SafeDict({k: fmt(v).replace(". ", ".\0 ") for k, v in values.items()})
    try:
        text = string.Formatter().vformat(template, (), safe).strip()
    except (ValueError, IndexError, KeyError):
        text = template.strip()
    return " ".join(s.replace("\0", "") for s in _split_sentences(text) if s and not _MISSING.search(s))


def _split_sentences(text: str) -> list[str]:
    out, start = [], 0
    for m in _SENTENCE_END.finditer(text):
        out.append(text[start : m.start() + 1].strip())
        start = m.end()
    out.append(text[start:].strip())
    return out


def cause(situation: Situation) -> str:
    return (
        fill(situation.root.cause_template, {**situation.context, **situation.params}) or situation.root.title
    )


def _fact_value(name: str, value: Any) -> str:
    if isinstance(value, int | float) and not isinstance(value, bool):
        if name.endswith("_gib"):
            return f"{value:.2f} GiB"
        if name.endswith("_mib"):
            return f"{value:,.0f} MiB"
    return fmt(value)


def _fact_label(name: str) -> str:
    for suffix in ("_gib", "_mib", "_bytes"):
        name = name.removesuffix(suffix)
    return name.replace("_", " ")


def log_facts(situation: Situation) -> list[Fact]:
    """Every number the root finding printed, as printed."""
    return [
        Fact(_fact_label(k), _fact_value(k, v), "log")
        for k, v in situation.root.params.items()
        if v is not None
    ]


def setup_facts(situation: Situation) -> list[Fact]:
    facts: list[Fact] = []
    g = situation.gpus
    if g.gpu is not None or g.name is not None:
        name = g.gpu.name if g.gpu else str(g.name.value if g.name else "")
        count = f"{g.n}x " if g.count and g.n > 1 else ""
        src = "user" if g.name and g.name.source == "user" else ("log" if g.name else "catalog")
        facts.append(Fact("GPU", count + name, _reply_source(src)))
    if (memory := g.per_device_gib) is not None:
        facts.append(Fact("memory per GPU", f"{memory.value:.2f} GiB", _reply_source(memory.source)))
    if situation.model is not None:
        facts.append(Fact("model", situation.model.label, "catalog"))
    if (version := situation.version_src) is not None:
        how = "" if version.source == "log" else f" ({version.how})"
        facts.append(
            Fact(f"{situation.engine} version", f"{version.value}{how}", _reply_source(version.source))
        )
    return facts


def _reply_source(source: str) -> Any:
    return {"user": "given", "default": "estimated"}.get(source, source)


def picture(outcome: Outcome | None, title: str) -> MemoryPicture | None:
    if outcome is None or not outcome.total_gib:
        return None
    segs = [MemorySegment(t.name, t.gib, _reply_source(t.source)) for t in outcome.terms if t.gib > 0.005]
    used = sum(s.gib for s in segs)
    top = outcome.target_gib or outcome.total_gib
    if outcome.target_gib and outcome.total_gib - outcome.target_gib > 0.01:
        segs.append(MemorySegment("not used (1-util)", outcome.total_gib - outcome.target_gib, "computed"))
    elif top - used > 0.01:
        segs.append(MemorySegment("free", top - used, "computed"))
    return MemoryPicture(outcome.total_gib, segs, title, outcome.target_gib)


_PLACEHOLDER = re2.compile(r"\{([a-z_]+)\}")


def filled(template: str, situation: Situation, number: Any = str) -> str | None:
    """``{name}`` placeholders filled with the numbers the paste printed; None when one is missing."""
    values = {}
    for name in _PLACEHOLDER.findall(template):
        value = situation.get(name)
        if value is None:
            return None
        values[name] = (
            number(int(value)) if isinstance(value, float) and value.is_integer() else number(value)
        )
    return template.format(**values) if values else template


def advice_fixes(situation: Situation, remedies: list[str]) -> list[Fix]:
    """Levers that change no budget term but come with a command: a diagnostic (what holds memory), or
    an action whose values the paste printed (``{name}`` placeholders, offered only when all are there)."""
    out: list[Fix] = []
    for name in remedies:
        lev = lever_for(name)
        template = lev.command_for(situation.gpus.backend) if lev is not None and lev.knob == "none" else None
        if lev is None or not template:
            continue
        command = filled(template, situation)
        if command is None or any(f.command == command for f in out):
            continue
        effect = (
            filled(lev.effect, situation, fmt) if lev.effect else "shows what holds the memory"
        ) or lev.change
        sized = command != template  # an action sized by the paste's numbers, else a diagnostic
        kind = "request" if sized else "diagnostic"
        out.append(Fix("any", lev.change, command, effect, lev.cost, 5 if sized else 50, {"kind": kind}))
    return out


def env_fixes(situation: Situation, remedies: list[str], engine: str) -> list[Fix]:
    """Levers that are a setting with a fixed value and no budget term (``--dtype half``)."""
    out: list[Fix] = []
    for name in remedies:
        lev = lever_for(name)
        if lev is None or lev.knob != "none" or not available(lev, engine, situation):
            continue
        spelling = lev.engines[engine]
        if engine == "pytorch":
            command = f"{spelling.env}={spelling.value} python your_script.py"
        elif spelling.flag:  # "unset": the flag removed; "{name}": the number the paste printed
            value = None if spelling.value == "unset" else filled(spelling.value or "", situation)
            if value is None and spelling.value != "unset":
                continue
            command = user_command(situation, engine, {spelling.flag: value})
        elif spelling.env:
            command = user_command(situation, engine, {}, {spelling.env: spelling.value or ""})
        else:
            continue
        effect = filled(lev.effect, situation, fmt) or lev.change
        out.append(Fix(engine, lev.change, command, effect, lev.cost, 10, {"kind": "setting"}))
    return out


def self_fit_fixes(situation: Situation) -> list[Fix]:
    """When the budget cannot be computed from the paste: let the engine size it itself, where the
    paste's version has that (vLLM ``--max-model-len auto`` from 0.14, llama.cpp ``--fit`` from b7407).
    The engine's own fit makes the command start; its cost is a context the engine picks."""
    engine = situation.engine
    if (
        engine == "vllm"
        and supports(situation.version, "vllm.max_model_len_auto", situation.fork) is not False
    ):
        command = user_command(situation, "vllm", {"--max-model-len": "auto"})
        return [Fix("vllm", "let vLLM pick the longest context that fits", command,
                    "vLLM >= 0.14 fits max_model_len to the KV cache at start", "the context is whatever fits", 5,
                    {"starts": "sized by the engine", "kind": "auto-fit", "needs": "vLLM 0.14 or newer"})]  # fmt: skip
    if (
        engine == "llama.cpp"
        and "fit" in situation.root.remedies
        and supports(situation.version, "llamacpp.fit", situation.fork) is not False
    ):
        # --fit is on by default and sizes only what the command leaves unset ("-fit, --fit [on|off] whether to
        # adjust unset arguments to fit in device memory ... default: 'on'", tools/server/README.md, PR #16653):
        # adding it changes nothing, unsetting the user's -c / -ngl / -ts (or a -fit off) is the fix
        unpin: dict[str, str | None] = {"-c": None, "-ngl": None, "-ts": None}
        own = situation.command
        if own is None or own.engine != "llama.cpp":
            return [Fix("llama.cpp", "leave -ngl, -c, -ts and -ot out of your llama.cpp command", "",
                        "--fit (on by default from b7407; older builds lack it) then moves layers to the CPU and shrinks the context until the load fits; it does not change what you set", "a smaller context or fewer layers on the GPU", 5, {"kind": "advice"})]  # fmt: skip
        if user_command(situation, "llama.cpp", unpin) == user_command(situation, "llama.cpp", {}) and own.flag("--fit", "-fit") != "off":  # fmt: skip
            return []  # nothing pins it: --fit already sized this load
        command = user_command(situation, "llama.cpp", {**unpin, "--fit": "on"})
        return [Fix("llama.cpp", "leave the layers and the context to --fit (your -ngl, -c and -ts removed)", command,
                    "llama.cpp (b7407+) moves layers and shrinks the context until it fits", "a smaller context or fewer layers on the GPU", 5,
                    {"starts": "sized by the engine", "kind": "auto-fit", "needs": "llama.cpp b7407 or newer"})]  # fmt: skip
    return []


OTHER_ENGINES = {"vllm": ("llama.cpp", "ollama"), "sglang": ("vllm",), "tgi": ("vllm",)}


def other_engine_lines(situation: Situation, length: int | None) -> list[Fix]:
    """The same model on another engine, each on its own budget: one line each."""
    if situation.model is None or situation.gpus.per_device_gib is None:
        return []
    out: list[Fix] = []
    for engine in OTHER_ENGINES.get(situation.engine, ()):
        budget = budget_for(situation, engine)
        if budget is None:
            continue
        remedies = {
            "llama.cpp": ["ctx_size", "cache_type"],
            "ollama": ["ollama_context_length", "ollama_kv_cache_type"],
        }.get(engine, ["max_model_len", "kv_cache_dtype"])
        found = candidates(situation, budget, remedies, Goal(length=length, may_shorten=True))
        for fix in to_fixes(situation, budget, found[-1:], Goal(length=length), limit=1):
            fix.rank = 90
            out.append(fix)
    return out


def _runs(gpu: GPU, quant: str | None) -> bool:
    """Only hardware that runs the checkpoint: vLLM's minimum capability for its quantization on NVIDIA
    (knowledge/features.yaml), fp8 / fp4 support elsewhere."""
    if quant is None:
        return True
    if gpu.vendor == "nvidia" and gpu.cc is not None:
        need = quant_min_capability(quant.split("-")[0], None)
        return need is None or gpu.cc >= need
    if quant.startswith("fp8"):
        return gpu.fp8
    if quant == "nvfp4":
        return gpu.fp4
    return True


def hardware(situation: Situation, length: int | None) -> Section | None:
    """When no software fix exists: the smallest setups from the catalog that serve the model."""
    if situation.model is None:
        return None
    from calculator.matchmaker import gpus_for_model

    known = situation.engine in ("vllm", "llama.cpp", "ollama", "sglang")
    engine = cast("EngineName", situation.engine) if known else "vllm"
    variant = situation.model.variant
    options = [
        o
        for o in gpus_for_model(situation.model.model, variant, context=length, engine=engine, limit=8)
        if _runs(o.gpu, variant.quant if variant else None)
    ][:3]
    if not options:
        return Section(
            "Hardware",
            body=f"No setup of up to 8 GPUs in my catalog serves {situation.model.label} at {fmt_tokens(length)} tokens.",
        )
    lines = [
        f"- {o.count}x {o.gpu.name}: {o.total_gib:.0f} GiB in total"
        if o.count > 1
        else f"- {o.gpu.name}: {o.total_gib:.0f} GiB"
        for o in options
    ]
    return Section("Hardware that serves it", body="\n".join(lines))


def reply(situation: Situation, title: str, key_point: str | None, fixes: list[Fix], facts: list[Fact] | None = None,
          memory: MemoryPicture | None = None, extra: Sequence[Section | None] | None = None,
          data: dict | None = None) -> Reply:  # fmt: skip
    """A diagnosis reply; ``facts`` None: the numbers the paste printed and its setup."""
    facts = log_facts(situation) + setup_facts(situation) if facts is None else facts
    why = cause(situation)
    key_point = key_point or why
    sections = [Section("Why", body=why)] if why != key_point else []
    if facts:
        sections.append(Section("Your numbers", facts=facts))
    sections += [s for s in extra or [] if s is not None]
    return Reply(
        kind="diagnosis",
        title=title,
        summary=key_point,
        short=key_point.split(". ")[0].rstrip(".") + ".",
        sections=sections,
        fixes=[as_addition(f) for f in fixes],
        memory=memory,
        notes=list(situation.notes),
        data=data or {},
    )
