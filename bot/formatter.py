"""Render a Reply as Markdown (terminal, tests, the full-reply file) and draw the memory bar.

The bar is plain text meant for a monospace block, so it reads the same on every platform.
"""

from __future__ import annotations

from bot.reply import MemoryPicture, Reply

BAR_WIDTH = 48
_SYMBOLS = {
    "weights": "W",
    "activations": "A",
    "activations+other": "A",
    "non-torch": "N",
    "non torch": "N",
    "reserved free": ".",
    "activations and graphs": "A",
    "cuda graphs": "G",
    "other": "o",
    "kv cache": "K",
    "not used (1-util)": ".",
    "free": ".",
    "compute buffers": "C",
    "cuda context": "X",
    "weights+activations+graphs": "W",
}
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


def memory_bar(picture: MemoryPicture, width: int = BAR_WIDTH) -> str:
    """``[WWWWWWWWAAGKKK.....]`` plus a legend line per segment, scaled to the GPU's total."""
    total = max(picture.total_gib, sum(max(0.0, s.gib) for s in picture.segments), 1e-9)
    cells: list[str] = []
    used = 0
    for i, seg in enumerate(picture.segments):
        symbol = _SYMBOLS.get(seg.label, seg.label[:1].upper() or "?")
        n = round(max(0.0, seg.gib) / total * width)
        if seg.gib > 0 and n == 0:
            n = 1
        if i == len(picture.segments) - 1:
            n = max(0, width - used) if seg.gib > 0 else 0
        n = min(n, width - used)
        cells.append(symbol * n)
        used += n
    bar = "[" + "".join(cells).ljust(width, " ") + "]"
    legend = []
    for seg in picture.segments:
        symbol = _SYMBOLS.get(seg.label, seg.label[:1].upper() or "?")
        legend.append(
            f"  {symbol} {seg.label:<26} {seg.gib:7.2f} GiB  ({SOURCE_LABEL.get(seg.source, seg.source)})"
        )
    header = f"{picture.title}: {picture.total_gib:.2f} GiB"
    return "\n".join([header, bar, *legend])


def fence(text: str, lang: str = "") -> str:
    """A code fence the content cannot break out of (longer than any backtick run inside)."""
    longest = 0
    run = 0
    for ch in text:
        run = run + 1 if ch == "`" else 0
        longest = max(longest, run)
    ticks = "`" * max(3, longest + 1)
    return f"{ticks}{lang}\n{text}\n{ticks}"


def to_markdown(reply: Reply, brief: bool = False) -> str:
    out: list[str] = [f"## {reply.title}"]
    if reply.summary:
        out += [
            "",
            reply.summary if not brief else (reply.short or reply.summary.split(". ")[0].rstrip(".") + "."),
        ]
    if not brief:
        for section in reply.sections:
            out += ["", f"**{section.heading}**"]
            if section.body:
                out += [fence(section.body) if section.code else section.body]
            for fact in section.facts:
                out.append(
                    f"- {fact.label}: **{fact.value}** _({SOURCE_LABEL.get(fact.source, fact.source)})_"
                )
        if reply.memory is not None:
            out += ["", fence(memory_bar(reply.memory))]
    grouped = reply.fixes_by_engine()
    if grouped:
        out += ["", "**Fixes**" if not brief else "**Top fix per engine**"]
        for engine, fixes in grouped.items():
            shown = fixes[:1] if brief else fixes
            out += ["", f"_{ENGINE_LABEL.get(engine, engine)}_"]
            for fix in shown:
                cost = f" Cost: {fix.cost}." if fix.cost else ""
                out.append(f"- {fix.change}: {fix.effect}.{cost}")
                out.append(fence(fix.command, "bash"))
    if reply.notes and not brief:
        out += ["", "**Assumptions**"]
        out += [f"- {note}" for note in reply.notes]
    return "\n".join(out).strip() + "\n"
