"""Host memory, crashed runners, requests longer than the context, quantized KV without flash
attention, bad arguments (llama.cpp / Ollama), and pastes that hold only informational memory lines.

Every rule reads the user's numbers from :class:`bot.facts.PasteFacts`, resolves what it can against
the catalogs (Ollama tags, GGUF sizes, KV bytes per token) and computes the values it puts into the
copy-paste fixes.  Where a paste holds the same report twice (two runs side by side) the rules read
``facts.text`` — the prefix-stripped paste — when the facts carry it.
"""

from __future__ import annotations

import math
import re
from dataclasses import dataclass

from bot.diagnosis.common import fill
from bot.facts import PasteFacts
from bot.reply import Fact, Fix, MemoryPicture, MemorySegment, Reply, Section
from calculator.catalog import ModelSpec, Variant, models, quant_formats, variant_weight_bytes
from calculator.commands import (
    LLAMACPP_FLAGS,
    LLAMACPP_SWITCHES,
    ollama_env_command,
    set_flags,
    sglang_command,
    vllm_command,
)
from calculator.kv import LLAMACPP_KV_BYTES, llamacpp_layout, vllm_layout
from calculator.llamacpp import LlamaCppConfig, kv_bytes
from calculator.ollama import OllamaConfig, default_num_ctx, ollama_budget
from calculator.resolve import ModelMatch, NameNotFound, resolve_model
from calculator.units import GIB, KIB, MIB, fmt_tokens
from calculator.versions import CURRENT_OLLAMA, llamacpp_fa_takes_value, parse_version

# ------------------------------------------------------------------------------------------ helpers

_EXTRA_LLAMACPP_FLAGS = [
    ("--no-mmap",),
    ("--mlock",),
    ("-cram", "--cache-ram"),
    ("-kvu", "--kv-unified"),
]
_EXTRA_LLAMACPP_SWITCHES = {"--no-mmap", "--mlock", "-kvu", "--kv-unified"}
VALID_CACHE_TYPES = ("f32", "f16", "bf16", "q8_0", "q4_0", "q4_1", "iq4_nl", "q5_0", "q5_1")
LOG_HOWTO = (
    "# Linux (systemd)\n"
    "journalctl -u ollama --no-pager -n 200\n"
    "# macOS\n"
    "tail -n 200 ~/.ollama/logs/server.log\n"
    "# Windows (PowerShell)\n"
    "Get-Content $env:LOCALAPPDATA\\Ollama\\server.log -Tail 200\n"
    "# more detail: stop the service, run it by hand and repeat the request\n"
    "OLLAMA_DEBUG=1 ollama serve"
)
REPLY_ROOM = 1024  # tokens left for the answer when only the prompt length is known


def _text(facts: PasteFacts) -> str:
    """The prefix-stripped paste when the facts carry it (``PasteFacts.text``), else ''."""
    return str(getattr(facts, "text", "") or "")


def _num(x: float, digits: int = 2) -> str:
    return f"{x:,.{digits}f}".rstrip("0").rstrip(".") if digits else f"{x:,.0f}"


def _gib(x: float) -> str:
    """A memory size in GiB with two decimals (MiB below 0.1 GiB)."""
    if abs(x) < 0.1:
        return f"{x * 1024:,.0f} MiB"
    return f"{x:,.2f} GiB"


def _mib(x: float) -> str:
    """A size the log printed in MiB: MiB below 1 GiB, like the log, else GiB."""
    return f"{x:,.1f} MiB".replace(".0 MiB", " MiB") if x < 1024 else f"{x / 1024:,.2f} GiB"


def _tok(n: float) -> str:
    return fmt_tokens(n)


def _a(n: float) -> str:
    """The article for a number as it is read aloud: 'an 8,312-token', 'a 2,048-token'."""
    lead = f"{int(n):,}".split(",")[0]
    return "an" if lead.startswith("8") or lead in ("11", "18") else "a"


def _round_up_ctx(n: int) -> int:
    """The smallest context a person would type that holds ``n`` tokens: a power of two up to 8192,
    then a multiple of 4096."""
    n = max(int(n), 1)
    if n <= 512:
        return 512
    if n <= 8192:
        return 1 << (n - 1).bit_length()
    return -(-n // 4096) * 4096


def _pow2_floor(n: float) -> int:
    n = int(n)
    return 0 if n < 1 else 1 << (n.bit_length() - 1)


def _basename(name: str) -> str:
    name = name.strip().strip("\"'").rstrip("/\\").replace("\\", "/").split("/")[-1]
    for ext in (".gguf", ".bin", ".safetensors"):
        if name.lower().endswith(ext):
            name = name[: -len(ext)]
    # split GGUFs: model-00001-of-00003
    return re.sub(r"-0*1-of-[0-9]+$", "", name)


_QUANT_SUFFIX = re.compile(
    r"[.\-_](?:I?Q[0-9]_[A-Z0-9_]+|Q[0-9]_[0-9]|[BF]?F16|F32|MXFP4(?:_MOE)?)$", re.IGNORECASE
)


def _file_quant(facts: PasteFacts) -> str | None:
    """The GGUF type a file name states (``...-Q5_K_M.gguf`` -> ``Q5_K_M``)."""
    m = _QUANT_SUFFIX.search(_basename(str(facts.context.get("model") or "")))
    return m.group(0)[1:].upper() if m else None


def _gguf_weights(facts: PasteFacts, match: ModelMatch) -> tuple[float | None, str, str | None]:
    """GiB of the GGUF the paste runs, its source and type: the catalog variant when the file name agrees,
    else the file name's quant at its measured bits per weight."""
    variant = _gguf_variant(match)
    quant = _file_quant(facts)
    if quant and (variant is None or (variant.gguf_type or "").upper() != quant):
        bpw = {k.upper(): v for k, v in _gguf_quants().items()}.get(quant)
        if bpw:
            return match.model.params_b * 1e9 * bpw / 8 / GIB, "computed", quant
    if variant is None:
        return None, "estimated", None
    return variant_weight_bytes(match.model, variant) / GIB, "catalog", variant.gguf_type


def _model(facts: PasteFacts) -> ModelMatch | None:
    """The catalog model: the facts' own match, else the file name without folder and extension."""
    if facts.model is not None:
        return facts.model
    name = facts.context.get("model")
    if not name:
        m = re.search(r"(?m)^\s*Model:\s*([A-Za-z0-9][^\n]{1,80}?)\s*$", _text(facts))
        name = m.group(1) if m else None
    if not name:
        return None
    if "sha256-" in str(name):
        # a blob path from Ollama's runner command line names no model: drop the generic "not in my catalog"
        facts.notes[:] = [n for n in facts.notes if not n.startswith(f"the model {name} ")]
        return None
    base = _basename(str(name))
    try:
        match = resolve_model(base)
    except NameNotFound:
        # "mistral-7b-instruct-v0.3.Q5_K_M": the catalog may not list that quant; the model is what matters
        stripped = _QUANT_SUFFIX.sub("", base)
        if stripped == base:
            return None
        try:
            match = resolve_model(stripped)
        except NameNotFound:
            return None
    # the generic lookup missed a file name this one resolves: its "not in my catalog" note is wrong
    facts.notes[:] = [n for n in facts.notes if not n.startswith(f"the model {name} is not in my catalog")]
    return match


def _gguf_variant(match: ModelMatch | None) -> Variant | None:
    """The GGUF checkpoint llama.cpp / Ollama would run: the named one, else Ollama's default tag."""
    if match is None:
        return None
    if match.variant is not None and match.variant.quant == "gguf":
        return match.variant
    return next((v for v in match.model.variants if v.quant == "gguf" and v.ollama), None) or next(
        (v for v in match.model.variants if v.quant == "gguf"), None
    )


def _ollama_tag(facts: PasteFacts, match: ModelMatch | None) -> str | None:
    name = str(facts.context.get("model") or "")
    if ":" in name and "/" not in name and "\\" not in name:
        return name
    v = _gguf_variant(match)
    return v.ollama if v is not None else None


def _gguf_file(facts: PasteFacts) -> str | None:
    name = facts.context.get("model")
    if name and str(name).lower().endswith(".gguf"):
        return str(name)
    return None


def _ollama_version(facts: PasteFacts) -> tuple[int, int, int] | None:
    v = facts.context.get("engine_version")
    return parse_version(str(v), CURRENT_OLLAMA) if v else None


def _llamacpp_build(facts: PasteFacts) -> int | None:
    m = re.match(r"\s*b?([0-9]{3,6})\b", str(facts.context.get("engine_version") or ""))
    return int(m.group(1)) if m else None


def _flag_value(command: str | None, *names: str) -> str | None:
    """The value given to a flag in a command line (last one wins), ``""`` for a bare switch."""
    if not command:
        return None
    tokens = command.replace("\\\n", " ").split()
    found = None
    for i, tok in enumerate(tokens):
        name, _, inline = tok.partition("=")
        if name in names:
            if inline:
                found = inline
            elif i + 1 < len(tokens) and (
                not tokens[i + 1].startswith("-") or re.fullmatch(r"-[0-9.]+", tokens[i + 1])
            ):
                found = tokens[i + 1]
            else:
                found = ""
    return found


def _int_flag(command: str | None, *names: str) -> int | None:
    value = _flag_value(command, *names)
    if not value:
        return None
    m = re.fullmatch(r"([0-9]+)([kK]?)", value)
    if not m:
        return None
    return int(m.group(1)) * (1024 if m.group(2) else 1)


def _llamacpp_cmd(base: str | None, model_file: str | None, changes: dict[str, str | None]) -> str:
    command = base or f"llama-server -m {model_file or '<model>.gguf'}"
    return set_flags(
        command,
        changes,
        LLAMACPP_FLAGS + _EXTRA_LLAMACPP_FLAGS,
        LLAMACPP_SWITCHES | _EXTRA_LLAMACPP_SWITCHES,
    )


def _kv_gguf_gib(
    model: ModelSpec, n_ctx: int, ctk: str = "f16", ctv: str = "f16", parallel: int = 1
) -> float:
    """llama.cpp / Ollama KV cache for ``n_ctx`` tokens per slot (Ollama: unified off, one stream per slot)."""
    ctk = ctk if ctk in LLAMACPP_KV_BYTES else "f16"
    ctv = ctv if ctv in LLAMACPP_KV_BYTES else "f16"
    layout = llamacpp_layout(model, ctk, ctv)
    cfg = LlamaCppConfig(
        n_ctx=n_ctx * max(1, parallel), cache_type_k=ctk, cache_type_v=ctv, n_parallel=max(1, parallel)
    )
    cfg.kv_unified = parallel <= 1
    return kv_bytes(layout, n_ctx * max(1, parallel), cfg) / GIB


def _gguf_placeholder(match: ModelMatch | None, variant: Variant | None = None) -> str:
    """``<Llama-3.1-8B-Instruct-Q4_K_M>.gguf``: a file name for a command when the paste has none."""
    if match is None:
        return "<model>.gguf"
    v = variant or _gguf_variant(match)
    name = match.model.id.split("/")[-1]
    return f"<{name}-{v.gguf_type}>.gguf" if v is not None and v.gguf_type else f"<{name}>.gguf"


def _gguf_quants() -> dict[str, float]:
    return {q.name: q.effective_bpw for q in quant_formats().weight_formats if q.effective_bpw}


@dataclass
class QuantOption:
    label: str
    gib: float
    tag: str | None  # an Ollama tag from the catalog (exact), or None for a computed size
    source: str  # catalog | computed


def _smaller_quants(match: ModelMatch, current_gib: float) -> list[QuantOption]:
    """Smaller GGUF builds of the same model: the catalog's own variants first, then the common quant
    types at their measured bits per weight; biggest first."""
    out: list[QuantOption] = []
    for v in match.model.variants:
        if v.quant != "gguf":
            continue
        size = variant_weight_bytes(match.model, v) / GIB
        if size < current_gib - 0.05:
            out.append(QuantOption(f"{v.gguf_type} ({v.ollama or v.id})", size, v.ollama, "catalog"))
    current_type = (_gguf_variant(match).gguf_type or "") if _gguf_variant(match) else ""
    bpw = _gguf_quants()
    for name in ("Q4_K_M", "Q4_K_S", "Q4_0", "Q3_K_L", "Q3_K_M", "Q3_K_S", "Q2_K"):
        if name == current_type or name not in bpw:
            continue
        size = match.model.params_b * 1e9 * bpw[name] / 8 / GIB
        if size < current_gib - 0.05 and not any(o.label.startswith(name + " ") for o in out):
            out.append(QuantOption(name, size, None, "computed"))
    return sorted(out, key=lambda o: -o.gib)


def _same_family_smaller(match: ModelMatch, current_gib: float) -> list[QuantOption]:
    """Smaller models of the same family that Ollama serves (catalog tags)."""
    out = []
    for m in models():
        if m.family != match.model.family or m.id == match.model.id:
            continue
        for v in m.variants:
            if v.quant == "gguf" and v.ollama:
                size = variant_weight_bytes(m, v) / GIB
                if size < current_gib:
                    out.append(QuantOption(f"{v.ollama} ({v.gguf_type})", size, v.ollama, "catalog"))
    return sorted(out, key=lambda o: -o.gib)


def _library_name(tag: str | None) -> str | None:
    return tag.split(":", 1)[0] if tag else None


def _quant_fix(
    match: ModelMatch,
    current_gib: float,
    need_gib: float,
    rank: int,
    tag: str | None,
    what: str = "the part that does not fit",
) -> Fix | None:
    """The largest smaller build that saves at least ``need_gib`` (Ollama command).  With partial offload
    the GPU stays full, so the whole saving comes off the part in RAM."""
    options = _smaller_quants(match, current_gib) + _same_family_smaller(match, current_gib)
    good = [o for o in options if current_gib - o.gib >= need_gib]
    if not good:
        return None
    best = max(good, key=lambda o: o.gib)
    saved = current_gib - best.gib
    if best.tag:
        command = f"ollama run {best.tag}"
        change = f"switch to {best.tag} ({_gib(best.gib)})"
    else:
        lib = _library_name(tag) or "<model>"
        base = tag or f"{lib}:<size>"
        suffix = best.label[0].lower() + best.label[1:]
        command = (
            f"# the {suffix} tag of {lib} on https://ollama.com/library/{lib}/tags, e.g.\n"
            f"ollama run {base}-instruct-{suffix}"
        )
        change = f"the {best.label} build ({_gib(best.gib)}, computed)"
    shrink = "by about that much (the GPU stays full and holds more of the smaller layers)"
    return Fix(
        "ollama",
        change,
        command,
        f"{_gib(saved)} smaller than the {_gib(current_gib)} you run: {what} shrinks {shrink}",
        "lower-bit weights lose some quality (small at Q4, noticeable at Q3 and below)"
        if best.source == "computed" or "Q3" in best.label or "Q2" in best.label
        else "a smaller model: less capable",
        rank,
    )


def _cause(facts: PasteFacts) -> str:
    """The signature's own cause, filled with the paste's numbers; sentences with a missing number dropped."""
    text = fill(facts.root.cause_template, facts.params)
    sentences = [t for t in re.split(r"(?<=[.!])\s+", text) if t]
    kept = [t for t in sentences if not re.search(r"(?:^|[\s(])\?(?:[\s,.):]|$)", t)]
    return " ".join(kept) or facts.root.title + "."


def _reply(
    title: str,
    summary: str,
    numbers: list[Fact],
    fixes: list[Fix],
    notes: list[str],
    short: str = "",
    sections: list[Section] | None = None,
    memory: MemoryPicture | None = None,
    data: dict | None = None,
) -> Reply:
    secs = [Section("Your numbers", facts=numbers)] if numbers else []
    secs += sections or []
    return Reply(
        kind="diagnosis",
        title=title,
        summary=summary,
        short=short,
        sections=secs,
        fixes=fixes,
        memory=memory,
        notes=notes,
        data=data or {},
    )


def _gpu_total(facts: PasteFacts) -> tuple[float | None, str]:
    total = facts.get("gpu_total_gib") or facts.params.get("total_gib")
    if total:
        return float(total), "log"
    if facts.gpu is not None:
        return facts.gpu.total_gib, "catalog"
    return None, "estimated"


def _gpu_cc(facts: PasteFacts) -> float | None:
    cc = facts.get("compute_capability")
    if cc:
        try:
            return float(cc)
        except (TypeError, ValueError):
            pass
    if facts.gpu is not None and facts.gpu.vendor == "nvidia":
        return facts.gpu.cc
    return None


def _fa_unsupported(cc: float | None) -> bool:
    """CUDA flash attention needs compute capability 6.0+, and is missing on 7.2 (Jetson Xavier)."""
    return cc is not None and (cc < 6.0 or abs(cc - 7.2) < 1e-6)


# ------------------------------------------------------------------------------------------ host_memory


def host_memory(facts: PasteFacts) -> Reply:
    if facts.root.engine == "llama.cpp":
        return _host_memory_llamacpp(facts)
    return _host_memory_ollama(facts)


def _host_memory_ollama(facts: PasteFacts) -> Reply:
    p = facts.params
    required = p.get("required_gib")
    available = p.get("available_gib")
    if available is None and p.get("available_bytes") is not None:
        available = p["available_bytes"] / GIB
    short = required - available if required is not None and available is not None else None
    match = _model(facts)
    variant = _gguf_variant(match)
    weights = variant_weight_bytes(match.model, variant) / GIB if match and variant else None
    tag = _ollama_tag(facts, match)
    n_ctx = facts.get("n_ctx")
    parallel = facts.get("n_parallel") or 1
    assumed_ctx = n_ctx or 2048
    kv = _kv_gguf_gib(match.model, assumed_ctx, parallel=parallel) if match else None
    total_est = weights + kv + 0.3 if weights is not None and kv is not None else None  # + graph
    on_gpu_src = "estimated"
    weights_src = "catalog"
    kv_src = "computed" if n_ctx else "estimated"
    lo, lm = p.get("layers_offload"), p.get("layers_model")
    if p.get("required_partial_gib") is not None and lm:
        # the offload line: what Ollama planned for the GPU, and the share of layers left on the CPU
        on_gpu, on_gpu_src = p["required_partial_gib"], "log"
        cpu_only = (lo or 0) == 0
        cpu_fraction = 1 - (lo or 0) / lm
        if p.get("weights_total_gib"):
            weights, weights_src = p["weights_total_gib"], "log"
        if p.get("required_kv_mib") is not None:
            kv, kv_src = p["required_kv_mib"] / 1024, "log"
    else:
        cpu_only = bool(total_est and required and required >= total_est * 0.9)
        on_gpu = max(0.0, total_est - required) if total_est and required and not cpu_only else None
        cpu_fraction = min(1.0, required / total_est) if total_est and required else None

    label = (tag or (variant.id if variant else match.label)) if match else None
    title = "Ollama: the model needs more system memory than is free"
    if required is not None and available is not None:
        title = f"Ollama: the CPU part of the model needs {_gib(required)} of RAM, {_gib(available)} is free"
    sentences = [
        "Before loading, Ollama (v0.2 to v0.29) checks that the part of the model it will keep in system "
        "RAM — the layers that do not fit on the GPU, with their share of the KV cache — fits in free RAM "
        "plus free swap."
    ]
    if short is not None:
        sentences.append(
            f"It put that part at {_gib(required)} but only {_gib(available)} was free, "
            f"{_gib(short)} short, so it refused to load the model."
        )
    if weights is not None and cpu_only:
        sentences.append(
            f"{label} is {_gib(weights)} of weights, so this is the whole model: nothing was planned for the GPU."
        )
    elif on_gpu is not None and on_gpu_src == "log":
        sentences.append(
            f"Ollama planned {_gib(on_gpu)} for the GPU ({lo} of {lm} layers); only the other {lm - (lo or 0)} layers "
            "and their KV cache need RAM."
        )
    elif weights is not None and on_gpu is not None:
        sentences.append(
            f"{label} is {_gib(weights)} of weights, so about {_gib(on_gpu)} of it was planned for the GPU "
            "and only the rest needs RAM."
        )
    else:
        sentences.append(
            "The number is only the CPU share: with partial offload the layers on the GPU need no RAM, so "
            "a smaller quant, a shorter context or more free RAM closes the gap."
        )

    numbers: list[Fact] = []
    if required is not None:
        numbers.append(Fact("RAM needed for the CPU part", _gib(required), "log"))
    if available is not None:
        numbers.append(Fact("free RAM + free swap", _gib(available), "log"))
    if short is not None:
        numbers.append(Fact("short by", _gib(short), "computed"))
    numbers += [
        Fact(label_, _gib(p[k]), "log")
        for k, label_ in (
            ("system_total_gib", "system RAM in total"),
            ("system_free_gib", "system RAM free"),
            ("swap_free_gib", "swap free"),
            ("gpu_available_gib", "GPU memory available to Ollama"),
        )
        if p.get(k) is not None
    ]
    if p.get("layers_offload") is not None and p.get("layers_model"):
        numbers.append(Fact("layers on the GPU", f"{p['layers_offload']}/{p['layers_model']}", "log"))
    if weights is not None:
        numbers.append(
            Fact(f"model weights ({label})" if label else "model weights", _gib(weights), weights_src)
        )
    if kv is not None:
        numbers.append(
            Fact(
                "KV cache" if kv_src == "log" else f"KV cache at num_ctx {_tok(assumed_ctx)}",
                _gib(kv),
                kv_src,
            )
        )
    if on_gpu is not None:
        numbers.append(
            Fact(
                "planned for the GPU" + ("" if on_gpu_src == "log" else " (weights + KV + graph − RAM part)"),
                _gib(on_gpu),
                on_gpu_src,
            )
        )

    fixes: list[Fix] = []
    notes: list[str] = []
    need = (short or 0.0) + 0.25  # a margin: Ollama rounds and the OS needs some RAM too
    if match is not None and weights is not None:
        fix = _quant_fix(match, weights, need, 1, tag, "the RAM part")
        if fix:
            fixes.append(fix)
    elif short is not None:
        fixes.append(
            Fix(
                "ollama",
                f"a build at least {_gib(need)} smaller",
                "ollama list                  # what you have\nollama show <model>          # its 'quantization' line",
                f"the RAM part must shrink by {_gib(short)}; a smaller quant (Q4_K_M -> Q3_K_M saves about 18%) "
                "or a smaller model does that",
                "lower-bit weights lose some quality",
                1,
            )
        )
    # a shorter context: the CPU layers' KV lives in RAM
    ctx_now = n_ctx or 4096
    new_ctx = max(1024, _pow2_floor(ctx_now // 2)) if n_ctx else 2048
    if new_ctx < ctx_now:
        effect = f"the KV cache for {_tok(new_ctx)} tokens instead of {_tok(ctx_now)}"
        if not n_ctx:
            effect = (
                "helps if num_ctx is above the old default (v0.6.7+ uses 4,096; clients and Modelfiles often set "
                "more): " + effect
            )
        if match is not None:
            saved = _kv_gguf_gib(match.model, ctx_now, parallel=parallel) - _kv_gguf_gib(
                match.model, new_ctx, parallel=parallel
            )
            saved *= cpu_fraction or 1.0
            effect += f": about {_gib(saved)} less RAM"
            if short is not None and saved < short:
                effect += f" (not enough alone for the {_gib(short)} gap)"
        fixes.append(
            Fix(
                "ollama",
                f"num_ctx {_tok(new_ctx)}",
                ollama_env_command({"OLLAMA_CONTEXT_LENGTH": str(new_ctx)}, tag),
                effect,
                "the model sees less of the conversation (Ollama drops the oldest messages)",
                2,
            )
        )
    if parallel != 1 or not facts.get("n_parallel"):
        fixes.append(
            Fix(
                "ollama",
                "one request at a time",
                ollama_env_command({"OLLAMA_NUM_PARALLEL": "1"}, tag),
                "before v0.10 Ollama could pick 4 parallel slots, and every slot has its own KV cache: "
                "one slot cuts the KV part to a quarter",
                "requests queue instead of running together",
                3,
            )
        )
    if short is not None:
        swap = max(2, math.ceil(short + 1.5))
        fixes.append(
            Fix(
                "ollama",
                "free RAM or add swap",
                "free -h   # what is free; close browsers/IDEs first\n"
                f"sudo fallocate -l {swap}G /swapfile && sudo chmod 600 /swapfile && "
                "sudo mkswap /swapfile && sudo swapon /swapfile",
                f"the check counts free swap, so {swap} GiB more lets the model load",
                "not a fix for speed: layers paged out to swap make every token wait on the disk",
                4,
            )
        )
    # llama.cpp maps the file: no up-front RAM check
    fixes.append(
        Fix(
            "llama.cpp",
            "run the same GGUF with llama-server",
            _llamacpp_cmd(None, _gguf_placeholder(match, variant), {"-c": "4096"}),
            "llama.cpp memory-maps the file instead of copying it into RAM, and --fit (default) puts as many "
            "layers on the GPU as fit: there is no up-front free-RAM check",
            "if RAM is still short, the CPU layers are re-read from disk: slow",
            5,
        )
    )
    notes.append(
        "vLLM and SGLang keep the whole model in GPU memory; they do not help when the model only fits "
        "with part of it in RAM."
    )
    if not n_ctx and match is not None:
        notes.append(
            "num_ctx is not in the paste; the KV numbers assume 2,048 tokens (Ollama's default before v0.6.7; "
            "4,096 after)."
        )
    if match is None:
        notes.append(
            "The model is not named in the paste: tell me the tag (ollama ps / ollama list) for sizes."
        )
    notes.append(
        "This check is in Ollama v0.2 to v0.29 (not on macOS, whose swap is dynamic); OLLAMA_CONTEXT_LENGTH "
        "exists from v0.5.13 — before that, /set parameter num_ctx or PARAMETER num_ctx in a Modelfile."
    )
    return _reply(
        title,
        " ".join(sentences),
        numbers,
        fixes,
        notes,
        short=f"The CPU part needs {_gib(required)} of RAM; {_gib(available)} is free."
        if required is not None and available is not None
        else "",
        data={"required_gib": required, "available_gib": available, "short_gib": short, "model_gib": weights},
    )


def _host_memory_llamacpp(facts: PasteFacts) -> Reply:
    p = facts.params
    command = facts.context.get("command")
    text = _text(facts)
    match = _model(facts)
    model_file = _gguf_file(facts)
    pinned = facts.root.signature.endswith("pinned")
    numbers: list[Fact] = []
    fixes: list[Fix] = []
    notes: list[str] = []
    no_mmap = _flag_value(command, "--no-mmap") is not None
    mlock = _flag_value(command, "--mlock") is not None
    nkvo = _flag_value(command, "-nkvo", "--no-kv-offload") is not None
    n_ctx = facts.get("n_ctx")
    ngl = facts.get("n_gpu_layers")

    if pinned:
        mib = p.get("pinned_mib")
        title = "llama.cpp: pinned host memory could not be allocated (not fatal)"
        if mib:
            title = f"llama.cpp: {_num(mib, 0)} MiB of pinned host memory could not be allocated (not fatal)"
        summary = (
            "CUDA builds ask for the host-side buffers (weights of layers kept on the CPU, a KV cache moved "
            "to RAM with -nkvo) as pinned, page-locked memory because copies to the GPU are faster from it. "
            f"That request failed ({p.get('reason') or 'no reason given'}), so llama.cpp fell back to ordinary "
            "memory and kept going: this line alone does not stop the model. If the run then died, the error "
            "that stopped it is further down the log."
        )
        if mib:
            numbers.append(Fact("pinned request", f"{_num(mib, 0)} MiB ({_gib(mib / 1024)})", "log"))
        fixes.append(
            Fix(
                "llama.cpp",
                "skip the pinned allocation",
                "GGML_CUDA_NO_PINNED=1 " + (command or "llama-server -m <model>.gguf"),
                "no page-locked request at all, so nothing to fail (and no RAM locked)",
                "host-to-GPU copies of CPU-side tensors are somewhat slower",
                1,
            )
        )
        fixes.append(
            Fix(
                "llama.cpp",
                "keep less on the host",
                _llamacpp_cmd(command, model_file, {"-ngl": "99", "-nkvo": None} if nkvo else {"-ngl": "99"}),
                "more layers (and the KV cache) on the GPU means a smaller host buffer to pin",
                "needs the VRAM; --fit (default) moves layers back if it does not fit, unless -ngl is set",
                2,
            )
        )
        return _reply(title, summary, numbers, fixes, notes, data={"pinned_mib": mib})

    size = p.get("alloc_bytes")
    buffer = p.get("buffer") or "CPU"
    what = "a buffer"
    if re.search(r"buffer for kv cache|KV buffer", text):
        what = "the KV cache"
    elif re.search(r"compute (?:pp |tg )?buffers|gallocr", text + " ".join(facts.root.evidence)):
        what = "the compute buffer"
    elif re.search(r"error loading model|model buffer|load_tensors", text):
        what = "the weights kept on the CPU"
    title = "llama.cpp: a buffer in system RAM could not be allocated"
    if size:
        title = f"llama.cpp: {_gib(size / GIB)} for {what} in system RAM could not be allocated"
    sentences = [
        f"llama.cpp asked the OS for {_gib(size / GIB) if size else 'a buffer'} of ordinary RAM ({buffer} "
        f"buffer) for {what} and did not get it: the layers, KV cache and compute buffer that stay on the "
        "CPU need more RAM than is free (on Windows: more than RAM + page file can commit)."
    ]
    if no_mmap or mlock:
        flags = " and ".join(f for f, on in (("--no-mmap", no_mmap), ("--mlock", mlock)) if on)
        sentences.append(
            f"Your command uses {flags}: the whole file is copied into (and with --mlock pinned in) RAM "
            "instead of being mapped, which is the usual way this fails."
        )
    else:
        sentences.append(
            "Less on the CPU (more layers on the GPU, a shorter context) or a smaller file fixes it."
        )
    if size:
        numbers.append(Fact("allocation that failed", f"{size:,} bytes ({_gib(size / GIB)})", "log"))
    if n_ctx:
        numbers.append(Fact("context (-c)", _tok(n_ctx), "log"))
    if ngl is not None:
        numbers.append(Fact("layers on the GPU (-ngl)", str(ngl), "log"))
    weights, w_src, w_type = _gguf_weights(facts, match) if match is not None else (None, "estimated", None)
    if weights is not None:
        numbers.append(Fact(f"model file ({w_type or 'GGUF'})", _gib(weights), w_src))
    rank = 1
    if no_mmap or mlock:
        dropped = " and ".join(f for f, on in (("--no-mmap", no_mmap), ("--mlock", mlock)) if on)
        fixes.append(
            Fix(
                "llama.cpp",
                f"drop {dropped}",
                _llamacpp_cmd(command, model_file, {"--no-mmap": None, "--mlock": None}),
                "the weights on the CPU are mapped from the file and served from the page cache, which the OS can "
                "evict under pressure, instead of a private (locked) copy that must fit in free RAM"
                + ("; --mlock also needs ulimit -l" if mlock else ""),
                "first tokens can be slower while pages are read from disk",
                rank,
            )
        )
        rank += 1
    if nkvo:
        fixes.append(
            Fix(
                "llama.cpp",
                "put the KV cache back on the GPU",
                _llamacpp_cmd(command, model_file, {"-nkvo": None}),
                "-nkvo keeps the whole KV cache in RAM; without it each layer's KV sits with the layer",
                "needs the VRAM for it",
                rank,
            )
        )
        rank += 1
    if n_ctx and n_ctx > 2048:
        new_ctx = max(2048, _pow2_floor(n_ctx // 2))
        effect = f"the KV cache and compute buffer for {_tok(new_ctx)} tokens instead of {_tok(n_ctx)}"
        if match is not None:
            ctk = facts.get("cache_type_k") or "f16"
            ctv = facts.get("cache_type_v") or "f16"
            saved = _kv_gguf_gib(match.model, n_ctx, ctk, ctv) - _kv_gguf_gib(match.model, new_ctx, ctk, ctv)
            layers = match.model.num_hidden_layers + 1
            if nkvo:
                effect += f": {_gib(saved)} less KV, all of it in RAM (-nkvo)"
            elif ngl is not None and ngl < layers:
                share = (layers - ngl) / layers
                effect += (
                    f": {_gib(saved)} less KV, {_gib(saved * share)} of it in RAM ({layers - ngl} CPU layers)"
                )
            else:
                effect += f": {_gib(saved)} less KV (the CPU layers' share of it is RAM)"
        fixes.append(
            Fix(
                "llama.cpp",
                f"context {_tok(new_ctx)}",
                _llamacpp_cmd(command, model_file, {"-c": str(new_ctx)}),
                effect,
                "longer prompts are cut or rejected",
                rank,
            )
        )
        rank += 1
    if ngl is not None and match is not None and ngl < match.model.num_hidden_layers + 1:
        fixes.append(
            Fix(
                "llama.cpp",
                "let --fit place the layers",
                _llamacpp_cmd(command, model_file, {"-ngl": None}),
                f"-ngl {ngl} keeps {match.model.num_hidden_layers + 1 - ngl} of "
                f"{match.model.num_hidden_layers + 1} layers in RAM; without -ngl, --fit (b7407+) moves as many as "
                "fit onto the GPU",
                "none if the VRAM is free",
                rank,
            )
        )
        rank += 1
    fixes.append(
        Fix(
            "llama.cpp",
            "cap the host prompt cache",
            _llamacpp_cmd(command, model_file, {"-cram": "0"}),
            "current llama-server keeps up to 8192 MiB of saved prompt states in RAM (--cache-ram); "
            "-cram 0 turns that off, -cram 2048 caps it",
            "a prompt that was cached is processed again",
            rank + 2,
        )
    )
    if match is not None and weights is not None and size:
        options = [o for o in _smaller_quants(match, weights) if weights - o.gib >= size / GIB]
        if options:
            best = max(options, key=lambda o: o.gib)
            qname = best.label.split()[0]
            fixes.append(
                Fix(
                    "llama.cpp",
                    f"a {qname} file ({_gib(best.gib)})",
                    _llamacpp_cmd(command, f"<{match.model.id.split('/')[-1]}-{qname}>.gguf", {}),
                    f"{_gib(weights - best.gib)} smaller than your {_gib(weights)} file: at least the failed "
                    f"{_gib(size / GIB)}",
                    "lower-bit weights lose some quality",
                    rank + 1,
                )
            )
    fixes.append(
        Fix(
            "ollama",
            "the same model in Ollama",
            ollama_env_command({"OLLAMA_CONTEXT_LENGTH": "4096"}, _ollama_tag(facts, match)),
            "Ollama memory-maps the file too and places layers itself",
            "same RAM arithmetic: the CPU layers still have to fit",
            9,
        )
    )
    if not command:
        notes.append("Your command line is not in the paste; the commands show only the flags to change.")
    return _reply(
        title, " ".join(sentences), numbers, fixes, notes, data={"alloc_bytes": size, "buffer": buffer}
    )


# ------------------------------------------------------------------------------------------ runner_crashed

_MEMORY_TEXT = re.compile(
    r"out of memory|cudaMalloc failed|hipMalloc failed|unable to allocate|failed to allocate|allocation failed|"
    r"not enough memory|insufficient memory|OutOfDeviceMemory|erroroutofmemory|bad_alloc|signal: killed",
    re.IGNORECASE,
)
_HOST_TEXT = re.compile(r"CPU buffer|signal: killed|bad_alloc|system memory", re.IGNORECASE)
_EXIT_CODES = {
    "0xc0000409": "STATUS_STACK_BUFFER_OVERRUN: Windows' code for a process that aborted itself (abort(), "
    "a failed assert, an unhandled C++ exception) — not a memory code by itself",
    "0xc0000005": "STATUS_ACCESS_VIOLATION: the runner touched memory it does not own (a bug or a broken "
    "driver/library), not 'out of memory'",
    "0xc0000142": "STATUS_DLL_INIT_FAILED: a library (often the GPU runtime) failed to initialise",
    "2": "a Go panic or a fatal runner error",
    "1": "the runner exited with an error",
    "-1": "the runner exited with an error",
}


def runner_crashed(facts: PasteFacts) -> Reply:
    p = facts.params
    sig = facts.root.signature
    inner = str(p.get("runner_error") or "").strip()
    status = str(p.get("exit_status") or "").strip()
    if sig.endswith("timeout"):
        return _runner_timeout(facts)
    full = inner + " " + " ".join(facts.root.evidence)
    if _MEMORY_TEXT.search(inner) or (not inner and _MEMORY_TEXT.search(full)):
        return _runner_memory(facts, inner, status)
    if re.search(r"failed to create context", inner, re.IGNORECASE):
        return _runner_create_context(facts, inner, status)
    return _runner_unknown(facts, inner, status)


def _status_fact(status: str) -> list[Fact]:
    if not status:
        return []
    meaning = _EXIT_CODES.get(status.lower())
    return [
        Fact(
            "exit status",
            f"{status}" + (f" ({meaning.split(':')[0]})" if meaning and ":" in meaning else ""),
            "log",
        )
    ]


def _status_note(status: str, facts: PasteFacts) -> str | None:
    meaning = _EXIT_CODES.get(status.lower()) if status else None
    if not meaning:
        return None
    if status.lower().startswith("0xc"):
        return f"Exit status {status} is {meaning}; the text after it says why."
    return f"Exit status {status}: {meaning}."


def _ollama_log_fix(rank: int) -> Fix:
    return Fix(
        "ollama",
        "send the server log lines around the crash",
        LOG_HOWTO,
        "the runner's own last lines say what failed (an allocation, an assert, an unsupported tensor)",
        "",
        rank,
    )


def _runner_memory(facts: PasteFacts, inner: str, status: str) -> Reply:
    p = facts.params
    match = _model(facts)
    variant = _gguf_variant(match)
    weights = variant_weight_bytes(match.model, variant) / GIB if match and variant else None
    tag = _ollama_tag(facts, match)
    label = tag or (match.label if match else None)
    total, total_src = _gpu_total(facts)
    n_ctx = facts.get("n_ctx")
    parallel = facts.get("n_parallel") or 1
    kv_type = facts.get("cache_type_k") or "f16"
    host = bool(_HOST_TEXT.search(inner))
    killed = "signal: killed" in inner
    wording_new = "llama-server" in " ".join(facts.root.evidence)
    if n_ctx:
        ctx_assumed, ctx_src = n_ctx, "log"
    elif wording_new and total and match is not None:
        ctx_assumed, ctx_src = default_num_ctx(total, match.model.max_position_embeddings), "estimated"
    else:
        ctx_assumed, ctx_src = (4096 if wording_new else 2048), "estimated"
    weights_failed = bool(
        re.search(r"error loading model|model buffer|load_tensors|unable to allocate", inner)
    )

    if killed:
        title = "Ollama: the runner was killed by the Linux OOM killer (out of system RAM)"
        first = (
            "'signal: killed' means the kernel's out-of-memory killer ended the runner: the weights and KV cache "
            "kept in RAM, plus everything else running, exceeded RAM + swap."
        )
    else:
        title = f"Ollama: the runner ran out of {'system RAM' if host else 'memory'} while loading" + (
            f" {label}" if label else ""
        )
        where = "system RAM" if host else "memory (GPU, or RAM for the layers kept on the CPU)"
        if weights_failed and not host:
            first = (
                f"The runner died because an allocation failed while it placed the weights ('{inner[:160]}'): the "
                "model does not fit in the memory it was given (the GPU, or RAM for the layers kept on the CPU)."
            )
        else:
            first = (
                f"The runner died because an allocation failed: '{inner[:160]}'. The model, its KV cache for the "
                f"context, or the compute buffer did not fit in {where}."
            )
    sentences = [first]
    if status.lower() == "0xc0000409":
        sentences.append(
            "The Windows exit code 0xc0000409 is only how the abort after that failure is reported, not a memory "
            "code itself."
        )
    numbers = _status_fact(status)
    if inner:
        numbers.append(Fact("runner error", inner[:200], "log"))
    fixes: list[Fix] = []
    notes: list[str] = []
    budget = None
    if match is not None and weights is not None:
        numbers.append(Fact(f"model ({label})", _gib(weights), "catalog"))
        numbers.append(
            Fact(
                f"KV cache at num_ctx {_tok(ctx_assumed)}" + (f" x {parallel} slots" if parallel > 1 else ""),
                _gib(_kv_gguf_gib(match.model, ctx_assumed, kv_type, kv_type, parallel)),
                "computed" if n_ctx else "estimated",
            )
        )
    if total:
        numbers.append(Fact("GPU memory", _gib(total), total_src))
    if match is not None and weights is not None and total and not killed:
        budget = ollama_budget(
            match.model,
            int(weights * GIB),
            total,
            OllamaConfig(num_ctx=ctx_assumed, num_parallel=parallel, kv_cache_type=kv_type),
        )
        need = budget.used_gib
        parts = (
            f"{_gib(budget.weights_gib)} of weights + {_gib(budget.kv_gib)} of KV for {_tok(ctx_assumed)} tokens + "
            f"{_gib(budget.compute_gib + budget.overhead_gib)} of buffers and CUDA context"
        )
        numbers.append(Fact("needed on the GPU at that context", _gib(need), "computed"))
        if budget.n_ctx_max_fit:
            numbers.append(
                Fact("largest num_ctx that stays on the GPU", _tok(budget.n_ctx_max_fit), "computed")
            )
        if need <= total:
            sentences.append(
                f"By my numbers {label} at num_ctx {_tok(ctx_assumed)} needs {_gib(need)} ({parts}), which fits in "
                f"{_gib(total)} — so something took more: a larger num_ctx set by the client or a Modelfile (above "
                f"about {_tok(budget.n_ctx_max_fit)} tokens it no longer fits), several parallel slots (each has its own "
                "KV cache), or another program holding GPU memory."
            )
        else:
            sentences.append(
                f"At num_ctx {_tok(ctx_assumed)} it needs {_gib(need)} ({parts}), more than the {_gib(total)} GPU."
            )
    elif weights_failed and not host:
        sentences.append("So fewer layers on the GPU or a smaller quant come first, the context second.")
    elif not killed:
        sentences.append(
            "Which one is in the server log; the levers are the same: a shorter context, fewer layers on the GPU, "
            "or a smaller quant."
        )
    if wording_new and not host and not killed:
        notes.append(
            "From v0.30 Ollama starts llama-server with -c num_ctx x num_parallel, so llama.cpp's --fit can move "
            "layers to the CPU but cannot shrink the context: the context is yours to lower."
        )

    fits_anyway = budget is not None and budget.used_gib <= budget.total_gib
    weights_too_big = budget is not None and budget.n_ctx_max_fit == 0
    r_ctx, r_gpu, r_quant = (3, 1, 2) if (weights_failed or weights_too_big) else (1, 2, 3)
    trained = match.model.max_position_embeddings if match is not None else None

    # 1) context
    if budget is not None and budget.n_ctx_max_fit >= 1024:
        new_ctx = min(_pow2_floor(budget.n_ctx_max_fit), trained or 1 << 30)
        fixes.append(
            Fix(
                "ollama",
                f"num_ctx {_tok(new_ctx)}",
                ollama_env_command({"OLLAMA_CONTEXT_LENGTH": str(new_ctx)}, tag)
                + f"\n# per session instead: /set parameter num_ctx {new_ctx}",
                f"weights + the KV cache for {_tok(new_ctx)} tokens stay on the {_gib(total)} GPU (the limit is about "
                f"{_tok(budget.n_ctx_max_fit)})",
                "Ollama drops the oldest messages beyond it",
                r_ctx,
            )
        )
    else:
        new_ctx = max(1024, _pow2_floor(ctx_assumed // 2))
        effect = f"halves the KV cache ({_tok(ctx_assumed)} -> {_tok(new_ctx)} tokens)"
        if match is not None:
            saved = _kv_gguf_gib(match.model, ctx_assumed, kv_type, kv_type, parallel) - _kv_gguf_gib(
                match.model, new_ctx, kv_type, kv_type, parallel
            )
            effect += f": {_gib(saved)} less"
        fixes.append(
            Fix(
                "ollama",
                f"num_ctx {_tok(new_ctx)}",
                ollama_env_command({"OLLAMA_CONTEXT_LENGTH": str(new_ctx)}, tag)
                + f"\n# per session instead: /set parameter num_ctx {new_ctx}",
                effect,
                "Ollama drops the oldest messages beyond it",
                r_ctx,
            )
        )
    if fits_anyway or parallel > 1:
        fixes.append(
            Fix(
                "ollama",
                "one slot",
                ollama_env_command({"OLLAMA_NUM_PARALLEL": "1"}, tag),
                "every parallel slot has its own KV cache (before v0.10 Ollama could pick 4 by itself)",
                "requests queue",
                2,
            )
        )
    if fits_anyway:
        fixes.append(
            Fix(
                "ollama",
                "check what else holds GPU memory",
                "nvidia-smi    # other processes, a second model still loaded (ollama ps), the desktop",
                "Ollama plans with the memory that is free when it loads, not the card's total",
                "",
                3,
            )
        )
    # 2) layers on the GPU
    if budget is not None and match is not None and total and not host and not fits_anyway:
        layers = _layers_that_fit(match.model, weights, total, ctx_assumed, kv_type, parallel)
        if 0 < layers < match.model.num_hidden_layers + 1:
            fixes.append(
                Fix(
                    "ollama",
                    f"num_gpu {layers}",
                    f"ollama run {tag or '<model>'}\n>>> /set parameter num_gpu {layers}\n"
                    f'# API: "options": {{"num_gpu": {layers}}}',
                    f"{layers} of {match.model.num_hidden_layers + 1} layers on the GPU with 1 GiB spare at num_ctx "
                    f"{_tok(ctx_assumed)}; the rest run from RAM",
                    "every layer on the CPU slows generation",
                    r_gpu,
                )
            )
    elif budget is None and not host and not killed:
        offl = p.get("layers_offload")
        if offl:
            per_layer = (p.get("weights_total_gib") or 0) / max(1, p.get("layers_model") or 1)
            fewer = max(2, math.ceil(1.0 / per_layer)) if per_layer else 4
            layers = max(0, offl - fewer)
            fixes.append(
                Fix(
                    "ollama",
                    f"num_gpu {layers}",
                    f"ollama run {tag or '<model>'}\n>>> /set parameter num_gpu {layers}",
                    f"{fewer} layers fewer than the {offl} Ollama planned: about 1 GiB of GPU headroom",
                    "every layer on the CPU slows generation",
                    r_gpu,
                )
            )
        else:
            fixes.append(
                Fix(
                    "ollama",
                    "fewer layers on the GPU",
                    f"ollama run {tag or '<model>'}\n>>> /set parameter num_gpu <layers.offload from the log minus 4>",
                    "the server log's 'offload' line says how many layers Ollama planned; 4 fewer leaves about "
                    "1 GiB of GPU headroom on a 7-14B model",
                    "every layer on the CPU slows generation",
                    r_gpu,
                )
            )
    # 3) smaller build
    if match is not None and weights is not None and not fits_anyway:
        need = 1.0
        if budget is not None:
            need = max(0.5, budget.used_gib - budget.total_gib + 0.5)
        fix = _quant_fix(match, weights, need, r_quant, tag, "the memory it needs")
        if fix:
            fixes.append(fix)
    elif match is None:
        fixes.append(
            Fix(
                "ollama",
                "a smaller model or quant",
                "ollama ps     # what was loaded, its size and the CPU/GPU split\nollama list",
                "a model well under your GPU memory (weights + 1-2 GiB for the KV cache and buffers) loads "
                "fully on the GPU",
                "a smaller model is less capable",
                r_quant,
            )
        )
    if host or killed or status.lower() == "0xc0000409":
        fixes.append(
            Fix(
                "ollama",
                "more free RAM (or a bigger page file on Windows)",
                "free -h                       # Linux\n"
                "# Windows: System > About > Advanced system settings > Performance > Virtual memory",
                "the layers kept on the CPU must fit in RAM (on Windows: RAM + page file commit limit)",
                "swap/page file only lets it load; layers paged to disk are very slow",
                4,
            )
        )
    fixes.append(_ollama_log_fix(6))
    if weights is not None and match is not None:
        fixes.append(
            Fix(
                "llama.cpp",
                "llama-server with automatic fitting",
                _llamacpp_cmd(None, _gguf_placeholder(match), {"-c": str(min(ctx_assumed, 8192))}),
                "--fit (b7407+) moves layers to the CPU until 1 GiB of VRAM stays free, instead of failing",
                "layers on the CPU are slower",
                7,
            )
        )
    if killed:
        notes.append("Confirm with: journalctl -k | grep -i -E 'killed process|out of memory'")
    if match is None:
        notes.append(
            "The model is not named in the paste; with its tag and your GPU I can compute num_ctx and num_gpu."
        )
    if not n_ctx:
        notes.append(
            f"num_ctx is not in the paste; assumed {_tok(ctx_assumed)} (Ollama's default was 2,048 before v0.6.7, "
            "4,096 after, and from v0.15.5 4k/32k/256k by total VRAM)."
        )
    version = _ollama_version(facts)
    if version and version < (0, 5, 13):
        notes.append(
            "OLLAMA_CONTEXT_LENGTH needs Ollama 0.5.13+; on your version use /set parameter num_ctx or a Modelfile. "
            "Later versions also estimate memory better: upgrading is worth it."
        )
    return _reply(
        title,
        " ".join(sentences),
        numbers,
        fixes,
        notes,
        short="The runner's allocation failed: " + (inner[:100] or "out of memory"),
        data={
            "cause": "memory",
            "host": host,
            "exit_status": status or None,
            "runner_error": inner or None,
            "num_ctx_assumed": ctx_assumed,
            "num_ctx_source": ctx_src,
            "num_ctx_max_fit": budget.n_ctx_max_fit if budget is not None else None,
        },
    )


def _layers_that_fit(
    model: ModelSpec, weights_gib: float, total_gib: float, n_ctx: int, kv_type: str, parallel: int
) -> int:
    """Layers (llama.cpp counting: + the output layer) that fit with 1 GiB spare."""
    layers_total = model.num_hidden_layers + 1
    per_layer = (
        weights_gib / layers_total + _kv_gguf_gib(model, n_ctx, kv_type, kv_type, parallel) / layers_total
    )
    fixed = 0.4 + 1.0 + 0.3  # CUDA context, the spare, the compute buffer
    return max(0, min(layers_total, int((total_gib - fixed) / per_layer)))


def _runner_create_context(facts: PasteFacts, inner: str, status: str) -> Reply:
    tag = _ollama_tag(facts, _model(facts)) or facts.context.get("model")
    version = _ollama_version(facts)
    old = version is None or version < (0, 3, 0)
    title = "Ollama: the runner crashed creating the context" + (f" for {tag}" if tag else "")
    title += " — upgrade Ollama first" if old else ""
    sentences = [
        "The runner loaded the weights and then failed to create the context"
        + (f", and Windows reported the abort as {status}" if status.lower() == "0xc0000409" else "")
        + ". No allocation error is quoted in front of it, so nothing here points to memory.",
    ]
    if old:
        sentences.append(
            "'llama runner process has terminated: … error:failed to create context' is how early Ollama releases "
            "(0.1/0.2) failed on model architectures they did not fully support — GLM-4/codegeex4 on 0.2.1 was a "
            "software bug fixed in the next release — so upgrade Ollama before touching memory settings."
        )
    else:
        sentences.append(
            "On a current release the log line before it says why: an allocation ('failed to allocate buffer for kv "
            "cache') means memory, anything else is a model/version problem."
        )
    numbers = _status_fact(status)
    if tag:
        numbers.append(Fact("model", str(tag), "log"))
    if version:
        numbers.append(Fact("Ollama version", ".".join(map(str, version)), "log"))
    if facts.context.get("os"):
        numbers.append(Fact("OS", str(facts.context["os"]), "log"))
    fixes = [
        Fix(
            "ollama",
            "upgrade Ollama, then pull the model again",
            "ollama -v                          # the version you run\n"
            "# Windows/macOS: install the latest from https://ollama.com/download (or let the tray app update)\n"
            "# Linux: curl -fsSL https://ollama.com/install.sh | sh\n"
            f"ollama pull {tag or '<model>'}\nollama run {tag or '<model>'}",
            "a release that supports this model's architecture creates the context normally",
            "none",
            1,
        ),
        _ollama_log_fix(2),
        Fix(
            "ollama",
            "only if the log then shows an allocation failure: a shorter context",
            ollama_env_command({"OLLAMA_CONTEXT_LENGTH": "2048"}, tag if isinstance(tag, str) else None),
            "a smaller KV cache; relevant only when the log says 'failed to allocate'",
            "shorter memory of the conversation",
            5,
        ),
    ]
    notes = [
        "Do not lower num_ctx or num_gpu for this one first: on the affected versions the same crash happens at "
        "any size.",
    ]
    if version is None:
        notes.append(
            "The Ollama version is not in the paste (ollama -v); the wording is from v0.1-v0.2 era builds."
        )
    return _reply(
        title,
        " ".join(sentences),
        numbers,
        fixes,
        notes,
        short="The runner failed to create the context: a version/model-support bug, not memory — upgrade first.",
        data={"cause": "create_context", "exit_status": status or None, "memory": False},
    )


def _runner_unknown(facts: PasteFacts, inner: str, status: str) -> Reply:
    tag = _ollama_tag(facts, _model(facts))
    stopped = facts.root.signature.endswith("unexpectedly_stopped")
    title = "Ollama: the model runner stopped" + (f" (exit status {status})" if status else "")
    meaning = _EXIT_CODES.get(status.lower()) if status else None
    sentences = []
    if stopped:
        sentences.append(
            "The runner died after the model was loaded, while it was working on a request. Ollama's message "
            "names 'resource limitations' as the usual reason — most often memory when a long prompt grows the "
            "KV cache in use and the compute buffer — but the message itself does not say which."
        )
    else:
        sentences.append(
            "The runner (the llama.cpp process holding the model) exited"
            + (f" with status {status}" if status else "")
            + (f" — {meaning}" if meaning else "")
            + "."
        )
    if inner:
        sentences.append(
            f"Its last words were '{inner[:160]}', which is not an allocation failure; the server log has the lines "
            "that decide it."
        )
    else:
        sentences.append(
            "The paste does not include the runner's own error, so only the server log can tell memory from a bug."
        )
    numbers = _status_fact(status)
    if inner:
        numbers.append(Fact("runner error", inner[:200], "log"))
    fixes = [_ollama_log_fix(1)]
    fixes.append(
        Fix(
            "ollama",
            "check the version",
            "ollama -v",
            "crashes without an allocation error are often fixed in a newer release (new model architectures, "
            "driver support)",
            "",
            2,
        )
    )
    if stopped:
        fixes.append(
            Fix(
                "ollama",
                "if it happens on long prompts: a shorter context",
                ollama_env_command({"OLLAMA_CONTEXT_LENGTH": "4096"}, tag),
                "bounds the KV cache and compute buffer a request can grow to",
                "less conversation memory",
                3,
            )
        )
    notes = []
    if status.lower() == "0xc0000409":
        notes.append("0xc0000409 on Windows is an abort code, not 'out of memory'; the quoted error decides.")
    return _reply(
        title,
        " ".join(sentences),
        numbers,
        fixes,
        notes,
        short="The runner stopped; the paste does not say why — the server log does.",
        data={"cause": "unknown", "exit_status": status or None, "runner_error": inner or None},
    )


def _runner_timeout(facts: PasteFacts) -> Reply:
    p = facts.params
    progress = p.get("load_progress")
    try:
        prog = float(progress) if progress is not None else None
    except ValueError:
        prog = None
    tag = _ollama_tag(facts, _model(facts))
    title = "Ollama: the runner did not finish loading in time" + (
        f" (progress {prog:.0%})" if prog is not None else ""
    )
    if prog is not None and prog == 0:
        cause = (
            "Loading never started (progress 0%): the runner hung before reading weights — usually GPU "
            "initialisation (driver, a second GPU runtime) or a model file on a very slow or network disk."
        )
    else:
        cause = (
            "Loading was progressing too slowly: Ollama gives up after OLLAMA_LOAD_TIMEOUT (5 minutes without "
            "progress). That means a slow disk, or a machine that is swapping because model + context do not fit "
            "in RAM."
        )
    numbers = [Fact("load progress", f"{prog:.0%}", "log")] if prog is not None else []
    fixes = [
        Fix(
            "ollama",
            "check RAM while it loads",
            "free -h; vmstat 1 5     # 'si'/'so' above 0 = swapping",
            "if it swaps, the model does not fit in RAM: a smaller quant or a shorter context",
            "",
            1,
        ),
        Fix(
            "ollama",
            "give slow disks more time",
            ollama_env_command({"OLLAMA_LOAD_TIMEOUT": "15m"}, tag),
            "waits 15 minutes without progress instead of 5 (if ollama serve --help lists it in your version)",
            "does not help a machine that is swapping",
            2,
        ),
        _ollama_log_fix(3),
    ]
    return _reply(title, cause, numbers, fixes, [], data={"cause": "timeout", "load_progress": prog})


# ------------------------------------------------------------------------------------------ context_exceeded


def context_exceeded(facts: PasteFacts) -> Reply:
    engine = facts.root.engine
    if engine == "llama.cpp":
        if facts.root.signature.endswith("python"):
            return _ctx_llamacpp_python(facts)
        return _ctx_llamacpp_server(facts)
    if engine == "ollama":
        return _ctx_ollama(facts)
    if engine == "sglang":
        return _ctx_sglang(facts)
    return _ctx_vllm(facts)


def _kv_line(
    match: ModelMatch | None, tokens: int, ctk: str = "f16", ctv: str = "f16"
) -> tuple[str, float] | None:
    if match is None:
        return None
    kv = _kv_gguf_gib(match.model, tokens, ctk, ctv)
    return f"KV cache for {_tok(tokens)} tokens: {_gib(kv)} ({match.model.id}, {ctk}/{ctv})", kv


def _ctx_llamacpp_server(facts: PasteFacts) -> Reply:
    p = facts.params
    n = p.get("requested_tokens")
    slot = p.get("n_ctx")
    command = facts.context.get("command")
    model_file = _gguf_file(facts)
    c = _int_flag(command, "-c", "--ctx-size")
    np_ = _int_flag(command, "-np", "--parallel")
    kvu = _flag_value(command, "-kvu", "--kv-unified") is not None
    max_tokens = facts.get("max_tokens")
    match = _model(facts)
    room = max_tokens or REPLY_ROOM
    want = _round_up_ctx(n + room) if n else (_round_up_ctx(slot * 2) if slot else 8192)
    if match is not None:
        want = min(want, match.model.max_position_embeddings)

    title = "llama-server: the request is longer than a slot's context"
    if n and slot:
        title = f"llama-server: {_a(n)} {_tok(n)}-token request, but each slot holds {_tok(slot)} tokens"
    sentences = []
    if n and slot:
        sentences.append(f"The prompt has {_tok(n)} tokens and the slot that got it can hold {_tok(slot)}.")
    else:
        sentences.append("The prompt is longer than the context of the slot that got it.")
    split = bool(np_ and np_ > 1 and not kvu and c and slot and abs(c / np_ - slot) <= 256)
    if split:
        sentences.append(
            f"You start it with -c {_tok(c)} and -np {np_}: with an explicit -np and no --kv-unified llama-server "
            f"gives each of the {np_} slots -c / {np_} = {_tok(slot)} tokens, not {_tok(c)}."
        )
    elif c and slot and c == slot:
        sentences.append(f"-c {_tok(c)} is the whole context and the request does not fit in it.")
    else:
        sentences.append(
            "With an explicit -np N (and no -kvu) each slot gets -c / N; otherwise the slot context is -c itself."
        )
    sentences.append(
        f"A context of {_tok(want)} per request leaves about {_tok(want - (n or 0))} tokens for the answer."
        if n
        else ""
    )
    numbers: list[Fact] = []
    if n:
        numbers.append(Fact("request (prompt tokens)", _tok(n), "log"))
    if slot:
        numbers.append(Fact("context per slot", _tok(slot), "log"))
    if c:
        numbers.append(Fact("-c (total)", _tok(c), "log"))
    if np_:
        numbers.append(Fact("-np (slots)", str(np_), "log"))
    numbers.append(Fact("context wanted per request", _tok(want), "computed"))

    fixes: list[Fix] = []
    ctk = facts.get("cache_type_k") or "f16"
    ctv = facts.get("cache_type_v") or "f16"

    def kv_effect(total_ctx: int) -> str:
        line = _kv_line(match, total_ctx, ctk, ctv)
        return f"; {line[0]}" if line else ""

    if split and np_:
        total = want * np_
        fixes.append(
            Fix(
                "llama.cpp",
                f"-c {_tok(total)} for {np_} slots",
                _llamacpp_cmd(command, model_file, {"-c": str(total), "-np": str(np_)}),
                f"each of the {np_} slots gets {_tok(want)} tokens ({_tok(want)} x {np_}){kv_effect(total)}",
                f"the KV cache grows {total / c:.1f}x; --fit moves layers to the CPU if VRAM runs out",
                1,
            )
        )
        if c >= want:
            fixes.append(
                Fix(
                    "llama.cpp",
                    "one shared KV pool",
                    _llamacpp_cmd(command, model_file, {"-kvu": ""}),
                    f"slots share the {_tok(c)} cells: one request can use up to {_tok(c)} tokens, no extra memory",
                    "concurrent long requests compete for the pool",
                    2,
                )
            )
        fixes.append(
            Fix(
                "llama.cpp",
                "one slot",
                _llamacpp_cmd(command, model_file, {"-np": "1", "-c": str(max(c, want))}),
                f"the single slot gets all {_tok(max(c, want))} tokens",
                "requests are served one at a time",
                3,
            )
        )
    else:
        fixes.append(
            Fix(
                "llama.cpp",
                f"context {_tok(want)}",
                _llamacpp_cmd(
                    command, model_file, {"-c": str(want * (np_ or 1)) if np_ and not kvu else str(want)}
                ),
                f"a request of {_tok(n or want)} tokens fits with room for the answer{kv_effect(want)}",
                "more KV memory; --fit moves layers to the CPU if VRAM runs out",
                1,
            )
        )
    if n and slot:
        cut = n - slot + room
        fixes.append(
            Fix(
                "any",
                f"shorten the prompt by {_tok(cut)} tokens",
                f"# keep prompt + answer under {_tok(slot)}: at most {_tok(max(0, slot - room))} prompt tokens "
                f"with {_tok(room)} left to answer",
                "no server change",
                "less context for the model",
                4,
            )
        )
    fixes.append(
        Fix(
            "ollama",
            "the same in Ollama",
            ollama_env_command({"OLLAMA_CONTEXT_LENGTH": str(want)}, _ollama_tag(facts, match)),
            "Ollama gives every parallel slot the full num_ctx",
            "KV memory x OLLAMA_NUM_PARALLEL",
            6,
        )
    )
    notes = []
    if not command:
        notes.append(
            "Your llama-server command is not in the paste: if you pass -np N, multiply -c by N; the current "
            "default (-np auto) is 4 slots sharing one pool (-kvu), where each request can use all of -c."
        )
    if max_tokens is None and n:
        notes.append(
            f"I left {_tok(REPLY_ROOM)} tokens for the answer; n_predict / max_tokens decides how many it needs."
        )
    return _reply(
        title,
        " ".join(s for s in sentences if s),
        numbers,
        fixes,
        notes,
        short=f"The request has {_tok(n)} tokens; a slot holds {_tok(slot)}." if n and slot else "",
        data={"requested_tokens": n, "slot_ctx": slot, "ctx": c, "parallel": np_, "wanted_ctx": want},
    )


def _ctx_llamacpp_python(facts: PasteFacts) -> Reply:
    p = facts.params
    n = p.get("requested_tokens")
    n_ctx = p.get("n_ctx") or facts.get("n_ctx")
    text = _text(facts)
    max_tokens = facts.get("max_tokens")
    if max_tokens is None:
        m = re.search(r"\bmax_tokens\s*=\s*([0-9]+)", text)
        max_tokens = int(m.group(1)) if m else None
    server = bool(re.search(r"llama_cpp[/.]server|llama_cpp\.server", text)) or "[llama-cpp]" in text
    match = _model(facts)
    if n:
        want = _round_up_ctx(n)
    elif max_tokens:
        want = _round_up_ctx(max_tokens + 512)
    else:
        want = max(4096, _round_up_ctx((n_ctx or 512) * 2))
    if match is not None:
        want = min(want, match.model.max_position_embeddings)
    title = "llama-cpp-python: prompt + max_tokens do not fit the context window"
    if n and n_ctx:
        title = f"llama-cpp-python: {_tok(n)} tokens requested, the context window is {_tok(n_ctx)}"
    elif n_ctx:
        title = f"llama-cpp-python: prompt + max_tokens exceed the context window of {_tok(n_ctx)}"
        if max_tokens:
            title = (
                f"llama-cpp-python: max_tokens {_tok(max_tokens)} alone exceeds the context window of {_tok(n_ctx)}"
                if max_tokens >= n_ctx
                else title
            )
    sentences = [
        "llama-cpp-python checks prompt tokens + max_tokens against n_ctx before generating"
        + (f": here {_tok(n)} > {_tok(n_ctx)}." if n and n_ctx else ".")
    ]
    if n_ctx == 512:
        sentences.append(
            "512 is the default of Llama(...) when n_ctx is not given — whatever the model was trained for."
        )
    elif n_ctx == 2048 and server:
        sentences.append("2,048 is the default of the llama-cpp-python server (--n_ctx) when it is not set.")
    if max_tokens and n_ctx and max_tokens >= n_ctx:
        sentences.append(f"max_tokens={_tok(max_tokens)} alone is already more than {_tok(n_ctx)}.")
    sentences.append(f"Set n_ctx to {_tok(want)} (or lower max_tokens).")
    numbers: list[Fact] = []
    if n:
        numbers.append(Fact("requested (prompt + max_tokens)", _tok(n), "log"))
    if n_ctx:
        numbers.append(Fact("context window (n_ctx)", _tok(n_ctx), "log"))
    if max_tokens:
        numbers.append(Fact("max_tokens", _tok(max_tokens), "log"))
    numbers.append(Fact("n_ctx wanted", _tok(want), "computed"))
    kv = _kv_line(match, want)
    if kv:
        numbers.append(Fact(f"KV cache at n_ctx {_tok(want)}", _gib(kv[1]), "computed"))
    fixes: list[Fix] = []
    model_path = facts.context.get("model") or "<model>.gguf"
    py = Fix(
        "llama.cpp",
        f"llama-cpp-python: Llama(n_ctx={want})",
        f'llm = Llama(model_path="{model_path}", n_ctx={want})',
        f"room for {_tok(want)} tokens of prompt + answer" + (f"; {kv[0]}" if kv else ""),
        "more KV memory (n_ctx=0 takes the model's full trained context: often far more)",
        1,
    )
    srv = Fix(
        "llama.cpp",
        f"llama-cpp-python server: --n_ctx {want}",
        f"python -m llama_cpp.server --model {model_path} --n_ctx {want}\n# or in the environment: N_CTX={want}",
        f"every request gets {_tok(want)} tokens",
        "more KV memory",
        1,
    )
    fixes += (
        [srv, Fix(py.engine, py.change, py.command, py.effect, py.cost, 2)]
        if server
        else [py, Fix(srv.engine, srv.change, srv.command, srv.effect, srv.cost, 2)]
    )
    if n and n_ctx:
        over = n - n_ctx
        cmd = f"# prompt + max_tokens <= {_tok(n_ctx)}: lower max_tokens by at least {_tok(over)}"
        if max_tokens:
            cmd = f"max_tokens={max(1, max_tokens - over)}   # was {max_tokens}"
        fixes.append(
            Fix(
                "llama.cpp",
                f"lower max_tokens by {_tok(over)}",
                cmd,
                f"fits in the current {_tok(n_ctx)}",
                "shorter answers",
                3,
            )
        )
    elif max_tokens and n_ctx and max_tokens >= n_ctx:
        fixes.append(
            Fix(
                "llama.cpp",
                f"max_tokens below {_tok(n_ctx)}",
                f"max_tokens={max(16, n_ctx // 2)}   # prompt + max_tokens must stay under n_ctx={n_ctx}",
                f"fits in {_tok(n_ctx)} with half left for the prompt",
                "shorter answers",
                3,
            )
        )
    fixes.append(
        Fix(
            "llama.cpp",
            "llama-server instead",
            _llamacpp_cmd(None, str(model_path), {"-c": str(want)}),
            "llama-server uses the model's trained context by default (-c 0) and shrinks it to fit VRAM",
            "a different API (OpenAI-compatible HTTP)",
            5,
        )
    )
    notes = []
    if max_tokens is None and not n:
        notes.append("max_tokens is not in the paste: prompt + max_tokens must stay under n_ctx.")
    return _reply(
        title,
        " ".join(sentences),
        numbers,
        fixes,
        notes,
        short=f"Prompt + max_tokens exceed n_ctx {_tok(n_ctx)}; set n_ctx={want}." if n_ctx else "",
        data={"requested_tokens": n, "n_ctx": n_ctx, "max_tokens": max_tokens, "wanted_ctx": want},
    )


def _ctx_ollama(facts: PasteFacts) -> Reply:
    p = facts.params
    n_ctx = p.get("n_ctx") or facts.get("n_ctx")
    n = p.get("requested_tokens")
    truncated = facts.root.signature.endswith("truncated")
    match = _model(facts)
    tag = _ollama_tag(facts, match)
    if n:
        want = _round_up_ctx(n + REPLY_ROOM)
    elif n_ctx:
        want = _round_up_ctx(n_ctx * 2)
    else:
        want = 16384
    if match is not None:
        want = min(want, match.model.max_position_embeddings)
    if truncated:
        title = "Ollama: the prompt was cut to fit num_ctx"
        if n and n_ctx:
            title = f"Ollama: {_a(n)} {_tok(n)}-token prompt was cut to num_ctx {_tok(n_ctx)}"
        first = (
            f"The prompt had {_tok(n)} tokens but num_ctx is {_tok(n_ctx)}, so Ollama silently dropped the start of it "
            "— which looks like the model 'forgetting' its instructions."
            if n and n_ctx
            else "Ollama silently dropped the oldest messages to fit num_ctx, which looks like the model forgetting."
        )
    else:
        title = "Ollama: the input is longer than the context length" + (f" ({_tok(n_ctx)})" if n_ctx else "")
        first = (
            "The input does not fit in num_ctx and this endpoint cannot drop older messages to make room, so Ollama "
            "returned an error."
        )
    sentences = [
        first,
        "num_ctx is Ollama's context per request: 2,048 by default before v0.6.7, then 4,096, and from v0.15.5 "
        "4k/32k/256k by total VRAM — and the OpenAI-compatible /v1 endpoints cannot change it per request.",
    ]
    numbers: list[Fact] = []
    if n:
        numbers.append(Fact("prompt tokens", _tok(n), "log"))
    if n_ctx:
        numbers.append(Fact("num_ctx", _tok(n_ctx), "log"))
    numbers.append(Fact("num_ctx wanted", _tok(want), "computed"))
    kv_now = kv_want = None
    if match is not None:
        kv_want = _kv_gguf_gib(
            match.model, want, facts.get("cache_type_k") or "f16", facts.get("cache_type_v") or "f16"
        )
        numbers.append(Fact(f"KV cache at {_tok(want)} ({match.label})", _gib(kv_want), "computed"))
        if n_ctx:
            kv_now = _kv_gguf_gib(match.model, n_ctx)
    total, _ = _gpu_total(facts)
    fit_note = ""
    if match is not None and total:
        v = _gguf_variant(match)
        if v is not None:
            b = ollama_budget(
                match.model, variant_weight_bytes(match.model, v), total, OllamaConfig(num_ctx=want)
            )
            fit_note = (
                f"; on {_gib(total)} everything stays on the GPU"
                if b.fits
                else f"; on {_gib(total)} the largest that stays on the GPU is about {_tok(b.n_ctx_max_fit)} "
                "(beyond it layers move to the CPU)"
            )
    cost = "more KV memory"
    if kv_now is not None and kv_want is not None:
        cost = f"KV cache {_gib(kv_now)} -> {_gib(kv_want)}"
    fixes = [
        Fix(
            "ollama",
            f"num_ctx {_tok(want)} for every request (server-wide)",
            ollama_env_command({"OLLAMA_CONTEXT_LENGTH": str(want)}, tag),
            f"every request, including the /v1 OpenAI API, gets {_tok(want)} tokens{fit_note}",
            cost,
            1,
        ),
        Fix(
            "ollama",
            f"num_ctx {_tok(want)} per request",
            f"ollama run {tag or '<model>'}\n>>> /set parameter num_ctx {want}\n"
            f'# native API: "options": {{"num_ctx": {want}}}   (ignored by /v1)',
            "only where you set it",
            cost + "; changing num_ctx between requests reloads the model",
            2,
        ),
        Fix(
            "ollama",
            "a model with the larger context built in (for /v1 clients)",
            f"printf 'FROM {tag or '<model>'}\\nPARAMETER num_ctx {want}\\n' > Modelfile\n"
            f"ollama create {(tag or 'model').replace(':', '-')}-{want // 1024}k -f Modelfile",
            "OpenAI-API clients (Continue, Open WebUI in OpenAI mode, LangChain ChatOpenAI) pick it by name",
            cost,
            3,
        ),
        Fix(
            "llama.cpp",
            f"-c {_tok(want)}",
            _llamacpp_cmd(None, _gguf_placeholder(match), {"-c": str(want)}),
            f"llama-server holds {_tok(want)} tokens per request (current default -np auto shares the pool)",
            "more KV memory",
            5,
        ),
    ]
    notes = ["OLLAMA_CONTEXT_LENGTH exists from Ollama 0.5.13; on older versions use the Modelfile."]
    if n is None:
        notes.append(
            "The paste does not say how long the prompt was; I doubled num_ctx — size it to your longest prompt."
        )
    return _reply(
        title,
        " ".join(sentences),
        numbers,
        fixes,
        notes,
        data={"n_ctx": n_ctx, "prompt_tokens": n, "wanted_ctx": want, "truncated": truncated},
    )


def _vllm_kv_bpt(match: ModelMatch | None, facts: PasteFacts) -> float | None:
    if match is None:
        return None
    try:
        return vllm_layout(
            match.model, facts.get("kv_cache_dtype") or "auto", tp=facts.get("tp") or 1
        ).all_attention_bytes_per_token
    except ValueError:
        return None


def _ctx_vllm(facts: PasteFacts) -> Reply:
    p = facts.params
    sig = facts.root.signature
    prompt = p.get("prompt_tokens")
    limit = p.get("prompt_limit")
    mml = p.get("max_model_len") or facts.context.get("max_model_len")
    max_tokens = p.get("max_tokens")
    requested = p.get("requested_tokens")
    command = facts.context.get("command")
    model_name = facts.context.get("model")
    match = _model(facts)
    text = _text(facts)
    trained = None
    m = re.search(r"maximum sequence length for this model \(([0-9]+) > ([0-9]+)\)", text)
    if m:
        trained = int(m.group(2))
    if match is not None:
        trained = trained or match.model.max_position_embeddings
    v0 = sig.endswith("v0_prompt_limit")
    cap = limit if v0 else mml
    numbers: list[Fact] = []
    fixes: list[Fix] = []
    notes: list[str] = []
    if prompt:
        numbers.append(Fact("prompt tokens", _tok(prompt), "log"))
    if max_tokens:
        numbers.append(Fact("max_tokens asked for", _tok(max_tokens), "log"))
    if requested:
        numbers.append(Fact("prompt + max_tokens", _tok(requested), "log"))
    if cap:
        numbers.append(
            Fact(
                "prompt limit" if v0 else "max_model_len",
                _tok(cap),
                "log" if (v0 or p.get("max_model_len")) else "given",
            )
        )
    if trained and trained != cap:
        numbers.append(Fact("the model's trained context", _tok(trained), "log" if m else "catalog"))

    room = max_tokens or REPLY_ROOM
    want = _round_up_ctx((prompt or 0) + room) if prompt else None
    if want and trained:
        want = min(want, trained)
    allowed = cap - prompt if cap and prompt else None

    if sig.endswith("max_tokens_too_large"):
        title = (
            f"vLLM: max_tokens {_tok(max_tokens)} does not fit next to the prompt"
            if max_tokens
            else "vLLM: max_tokens is too large"
        )
        if allowed is not None and allowed > 0:
            title += f" (at most {_tok(allowed)} here)"
        sentences = [
            f"The request asks for max_tokens {_tok(max_tokens)}, but prompt + max_tokens must fit in max_model_len"
            + (f" {_tok(mml)}" if mml else "")
            + (f" and the prompt already has {_tok(prompt)} tokens" if prompt else "")
            + ".",
        ]
        if allowed is not None:
            sentences.append(
                f"So max_tokens can be at most {_tok(mml)} − {_tok(prompt)} = {_tok(allowed)}."
                if allowed > 0
                else f"The prompt alone is {_tok(prompt - mml)} tokens over: max_tokens cannot help."
            )
        else:
            sentences.append(
                "vLLM checks it per request: max_tokens ≤ max_model_len − prompt tokens. Leave max_tokens unset and "
                "vLLM uses whatever is left."
            )
    elif v0:
        title = (
            f"vLLM (V0): {_a(prompt)} {_tok(prompt)}-token prompt is over the {_tok(limit)}-token prompt limit"
            if prompt and limit
            else "vLLM (V0): the prompt is over the prompt limit"
        )
        sentences = [
            f"The V0 scheduler skipped a request of {_tok(prompt)} tokens: its prompt limit is {_tok(limit)} — "
            "max_model_len, or max_num_batched_tokens when chunked prefill is off, whichever is smaller."
            if prompt and limit
            else "The V0 scheduler skipped the request: it is longer than the prompt limit."
        ]
        if limit == 2560:
            sentences.append("2,560 was the default --max-num-batched-tokens of early vLLM (0.1.x).")
        if trained and prompt and prompt > trained:
            sentences.append(
                f"The tokenizer also says the model was built for {_tok(trained)} tokens: raising the limit past that "
                "gives garbage, so the prompt must get shorter (or the model longer-context)."
            )
    else:
        title = "vLLM: the request is longer than max_model_len"
        if prompt and mml:
            title = f"vLLM: {_a(prompt)} {_tok(prompt)}-token prompt, max_model_len is {_tok(mml)}"
        sentences = [
            f"The server runs with max_model_len {_tok(mml)} and this request needs more"
            + (f": prompt {_tok(prompt)}" if prompt else "")
            + (f" + max_tokens {_tok(max_tokens)}" if max_tokens else "")
            + (f" = {_tok(requested)}" if requested else "")
            + "."
            if mml
            else "The request is longer than the server's max_model_len."
        ]
        if allowed is not None and allowed > 0 and max_tokens and max_tokens > allowed:
            sentences.append(f"The prompt fits: max_tokens ≤ {_tok(allowed)} makes the request fit.")
        elif allowed is not None and allowed == 0:
            sentences.append(
                f"The prompt alone fills all {_tok(mml)} tokens: nothing is left for the answer."
            )
        elif allowed is not None and allowed < 0:
            sentences.append(f"The prompt alone is {_tok(-allowed)} tokens over.")

    # lower max_tokens
    if allowed is not None and allowed > 0 and (max_tokens is None or max_tokens > allowed):
        fixes.append(
            Fix(
                "vllm",
                f"max_tokens ≤ {_tok(allowed)}",
                f'"max_tokens": {allowed}   # max_model_len {mml} − prompt {prompt}; or leave it unset',
                "the request fits without restarting the server",
                "the answer is capped at that length",
                1,
            )
        )
    elif sig.endswith("max_tokens_too_large"):
        fixes.append(
            Fix(
                "vllm",
                "lower max_tokens (or leave it unset)",
                '# in the request: drop "max_tokens" (vLLM then uses max_model_len − prompt) or set\n'
                f'"max_tokens": <max_model_len − prompt tokens>   # {_tok(max_tokens or 0)} is more than that',
                "the request fits without restarting the server",
                "the answer is capped",
                1,
            )
        )
    # raise the limit
    if v0 and prompt and limit:
        target = _round_up_ctx(prompt + REPLY_ROOM)
        if trained:
            target = min(target, trained)
        if target > limit:
            fixes.append(
                Fix(
                    "vllm",
                    f"--max-num-batched-tokens {target}",
                    vllm_command(
                        command,
                        model_name,
                        {"--max-num-batched-tokens": str(target), "--max-model-len": str(target)},
                    ),
                    f"V0 without chunked prefill accepts prompts up to {_tok(target)}; the KV check at startup decides whether it fits",
                    "a larger prefill batch: more activation memory",
                    2,
                )
            )
        fixes.append(
            Fix(
                "vllm",
                "upgrade to the V1 engine (vLLM ≥ 0.8)",
                "pip install -U vllm",
                "chunked prefill is on by default: the only prompt limit is max_model_len",
                "a new version to test",
                4,
            )
        )
    elif want and cap and want > cap and not sig.endswith("max_tokens_too_large"):
        bpt = _vllm_kv_bpt(match, facts)
        effect = f"one request of {_tok(want)} tokens is allowed"
        if bpt:
            effect += f"; it needs {_gib(want * bpt / GIB)} of KV cache ({bpt / KIB:,.0f} KiB/token)"
        effect += (
            ". vLLM checks at startup that one full-length request fits the KV cache: that check decides"
        )
        fixes.append(
            Fix(
                "vllm",
                f"--max-model-len {_tok(want)}",
                vllm_command(command, model_name, {"--max-model-len": str(want)}),
                effect,
                "more KV memory per request"
                + (
                    "; past the model's trained context the output degrades"
                    if not trained or want > trained
                    else ""
                ),
                2,
            )
        )
    elif sig.endswith("max_tokens_too_large") and max_tokens:
        target = _round_up_ctx(max_tokens + (prompt or REPLY_ROOM))
        if trained:
            target = min(target, trained)
        fixes.append(
            Fix(
                "vllm",
                f"--max-model-len {_tok(target)}",
                vllm_command(command, model_name, {"--max-model-len": str(target)}),
                f"room for max_tokens {_tok(max_tokens)} plus the prompt, if the KV cache can hold one request of "
                f"{_tok(target)} tokens — vLLM's startup check decides",
                "more KV memory per request",
                2,
            )
        )
    if prompt and cap and prompt >= cap - room:
        eff_cap = min(cap, trained) if trained else cap
        answer = min(room, eff_cap // 4)
        keep = eff_cap - answer
        if prompt > keep:
            fixes.append(
                Fix(
                    "any",
                    f"shorten the prompt by {_tok(prompt - keep)}+ tokens",
                    f"# keep the prompt under {_tok(keep)} tokens so {_tok(answer)} are left for the answer"
                    + (
                        f" (the model's trained context is {_tok(trained)})"
                        if trained and trained < cap
                        else ""
                    ),
                    "works with the server as it is",
                    "less context for the model",
                    1 if v0 and trained and trained <= cap else 3,
                )
            )
    if not facts.version_known and facts.root.versions:
        notes.append(f"This wording is printed by vLLM {facts.root.versions}.")
    if not command and any(f.command.startswith("vllm serve") for f in fixes):
        notes.append("Your vllm serve command is not in the paste: add the flag to your own command line.")
    return _reply(
        title,
        " ".join(sentences),
        numbers,
        fixes,
        notes,
        data={
            "prompt_tokens": prompt,
            "max_tokens": max_tokens,
            "max_model_len": mml,
            "prompt_limit": limit,
            "max_tokens_allowed": allowed,
            "wanted_len": want,
        },
    )


def _ctx_sglang(facts: PasteFacts) -> Reply:
    p = facts.params
    prompt = p.get("prompt_tokens")
    ctx = p.get("context_length") or facts.context.get("context_length")
    limit = p.get("prompt_limit")
    max_tokens = p.get("max_tokens")
    requested = p.get("requested_tokens") or (prompt + max_tokens if prompt and max_tokens else None)
    command = facts.context.get("command")
    model_name = facts.context.get("model")
    match = _model(facts)
    trained = match.model.max_position_embeddings if match is not None else None
    room = max_tokens or REPLY_ROOM
    want = _round_up_ctx((prompt or 0) + room) if prompt else None
    if want and trained:
        want = min(want, trained)
    cap = limit or ctx
    title = "SGLang: the request is longer than the served context"
    if requested and ctx:
        title = (
            f"SGLang: {_tok(requested)} tokens requested ({_tok(prompt)} input + {_tok(max_tokens)} completion), "
            f"the context is {_tok(ctx)}"
        )
    elif prompt and cap:
        title = f"SGLang: {_a(prompt)} {_tok(prompt)}-token input, the server accepts {_tok(cap)}"
    sentences = []
    if requested and ctx:
        sentences.append(
            f"Input ({_tok(prompt)}) plus max_tokens ({_tok(max_tokens)}) is {_tok(requested)} tokens, "
            f"{_tok(requested - ctx)} more than the served context of {_tok(ctx)}"
            + (
                f"; the input alone fits, so max_tokens ≤ {_tok(ctx - prompt)} is enough."
                if prompt < ctx
                else "."
            )
        )
    elif prompt and limit and ctx and limit < ctx - 1:
        sentences.append(
            f"The input has {_tok(prompt)} tokens and the limit is {_tok(limit)}, below --context-length {_tok(ctx)}: "
            "SGLang's per-request limit is min(context_len − 1, KV pool tokens − 1), so here the KV pool is what "
            "limits it."
        )
    else:
        sentences.append(
            f"The input has {_tok(prompt) if prompt else 'more'} tokens"
            + (f" and the server accepts {_tok(cap)}." if cap else ".")
            + " SGLang's per-request limit is min(context_len − 1, KV pool tokens − 1)."
        )
    if trained and ctx and ctx >= trained:
        sentences.append(
            f"{_tok(ctx)} is already the model's trained context, so --context-length cannot usefully grow."
        )
    numbers = []
    if prompt:
        numbers.append(Fact("input tokens", _tok(prompt), "log"))
    if max_tokens:
        numbers.append(Fact("max_tokens", _tok(max_tokens), "log"))
    if requested:
        numbers.append(
            Fact("requested in total", _tok(requested), "log" if p.get("requested_tokens") else "computed")
        )
    if ctx:
        numbers.append(Fact("context length", _tok(ctx), "log"))
    if limit:
        numbers.append(Fact("maximum allowed input", _tok(limit), "log"))
    if trained:
        numbers.append(Fact("the model's trained context", _tok(trained), "catalog"))
    fixes = []
    if max_tokens and ctx and prompt and prompt < ctx:
        fixes.append(
            Fix(
                "sglang",
                f"max_tokens ≤ {_tok(ctx - prompt)}",
                f'"max_tokens": {ctx - prompt}   # context {ctx} − input {prompt}',
                "the request fits without a restart",
                "shorter answers",
                1,
            )
        )
    if limit and (not ctx or limit < ctx - 1):
        fixes.append(
            Fix(
                "sglang",
                "a bigger KV pool",
                sglang_command(
                    command, model_name, {"--mem-fraction-static": "0.9", "--kv-cache-dtype": "fp8_e4m3"}
                ),
                "the limit here comes from the pool size (max_total_num_tokens), not --context-length",
                "less headroom for activations; fp8 KV needs Hopper/Ada (or MI300)",
                2,
            )
        )
    elif want and cap and want > cap:
        fixes.append(
            Fix(
                "sglang",
                f"--context-length {_tok(want)}",
                sglang_command(command, model_name, {"--context-length": str(want)}),
                f"requests up to {_tok(want)} tokens; the KV pool (max_total_num_tokens) must hold at least that",
                "more KV per request"
                + ("" if trained else "; past the model's trained context the output degrades"),
                2,
            )
        )
    if prompt and cap and prompt > cap - room:
        keep = max(0, cap - room)
        fixes.append(
            Fix(
                "any",
                f"shorten the input by {_tok(prompt - keep)}+ tokens",
                f"# keep the input under {_tok(keep)} tokens so {_tok(room)} are left for the answer",
                "no server change",
                "less context",
                3,
            )
        )
    return _reply(
        title,
        " ".join(sentences),
        numbers,
        fixes,
        [],
        data={
            "prompt_tokens": prompt,
            "context_length": ctx,
            "prompt_limit": limit,
            "wanted_len": want,
            "max_tokens_allowed": ctx - prompt if ctx and prompt and prompt < ctx else None,
        },
    )


# ------------------------------------------------------------------------------------------ flash attention


def kv_quant_needs_flash_attn(facts: PasteFacts) -> Reply:
    engine = facts.root.engine
    evidence = " ".join(facts.root.evidence)
    command = facts.context.get("command")
    model_file = _gguf_file(facts)
    match = _model(facts)
    logged_type = re.search(r"\b(?:cache_)?type=([a-z0-9_]+)", evidence)
    ctk_known = facts.get("cache_type_k") or (logged_type.group(1) if logged_type else None)
    ctk = str(ctk_known or "q8_0")
    ctv = str(facts.get("cache_type_v") or ctk)
    n_ctx = facts.get("n_ctx")
    cc = _gpu_cc(facts)
    unsupported = _fa_unsupported(cc) or "but this requires Flash Attention" in evidence
    build = _llamacpp_build(facts)
    fa_value = "on" if llamacpp_fa_takes_value(build) else ""
    old_build_hint = (
        build is None
        and "V cache quantization requires flash_attn" in evidence
        and _flag_value(command, "-fa", "--flash-attn") is None
    )
    if old_build_hint:
        # builds that print this wording without any -fa are from before -fa took a value (≈b6325)
        fa_value = ""
    tag = _ollama_tag(facts, match)
    version = _ollama_version(facts)

    kv_q = kv_f16v = kv_f16 = None
    if match is not None and n_ctx and ctk in LLAMACPP_KV_BYTES and ctv in LLAMACPP_KV_BYTES:
        kv_q = _kv_gguf_gib(match.model, n_ctx, ctk, ctv)
        kv_f16v = _kv_gguf_gib(match.model, n_ctx, ctk, "f16")
        kv_f16 = _kv_gguf_gib(match.model, n_ctx)

    numbers: list[Fact] = []
    if engine == "ollama" and ctk_known:
        numbers.append(Fact("OLLAMA_KV_CACHE_TYPE", ctk, "log"))
    elif ctk_known:
        numbers.append(Fact("K cache type", ctk, "log"))
    if facts.get("cache_type_v") and engine != "ollama":
        numbers.append(Fact("V cache type", ctv, "log"))
    if facts.get("flash_attn"):
        numbers.append(Fact("flash attention", str(facts.get("flash_attn")), "log"))
    if n_ctx:
        numbers.append(Fact("context", _tok(n_ctx), "log"))
    if cc:
        numbers.append(
            Fact("GPU compute capability", f"{cc:g}", "log" if facts.get("compute_capability") else "catalog")
        )
    if facts.gpu is not None:
        numbers.append(Fact("GPU", facts.gpu.name, "catalog"))
    if kv_q is not None:
        numbers.append(Fact(f"KV cache ({ctk}/{ctv}) at {_tok(n_ctx)}", _gib(kv_q), "computed"))
        numbers.append(Fact(f"KV cache ({ctk}/f16) at {_tok(n_ctx)}", _gib(kv_f16v), "computed"))

    fixes: list[Fix] = []
    notes: list[str] = []
    if engine == "ollama":
        title = f"Ollama: OLLAMA_KV_CACHE_TYPE={ctk} was ignored — flash attention is off"
        sentences = [
            "Up to v0.29 a quantized OLLAMA_KV_CACHE_TYPE only takes effect with flash attention on; without it "
            "Ollama quietly kept an f16 KV cache.",
            f"f16 takes {2 / LLAMACPP_KV_BYTES.get(ctk, 1.0625):.2f}x the memory of {ctk}, so the context you "
            "planned for may not fit on the GPU.",
            "From v0.30 flash attention is automatic for a quantized cache.",
        ]
        if not unsupported:
            fixes.append(
                Fix(
                    "ollama",
                    "turn flash attention on",
                    ollama_env_command({"OLLAMA_FLASH_ATTENTION": "1", "OLLAMA_KV_CACHE_TYPE": ctk}, tag),
                    f"the {ctk} KV cache takes effect"
                    + (f": {_gib(kv_q)} instead of {_gib(kv_f16)}" if kv_q else ""),
                    "none on supported GPUs; a model that does not support it logs 'flash attention enabled but not "
                    "supported by model' and stays f16",
                    1,
                )
            )
            fixes.append(
                Fix(
                    "ollama",
                    "upgrade to v0.30+",
                    "ollama -v   # then install the latest release",
                    "flash attention turns on by itself for a quantized cache",
                    "",
                    2,
                )
            )
        else:
            fixes.append(
                Fix(
                    "ollama",
                    "a shorter context instead",
                    ollama_env_command(
                        {"OLLAMA_CONTEXT_LENGTH": str(_pow2_floor((n_ctx or 8192) // 2))}, tag
                    ),
                    "this GPU has no flash attention (CUDA CC < 6.0 or 7.2), so the KV cache stays f16: save memory "
                    "with the context instead",
                    "less context",
                    1,
                )
            )
    else:
        title = f"llama.cpp: a {ctv} V cache needs flash attention"
        if unsupported:
            title += " — not available on this GPU"
        sentences = [
            f"-ctv {ctv} asks for a quantized V cache, which llama.cpp can only use with flash attention, and flash "
            "attention is off"
            + (
                " because this GPU does not support it (CUDA needs compute capability 6.0+, and 7.2 — Jetson Xavier — "
                "has none)."
                if unsupported
                else (
                    " (-fa off)."
                    if str(facts.get("flash_attn") or "") in ("off", "0", "false", "disabled")
                    else "."
                )
            ),
            "A quantized K cache alone does not need it.",
        ]
        if not unsupported:
            fixes.append(
                Fix(
                    "llama.cpp",
                    "flash attention on"
                    if fa_value
                    else "flash attention on (bare -fa: this wording is from builds before -fa took a value)",
                    _llamacpp_cmd(command, model_file, {"-fa": fa_value}),
                    f"keeps the {ctk}/{ctv} KV cache"
                    + (f": {_gib(kv_q)} at {_tok(n_ctx)} tokens" if kv_q else ""),
                    "none on GPUs that support it",
                    1,
                )
            )
        fixes.append(
            Fix(
                "llama.cpp",
                "keep V at f16",
                _llamacpp_cmd(command, model_file, {"-ctv": "f16"}),
                "works without flash attention; K stays quantized"
                + (f": KV {_gib(kv_f16v)} instead of {_gib(kv_q)}" if kv_q else ""),
                "more KV memory" if kv_q is None else f"{_gib(kv_f16v - kv_q)} more KV memory",
                1 if unsupported else 2,
            )
        )
        if unsupported and kv_q is not None and n_ctx:
            same = int(n_ctx * kv_q / kv_f16v)
            new_ctx = max(256, (same // 256) * 256)
            fixes.append(
                Fix(
                    "llama.cpp",
                    f"V at f16 and context {_tok(new_ctx)}",
                    _llamacpp_cmd(command, model_file, {"-ctv": "f16", "-c": str(new_ctx)}),
                    f"the same {_gib(kv_q)} of KV memory you planned for",
                    "a shorter context",
                    2,
                )
            )
        fixes.append(
            Fix(
                "ollama",
                "the same in Ollama",
                ollama_env_command(
                    ({"OLLAMA_FLASH_ATTENTION": "1"} if not unsupported else {})
                    | {"OLLAMA_KV_CACHE_TYPE": ctv},
                    tag,
                ),
                "Ollama ≤ 0.29 needs OLLAMA_FLASH_ATTENTION=1 for a quantized cache; v0.30+ turns it on by itself"
                + ("" if not unsupported else "; on this GPU Ollama stays at f16"),
                "",
                5,
            )
        )
        if build is None and fa_value:
            notes.append(
                "-fa takes a value (on/off/auto) from about b6325 (Aug 2025); on older builds it is a bare -fa."
            )
        elif old_build_hint:
            notes.append("On a build from after Aug 2025 (≈b6325) write -fa on instead of the bare -fa.")
    if version is not None:
        notes.append(f"Ollama {'.'.join(map(str, version))}.")
    return _reply(
        title,
        " ".join(sentences),
        numbers,
        fixes,
        notes,
        data={"cache_type_k": ctk, "cache_type_v": ctv, "fa_supported": not unsupported, "kv_gib": kv_q},
    )


# ------------------------------------------------------------------------------------------ invalid_argument

_CACHE_ALIASES = {
    "q8": "q8_0",
    "int8": "q8_0",
    "8bit": "q8_0",
    "fp8": "q8_0",
    "q4": "q4_0",
    "int4": "q4_0",
    "4bit": "q4_0",
    "q4_k": "q4_0",
    "q4_k_m": "q4_0",
    "q5": "q5_0",
    "q5_k": "q5_0",
    "fp16": "f16",
    "float16": "f16",
    "half": "f16",
    "fp32": "f32",
    "float32": "f32",
    "bfloat16": "bf16",
}
_FLAG_VALUES = {
    "--flash-attn": "on, off, auto",
    "-fa": "on, off, auto",
    "--split-mode": "none, layer, row (tensor on recent builds)",
    "-sm": "none, layer, row (tensor on recent builds)",
    "--numa": "distribute, isolate, numactl",
    "--fit": "on, off",
    "-fit": "on, off",
}


def invalid_argument_llamacpp(facts: PasteFacts) -> Reply:
    p = facts.params
    command = facts.context.get("command")
    model_file = _gguf_file(facts)
    sig = facts.root.signature
    numbers: list[Fact] = []
    fixes: list[Fix] = []
    notes: list[str] = []
    if sig.endswith("flag_value"):
        flag = str(p.get("flag") or "")
        value = str(p.get("arg_value") or "")
        numbers += [Fact("flag", flag, "log"), Fact("value it got", repr(value), "log")]
        if flag in ("--flash-attn", "-fa") and (value.startswith("-") or not value):
            title = f"llama.cpp: the old bare -fa swallowed '{value}' as its value"
            summary = (
                "Since mid-2025 (≈b6325) -fa/--flash-attn takes a value: on, off or auto (the default). The old "
                f"style '-fa' followed by another flag makes llama.cpp read '{value}' as the value, so it stops "
                "before loading anything. Write -fa on (or drop -fa: auto turns it on where supported)."
            )
            fixes.append(
                Fix(
                    "llama.cpp",
                    "-fa on",
                    _llamacpp_cmd(command, model_file, {"-fa": "on"}),
                    "flash attention on, and the next flag is read as a flag again",
                    "none",
                    1,
                )
            )
            fixes.append(
                Fix(
                    "llama.cpp",
                    "drop -fa",
                    _llamacpp_cmd(command, model_file, {"-fa": None}),
                    "the default -fa auto enables it where the GPU supports it",
                    "none",
                    2,
                )
            )
            fixes.append(
                Fix(
                    "ollama",
                    "Ollama equivalent",
                    ollama_env_command({"OLLAMA_FLASH_ATTENTION": "1"}),
                    "Ollama passes --flash-attn itself; ≤ 0.29 it is off unless set (v0.30+: auto)",
                    "",
                    5,
                )
            )
        else:
            valid = _FLAG_VALUES.get(flag)
            title = f"llama.cpp: {flag} does not accept '{value}'"
            summary = f"{flag} was given '{value}', which it does not accept" + (
                f"; valid values are {valid}."
                if valid
                else ". `llama-server --help` lists the values it takes."
            )
            first = valid.split(",")[0].strip() if valid else "<value>"
            fixes.append(
                Fix(
                    "llama.cpp",
                    f"{flag} {first}",
                    _llamacpp_cmd(command, model_file, {flag: first}),
                    f"a value {flag} accepts",
                    "",
                    1,
                )
            )
        return _reply(title, summary, numbers, fixes, notes, data={"flag": flag, "value": value})

    bad = str(p.get("cache_type") or "")
    flag = str(p.get("flag") or "")
    evidence = " ".join(facts.root.evidence)
    if "does not divide" in evidence:
        m = re.search(r"n_embd_head_k=([0-9]+)", evidence)
        head = m.group(1) if m else "?"
        title = f"llama.cpp: {bad} cannot store this model's K cache (head size {head})"
        summary = (
            f"Quantized KV types pack 32 values per block, and this model's head size {head} is not a multiple of "
            f"32, so {bad} cannot hold its K cache. Only f16, bf16 or f32 work for it."
        )
        numbers.append(Fact("K head size", head, "log"))
        fixes.append(
            Fix(
                "llama.cpp",
                "f16 K cache",
                _llamacpp_cmd(command, model_file, {"-ctk": "f16"}),
                "the model loads",
                "more KV memory than the quantized type",
                1,
            )
        )
        return _reply(title, summary, numbers, fixes, notes, data={"cache_type": bad})
    if "different K" in evidence:
        title = "llama.cpp: this model needs the same K and V cache type"
        same = bad or "q8_0"
        summary = (
            "MLA models (DeepSeek V2/V3/R1, Kimi-K2, DSV4) keep one compressed latent per token instead of separate "
            f"K and V, so since late July 2026 llama.cpp requires -ctk and -ctv to be equal. Set both to {same}."
        )
        fixes.append(
            Fix(
                "llama.cpp",
                f"-ctk {same} -ctv {same}",
                _llamacpp_cmd(command, model_file, {"-ctk": same, "-ctv": same}),
                "the model loads with the cache type you chose",
                "",
                1,
            )
        )
        return _reply(title, summary, numbers, fixes, notes, data={"cache_type": bad})
    suggestion = (
        _CACHE_ALIASES.get(bad.lower(), "q8_0") if bad.lower() not in VALID_CACHE_TYPES else bad.lower()
    )
    title = f"llama.cpp: '{bad}' is not a KV cache type" if bad else "llama.cpp: KV cache type not supported"
    summary = (
        f"{flag or '-ctk/-ctv'} was given '{bad}'. llama.cpp accepts {', '.join(VALID_CACHE_TYPES)} for the KV "
        f"cache — no K-quants (q4_K) and no fp8. The closest valid type is {suggestion}."
    )
    numbers.append(Fact("cache type given", bad or "?", "log"))
    which = "-ctv" if flag.endswith("-v") else "-ctk"
    changes = {which: suggestion}
    if suggestion not in ("f16", "f32", "bf16") and which == "-ctk":
        changes = {"-ctk": suggestion, "-ctv": suggestion, "-fa": "on"}
    fixes.append(
        Fix(
            "llama.cpp",
            f"{which} {suggestion}",
            _llamacpp_cmd(command, model_file, changes),
            f"{suggestion} takes {LLAMACPP_KV_BYTES.get(suggestion, 2):g} bytes per value instead of 2 (f16)",
            "a quantized V cache needs flash attention (-fa on)"
            if suggestion not in ("f16", "f32", "bf16")
            else "",
            1,
        )
    )
    fixes.append(
        Fix(
            "ollama",
            "Ollama equivalent",
            ollama_env_command({"OLLAMA_KV_CACHE_TYPE": suggestion}),
            "v0.30+ passes the value straight to llama-server (≤ 0.29: f16, q8_0, q4_0 only)",
            "",
            5,
        )
    )
    return _reply(title, summary, numbers, fixes, notes, data={"cache_type": bad, "suggestion": suggestion})


_BYTES_UNITS = {
    "": 1,
    "b": 1,
    "k": KIB,
    "kb": 1000,
    "kib": KIB,
    "m": MIB,
    "mb": 1_000_000,
    "mib": MIB,
    "g": GIB,
    "gb": 1_000_000_000,
    "gib": GIB,
    "t": 1 << 40,
    "tb": 10**12,
    "tib": 1 << 40,
}
_OLLAMA_BYTES_VARS = {"OLLAMA_GPU_OVERHEAD", "OLLAMA_MAX_VRAM"}
_OLLAMA_INT_VARS = {
    "OLLAMA_NUM_PARALLEL",
    "OLLAMA_MAX_LOADED_MODELS",
    "OLLAMA_MAX_QUEUE",
    "OLLAMA_CONTEXT_LENGTH",
}
_OLLAMA_BOOL_VARS = {
    "OLLAMA_FLASH_ATTENTION",
    "OLLAMA_DEBUG",
    "OLLAMA_SCHED_SPREAD",
    "OLLAMA_NOPRUNE",
    "OLLAMA_NOHISTORY",
    "OLLAMA_MULTIUSER_CACHE",
    "OLLAMA_NEW_ENGINE",
    "OLLAMA_INTEL_GPU",
    "OLLAMA_NO_CLOUD",
}
_OLLAMA_DURATION_VARS = {"OLLAMA_KEEP_ALIVE", "OLLAMA_LOAD_TIMEOUT"}


def _to_bytes(value: str) -> int | None:
    m = re.fullmatch(r"\s*([0-9]+(?:\.[0-9]+)?)\s*([A-Za-z]*)\s*", value)
    if not m or m.group(2).lower() not in _BYTES_UNITS:
        return None
    return int(float(m.group(1)) * _BYTES_UNITS[m.group(2).lower()])


def invalid_argument_ollama(facts: PasteFacts) -> Reply:
    p = facts.params
    sig = facts.root.signature
    numbers: list[Fact] = []
    fixes: list[Fix] = []
    notes: list[str] = []
    tag = _ollama_tag(facts, _model(facts))
    if sig.endswith("kv_cache_type"):
        bad = str(p.get("cache_type") or facts.get("cache_type_k") or "")
        version = _ollama_version(facts)
        suggestion = _CACHE_ALIASES.get(bad.lower(), "q8_0") if bad else "q8_0"
        if suggestion not in ("f16", "q8_0", "q4_0"):
            suggestion = "q8_0"
        title = (
            f"Ollama: OLLAMA_KV_CACHE_TYPE={bad} is not supported"
            if bad
            else "Ollama: unsupported OLLAMA_KV_CACHE_TYPE"
        )
        summary = (
            "Up to v0.29 Ollama's own engine accepts only f16, q8_0 and q4_0 for OLLAMA_KV_CACHE_TYPE and falls back "
            "to f16 for anything else, so the memory you planned to save is not saved. v0.30+ passes the value to "
            f"llama-server, which takes {', '.join(VALID_CACHE_TYPES)}."
        )
        if bad:
            numbers.append(Fact("OLLAMA_KV_CACHE_TYPE", bad, "log"))
        if version:
            numbers.append(Fact("Ollama version", ".".join(map(str, version)), "log"))
        fixes.append(
            Fix(
                "ollama",
                f"OLLAMA_KV_CACHE_TYPE={suggestion}",
                ollama_env_command({"OLLAMA_FLASH_ATTENTION": "1", "OLLAMA_KV_CACHE_TYPE": suggestion}, tag),
                f"{suggestion} is accepted on every version; it halves the KV cache vs f16 (q8_0) or quarters it (q4_0)",
                "≤ v0.29 also needs flash attention on (set here)",
                1,
            )
        )
        return _reply(
            title, summary, numbers, fixes, notes, data={"cache_type": bad, "suggestion": suggestion}
        )

    key = str(p.get("env_key") or "")
    value = str(p.get("env_value") or "").strip('"')
    default = p.get("env_default")
    numbers += [Fact("variable", key, "log"), Fact("value given", value, "log")]
    if default is not None:
        numbers.append(Fact("value used instead", str(default), "log"))
    fixed = None
    explain = ""
    if key in _OLLAMA_BYTES_VARS:
        b = _to_bytes(value)
        if b is not None:
            fixed = str(b)
            explain = f"{key} is a plain number of bytes: {value} = {b:,} bytes ({_gib(b / GIB)})."
        else:
            explain = f"{key} is a plain number of bytes (8 GiB = 8589934592)."
    elif key in _OLLAMA_INT_VARS:
        m = re.fullmatch(r"([0-9]+)\s*([kK])?", value)
        words = {"one": 1, "two": 2, "three": 3, "four": 4, "five": 5, "six": 6, "eight": 8, "sixteen": 16}
        if m:
            fixed = str(int(m.group(1)) * (1024 if m.group(2) else 1))
        elif value.lower() in words:
            fixed = str(words[value.lower()])
        explain = f"{key} takes a plain integer" + (f": {fixed}." if fixed else ".")
    elif key in _OLLAMA_BOOL_VARS:
        fixed = (
            "1"
            if value.lower() in ("on", "yes", "y", "enable", "enabled", "true")
            else "0"
            if value.lower() in ("off", "no", "n", "disable", "disabled")
            else "1"
        )
        explain = f"{key} takes 1/0 or true/false."
    elif key in _OLLAMA_DURATION_VARS:
        m = re.fullmatch(r"([0-9]+)\s*(s|sec|secs|m|min|mins|h|hr|hrs|hours?)", value.lower())
        if m:
            unit = m.group(2)[0]
            fixed = f"{m.group(1)}{unit}"
        explain = f"{key} takes a Go duration (30s, 10m, 1h; -1 = forever) or a number of seconds."
    title = f"Ollama ignored {key}={value}" + (f" — write {key}={fixed}" if fixed else "")
    summary = (
        f"Ollama could not parse {key}={value} and used the default ({default if default is not None else 'unset'}) "
        f"instead, so the setting had no effect. {explain}"
    )
    if key == "OLLAMA_GPU_OVERHEAD":
        summary += (
            " With the value ignored, Ollama reserved no extra VRAM and planned the layers right up to the free "
            "memory it measured."
        )
    if fixed is None:
        fixes.append(
            Fix(
                "ollama",
                f"a valid {key}",
                ollama_env_command({key: "<value>"}, tag),
                explain or "see ollama serve --help for the variable's format",
                "",
                1,
            )
        )
    else:
        fixes.append(
            Fix(
                "ollama",
                f"{key}={fixed}",
                ollama_env_command({key: fixed}, tag) + f"\n# docker compose: environment: - {key}={fixed}\n"
                f'# systemd: systemctl edit ollama  ->  [Service] Environment="{key}={fixed}"',
                "the setting takes effect at the next ollama serve",
                "",
                1,
            )
        )
    if key == "OLLAMA_GPU_OVERHEAD":
        mib = int(int(fixed) / MIB) if fixed else 8192
        fixes.append(
            Fix(
                "llama.cpp",
                f"the same headroom in llama.cpp: --fit-target {mib}",
                f"LLAMA_ARG_FIT_TARGET={mib} llama-server -m <model>.gguf",
                f"--fit keeps {mib} MiB free per GPU (default 1024)",
                "fewer layers on the GPU",
                3,
            )
        )
        notes.append(
            "From Ollama v0.30 OLLAMA_GPU_OVERHEAD only feeds Ollama's own estimate; llama-server's margin is "
            "LLAMA_ARG_FIT_TARGET (MiB, default 1024), which Ollama passes through."
        )
    return _reply(
        title, summary, numbers, fixes, notes, data={"env_key": key, "env_value": value, "fixed": fixed}
    )


# ------------------------------------------------------------------------------------------ memory_report

_BREAKDOWN = re.compile(
    r"model weights take ([0-9.]+) ?GiB; non_torch_memory takes ([0-9.]+) ?GiB; PyTorch activation peak memory "
    r"takes ([0-9.]+) ?GiB; the rest of the memory reserved for KV Cache is ([0-9.]+) ?GiB"
)


def memory_report(facts: PasteFacts) -> Reply:
    engine = facts.root.engine
    sig = facts.root.signature
    if engine == "ollama":
        if facts.params.get("layers_model") is not None and facts.params.get("required_full_gib") is not None:
            return _report_ollama_offload(facts)
        return _report_ollama_other(facts)
    if engine == "llama.cpp":
        return _report_llamacpp(facts)
    if engine == "sglang":
        return _report_sglang(facts)
    if engine == "vllm" or sig.startswith("vllm."):
        return _report_vllm(facts)
    return _report_generic(facts)


def _report_generic(facts: PasteFacts) -> Reply:
    numbers = [Fact(k.replace("_", " "), str(v), "log") for k, v in facts.root.params.items()]
    return _reply(facts.root.title, _cause(facts), numbers, [], [])


def _report_ollama_offload(facts: PasteFacts) -> Reply:
    p = facts.params
    text = _text(facts)
    lm = p["layers_model"]
    lo = p.get("layers_offload") or 0
    avail = p.get("gpu_available_gib")
    full = p["required_full_gib"]
    partial = p.get("required_partial_gib")
    kv_mib = p.get("required_kv_mib")
    weights = p.get("weights_total_gib")
    graph_mib = p.get("graph_full_mib")
    n_ctx = facts.get("n_ctx")
    parallel = facts.get("n_parallel") or 1
    requested = p.get("layers_requested")
    sys_total = p.get("system_total_gib")
    sys_free = p.get("system_free_gib")
    overhead_key = p.get("env_key")
    numbers: list[Fact] = [Fact("layers on the GPU", f"{lo}/{lm}", "log")]
    if requested not in (None, "-1"):
        numbers.append(Fact("layers requested (num_gpu)", str(requested), "log"))
    if avail is not None:
        numbers.append(Fact("GPU memory available", _gib(avail), "log"))
    numbers.append(Fact("needed for all layers on the GPU", _gib(full), "log"))
    if partial is not None:
        numbers.append(Fact("planned on the GPU now", _gib(partial), "log"))
    if weights is not None:
        numbers.append(Fact("weights", _gib(weights), "log"))
    if kv_mib is not None:
        numbers.append(
            Fact(f"KV cache{f' ({_tok(n_ctx)} tokens x {parallel})' if n_ctx else ''}", _mib(kv_mib), "log")
        )
    if graph_mib is not None:
        numbers.append(Fact("compute graph", _mib(graph_mib), "log"))
    if sys_total is not None:
        numbers.append(Fact("system RAM total / free", f"{_gib(sys_total)} / {_gib(sys_free or 0)}", "log"))
    fixes: list[Fix] = []
    notes: list[str] = []
    tag = _ollama_tag(facts, _model(facts))
    ctx_assumed = n_ctx or 2048
    per_token_mib = kv_mib / (ctx_assumed * parallel) if kv_mib else None
    if per_token_mib is not None:
        numbers.append(
            Fact("KV per token", f"{per_token_mib * 1024:,.0f} KiB", "computed" if n_ctx else "estimated")
        )
    fa_unsupported_model = "flash attention enabled but not supported by model" in text

    if lo >= lm:
        headroom = (avail or 0) - full
        title = (
            f"Ollama: all {lm} layers on the GPU — {_gib(full)} of {_gib(avail)} available"
            if avail
            else f"Ollama: all {lm} layers on the GPU"
        )
        sentences = [
            f"Everything fits: Ollama's estimate for the whole model is {_gib(full)} and the GPU has {_gib(avail)} "
            f"available, {_gib(headroom)} to spare."
            if avail
            else "Everything fits on the GPU."
        ]
        if per_token_mib and headroom > 0:
            extra = int(headroom * 1024 / per_token_mib)
            sentences.append(
                f"At {per_token_mib * 1024:,.0f} KiB per token, that headroom is about {_tok(extra)} more tokens of "
                "context before layers start moving to the CPU."
            )
        return _reply(
            title,
            " ".join(sentences),
            numbers,
            fixes,
            notes,
            data={"layers_model": lm, "layers_offload": lo, "headroom_gib": headroom},
        )

    cpu_layers = lm - lo
    short = round(full - avail, 2) if avail is not None else None
    if re.search(r"offload to cpu|library=cpu", " ".join(facts.root.evidence), re.IGNORECASE):
        return _report_ollama_cpu_only(facts, lm, full, avail, kv_mib, weights, n_ctx, per_token_mib, numbers)
    title = f"Ollama: {lo} of {lm} layers on the GPU — all of them need {_gib(full)}" + (
        f", {_gib(avail)} is available" if avail is not None else ""
    )
    parts = []
    if weights is not None:
        parts.append(f"weights {_gib(weights)}")
    if kv_mib is not None:
        parts.append(f"KV cache {_mib(kv_mib)}" + (f" for {_tok(ctx_assumed)} tokens" if n_ctx else ""))
    if graph_mib is not None:
        parts.append(f"compute graph {_mib(graph_mib)}")
    rest = full - (weights or 0) - (kv_mib or 0) / 1024 - (graph_mib or 0) / 1024
    if parts and rest > 0.3:
        what = (
            "the vision projector and its graph"
            if "projector." in text
            else "Ollama's per-layer and per-GPU overheads"
        )
        parts.append(f"{_gib(rest)} more for {what}")
    sentences = [
        f"Ollama's estimate for putting all {lm} layers on the GPU is {_gib(full)} ({', '.join(parts)})"
        if parts
        else f"Ollama's estimate for putting all {lm} layers on the GPU is {_gib(full)}"
    ]
    if short is not None:
        sentences[0] += (
            f", {_gib(short)} more than the {_gib(avail)} it found available, so it kept {cpu_layers} layer"
            f"{'s' if cpu_layers != 1 else ''} on the CPU ({lo}/{lm})."
        )
    else:
        sentences[0] += "."
    per_layer = (weights or 0) / lm if weights else None
    memory_for_layers = None
    if cpu_layers == 1 and short is not None and short < 1.0:
        need = short + 0.1  # both numbers are rounded to 0.1 GiB
        sentences.append(
            f"Freeing about {_gib(need)} of that estimate puts the last layer on the GPU; one layer "
            f"({_gib(per_layer) if per_layer else 'a few hundred MiB'}) on the CPU costs only a little speed."
        )
        memory_for_layers = need
    elif short is not None:
        ram_part = full - (partial or 0)
        sentences.append(
            f"The other {cpu_layers} layers (about {_gib(ram_part)}) run from system RAM"
            + (f", where {_gib(sys_free)} is free" if sys_free is not None else "")
            + f": with {cpu_layers} of {lm} layers on the CPU, generation runs at CPU speed whatever the GPU does."
        )
    if overhead_key == "OLLAMA_GPU_OVERHEAD" and p.get("env_value"):
        b = _to_bytes(str(p["env_value"]).strip('"'))
        sentences.append(
            f"OLLAMA_GPU_OVERHEAD={p['env_value']} was rejected (it must be a byte count"
            + (f", {b})" if b else ")")
            + ", so no VRAM headroom was reserved: a plan that fills the GPU to its last GiB can still fail with "
            "cudaMalloc out of memory at load."
        )

    # fixes
    rank = 1
    if overhead_key == "OLLAMA_GPU_OVERHEAD" and p.get("env_value"):
        b = _to_bytes(str(p["env_value"]).strip('"'))
        if b:
            per = ((partial or 0) - (graph_mib or 0) / 1024) / lo if lo and partial else None
            fewer = math.ceil((b / GIB) / per) if per and per > 0 else None
            fixes.append(
                Fix(
                    "ollama",
                    f"OLLAMA_GPU_OVERHEAD={b}",
                    ollama_env_command({"OLLAMA_GPU_OVERHEAD": str(b)}, tag)
                    + f"\n# docker compose: environment: - OLLAMA_GPU_OVERHEAD={b}",
                    f"Ollama plans with {_gib(avail - b / GIB)} instead of {_gib(avail)}"
                    + (
                        f": about {min(fewer, lo)} layer{'s' if min(fewer, lo) != 1 else ''} fewer on the GPU "
                        f"(≈{_gib(per)} each in this estimate), and no cudaMalloc failure at load"
                        if fewer and avail
                        else ""
                    ),
                    "a little slower: those layers run on the CPU",
                    rank,
                )
            )
            rank += 1
            if fewer and lo:
                fixes.append(
                    Fix(
                        "ollama",
                        f"or pin num_gpu {max(0, lo - fewer)}",
                        f"ollama run {tag or '<model>'}\n>>> /set parameter num_gpu {max(0, lo - fewer)}\n"
                        f'# API: "options": {{"num_gpu": {max(0, lo - fewer)}}}',
                        f"exactly {max(0, lo - fewer)} layers on the GPU",
                        "a little slower",
                        rank,
                    )
                )
                rank += 1
    if memory_for_layers is not None and kv_mib and per_token_mib:
        need_mib = memory_for_layers * 1024
        if not fa_unsupported_model:
            q8 = kv_mib * LLAMACPP_KV_BYTES["q8_0"] / 2
            if kv_mib - q8 >= need_mib:
                fixes.append(
                    Fix(
                        "ollama",
                        "q8_0 KV cache",
                        ollama_env_command(
                            {"OLLAMA_FLASH_ATTENTION": "1", "OLLAMA_KV_CACHE_TYPE": "q8_0"}, tag
                        ),
                        f"KV {kv_mib:,.0f} MiB -> {q8:,.0f} MiB (saves {kv_mib - q8:,.0f} MiB ≥ {need_mib:,.0f}): all "
                        f"{lm} layers on the GPU, still {_tok(ctx_assumed)} tokens",
                        "negligible quality loss; ≤ v0.29 needs OLLAMA_FLASH_ATTENTION=1 (set here)",
                        rank,
                    )
                )
                rank += 1
        max_ctx_tokens = (kv_mib - need_mib) / per_token_mib / parallel
        new_ctx = _pow2_floor(max_ctx_tokens)
        if new_ctx >= 256:
            new_kv = per_token_mib * new_ctx * parallel
            fixes.append(
                Fix(
                    "ollama",
                    f"num_ctx {_tok(new_ctx)}",
                    ollama_env_command({"OLLAMA_CONTEXT_LENGTH": str(new_ctx)}, tag)
                    + f"\n# per session: /set parameter num_ctx {new_ctx}",
                    f"KV {kv_mib:,.0f} MiB -> about {new_kv:,.0f} MiB (saves {kv_mib - new_kv:,.0f} MiB ≥ "
                    f"{need_mib:,.0f}): all {lm} layers on the GPU",
                    f"half the context ({_tok(new_ctx)} tokens)"
                    if new_ctx * 2 == ctx_assumed
                    else "a shorter context",
                    rank,
                )
            )
            rank += 1
        fixes.append(
            Fix(
                "ollama",
                f"free about {_gib(memory_for_layers)} of VRAM",
                "nvidia-smi    # what else holds GPU memory (browsers, desktop compositors, other models)",
                "the same settings then fit entirely",
                "closing other GPU programs",
                rank,
            )
        )
        rank += 1
        if fa_unsupported_model:
            notes.append(
                "Your log says flash attention is not supported by this model, so a q8_0 KV cache is not an option."
            )
    elif short is not None and kv_mib and cpu_layers > 1:
        if weights and lo:
            layer_w, layer_kv = weights / lm, kv_mib / 1024 / lm
            budget_layers = lo * (layer_w + layer_kv)
            options = [("num_ctx", 0.5)] + (
                [] if fa_unsupported_model else [("q8_0", LLAMACPP_KV_BYTES["q8_0"] / 2)]
            )
            for what, factor in options:
                more = min(lm, int(budget_layers / (layer_w + factor * layer_kv))) - lo
                if more < 1:
                    continue
                if what == "num_ctx":
                    new_ctx = max(1024, _pow2_floor(ctx_assumed // 2))
                    env = {"OLLAMA_CONTEXT_LENGTH": str(new_ctx)}
                    change, cost = f"num_ctx {_tok(new_ctx)}", "half the context"
                else:
                    env = {"OLLAMA_FLASH_ATTENTION": "1", "OLLAMA_KV_CACHE_TYPE": "q8_0"}
                    change, cost = (
                        "q8_0 KV cache",
                        "negligible quality loss; ≤ v0.29 needs OLLAMA_FLASH_ATTENTION=1",
                    )
                fixes.append(
                    Fix(
                        "ollama",
                        change,
                        ollama_env_command(env, tag),
                        f"each layer's KV share shrinks: about {more} more layer{'s' if more != 1 else ''} on the GPU "
                        f"({lo + more}/{lm})",
                        cost,
                        rank,
                    )
                )
                rank += 1
        if fa_unsupported_model:
            notes.append(
                "Your log says flash attention is not supported by this model in this version, so "
                "OLLAMA_KV_CACHE_TYPE cannot shrink the KV cache."
            )
        if n_ctx is None and per_token_mib:
            notes.append(
                f"num_ctx is not in the paste; {_tok(ctx_assumed)} (the default before v0.6.7) is assumed for the "
                f"{per_token_mib:,.2f} MiB per token."
            )
    if short is not None and weights and weights > (avail or 0) * 2:
        notes.append(
            f"The weights ({_gib(weights)}) are over {weights / (avail or 1):.0f}x the GPU: a GPU this size only helps "
            "a few layers; RAM bandwidth sets the speed."
        )
        if lm == 62 and weights > 300:
            notes.append("62 layers and this weight size look like DeepSeek-V3/R1 671B (61 layers + output).")
    variant_fix = None
    if _model(facts) is not None and short is not None and cpu_layers > 1:
        match = _model(facts)
        v = _gguf_variant(match)
        if v is not None:
            variant_fix = _quant_fix(match, variant_weight_bytes(match.model, v) / GIB, short, rank + 1, tag)
    if variant_fix:
        fixes.append(variant_fix)
    gguf_cmd = {"-c": str(ctx_assumed), "-fa": "on"}
    if memory_for_layers is not None:
        gguf_cmd |= {"-ctk": "q8_0", "-ctv": "q8_0"}
    fixes.append(
        Fix(
            "llama.cpp",
            "the same GGUF in llama-server",
            _llamacpp_cmd(None, "<model>.gguf", gguf_cmd),
            "--fit places layers itself and keeps 1 GiB free per GPU (--fit-target)",
            "its own estimate: the split can differ by a layer",
            9,
        )
    )
    started = _int_flag(facts.context.get("command"), "--n-gpu-layers", "-ngl")
    if requested not in (None, "-1") and started is not None and started > lo:
        sentences.append(
            f"You asked for num_gpu {requested} and Ollama started the runner with --n-gpu-layers {started} anyway, "
            f"so {lo}/{lm} is only the estimate's warning that this is {_gib(short or 0)} over what it sees free: if "
            "the model loads and runs nothing is wrong, and if it runs out of memory the fixes below free the "
            "difference."
        )
    elif requested not in (None, "-1") and str(requested) == str(lm) and lo < lm:
        notes.append(
            f"layers.requested={requested} asked for every layer, but Ollama's estimate capped it at {lo}."
        )
    return _reply(
        title,
        " ".join(sentences),
        numbers,
        fixes,
        notes,
        short=f"{lo}/{lm} layers fit: all need {_gib(full)}, {_gib(avail)} available." if avail else "",
        data={
            "layers_model": lm,
            "layers_offload": lo,
            "required_full_gib": full,
            "available_gib": avail,
            "short_gib": short,
            "kv_mib": kv_mib,
            "kv_per_token_mib": per_token_mib,
        },
    )


def _report_ollama_cpu_only(
    facts: PasteFacts,
    lm: int,
    full: float,
    avail: float | None,
    kv_mib: float | None,
    weights: float | None,
    n_ctx: int | None,
    per_token_mib: float | None,
    numbers: list[Fact],
) -> Reply:
    """The offload line of a machine without a usable GPU: everything is in RAM."""
    tag = _ollama_tag(facts, _model(facts))
    short = round(full - avail, 2) if avail is not None else None
    title = f"Ollama: CPU only — the model needs {_gib(full)}" + (
        f", {_gib(avail)} of memory is available" if avail else ""
    )
    sentences = [
        f"No GPU was used (offload to cpu): all {lm} layers run on the CPU, and Ollama's estimate of {_gib(full)} "
        f"(weights{f' {_gib(weights)}' if weights else ''}, KV cache{f' {_mib(kv_mib)}' if kv_mib else ''}, graph) "
        "has to fit in system memory."
    ]
    if short is not None and short > 0:
        sentences.append(f"It is {_gib(short)} over the {_gib(avail)} available.")
    elif avail is not None:
        sentences.append(f"It fits, with {_gib(avail - full)} to spare.")
    sentences.append(
        "If you have an NVIDIA/AMD GPU, Ollama did not detect it: check the driver and the 'inference compute' line."
    )
    fixes: list[Fix] = []
    ctx_now = n_ctx or 2048
    new_ctx = max(1024, _pow2_floor(ctx_now // 2))
    if kv_mib and new_ctx < ctx_now:
        fixes.append(
            Fix(
                "ollama",
                f"num_ctx {_tok(new_ctx)}",
                ollama_env_command({"OLLAMA_CONTEXT_LENGTH": str(new_ctx)}, tag),
                f"the KV cache drops from {_mib(kv_mib)} to about {_mib(kv_mib * new_ctx / ctx_now)}",
                "less context",
                1,
            )
        )
    fixes.append(
        Fix(
            "ollama",
            "free RAM",
            "free -h   # close other programs before loading",
            "the estimate is compared with free RAM (+ swap)",
            "swap makes a CPU model very slow",
            2,
        )
    )
    return _reply(
        title,
        " ".join(sentences),
        numbers,
        fixes,
        [],
        data={"cpu_only": True, "required_full_gib": full, "available_gib": avail, "short_gib": short},
    )


def _report_ollama_other(facts: PasteFacts) -> Reply:
    p = facts.params
    numbers: list[Fact] = []
    sentences: list[str] = []
    fixes: list[Fix] = []
    tag = _ollama_tag(facts, _model(facts))
    title = facts.root.title
    if p.get("model_buffer_mib") is not None or p.get("kv_buffer_mib") is not None:
        dev = p.get("device") or "the GPU"
        for key, label in (
            ("model_buffer_mib", "weights"),
            ("kv_buffer_mib", "KV cache"),
            ("compute_buffer_mib", "compute graph"),
        ):
            if p.get(key) is not None:
                numbers.append(Fact(f"{label} on {dev}", _gib(p[key] / 1024), "log"))
        if p.get("total_memory_gib") is not None:
            numbers.append(Fact("total", _gib(p["total_memory_gib"]), "log"))
        title = (
            f"Ollama: on {dev} "
            + " + ".join(
                f"{label} {_mib(p[k])}"
                for k, label in (
                    ("model_buffer_mib", "weights"),
                    ("kv_buffer_mib", "KV cache"),
                    ("compute_buffer_mib", "graph"),
                )
                if p.get(k) is not None
            )
            + (f" = {_gib(p['total_memory_gib'])}" if p.get("total_memory_gib") is not None else "")
        )
        sentences.append(
            "Ollama (v0.12+) measured these buffers by trial allocation: weights, the KV cache for num_ctx x "
            "num_parallel tokens, and the compute graph."
        )
        n_ctx = facts.get("n_ctx")
        if p.get("kv_buffer_mib") and n_ctx:
            per = p["kv_buffer_mib"] / n_ctx
            sentences.append(f"The KV cache is {per * 1024:,.0f} KiB per token at num_ctx {_tok(n_ctx)}.")
    elif p.get("system_total_gib") is not None:
        title = f"Ollama: {_gib(p['system_total_gib'])} of RAM, {_gib(p.get('system_free_gib') or 0)} free"
        numbers += [Fact("system RAM total", _gib(p["system_total_gib"]), "log")]
        if p.get("system_free_gib") is not None:
            numbers.append(Fact("free", _gib(p["system_free_gib"]), "log"))
        if p.get("swap_free_gib") is not None:
            numbers.append(Fact("swap free", _gib(p["swap_free_gib"]), "log"))
        sentences.append(
            "Layers that do not fit on the GPU, and their KV cache, must fit in free RAM + swap (Ollama ≤ v0.29 "
            "refuses to load otherwise)."
        )
    elif p.get("gpu_free_gib") is not None:
        title = f"Ollama: the GPU has {_gib(p['gpu_free_gib'])} free, Ollama plans with {_gib(p.get('gpu_available_gib') or 0)}"
        numbers += [
            Fact("free", _gib(p["gpu_free_gib"]), "log"),
            Fact("available to Ollama", _gib(p.get("gpu_available_gib") or 0), "log"),
        ]
        if p.get("gpu_minimum_mib") is not None:
            numbers.append(Fact("reserved minimum", _gib(p["gpu_minimum_mib"] / 1024), "log"))
        if p.get("gpu_overhead_mib") is not None:
            numbers.append(Fact("OLLAMA_GPU_OVERHEAD", _gib(p["gpu_overhead_mib"] / 1024), "log"))
        sentences.append(
            "Available = free − the reserved minimum − OLLAMA_GPU_OVERHEAD; the layers are planned into that."
        )
    elif p.get("total_vram_gib") is not None or "default_num_ctx" in " ".join(facts.root.evidence):
        n = p.get("n_ctx") or facts.get("n_ctx")
        title = (
            f"Ollama: default num_ctx {_tok(n)} from {_gib(p.get('total_vram_gib') or 0)} of VRAM"
            if n
            else title
        )
        sentences.append(
            "Since v0.15.5 Ollama picks num_ctx from total VRAM: 4,096 below 23 GiB, 32,768 from 23 GiB, 262,144 from "
            "47 GiB (capped at the model's trained context) — unless the request or OLLAMA_CONTEXT_LENGTH sets it."
        )
        if n and n >= 32768:
            fixes.append(
                Fix(
                    "ollama",
                    "a smaller default",
                    ollama_env_command({"OLLAMA_CONTEXT_LENGTH": "8192"}, tag),
                    "a much smaller KV cache, so more layers stay on the GPU",
                    "less context",
                    1,
                )
            )
    else:
        sentences.append(_cause(facts))
        numbers = [Fact(k.replace("_", " "), str(v), "log") for k, v in facts.root.params.items()]
    return _reply(title, " ".join(sentences), numbers, fixes, [])


def _report_llamacpp(facts: PasteFacts) -> Reply:
    p = facts.params
    sig = facts.root.signature
    _model(facts)  # resolves a GGUF file name the generic lookup missed (and drops its wrong note)
    command = facts.context.get("command")
    model_file = _gguf_file(facts)
    numbers: list[Fact] = []
    fixes: list[Fix] = []
    notes: list[str] = []
    if sig == "llamacpp.fit_failed":
        reason = str(p.get("reason") or "")
        title = "llama.cpp --fit gave up: " + (reason or "the configuration does not fit")
        summary = (
            f"--fit projected that this configuration does not fit in free device memory and then stopped ({reason}). "
            "It only adjusts what you did not set: an explicit -ngl, -ts or -ot stops it, so the load that follows "
            "will probably run out of memory."
        )
        changes: dict[str, str | None] = {}
        if "n_gpu_layers" in reason:
            changes["-ngl"] = None
        if "tensor_split" in reason:
            changes["-ts"] = None
        if changes:
            fixes.append(
                Fix(
                    "llama.cpp",
                    "let --fit choose",
                    _llamacpp_cmd(command, model_file, changes),
                    "fit moves layers (or experts) to the CPU until 1 GiB stays free",
                    "layers on the CPU are slower",
                    1,
                )
            )
        if p.get("projected_mib") and p.get("free_mib"):
            numbers.append(
                Fact("projected / free", f"{p['projected_mib']:,.0f} / {p['free_mib']:,.0f} MiB", "log")
            )
        return _reply(title, summary, numbers, fixes, notes)

    kv = p.get("kv_buffer_mib") or p.get("kv_size_mib") or p.get("kv_self_mib")
    cells = p.get("kv_cells")
    n_ctx = facts.get("n_ctx") or p.get("n_ctx_seq")
    n_ctx_seq = p.get("n_ctx_seq")
    train = p.get("n_ctx_train")
    model_mib = p.get("model_buffer_mib")
    compute = p.get("compute_buffer_mib")
    lo, lm = p.get("layers_offload"), p.get("layers_model")
    free = p.get("free_mib")
    if kv is not None:
        numbers.append(Fact(f"KV cache ({p.get('buffer') or 'device'})", f"{kv:,.2f} MiB", "log"))
    if cells:
        numbers.append(Fact("KV cells", _tok(cells), "log"))
    if n_ctx:
        numbers.append(Fact("context (n_ctx)", _tok(n_ctx), "log"))
    if train:
        numbers.append(Fact("trained context (n_ctx_train)", _tok(train), "log"))
    if model_mib is not None:
        numbers.append(Fact("weights buffer", f"{model_mib:,.2f} MiB", "log"))
    if compute is not None:
        numbers.append(Fact("compute buffer", f"{compute:,.2f} MiB", "log"))
    if lo is not None and lm:
        numbers.append(Fact("layers offloaded", f"{lo}/{lm}", "log"))
    if free is not None:
        numbers.append(Fact("free device memory at load", f"{free:,.0f} MiB", "log"))
    ctk = facts.get("cache_type_k")
    if ctk:
        numbers.append(Fact("KV cache type", f"{ctk}/{facts.get('cache_type_v') or ctk}", "log"))
    sentences: list[str] = []
    title = facts.root.title
    swa = bool(cells and n_ctx and cells < n_ctx)
    if kv is not None:
        per_cell = kv / cells if cells else None
        if per_cell:
            numbers.append(Fact("KV per cell", f"{per_cell * 1024:,.1f} KiB", "computed"))
        title = f"llama.cpp: the KV cache takes {kv:,.2f} MiB" + (
            f" ({_tok(cells)} cells) for {_a(n_ctx)} {_tok(n_ctx)}-token context" if cells and n_ctx else ""
        )
        if swa:
            sentences.append(
                f"Only {_tok(cells)} cells for a {_tok(n_ctx)}-token context: these are the sliding-window layers, "
                "which keep just the window + one micro-batch of tokens (padded to 256), so this part does not grow "
                "with -c."
            )
            sentences.append(
                "The full-context part of the cache is listed separately (a 0-layer standard cache here: the model "
                "keeps its long-range KV in its own cache type), so the usual 'KV per token x n_ctx' formula does not "
                "apply."
            )
        elif cells and per_cell:
            sentences.append(
                f"That is {per_cell * 1024:,.1f} KiB per token for {_tok(cells)} tokens; it grows linearly with -c."
            )
        elif n_ctx:
            sentences.append(
                f"For a {_tok(n_ctx)}-token context that is {kv * 1024 / n_ctx:,.1f} KiB per token (on this device); "
                "it grows linearly with -c."
            )
        else:
            sentences.append(
                f"The KV cache on {p.get('buffer') or 'this device'} takes {kv:,.2f} MiB; it grows linearly with -c "
                "(sliding-window layers excepted)."
            )
    if n_ctx_seq and train and n_ctx_seq < train:
        sentences.append(
            f"'n_ctx_seq ({_tok(n_ctx_seq)}) < n_ctx_train ({_tok(train)})' is informational: you run a shorter "
            "context than the model supports, which is fine."
        )
    if lo is not None and lm:
        if lo < lm:
            sentences.append(
                f"{lo} of {lm} layers run on the GPU; the other {lm - lo} run on the CPU, which sets the speed."
            )
        else:
            sentences.append(f"All {lm} layers run on the GPU.")
    if model_mib is not None and kv is not None and compute is not None:
        total = (model_mib + kv + compute) / 1024
        sentences.append(f"Weights + KV + compute on this device: {_gib(total)}.")
        if free:
            sentences.append(f"{_gib(free / 1024)} was free at load.")
    if not sentences:
        sentences.append(_cause(facts))
    if not swa and kv is not None and cells and n_ctx and free and model_mib is not None:
        per = kv / cells
        spare = free - model_mib - kv - (compute or 0) - 1024
        if spare > 0:
            more = int(spare / per)
            new_ctx = (n_ctx + more) // 256 * 256
            fixes.append(
                Fix(
                    "llama.cpp",
                    f"room for -c {_tok(new_ctx)}",
                    _llamacpp_cmd(command, model_file, {"-c": str(new_ctx)}),
                    f"{_gib(spare / 1024)} spare after a 1 GiB margin = {_tok(more)} more tokens",
                    "",
                    1,
                )
            )
    if swa and n_ctx:
        fixes.append(
            Fix(
                "llama.cpp",
                "see the whole budget before raising -c",
                _llamacpp_cmd(command, model_file, {"-lv": "4"}),
                "prints every buffer (model, each KV cache, compute) and the memory breakdown at exit: the "
                "full-context cache is what grows with -c, this SWA part stays at "
                f"{kv:,.2f} MiB"
                if kv is not None
                else "prints every buffer and the memory breakdown at exit",
                "a longer log",
                1,
            )
        )
    notes.append("Recent llama.cpp builds print these buffer lines only with -lv 4 (or -v).")
    return _reply(
        title,
        " ".join(sentences),
        numbers,
        fixes,
        notes,
        data={"kv_mib": kv, "kv_cells": cells, "n_ctx": n_ctx, "swa": swa},
    )


def _report_sglang(facts: PasteFacts) -> Reply:
    p = facts.params
    pool = p.get("kv_tokens")
    ctx = p.get("context_length") or facts.context.get("context_length")
    mrr = p.get("max_running_requests")
    avail = p.get("available_gpu_mem_gib")
    numbers: list[Fact] = []
    if pool:
        numbers.append(Fact("KV pool (max_total_num_tokens)", _tok(pool), "log"))
    if ctx:
        numbers.append(Fact("context length per request", _tok(ctx), "log"))
    if mrr:
        numbers.append(Fact("max_running_requests", str(mrr), "log"))
    for key, label in (
        ("chunked_prefill_size", "chunked_prefill_size"),
        ("max_prefill_tokens", "max_prefill_tokens"),
    ):
        if p.get(key):
            numbers.append(Fact(label, _tok(p[key]), "log"))
    if avail is not None:
        numbers.append(Fact("free after the pool (available_gpu_mem)", _gib(avail), "log"))
    if p.get("kv_cache_gib") or (p.get("k_cache_gib") and p.get("v_cache_gib")):
        kv = p.get("kv_cache_gib") or p["k_cache_gib"] + p["v_cache_gib"]
        numbers.append(Fact("KV pool size", _gib(kv), "log"))
        if pool:
            numbers.append(Fact("KV per token", f"{kv * GIB / pool / KIB:,.0f} KiB", "computed"))
    full = pool / ctx if pool and ctx else None
    if full is not None:
        numbers.append(Fact("full-length requests at once", f"{full:.2f}", "computed"))
    avg = pool // mrr if pool and mrr else None
    if avg:
        numbers.append(Fact("tokens per request with all running", _tok(avg), "computed"))
    title = "SGLang: the KV pool and batching limits"
    if p.get("weights_gib") is not None and p.get("avail_after_weights_gib") is not None and not pool:
        title = (
            f"SGLang: the weights take {_gib(p['weights_gib'])}; {_gib(p['avail_after_weights_gib'])} was free "
            "after loading them"
        )
    elif p.get("avail_after_pool_gib") is not None and not pool:
        title = f"SGLang: {_gib(p['avail_after_pool_gib'])} stayed free after the KV pool"
    elif p.get("pre_load_avail_gib") is not None and not pool:
        title = f"SGLang: {_gib(p['pre_load_avail_gib'])} free before the weights loaded"
    elif pool and not ctx:
        title = f"SGLang: a KV pool of {_tok(pool)} tokens"
    if pool and ctx:
        title = f"SGLang: a KV pool of {_tok(pool)} tokens — {full:.2f} requests of the full {_tok(ctx)}-token context at once"
    sentences = []
    if pool:
        sentences.append(
            f"max_total_num_tokens={_tok(pool)} is the whole KV pool on each GPU, shared by every running request — "
            "the total, not a per-request limit."
        )
    if ctx and full is not None:
        sentences.append(
            f"One request may use up to context_len {_tok(ctx)} tokens, so about {int(full)} full-length requests fit "
            "at once; shorter ones share the pool"
            + (
                f", and with all {mrr} max_running_requests active each gets about {_tok(avg)} tokens."
                if avg
                else "."
            )
        )
    if avail is not None:
        sentences.append(
            f"available_gpu_mem={avail:g} GB is what stayed free after the pool (SGLang prints GiB as 'GB'): the "
            "headroom for activations and CUDA graphs."
        )
    if not sentences:
        sentences.append(_cause(facts))
    for key, label in (
        ("weights_gib", "weights"),
        ("avail_after_weights_gib", "free after the weights"),
        ("avail_after_pool_gib", "free after the KV pool"),
        ("pre_load_avail_gib", "free before loading"),
    ):
        if p.get(key) is not None:
            numbers.append(Fact(label, _gib(p[key]), "log"))
    fixes: list[Fix] = []
    command = facts.context.get("command")
    model_name = facts.context.get("model")
    mfs = facts.context.get("mem_fraction_static")
    if avail is not None and avail > 6:
        new = round(min(0.95, (mfs or 0.85) + 0.05), 2)
        fixes.append(
            Fix(
                "sglang",
                f"--mem-fraction-static {new}" if mfs else "--mem-fraction-static +0.05",
                sglang_command(command, model_name, {"--mem-fraction-static": str(new)})
                + ("" if mfs else "   # your current value + 0.05 (0.9 if it is 0.85)"),
                f"{avail:g} GiB free after the pool is more than activations and graphs usually need: +0.05 of the GPU "
                "goes to the pool",
                "less headroom; if prefill OOMs, lower --chunked-prefill-size",
                2,
            )
        )
    if full is not None and full < 1:
        fixes.append(
            Fix(
                "sglang",
                f"--context-length {_tok(int(pool * 0.9) // 1024 * 1024)}",
                sglang_command(
                    command, model_name, {"--context-length": str(int(pool * 0.9) // 1024 * 1024)}
                ),
                "a full-length request fits the pool",
                "shorter requests only",
                1,
            )
        )
    return _reply(
        title,
        " ".join(sentences),
        numbers,
        fixes,
        [],
        data={"kv_tokens": pool, "context_length": ctx, "full_requests": full, "max_running_requests": mrr},
    )


def _report_vllm(facts: PasteFacts) -> Reply:
    p = facts.params
    engine_name = "Aphrodite" if "aphrodite" in facts.root.signature else "vLLM"
    text = _text(facts)
    runs = [(_run_label(text, m.start()), *map(float, m.groups())) for m in _BREAKDOWN.finditer(text)]
    total = p.get("total_gib") or facts.context.get("gpu_total_gib")
    util = p.get("gpu_memory_utilization") or facts.context.get("gpu_memory_utilization")
    if util is None and p.get("gpu_memory_utilization_pct") is not None:
        util = p["gpu_memory_utilization_pct"] / 100
    weights = p.get("weights_gib")
    act = p.get("activation_gib")
    if act is None and p.get("peak_torch_gib") is not None and weights is not None:
        act = p["peak_torch_gib"] - weights
    non_torch = p.get("non_torch_gib")
    kv = p.get("kv_cache_gib")
    blocks = p.get("gpu_blocks")
    tokens = p.get("kv_tokens")
    tokens_src = "log"
    if tokens is None and blocks:
        tokens, tokens_src = blocks * 16, "computed"
    mml = p.get("max_model_len") or facts.context.get("max_model_len")
    conc = p.get("max_concurrency")
    bpt = None
    if p.get("kv_ref_gib") and p.get("kv_ref_tokens"):
        bpt = p["kv_ref_gib"] * GIB / p["kv_ref_tokens"]
    elif kv and tokens:
        bpt = kv * GIB / tokens
    requested = p.get("requested_gib") or (total * util if total and util else None)
    numbers: list[Fact] = []
    if total:
        numbers.append(Fact("GPU memory (total)", _gib(total), "log"))
    if util:
        numbers.append(Fact("gpu_memory_utilization", f"{util:g}", "log"))
    if requested:
        numbers.append(
            Fact(
                "budget (total x utilization)",
                _gib(requested),
                "log" if p.get("requested_gib") else "computed",
            )
        )
    if weights is not None:
        numbers.append(Fact("weights", _gib(weights), "log"))
    if act is not None:
        numbers.append(
            Fact("activation peak", _gib(act), "log" if p.get("activation_gib") is not None else "computed")
        )
    if non_torch is not None:
        numbers.append(Fact("non-torch memory", _gib(non_torch), "log"))
    if kv is not None:
        numbers.append(Fact("KV cache", _gib(kv), "log"))
    if blocks:
        numbers.append(Fact("KV blocks", _tok(blocks), "log"))
    if tokens:
        numbers.append(Fact("KV cache tokens", _tok(tokens), tokens_src))
    if bpt:
        numbers.append(Fact("KV per token", f"{bpt / KIB:,.0f} KiB", "computed"))
    if mml:
        numbers.append(Fact("max_model_len", _tok(mml), "log"))
    mml_src = "log"
    if mml is None and conc and tokens and p.get("kv_ref_tokens"):
        guess = tokens / conc
        if abs(guess - p["kv_ref_tokens"]) <= 0.02 * p["kv_ref_tokens"]:
            mml, mml_src = p["kv_ref_tokens"], "computed"
            numbers.append(Fact("max_model_len (tokens / concurrency)", _tok(mml), mml_src))
    if conc is None and tokens and mml:
        conc = tokens / mml
    if conc is not None:
        numbers.append(
            Fact(
                "requests of max_model_len at once",
                f"{conc:.2f}",
                "log" if p.get("max_concurrency") else "computed",
            )
        )

    sections: list[Section] = []
    fixes: list[Fix] = []
    notes: list[str] = []
    sentences: list[str] = []
    title = f"{engine_name}: memory profile"
    if len(runs) >= 2:
        a, b = runs[0], runs[-1]
        grow = b[2] - a[2]
        title = (
            f"{engine_name}: {_num(grow)} GiB more non-torch memory in '{b[0]}' — the KV cache shrinks from "
            f"{a[4]:.2f} to {b[4]:.2f} GiB"
        )
        sentences.append(
            f"Both runs split the same budget ({sum(a[1:]):.2f} vs {sum(b[1:]):.2f} GiB) with nearly the same weights "
            f"({a[1]:.2f} vs {b[1]:.2f} GiB) and activation peak ({a[3]:.2f} vs {b[3]:.2f} GiB)."
        )
        sentences.append(
            f"What differs is non-torch memory: {b[2]:.2f} GiB in '{b[0]}' instead of {a[2]:.2f} GiB — {_num(grow)} GiB "
            "allocated outside PyTorch (the plugin's own workspace or buffers) — and vLLM takes it straight out of "
            f"the KV cache, which drops from {a[4]:.2f} to {b[4]:.2f} GiB ({(a[4] - b[4]) / a[4]:.0%} fewer tokens)."
        )
        numbers = []
        for r in runs:
            numbers.append(
                Fact(
                    f"{r[0]}: weights / non-torch / activations / KV cache",
                    f"{r[1]:.2f} / {r[2]:.2f} / {r[3]:.2f} / {r[4]:.2f} GiB",
                    "log",
                )
            )
        numbers.append(Fact("non-torch memory added", f"{grow:.2f} GiB", "computed"))
        numbers.append(
            Fact("KV cache lost", f"{a[4] - b[4]:.2f} GiB ({(a[4] - b[4]) / a[4]:.0%})", "computed")
        )
        fixes.append(
            Fix(
                "vllm",
                "find what allocates outside PyTorch",
                "nvidia-smi --query-compute-apps=pid,used_memory --format=csv   # while the engine profiles\n"
                "# then look in the plugin's settings for a workspace / cache / buffer size and lower it",
                f"every GiB of non-torch memory you get back is a GiB of KV cache ({grow:.2f} GiB here)",
                "",
                1,
            )
        )
        fixes.append(
            Fix(
                "vllm",
                "compare with the stock AWQ kernels",
                vllm_command(
                    facts.context.get("command"), facts.context.get("model"), {"--quantization": "awq"}
                ),
                f"the first run's {a[4]:.2f} GiB of KV cache, if the plugin's speed-up does not matter more",
                "the plugin's kernels are not used",
                2,
            )
        )
        notes.append(
            "V0 profiling counts non-torch memory measured during the profiling run as permanent: a plugin that "
            "reserves a large workspace up front shrinks the KV cache by exactly that much."
        )
        picture = _vllm_picture(
            None, None, b[1], b[3], b[2], b[4], f"GPU memory as vLLM budgeted it ({b[0]})"
        )
        return _reply(
            title,
            " ".join(sentences),
            numbers,
            fixes,
            notes,
            sections=sections,
            memory=picture,
            short=f"{grow:.2f} GiB of non-torch memory comes out of the KV cache ({a[4]:.2f} -> {b[4]:.2f} GiB).",
            data={
                "runs": [
                    dict(zip(("label", "weights", "non_torch", "activation", "kv"), r, strict=True))
                    for r in runs
                ],
                "non_torch_added_gib": grow,
            },
        )

    base_cmd = facts.context.get("command") or (
        "aphrodite run <model>" if engine_name == "Aphrodite" else None
    )
    model_name = facts.context.get("model")
    if kv is not None and tokens and mml and conc is not None:
        title = (
            f"{engine_name}: {_gib(kv)} of KV cache holds {_tok(tokens)} tokens — {conc:.2f} requests of "
            f"{_tok(mml)} tokens at once"
        )
    elif kv is not None and tokens:
        title = f"{engine_name}: {_gib(kv)} of KV cache holds {_tok(tokens)} tokens"
    elif kv is not None:
        title = f"{engine_name}: {_gib(kv)} is left for the KV cache"
    elif tokens and mml and conc is not None:
        title = f"{engine_name}: the KV cache holds {_tok(tokens)} tokens — {conc:.2f} requests of {_tok(mml)} tokens at once"
    elif tokens:
        title = f"{engine_name}: the KV cache holds {_tok(tokens)} tokens"
    elif conc is not None and mml:
        title = f"{engine_name}: the KV cache fits {conc:.2f} requests of {_tok(mml)} tokens at once"
    elif weights is not None:
        title = f"{engine_name}: the weights take {_gib(weights)} per GPU"
    parts = [
        f"{label} {_gib(v)}"
        for label, v in (
            ("the weights take", weights),
            ("the activation peak", act),
            ("non-torch memory", non_torch),
        )
        if v is not None
    ]
    if weights is None and p.get("peak_torch_gib") is not None:
        parts.insert(0, f"weights + activation peak (torch) take {_gib(p['peak_torch_gib'])}")
    listed = ", ".join(parts[:-1]) + f" and {parts[-1]}" if len(parts) > 1 else "".join(parts)
    if requested and kv is not None and total and util and parts:
        sentences.append(
            f"{engine_name} may use {_gib(total)} x {util:g} = {_gib(requested)}: {listed}, leaving {_gib(kv)} "
            "for the KV cache."
        )
    elif parts and kv is not None:
        sentences.append(f"Of {engine_name}'s budget {listed}, leaving {_gib(kv)} for the KV cache.")
    elif parts:
        non_kv = p.get("non_kv_gib")
        sentences.append(
            (f"Everything that is not KV cache takes {_gib(non_kv)}: " if non_kv else "")
            + (listed[0].upper() + listed[1:] if not non_kv else listed)
            + "; the KV cache gets what is left of the budget."
        )
    if conc is not None and mml and not (tokens and bpt):
        sentences.append(
            f"The KV cache fits {conc:.2f} requests of the full {_tok(mml)} tokens at once"
            + (", more when they are shorter." if conc >= 1 else ": not even one full-length request.")
        )
    if tokens and bpt:
        held = (
            f"{_tok(blocks)} blocks of 16 = " if blocks and tokens_src == "computed" else ""
        ) + f"{_tok(tokens)} tokens"
        if conc is not None and mml and conc >= 1:
            sentences.append(
                f"That is {held} at {bpt / KIB:,.0f} KiB per token: {conc:.2f} requests of the full {_tok(mml)} "
                "tokens at once (more when they are shorter), so this configuration is fine."
            )
        elif conc is not None and mml:
            sentences.append(
                f"That is {held} at {bpt / KIB:,.0f} KiB per token: not even one request of {_tok(mml)} fits ({conc:.2f}x)."
            )
        else:
            sentences.append(f"That is {held} at {bpt / KIB:,.0f} KiB per token.")
    elif tokens and not sentences:
        sentences.append(
            f"{_tok(tokens)} tokens is the whole KV cache, shared by all running requests; one request can use up "
            "to max_model_len of it."
        )
    if act is not None and weights and act > 0.25 * weights:
        sentences.append(
            f"The activation peak is large ({act / weights:.0%} of the weights): it is sized by the profiling batch "
            "(max_num_batched_tokens; for vision models also the image encoder)"
            + (
                f", and every GiB cut from it is about {_tok(GIB / bpt)} more tokens of KV cache."
                if bpt
                else "."
            )
        )
        fixes.append(
            Fix(
                "vllm",
                "a smaller profiling peak",
                vllm_command(base_cmd, model_name, {"--max-num-batched-tokens": "4096"})
                + (
                    "\n# vision models: also fewer/smaller images per prompt (--limit-mm-per-prompt)"
                    if act > 2
                    else ""
                ),
                "the activation peak shrinks with the prefill batch, and the KV cache gets what it frees",
                "slower prefill of long prompts",
                2,
            )
        )
    if non_torch is not None and kv and non_torch > 2:
        sentences.append(
            f"Non-torch memory is {_gib(non_torch)} — far above the usual 0.2-0.5 GiB (NCCL, cuBLAS) — and it comes "
            "straight out of the KV cache."
        )
    if util is not None and total and util < 0.95 and bpt:
        extra = (0.95 - util) * total
        fixes.append(
            Fix(
                "vllm",
                "gpu_memory_utilization 0.95",
                vllm_command(base_cmd, model_name, {"--gpu-memory-utilization": "0.95"}),
                f"+{_gib(extra)} for the KV cache = about {_tok(extra * GIB / bpt)} more tokens"
                + (
                    f" ({(tokens + extra * GIB / bpt) / mml:.2f} requests of {_tok(mml)})"
                    if tokens and mml
                    else ""
                ),
                "only if nothing else uses this GPU; less room for activation spikes",
                1,
            )
        )
    if mml and conc is not None and conc >= 1 and tokens:
        half = _pow2_floor(mml // 2) if mml > 4096 else None
        if half:
            fixes.append(
                Fix(
                    "vllm",
                    f"max_model_len {_tok(half)} for more concurrency",
                    vllm_command(base_cmd, model_name, {"--max-model-len": str(half)}),
                    f"the same {_tok(tokens)}-token cache holds {tokens / half:.2f} requests of full length",
                    "longer requests are rejected",
                    3,
                )
            )
    if bpt and kv and tokens and facts.gpu is not None and facts.gpu.fp8_kv_cache:
        fixes.append(
            Fix(
                "vllm",
                "fp8 KV cache",
                vllm_command(base_cmd, model_name, {"--kv-cache-dtype": "fp8"}),
                f"about {_tok(tokens * 2)} tokens in the same memory",
                "slight quality loss on long contexts",
                3,
            )
        )
    if engine_name == "Aphrodite":
        notes.append("Aphrodite takes vLLM's flags (aphrodite run <model> --max-num-batched-tokens …).")
    if not sentences:
        sentences.append(_cause(facts))
    picture = _vllm_picture(
        total, util, weights, act, non_torch, kv, f"GPU memory as {engine_name} budgeted it"
    )
    return _reply(
        title,
        " ".join(sentences),
        numbers,
        fixes,
        notes,
        sections=sections,
        memory=picture,
        data={
            "kv_cache_gib": kv,
            "kv_tokens": tokens,
            "kv_bytes_per_token": bpt,
            "max_model_len": mml,
            "max_concurrency": conc,
        },
    )


def _run_label(text: str, pos: int) -> str:
    """The nearest heading before a breakdown line ('Turbomind AWQ:'), else 'run N'."""
    before = text[:pos].rstrip("\n").split("\n")
    for line in reversed(before[-3:]):
        line = line.strip()
        if line.endswith(":") and len(line) < 60:
            return line[:-1]
    return f"run at offset {pos}"


def _vllm_picture(total, util, weights, act, non_torch, kv, title) -> MemoryPicture | None:
    if kv is None or weights is None:
        return None
    segments = [MemorySegment("weights", weights, "log")]
    if act is not None:
        segments.append(MemorySegment("activations", act, "log"))
    if non_torch is not None:
        segments.append(MemorySegment("non-torch", non_torch, "log"))
    segments.append(MemorySegment("kv cache", kv, "log"))
    used = sum(s.gib for s in segments)
    if total and util:
        segments.append(MemorySegment("not used (1-util)", max(0.0, total * (1 - util)), "computed"))
        return MemoryPicture(total_gib=total, segments=segments, title=title)
    return MemoryPicture(total_gib=used, segments=segments, title=title)


RULES = {
    "host_memory": host_memory,
    "runner_crashed": runner_crashed,
    "context_exceeded@llama.cpp": context_exceeded,
    "context_exceeded@ollama": context_exceeded,
    "context_exceeded@vllm": context_exceeded,
    "context_exceeded@sglang": context_exceeded,
    "kv_quant_needs_flash_attn": kv_quant_needs_flash_attn,
    "invalid_argument@llama.cpp": invalid_argument_llamacpp,
    "invalid_argument@ollama": invalid_argument_ollama,
    "memory_report": memory_report,
}
