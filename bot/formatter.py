"""Render a Reply as Markdown (terminal, tests, the full-reply file) and draw the memory bar.

The bar is plain text meant for a monospace block, so it reads the same on every platform."""

from __future__ import annotations

import math

import re2

from bot.reply import Fix, MemoryPicture, Reply

BAR_WIDTH = 48
_BACKTICKS = re2.compile("`+")
# each kind of memory by its bar symbol, with the labels that name it (the engines' spellings)
MEMORY_KINDS: dict[str, tuple[str, ...]] = {
    "W": ("weights", "weights+activations+graphs"),
    "A": ("activations", "activations+other", "activations and graphs"),
    "N": ("non-torch", "non torch"),
    "G": ("cuda graphs",),
    "o": ("other",),
    "K": ("kv cache",),
    "C": ("compute buffers",),
    "X": ("cuda context",),
    "H": ("held by others",),
    "-": ("not used (1-util)", "reserved free"),
    ".": ("free",),
}
_SYMBOLS = {label: symbol for symbol, labels in MEMORY_KINDS.items() for label in labels}
SOURCE_LABEL = {
    "log": "from your log",
    "estimated": "estimated",
    "given": "you gave it",
    "catalog": "catalog",
    "computed": "computed",
}
ENGINE_LABEL = {
    "vllm": "vLLM",
    "llama.cpp": "llama.cpp",
    "ollama": "Ollama",
    "sglang": "SGLang",
    "tgi": "TGI",
    "transformers": "transformers",
    "pytorch": "PyTorch",
    "any": "Any engine",
}


def target_of(picture: MemoryPicture) -> float | None:
    """The engine's target when the picture has a usable one (a positive number of GiB)."""
    t = picture.target_gib
    return t if t is not None and math.isfinite(t) and t > 0 else None


def memory_bar(picture: MemoryPicture, width: int = BAR_WIDTH) -> str:
    """``[WWWWWWWWAAGKKK|....]`` plus a legend line per segment, scaled to the GPU's total; ``|`` marks
    the engine's target (utilization x total) in the cell it falls in, when the picture has one."""
    total = max(picture.total_gib, sum(max(0.0, s.gib) for s in picture.segments), 1e-9)
    symbols = [_SYMBOLS.get(seg.label, seg.label[:1].upper() or "?") for seg in picture.segments]
    bar = ""
    for i, seg in enumerate(picture.segments):
        n = round(max(0.0, seg.gib) / total * width)
        if seg.gib > 0 and n == 0:
            n = 1
        if i == len(picture.segments) - 1:
            n = max(0, width - len(bar)) if seg.gib > 0 else 0
        bar += symbols[i] * min(n, width - len(bar))
    bar = bar.ljust(width, " ")
    target = target_of(picture)
    if target:  # the engine's target (utilization x total) at its cell
        at = min(width - 1, int(target / total * width))
        bar = bar[:at] + "|" + bar[at + 1 :]
    bar = f"[{bar}]"
    legend = [
        f"  {symbol} {seg.label:<26} {seg.gib:7.2f} GiB  ({SOURCE_LABEL.get(seg.source, seg.source)})"
        for symbol, seg in zip(symbols, picture.segments, strict=True)
    ]
    if target:
        legend.append(f"  | {'target (util x total)':<26} {target:7.2f} GiB")
    return "\n".join([f"{picture.title}: {picture.total_gib:.2f} GiB", bar, *legend])


def fence(text: str, lang: str = "") -> str:
    """A code fence the content cannot break out of (longer than any backtick run inside)."""
    longest = max((len(run) for run in _BACKTICKS.findall(text)), default=0)
    ticks = "`" * max(3, longest + 1)
    return f"{ticks}{lang}\n{text}\n{ticks}"


def _fix_lines(fix: Fix, lead: str) -> list[str]:
    cost = f" Cost: {fix.cost}." if fix.cost else ""
    head = f"{lead} {fix.change}: {fix.effect}.{cost}"
    return [head, fence(fix.command, "bash")] if fix.command else [head]


def _one_line(fix: Fix) -> str:
    command = fix.command if "\n" not in fix.command else fix.command.replace("\n", " ; ")
    return f"- on {ENGINE_LABEL.get(fix.engine, fix.engine)}: `{command}` ({fix.effect})"


def to_markdown(reply: Reply, brief: bool = False, full: bool = False) -> str:
    """The chat-sized reply (the key point, the fix, two alternatives, other engines in a line each);
    ``full``: everything (why, numbers with sources, memory bar, every fix with its prediction)."""
    if full or reply.kind != "diagnosis":
        return _full(reply)
    out: list[str] = [f"## {reply.title}"]
    if reply.summary:
        out += ["", reply.short if brief and reply.short else reply.summary]
    own, others = reply.chat_fixes()
    for i, fix in enumerate(own[: 1 if brief else 3]):
        out += ["", *_fix_lines(fix, "**Fix:**" if i == 0 else "**Or:**")]
    if others and not brief:
        out += ["", "Same model elsewhere:"] + [_one_line(f) for f in others]
    if not own and not brief:
        for section in reply.sections:
            if section.heading.startswith("Hardware") or section.heading == "What to do":
                out += ["", f"**{section.heading}**", section.body]
    if reply.notes and not brief:
        out += [""] + [f"_{note}_" for note in reply.notes[-3:]]
    return "\n".join(out).strip() + "\n"


def _full(reply: Reply) -> str:
    out: list[str] = [f"## {reply.title}"]
    if reply.summary:
        out += ["", reply.summary]
    for section in reply.sections:
        out += ["", f"**{section.heading}**"]
        if section.body:
            out += [section.body]
        for fact in section.facts:
            out.append(f"- {fact.label}: **{fact.value}** _({SOURCE_LABEL.get(fact.source, fact.source)})_")
    if reply.memory is not None:
        out += ["", fence(memory_bar(reply.memory))]
    if grouped := reply.fixes_by_engine():
        out += ["", "**Fixes**"]
        for engine, fixes in grouped.items():
            out += ["", f"_{ENGINE_LABEL.get(engine, engine)}_"]
            for fix in fixes:
                out += _fix_lines(fix, "-")
                if fix.verification:
                    checked = ", ".join(f"{k} {v}" for k, v in fix.verification.items() if v is not None)
                    out.append(f"  _checked on the budget: {checked}_")
    if reply.notes:
        out += ["", "**Assumptions**", *(f"- {note}" for note in reply.notes)]
    return "\n".join(out).strip() + "\n"
