"""An independent check that every engine command the bot prints would start as printed.

Every paste of tests/data/dev.jsonl (the shared development corpus), every tests/data/wild_*.jsonl file
and every built-in signature example goes through ``GardenBot().triage``.  Each printed fix for vLLM,
llama.cpp or SGLang is read back with ``bot.shell.find_command`` and its flags are checked against the
paste's own numbers, recomputed here from the engines' rules (this file never calls the bot's fix code):

- KV errors: the context the command asks for fits the KV capacity the log implies after the command's
  flags (fp8 KV halves the bytes per token; a utilization change adds (U' - U) x total GiB);
- utilization errors: U' x total <= the free memory the log prints;
- tensor parallel: the size divides the attention heads (log or catalog), the KV heads (or is a multiple
  of them) and the MLP width (catalog);
- no flag the paste's printed version lacks (knowledge/features.yaml); no impossible value; a real
  command line (never prose) of the fix's own engine; the user's model path kept.

Where a flag's effect on the budget is not derived here (``--enforce-eager``, ``--max-num-seqs``...),
it adds nothing: the check is conservative, and a fix that relies on such a flag is reported.

Run: .venv/bin/python bench/verify_fixes.py [--json]   (exits 1 on any violation)
"""

from __future__ import annotations

import argparse
import json
import sys
from collections.abc import Iterator
from dataclasses import dataclass, field, replace
from functools import cache
from pathlib import Path

import re2

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from bot.core import GardenBot, Paste  # noqa: E402
from bot.reply import Fix  # noqa: E402
from bot.shell import Command, find_command  # noqa: E402
from calculator.catalog import ModelSpec, models  # noqa: E402
from knowledge.features import fork_of, parse_version, supports  # noqa: E402
from knowledge.loader import load_builtin  # noqa: E402
from knowledge.schema import MEMORY_CATEGORIES  # noqa: E402

CHECKED_ENGINES = ("vllm", "llama.cpp", "sglang")
# vLLM prints GiB with two decimals (worker log lines): a printed value is within half a hundredth.
PRINT_HALF_STEP_GIB = 0.005
# vLLM's default gpu_memory_utilization: 0.9 (vllm/engine/arg_utils.py), 0.92 from 0.21.0 (PR #38284,
# knowledge/features.yaml vllm.default_utilization_092).
DEFAULT_UTIL = 0.9
DEFAULT_UTIL_092 = 0.92

# flag (or environment variable) -> the feature of knowledge/features.yaml it needs
FLAG_FEATURES = {
    "vllm": {
        "--kv-cache-dtype": "vllm.fp8_kv_cache",
        "--enable-chunked-prefill": "vllm.chunked_prefill_flag",
        "--kv-cache-memory-bytes": "vllm.kv_cache_memory_bytes",
        "--hf-overrides": "vllm.hf_overrides",
        "VLLM_ALLOW_LONG_MAX_MODEL_LEN": "vllm.allow_long_max_model_len",
        "VLLM_MEMORY_PROFILER_ESTIMATE_CUDAGRAPHS": "vllm.cudagraph_estimate_env",
    },
    "llama.cpp": {
        "--cpu-moe": "llamacpp.cpu_moe",
        "--n-cpu-moe": "llamacpp.cpu_moe",
        "--fit": "llamacpp.fit",
    },
    "sglang": {"--kv-cache-dtype": "sglang.fp8_kv_cache"},
}
CONTEXT_FLAGS = {
    "vllm": ("--max-model-len",),
    "llama.cpp": ("-c", "--ctx-size"),
    "sglang": ("--context-length",),
}
UTIL_FLAGS = {"vllm": ("--gpu-memory-utilization",), "sglang": ("--mem-fraction-static",)}
TP_FLAGS = {
    "vllm": ("--tensor-parallel-size", "-tp"),
    "sglang": ("--tp", "--tp-size", "--tensor-parallel-size"),
}

_NUM = r"([0-9][0-9,]*(?:\.[0-9]+)?)"
# vLLM wordings (shared reference vllm_memory.md; vllm/worker/worker.py v0, vllm/v1/core/kv_cache_utils.py v1)
V0_KV = re2.compile(
    r"max seq len \(([0-9]+)\) is larger than the maximum number of tokens that can be stored in KV cache \(([0-9]+)\)"
)
V1_KV = re2.compile(
    r"max seq len \(([0-9]+)\),\s*\(?([0-9.]+) GiB KV\s*cache is needed,\s*which is larger than the available KV cache memory \(([0-9.]+) GiB\)"
)
V1_EST = re2.compile(r"estimated maximum model length is ([0-9]+)")
PROFILE = re2.compile(
    r"total_gpu_memory=([0-9.]+)GiB.*kv_cache_size=([0-9.]+)GiB gpu_memory_utilization=([0-9.]+)"
)
FREE = re2.compile(
    r"Free memory on device[^(]*\(([0-9.]+)/([0-9.]+) GiB\) on startup is less than desired GPU memory utilization \(([0-9.]+), ([0-9.]+) GiB\)"
)
HEADS = re2.compile(
    r"Total number of attention heads \(([0-9]+)\) must be divisible by tensor\s+parallel size \(([0-9]+)\)"
)
DERIVED = re2.compile(
    r"User-specified (?:max_model_len|context_length) \(([0-9]+)\) is greater than the derived "
    r"(?:context_length \(|max_model_len \(max_position_embeddings=)([0-9]+)"
)
BATCHED = re2.compile(r"max_num_batched_tokens \(([0-9]+)\) is smaller than max_model_len \(([0-9]+)\)")
VERSION = re2.compile(
    r"(?i)(?:vLLM API server version|vllm version|vLLM version|LLM engine \(v)\s*v?([0-9]+\.[0-9]+(?:\.[0-9]+)?)"
)
# llama.cpp wordings (src/llama-context.cpp, tools/server/server.cpp; shared reference llamacpp_ollama.md)
LLAMA_BUILD = re2.compile(r"\bbuild: ([0-9]+) \(")
TRAIN_CTX = re2.compile(
    r"n_ctx_(?:seq|per_seq) \(([0-9]+)\) > n_ctx_train \(([0-9]+)\)"
    r"|slot context \(([0-9]+)\) exceeds the training context of the model \(([0-9]+)\)"
)
UBATCH = re2.compile(r"input \(([0-9]+) tokens\) is too large to process\. increase the physical batch size")
# llama.cpp's default logical batch (-b): 2048 (common/common.h n_batch)
LLAMA_DEFAULT_BATCH = 2048
KV_FP8 = re2.compile(r"kv_cache_dtype=fp8|--kv-cache-dtype[ =]fp8")
UTIL_IN_LOG = re2.compile(r"gpu_memory_utilization=([0-9]+(?:\.[0-9]+)?)")


@dataclass
class Record:
    corpus: str
    id: str
    text: str
    signature: str = ""  # for signature examples: the signature whose example this is


@dataclass
class Verdict:
    checked: bool = False  # a command of a checked engine: read back and its values checked
    budget: bool = False  # and its flags checked against the paste's numbers (capacity, free, heads)
    unverified: str = ""  # why the paste's numbers could not decide it
    problems: list[str] = field(default_factory=list)


@dataclass
class Row:
    corpus: str
    replies: int = 0
    fixes: int = 0
    checked: int = 0
    budget: int = 0
    violations: list[tuple[str, str, str]] = field(default_factory=list)  # (record id, command, why)
    unverified: list[tuple[str, str, str]] = field(default_factory=list)  # budget not decidable: why


def _f(text: str) -> float:
    return float(text.replace(",", ""))


# ------------------------------------------------------------------ what the paste says


@dataclass
class PasteFacts:
    asked: int | None = None  # the context the failing run asked for
    capacity: int | None = None  # tokens the KV cache held at the run's settings
    kv_gib: float | None = None  # the KV budget behind that capacity
    gib_per_token_max: float | None = None  # upper bound of the KV GiB one token takes
    total_gib: float | None = None
    util: float | None = None
    free_gib: float | None = None
    heads: int | None = None
    derived_max: int | None = None
    batched_min: int | None = None
    versions: dict[str, str] = field(default_factory=dict)  # engine -> the version the paste prints
    fork: str | None = None  # llama.cpp fork (knowledge/features.yaml forks)
    train_ctx: int | None = None  # llama.cpp: the model's training context
    ubatch_min: int | None = None  # llama.cpp: the input that did not fit the physical batch
    model: ModelSpec | None = None
    model_note: str = ""  # how the catalogued model was matched
    kv_fp8: bool = False  # the failing run already stored the KV cache in fp8


def _kv_facts(text: str, facts: PasteFacts) -> None:
    if m := V0_KV.search(text):
        facts.asked, facts.capacity = int(m.group(1)), int(m.group(2))
        if p := PROFILE.search(text):
            facts.total_gib, facts.kv_gib, facts.util = _f(p.group(1)), _f(p.group(2)), _f(p.group(3))
            facts.gib_per_token_max = (facts.kv_gib + PRINT_HALF_STEP_GIB) / facts.capacity
    elif m := V1_KV.search(text):
        asked, needed, available = int(m.group(1)), _f(m.group(2)), _f(m.group(3))
        facts.asked, facts.kv_gib = asked, available
        facts.gib_per_token_max = (needed + PRINT_HALF_STEP_GIB) / asked
        est = V1_EST.search(text)
        bound = int(max(0.0, available - PRINT_HALF_STEP_GIB) / facts.gib_per_token_max)
        facts.capacity = int(est.group(1)) if est else bound


def read_facts(text: str) -> PasteFacts:
    facts = PasteFacts()
    _kv_facts(text, facts)
    if facts.capacity is None:  # a terminal that wrapped the error mid-word ("KV cach\ne is needed")
        _kv_facts(text.replace("\n", ""), facts)
    if m := FREE.search(text):
        facts.free_gib, facts.total_gib, facts.util = _f(m.group(1)), _f(m.group(2)), _f(m.group(3))
    if m := HEADS.search(text):
        facts.heads = int(m.group(1))
    if m := DERIVED.search(text):
        facts.asked, facts.derived_max = int(m.group(1)), int(m.group(2))
    if m := BATCHED.search(text):
        facts.batched_min = int(m.group(2))
    if facts.util is None and (m := UTIL_IN_LOG.search(text)):
        facts.util = _f(m.group(1))
    facts.kv_fp8 = KV_FP8.search(text) is not None
    if m := VERSION.search(text):
        facts.versions["vllm"] = m.group(1)
    if m := LLAMA_BUILD.search(text):
        facts.versions["llama.cpp"] = "b" + m.group(1)
    facts.fork = fork_of("llama.cpp", text)
    _llamacpp_facts(text, facts)
    _catalog_model(text, facts)
    return facts


def _llamacpp_facts(text: str, facts: PasteFacts) -> None:
    if m := TRAIN_CTX.search(text):
        facts.train_ctx = int(m.group(2) or m.group(4))
    if m := UBATCH.search(text):
        facts.ubatch_min = int(m.group(1))


@cache
def _catalog_names() -> tuple[re2._Regexp, dict[str, ModelSpec]]:
    """Every catalogued repo id, the name after its org and its aliases (a trailing ``-hf`` dropped),
    in one RE2 alternation; a name may be followed by a fine-tune suffix (``-Instruct-hf``)."""
    names: dict[str, ModelSpec] = {}
    for spec in models():
        for name in (spec.id, spec.id.rsplit("/", 1)[-1], *spec.aliases):
            names.setdefault(name.lower().removesuffix("-hf"), spec)
    ordered = sorted(names, key=len, reverse=True)  # the longest name wins at a position
    pattern = (
        r"(?:^|[^a-z0-9.-])("
        + "|".join(re2.escape(n) for n in ordered)
        + r")(-[a-z0-9.-]+)?(?:$|[^a-z0-9.-])"
    )
    options = re2.Options()  # one alternation of ~1,000 names: its DFA may fall back to the NFA, quietly
    options.max_mem, options.log_errors = 64 << 20, False
    return re2.compile(pattern, options), names


def _catalog_model(text: str, facts: PasteFacts) -> None:
    """The catalogued model the paste names, longest name first.  A fine-tuned build named after its
    base (``CodeLlama-13b-Instruct-hf``) is taken to share the base's geometry, and the note says so."""
    pattern, names = _catalog_names()
    found = [(m.group(1), m.group(2) or "") for m in pattern.finditer(text.lower())]
    if not found:
        return
    name, suffix = max(found, key=lambda f: len(f[0]))
    facts.model = names[name]
    if suffix.removeprefix("-hf"):
        facts.model_note = f" (geometry of its base {facts.model.id})"


# ------------------------------------------------------------------ the printed command


def model_of(cmd: Command) -> str | None:
    """The model argument: ``--model`` / ``-m`` / ``model=``, else the positional after the launcher."""
    for names in (("--model", "--model-path"), ("-m",)):
        value = cmd.flag(*names)
        if value:
            return value
    if (
        cmd.interface == "cli"
        and len(cmd.argv) > 2
        and cmd.argv[1] == "serve"
        and not cmd.argv[2].startswith("-")
    ):
        return cmd.argv[2]
    return None


def _int_flag(cmd: Command, names: tuple[str, ...], problems: list[str]) -> int | str | None:
    value = cmd.flag(*names)
    if value is None or value == "auto":
        return value
    if not re2.fullmatch(r"[0-9]+", value) or int(value) < 1:
        problems.append(f"{names[0]} {value!r} is not a positive integer")
        return None
    return int(value)


def _util_flag(cmd: Command, engine: str, problems: list[str]) -> float | None:
    names = UTIL_FLAGS.get(engine)
    value = cmd.flag(*names) if names else None
    if value is None:
        return None
    try:
        util = float(value)
    except ValueError:
        problems.append(f"{names[0]} {value!r} is not a number")
        return None
    if not 0 < util <= 1:
        problems.append(f"{names[0]} {value} is outside (0, 1]")
        return None
    return util


def _needed_features(cmd: Command, engine: str) -> list[tuple[str, str]]:
    present = {tok.split("=", 1)[0] for tok in cmd.argv} | {e.split("=", 1)[0] for e in cmd.env}
    needed = [(flag, fid) for flag, fid in FLAG_FEATURES.get(engine, {}).items() if flag in present]
    if engine == "llama.cpp" and (cmd.flag("-fa", "--flash-attn") or "") in ("on", "off", "auto"):
        needed.append(("-fa " + str(cmd.flag("-fa", "--flash-attn")), "llamacpp.fa_value"))
    return needed


def _features(cmd: Command, engine: str, facts: PasteFacts, problems: list[str]) -> None:
    version = facts.versions.get(engine)
    parsed = parse_version(version) if version else None
    fork = facts.fork if engine == "llama.cpp" else None
    for flag, feature_id in _needed_features(cmd, engine):
        if fork is not None and supports(parsed or (999999, 0, 0), feature_id, fork) is False:
            problems.append(f"{flag} is not in {fork} ({feature_id})")
        elif parsed is not None and supports(parsed, feature_id) is False:
            problems.append(f"{flag} is not in {engine} {version} ({feature_id})")
    if parsed is None:
        return
    if (
        engine == "vllm"
        and cmd.flag("--max-model-len") == "auto"
        and supports(parsed, "vllm.max_model_len_auto") is False
    ):
        problems.append(f"--max-model-len auto is not in vllm {version}")


def _structure(fix: Fix, user: Command | None, problems: list[str]) -> Command | None:
    if "\n" in fix.command.strip():
        problems.append("more than one line")
    cmd = find_command(fix.command)
    if cmd is None:
        problems.append("not a command line (prose, or no known launcher)")
        return None
    if cmd.engine != fix.engine:
        problems.append(f"a {cmd.engine} command line in a {fix.engine} fix")
    want = model_of(user) if user is not None and user.engine == fix.engine else None
    if want and model_of(cmd) != want:
        problems.append(f"model {model_of(cmd)!r} instead of the user's {want!r}")
    return cmd


# ------------------------------------------------------------------ the budget after the command's flags


def _default_util(version: str | None) -> float | None:
    parsed = parse_version(version) if version else None
    if parsed is None:
        return None
    return DEFAULT_UTIL_092 if supports(parsed, "vllm.default_utilization_092") else DEFAULT_UTIL


def _kv_capacity(cmd: Command, facts: PasteFacts, util: float | None) -> tuple[int | None, str]:
    """Tokens the KV cache holds with the command's flags, or None and why it cannot be told."""
    assert facts.capacity is not None
    fp8 = (cmd.flag("--kv-cache-dtype") or "auto").startswith("fp8") and not facts.kv_fp8
    extra_gib = 0.0
    if util is not None:
        base_util = facts.util if facts.util is not None else _default_util(facts.versions.get("vllm"))
        if (
            facts.total_gib is None
            or base_util is None
            or facts.gib_per_token_max is None
            or facts.kv_gib is None
        ):
            return None, "the paste gives no total memory or utilization to scale"
        extra_gib = (util - base_util) * facts.total_gib
    if (
        cmd.flag("--tensor-parallel-size", "-tp") is not None
        or cmd.flag("--pipeline-parallel-size", "-pp") is not None
    ):
        return None, "a parallelism change is not modelled here"
    if extra_gib == 0.0:
        # vLLM sizes the cache in whole blocks (v0: blocks x block size; v1: the longest length whose
        # blocks fit): halving a block's bytes at least doubles the tokens, so 2 x capacity is a floor
        return (2 * facts.capacity if fp8 else facts.capacity), ""
    assert facts.kv_gib is not None and facts.gib_per_token_max is not None
    per_token = facts.gib_per_token_max / (2 if fp8 else 1)
    return int(max(0.0, facts.kv_gib + extra_gib) / per_token), ""


def _kv_check(cmd: Command, facts: PasteFacts, verdict: Verdict) -> bool:
    problems = verdict.problems
    ctx = _int_flag(cmd, CONTEXT_FLAGS["vllm"], [])  # a bad value is reported once, by _value_checks
    if ctx == "auto" or (ctx is None and cmd.flag(*CONTEXT_FLAGS["vllm"]) is not None):
        return True  # vLLM picks what fits / an impossible value, reported by _value_checks
    util = _util_flag(cmd, "vllm", [])
    capacity, why = _kv_capacity(cmd, facts, util)
    if capacity is None:
        verdict.unverified = why
        return False
    asked = ctx if isinstance(ctx, int) else facts.asked
    if asked is not None and asked > capacity:
        problems.append(f"asks {asked} tokens; the KV cache holds about {capacity} after the command's flags")
    return True


def _util_check(cmd: Command, facts: PasteFacts, problems: list[str]) -> bool:
    assert facts.free_gib is not None and facts.total_gib is not None
    util = _util_flag(cmd, "vllm", [])
    if util is None and cmd.flag(*UTIL_FLAGS["vllm"]) is not None:
        return True  # an impossible value, reported by _value_checks
    if util is None:
        util = facts.util
    if util is not None and util * facts.total_gib > facts.free_gib:
        problems.append(f"utilization {util} x {facts.total_gib} GiB > {facts.free_gib} GiB free")
    return True


def _tp_problems(spec: ModelSpec, tp: int) -> list[str]:
    """vLLM's split of one model over ``tp`` GPUs: the KV heads split evenly or replicated evenly
    (vllm/model_executor/layers/linear.py QKVParallelLinear) and the MLP width split evenly
    (MergedColumnParallelLinear); ``divide`` asserts in both."""
    out = []
    kv = spec.num_key_value_heads
    if (tp >= kv and tp % kv) or (tp < kv and kv % tp):
        out.append(f"tensor parallel {tp} neither divides nor is a multiple of the {kv} KV heads")
    width = spec.intermediate_size
    if width and not spec.is_moe and width % tp:
        out.append(f"tensor parallel {tp} does not divide intermediate_size {width}")
    return out


def _tp_check(cmd: Command, engine: str, facts: PasteFacts, problems: list[str]) -> bool:
    """Heads % tp (vllm/config.py verify_with_parallel_config), then the model's own split
    (:func:`_tp_problems`).  A paste that names no catalogued model is held to the catalogued models
    with the same number of heads: a size none of them accepts is reported."""
    tp = _int_flag(cmd, TP_FLAGS[engine], [])
    if not isinstance(tp, int):
        return False
    heads = facts.heads or (facts.model.num_attention_heads if facts.model else None)
    if heads is None:
        return False
    if heads % tp:
        problems.append(f"tensor parallel {tp} does not divide the {heads} attention heads")
    elif facts.model is not None:
        problems += [p + facts.model_note for p in _tp_problems(facts.model, tp)]
    else:
        alike = [m for m in models() if m.num_attention_heads == heads]
        if alike and all(_tp_problems(m, tp) for m in alike):
            problems.append(
                f"tensor parallel {tp} fits none of the {len(alike)} catalogued models with {heads} heads "
                "(their KV heads or intermediate_size do not split by it)"
            )
    return True


# the environment variable that lets each engine go past the derived context (vllm/envs.py;
# sglang/srt/configs/model_config.py)
ALLOW_LONGER = {
    "vllm": "VLLM_ALLOW_LONG_MAX_MODEL_LEN=1",
    "sglang": "SGLANG_ALLOW_OVERWRITE_LONGER_CONTEXT_LEN=1",
}


def _derived_check(cmd: Command, engine: str, facts: PasteFacts, problems: list[str]) -> bool:
    if facts.derived_max is None:
        return False
    ctx = _int_flag(cmd, CONTEXT_FLAGS[engine], [])
    allowed = any(e.startswith(ALLOW_LONGER[engine]) for e in cmd.env)
    asked = ctx if isinstance(ctx, int) else facts.asked
    if not allowed and asked is not None and asked > facts.derived_max:
        problems.append(f"asks {asked} tokens, over the derived maximum {facts.derived_max}")
    return True


def _llamacpp_constraints(cmd: Command, facts: PasteFacts, problems: list[str]) -> bool:
    """-c split over -np slots stays within the training context; -ub (capped by -b) holds the input."""
    done = False
    if facts.train_ctx is not None:
        ctx = _int_flag(cmd, CONTEXT_FLAGS["llama.cpp"], [])
        slots = _int_flag(cmd, ("-np", "--parallel"), [])
        if isinstance(ctx, int) and ctx / (slots if isinstance(slots, int) else 1) > facts.train_ctx:
            problems.append(f"-c {ctx} per slot is over the training context {facts.train_ctx}")
        done = True
    if facts.ubatch_min is not None:
        ubatch = _int_flag(cmd, ("-ub", "--ubatch-size"), problems)
        batch = _int_flag(cmd, ("-b", "--batch-size"), problems)
        physical = min(
            ubatch if isinstance(ubatch, int) else 0, batch if isinstance(batch, int) else LLAMA_DEFAULT_BATCH
        )
        if physical < facts.ubatch_min:
            problems.append(
                f"physical batch {physical} (min of -ub and -b) < the input's {facts.ubatch_min} tokens"
            )
        done = True
    return done


def _constraint_check(cmd: Command, facts: PasteFacts, problems: list[str]) -> bool:
    done = _derived_check(cmd, "vllm", facts, problems)
    if facts.batched_min is not None:
        batched = _int_flag(cmd, ("--max-num-batched-tokens",), problems)
        ctx = _int_flag(cmd, CONTEXT_FLAGS["vllm"], [])
        need = ctx if isinstance(ctx, int) else facts.batched_min
        if isinstance(batched, int) and batched < need and cmd.flag("--enable-chunked-prefill") is None:
            problems.append(f"--max-num-batched-tokens {batched} is still below max_model_len {need}")
        done = True
    return done


def _value_checks(cmd: Command, engine: str, problems: list[str]) -> None:
    if engine in CONTEXT_FLAGS:
        _int_flag(cmd, CONTEXT_FLAGS[engine], problems)
    if engine in TP_FLAGS:
        _int_flag(cmd, TP_FLAGS[engine], problems)
    _util_flag(cmd, engine, problems)


# an action that adds flags to the user's own command is checked on a stand-in command line with them
STAND_IN = {
    "vllm": "vllm serve MODEL",
    "llama.cpp": "llama-server -m MODEL.gguf",
    "sglang": "python -m sglang.launch_server --model-path MODEL",
    "tgi": "text-generation-launcher --model-id MODEL",
}


def check_fix(fix: Fix, paste: str, facts: PasteFacts, user: Command | None) -> Verdict:
    verdict = Verdict()
    if fix.engine not in CHECKED_ENGINES:
        return verdict
    if not fix.command:
        if fix.adds is None or fix.engine not in STAND_IN:
            return verdict  # an action with nothing to run
        words = fix.adds.split()
        env = [w for w in words if "=" in w and not w.startswith("-")]
        line = " ".join([*env, STAND_IN[fix.engine], *(w for w in words if w not in env)])
        fix, user = replace(fix, command=line), None
    cmd = _structure(fix, user, verdict.problems)
    verdict.checked = True
    if cmd is None or cmd.engine != fix.engine:
        return verdict
    _value_checks(cmd, fix.engine, verdict.problems)
    _features(cmd, fix.engine, facts, verdict.problems)
    if fix.engine == "vllm":
        verdict.budget = _vllm_budget(cmd, facts, verdict)
    elif fix.engine == "llama.cpp":
        verdict.budget = _llamacpp_constraints(cmd, facts, verdict.problems)
    else:
        verdict.budget = _derived_check(cmd, "sglang", facts, verdict.problems)
    return verdict


def _vllm_budget(cmd: Command, facts: PasteFacts, verdict: Verdict) -> bool:
    ran = False
    if facts.capacity is not None:
        ran |= _kv_check(cmd, facts, verdict)
    if facts.free_gib is not None:
        ran |= _util_check(cmd, facts, verdict.problems)
    if facts.heads is not None or cmd.flag(*TP_FLAGS["vllm"]) is not None:
        ran |= _tp_check(cmd, "vllm", facts, verdict.problems)
    ran |= _constraint_check(cmd, facts, verdict.problems)
    return ran


# ------------------------------------------------------------------ corpora


def _jsonl(path: Path, corpus: str) -> Iterator[Record]:
    for line in path.read_text(encoding="utf-8").splitlines():
        if line.strip():
            rec = json.loads(line)
            yield Record(corpus, rec["id"], rec["text"])


def examples() -> Iterator[Record]:
    for loaded in load_builtin().signatures:
        sig = loaded.signature
        for i, ex in enumerate(sig.examples):
            if ex.expect == "match":
                yield Record("signature examples", f"{sig.id}#{i}", ex.text, signature=sig.id)


def corpora() -> dict[str, list[Record]]:
    out: dict[str, list[Record]] = {"dev.jsonl": list(_jsonl(ROOT / "tests/data/dev.jsonl", "dev.jsonl"))}
    for path in sorted((ROOT / "tests/data").glob("wild_*.jsonl")):
        out[path.name] = list(_jsonl(path, path.name))
    out["signature examples"] = list(examples())
    return out


@dataclass
class Result:
    rows: list[Row]
    fixless_signatures: list[str]  # memory signatures (not reports) whose examples get no fix
    fixless_reports: list[str]  # memory_report signatures (a run's log, not an error) likewise
    diagnostics_only: list[str]  # memory errors whose examples get only a diagnostic, no engine command


def run(bot: GardenBot | None = None) -> Result:
    bot = bot or GardenBot()
    category = {s.signature.id: s.signature.category for s in load_builtin().signatures}
    memory_ids = {sid for sid, cat in category.items() if cat in MEMORY_CATEGORIES}
    with_fix: set[str] = set()
    with_command: set[str] = set()  # an engine command, not only a diagnostic (nvidia-smi, free -h)
    rows = []
    for name, records in corpora().items():
        row = Row(name)
        for rec in records:
            _one(bot, rec, row, (with_fix, with_command))
        rows.append(row)
    fixless = sorted(memory_ids - with_fix)
    reports = [sid for sid in fixless if category[sid] == "memory_report"]
    errors = [sid for sid in fixless if sid not in reports]
    no_command = sorted(sid for sid in memory_ids - with_command if category[sid] != "memory_report")
    return Result(rows, errors, reports, [sid for sid in no_command if sid not in errors])


def _one(bot: GardenBot, rec: Record, row: Row, seen: tuple[set[str], set[str]]) -> None:
    reply = bot.triage(Paste(rec.text, False, []))
    if reply is None or reply.kind != "diagnosis":
        return
    row.replies += 1
    row.fixes += len(reply.fixes)
    if rec.signature and reply.fixes:
        seen[0].add(rec.signature)
    if rec.signature and any(f.engine not in ("any", None) for f in reply.fixes):
        seen[1].add(rec.signature)
    facts = read_facts(rec.text)
    user = find_command(rec.text)
    for fix in reply.fixes:
        verdict = check_fix(fix, rec.text, facts, user)
        row.checked += verdict.checked
        row.budget += verdict.budget
        if verdict.unverified:
            row.unverified.append((rec.id, fix.command, verdict.unverified))
        if verdict.problems:
            row.violations.append((rec.id, fix.command, "; ".join(verdict.problems)))


def table(result: Result) -> str:
    head = (
        "| corpus | replies | fixes | engine commands checked | checked on the paste's numbers | violations |"
    )
    lines = [head, "|---|---:|---:|---:|---:|---:|"]
    for r in result.rows:
        cells = [r.corpus, r.replies, r.fixes, r.checked, r.budget, len(r.violations)]
        lines.append("| " + " | ".join(str(c) for c in cells) + " |")
    lines.append("\nViolations:" if any(r.violations for r in result.rows) else "\nViolations: none")
    for r in result.rows:
        lines += [f"- {r.corpus} `{rid}`: `{command}` — {why}" for rid, command, why in r.violations]
    unverified = [(r.corpus, *u) for r in result.rows for u in r.unverified]
    if unverified:
        lines.append("\nBudget not decidable from the paste (not counted as violations):")
        lines += [f"- {c} `{rid}`: `{command}` — {why}" for c, rid, command, why in unverified]
    errors, reports = result.fixless_signatures, result.fixless_reports
    lines.append(f"\nMemory signatures whose examples produce no fix: {len(errors)} errors")
    lines.append(", ".join(errors) or "none")
    only = result.diagnostics_only
    lines.append(
        f"\nMemory errors whose examples get only a diagnostic command, no engine command: {len(only)}"
    )
    lines.append(", ".join(only) or "none")
    lines.append(
        f"\nand {len(reports)} memory reports (logs of a run, not an error): "
        + (", ".join(reports) or "none")
    )
    return "\n".join(lines)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args()
    result = run()
    if args.json:
        print(
            json.dumps(
                {
                    "rows": [r.__dict__ for r in result.rows],
                    "fixless": result.fixless_signatures,
                    "fixless_reports": result.fixless_reports,
                    "diagnostics_only": result.diagnostics_only,
                },
                indent=1,
            )
        )
    else:
        print(table(result))
    return 1 if any(r.violations for r in result.rows) else 0


if __name__ == "__main__":
    sys.exit(main())
