"""The model a pasted load log describes: its geometry, weights and launch settings, read from what the
engine itself prints, so a model outside the catalog still gets exact KV math.

- llama.cpp (and Ollama, whose runner is llama.cpp): the ``print_info:`` lines (``llm_load_print_meta:``
  before early 2025) that ``llama_model::print_info`` and ``llama_model_loader::print_info`` write
  (ggml-org/llama.cpp src/llama-model.cpp, src/llama-model-loader.cpp), and the GGUF key/value dump
  ``llama_model_loader: - kv  N: <key> <type> = <value>``.  Timestamps, ``ollama[pid]:`` and container
  prefixes before the tag are ignored.
- Ollama's own engine: ``msg="" architecture=... file_type=... name="..."`` (ollama/ollama
  ml/backend/ggml/ggml.go, v0.6-v0.12) names the model and its quant but prints no geometry.
- vLLM: ``Initializing a V1 LLM engine (v0.x) with config: model='...', max_seq_len=..., ...`` and
  ``non-default args: {...}`` (vLLM >= 0.10) name the model and the launch settings; vLLM prints no
  geometry, so ``spec`` stays None and the name is for a catalog or Hub lookup.

Pure functions over text; RE2 only (linear time on any paste).
"""

from __future__ import annotations

from dataclasses import dataclass, field, replace
from typing import TYPE_CHECKING, Any

from calculator.lazy_re import LazyPattern
from calculator.units import GIB

if TYPE_CHECKING:  # the catalog and config readers are imported when a log prints a model's geometry
    from calculator.catalog import ModelSpec, Variant
    from calculator.spec_decode import SpecDecode

_TAG = LazyPattern(r"(?:print_info|llm_load_print_meta):\s+([A-Za-z_][A-Za-z0-9_. ]*?)\s*=\s*(.*?)\s*$")
# the 2023 ggml/ggjt loader (llama.cpp before GGUF, Aug 2023): "llama_model_load_internal: n_embd = 4096";
# that loader read LLaMA-architecture files only (llama.cpp llama.cpp, master-2023-06 .. b1050)
_OLD_TAG = LazyPattern(
    r"llama_model_load_internal:\s+(n_(?:vocab|embd|head|head_kv|layer|ff))\s*=\s*(\d+)\s*$"
)
_KV = LazyPattern(r"llama_model_loader: - kv\s+\d+:\s+(\S+)\s+(\S+)\s+=\s?(.*?)\s*$")
_LOADED = LazyPattern(r"llama_model_loader: loaded meta data with")
_SWA_LAYER = LazyPattern(r"load_tensors: layer\s+(\d+) assigned to device [^,]+, is_swa = ([01])")
_SIZE = LazyPattern(r"^([0-9.]+) (GiB|MiB) \(([0-9.]+) BPW\)")
_PARAMS = LazyPattern(r"^([0-9.]+) ([KMBT])$")
# the KV cache as llama.cpp logs it: "kv_size = N, ... type_k = 'q8_0', type_v = 'q8_0', n_layer = L"
# (llama_kv_cache_init, <= early 2025), "KV self size = X MiB, K (t): ..." (same era) and
# "llama_kv_cache[_unified]: size = X MiB ( N cells, L layers, ...), K (t): ..., V (t): ..." (since)
_KV_INIT = LazyPattern(r"kv_size = (\d+), offload = \d+, type_k = '(\w+)', type_v = '(\w+)', n_layer = (\d+)")
_KV_SELF = LazyPattern(r"KV self size\s*=\s*([0-9.]+) MiB, K \((\w+)\):\s*[0-9.]+ MiB, V \((\w+)\)")
_KV_SIZE = LazyPattern(
    r"llama_kv_cache(?:_unified)?: size =\s*([0-9.]+) MiB \(\s*(\d+) cells,\s*(\d+) layers.*K \((\w+)\).*V \((\w+)\)"
)
_OLLAMA = LazyPattern(r'msg="" architecture=(\S+) file_type=(\S+) name="([^"]*)"')
_VLLM_CONFIG = LazyPattern(r"with config: (.*)$")
_VLLM_VERSION = LazyPattern(r"LLM engine \(v([0-9][0-9A-Za-z.+]*)\)")
_VLLM_PAIR = LazyPattern(r"(?:^|, )([a-z_]+)=('[^']*'|[^,]*)")
_VLLM_ARGS = LazyPattern(r"non-default args: \{(.*)\}")
_ARG_PAIR = LazyPattern(r"'([a-z_]+)': ('[^']*'|[^,]*)")
_NEW_RECORD = LazyPattern(r"^\s*(?:\(|\[|INFO|WARNING|ERROR|DEBUG|Traceback|[0-9]{4}-[0-9]{2}-[0-9]{2})")
_HF_CACHE = LazyPattern(r"models--([A-Za-z0-9][\w.-]*)--([\w.-]+)")

# print_info name -> GGUF key under the architecture (llama-model.cpp print_info)
_PRINT_KEYS = {
    "n_layer": "block_count",
    "n_embd": "embedding_length",
    "n_head": "attention.head_count",
    "n_head_kv": "attention.head_count_kv",
    "n_embd_head_k": "attention.key_length",
    "n_embd_head_v": "attention.value_length",
    "n_ctx_train": "context_length",
    "n_ff": "feed_forward_length",
    "n_swa": "attention.sliding_window",
    "n_vocab": "vocab_size",
    "n_expert": "expert_count",
    "n_expert_used": "expert_used_count",
    "n_ff_exp": "expert_feed_forward_length",
    "n_lora_kv": "attention.kv_lora_rank",
    "ssm_d_state": "ssm.state_size",
    "ssm_d_inner": "ssm.inner_size",
}
_PARAM_SCALE = {"K": 1e3, "M": 1e6, "B": 1e9, "T": 1e12}
# vLLM config-dump / non-default-args keys kept as launch settings
_VLLM_SETTINGS = (
    "model",
    "served_model_name",
    "dtype",
    "max_seq_len",
    "max_model_len",
    "tensor_parallel_size",
    "pipeline_parallel_size",
    "data_parallel_size",
    "quantization",
    "kv_cache_dtype",
    "enforce_eager",
    "gpu_memory_utilization",
    "max_num_seqs",
    "max_num_batched_tokens",
)


@dataclass(frozen=True)
class LogModel:
    """The model a log describes: its name, and its geometry when the log prints it."""

    engine: str  # "llama.cpp", "ollama", "vllm"
    name: str | None  # general.name, a file/model id, or vLLM's model=
    spec: ModelSpec | None = None  # None when the log prints no geometry (vLLM, Ollama's engine line)
    variant: Variant | None = None
    settings: dict[str, Any] = field(default_factory=dict)
    notes: tuple[str, ...] = ()


def spec_from_log(text: str) -> ModelSpec | None:
    """The model geometry the paste prints, or None."""
    found = read_log(text)
    return found.spec if found else None


def read_log(text: str) -> LogModel | None:
    """Everything the paste says about its model; None when it says nothing."""
    if not isinstance(text, str) or not text:
        return None
    return _read_llamacpp(text) or _read_vllm(text)


# --- llama.cpp / Ollama -------------------------------------------------------------------------


def _scalar(kind: str, raw: str) -> Any:
    if kind == "str":
        return raw
    if kind == "bool":
        return raw == "true"
    if kind.startswith("arr["):
        return _array(raw)
    try:
        return float(raw) if kind.startswith("f") else int(raw)
    except ValueError:
        return None


def _array(raw: str) -> list[int] | None:
    """A printed array, only when printed whole (the kv dump cuts long ones with '...')."""
    if not (raw.startswith("[") and raw.endswith("]")) or "..." in raw:
        return None
    items = [x.strip() for x in raw[1:-1].split(",") if x.strip()]
    try:
        return [1 if x == "true" else 0 if x == "false" else int(x) for x in items]
    except ValueError:
        return None


def _gguf_lines(lines: list[str]) -> dict[str, Any]:
    meta: dict[str, Any] = {}
    loads = 0
    for line in lines:
        if _LOADED.search(line):
            loads += 1
            if loads > 1:
                break  # a second model (speculative draft, projector): keep the first
        m = _KV.search(line)
        if not m:
            continue
        key, kind, raw = m.group(1), m.group(2), m.group(3)
        if kind.startswith("arr[str,"):
            count = kind.removeprefix("arr[str,").rstrip("]")
            if count.isdigit():
                meta[f"{key}.count"] = int(count)
            continue
        value = _scalar(kind, raw)
        if value is not None:
            meta[key] = value
    return meta


def _print_lines(lines: list[str]) -> dict[str, str]:
    printed: dict[str, str] = {}
    for line in lines:
        old = _OLD_TAG.search(line)
        if old:
            printed.setdefault("arch", "llama")
            printed.setdefault(old.group(1), old.group(2))
            continue
        m = _TAG.search(line)
        if not m:
            continue
        key, value = m.group(1).strip(), m.group(2)
        if key == "arch" and "arch" in printed:
            break  # the next model's block (a speculative draft)
        printed.setdefault(key, value)
    return printed


U32_MAX = 0xFFFFFFFF  # GGUF stores these hyperparameters as uint32 (ggml gguf.md); more is not a model


def _number(raw: str | None) -> int | list[int] | None:
    if raw is None:
        return None
    if raw.startswith("["):
        values = _array(raw)
        return values if values is not None and all(0 <= v <= U32_MAX for v in values) else None
    return int(raw) if raw.isdigit() and len(raw) <= 10 and int(raw) <= U32_MAX else None


def _meta_from_print(printed: dict[str, str], meta: dict[str, Any]) -> str | None:
    """Fill GGUF-style keys from the print_info values (they are the loaded hparams); returns the arch."""
    arch = printed.get("arch") or meta.get("general.architecture")
    if not arch:
        return None
    meta["general.architecture"] = arch
    for name, key in _PRINT_KEYS.items():
        value = _number(printed.get(name))
        if value is not None:
            meta[f"{arch}.{key}"] = value
    if f"{arch}.attention.kv_lora_rank" in meta and _number(printed.get("n_rot")):
        meta[f"{arch}.rope.dimension_count"] = _number(printed.get("n_rot"))
    params = _PARAMS.search(printed.get("model params", ""))
    if params:
        meta["general.parameter_count"] = int(float(params.group(1)) * _PARAM_SCALE[params.group(2)])
    if printed.get("general.name"):
        meta["general.name"] = printed["general.name"]
    return str(arch)


def _file_type(printed: dict[str, str], meta: dict[str, Any], ollama_type: str | None) -> str | None:
    """llama_model_ftype_name's text (``Q4_K - Medium``) as a quant name (``Q4_K_M``)."""
    raw = printed.get("file type") or printed.get("model ftype")
    if not raw:
        return ollama_type or _ftype_code(meta.get("general.file_type"))
    words = raw.split()
    base = words[0].upper()
    if base == "ALL" and len(words) > 1:
        return words[1].upper()  # "all F32"
    size = words[2] if len(words) > 2 and words[1] == "-" else ""
    if base == "Q2_K" and size == "Medium":
        return "Q2_K"  # LLAMA_FTYPE_MOSTLY_Q2_K prints as "Q2_K - Medium"
    suffix = {"Small": "_S", "Medium": "_M", "Large": "_L"}.get(size, "")
    return base + suffix


def _kv_settings(lines: list[str]) -> dict[str, Any]:
    """What the log says its KV cache is: cells, cache types, layers and MiB (the first cache only)."""
    found: dict[str, Any] = {}
    for line in lines:
        if m := _KV_INIT.search(line):
            found.setdefault("kv_cells", int(m.group(1)))
            found.setdefault("cache_type_k", m.group(2))
            found.setdefault("cache_type_v", m.group(3))
            found.setdefault("kv_layers", int(m.group(4)))
        elif m := _KV_SELF.search(line):
            found.setdefault("kv_mib", float(m.group(1)))
            found.setdefault("cache_type_k", m.group(2))
            found.setdefault("cache_type_v", m.group(3))
        elif m := _KV_SIZE.search(line):
            found.setdefault("kv_mib", float(m.group(1)))
            found.setdefault("kv_cells", int(m.group(2)))
            found.setdefault("kv_layers", int(m.group(3)))
            found.setdefault("cache_type_k", m.group(4))
            found.setdefault("cache_type_v", m.group(5))
    return found


def _ftype_code(code: Any) -> str | None:
    """``general.file_type`` (the llama_ftype enum) by its gguf-py name: 15 -> Q4_K_M."""
    if not isinstance(code, int):
        return None
    try:
        from gguf import LlamaFileType

        return LlamaFileType(code).name.removeprefix("MOSTLY_")
    except (ImportError, ValueError):
        return None


def _swa_pattern(lines: list[str], layers: int | None) -> list[int] | None:
    flags: dict[int, int] = {}
    for line in lines:
        m = _SWA_LAYER.search(line)
        if m:
            flags.setdefault(int(m.group(1)), int(m.group(2)))
    if not layers or len(flags) != layers or sorted(flags) != list(range(layers)):
        return None
    return [flags[i] for i in range(layers)]


def _segments(text: str, literals: tuple[str, ...]) -> list[tuple[int, list[str]]]:
    """(offset, lines) of every newline-delimited stretch of the text holding one of the literals, in
    order, cut into lines as ``str.splitlines`` cuts them: found by ``str.find``, so the readers'
    per-line searches run on those stretches only, not on every line of a long log."""
    spans: set[tuple[int, int]] = set()
    for literal in literals:
        at = text.find(literal)
        while at >= 0:
            start = text.rfind("\n", 0, at) + 1
            end = text.find("\n", at)
            end = len(text) if end < 0 else end
            spans.add((start, end))
            at = text.find(literal, end)
    return [(start, text[start:end].splitlines()) for start, end in sorted(spans)]


def _lines_with(text: str, *literals: str) -> list[str]:
    """The lines holding one of the literals, in order (the same lines ``splitlines`` gives)."""
    return [
        line
        for _start, lines in _segments(text, literals)
        for line in lines
        if any(x in line for x in literals)
    ]


def _read_llamacpp(text: str) -> LogModel | None:
    meta = _gguf_lines(_lines_with(text, "llama_model_loader: "))
    printed = _print_lines(
        _lines_with(text, "print_info", "llm_load_print_meta", "llama_model_load_internal")
    )
    ollama = next((m for m in map(_OLLAMA.search, _lines_with(text, 'msg="" architecture=')) if m), None)
    kv = _kv_settings(_lines_with(text, "kv_size = ", "KV self size", "llama_kv_cache"))
    if not meta and not printed and not ollama and not kv:
        return None
    engine = "ollama" if ollama or "ollama" in text[:200_000].lower() else "llama.cpp"
    arch = _meta_from_print(printed, meta) or (ollama.group(1) if ollama else None)
    name = meta.get("general.name") or printed.get("general.name") or (ollama.group(3) if ollama else None)
    file_type = _file_type(printed, meta, ollama.group(2) if ollama else None)
    notes: list[str] = []
    settings: dict[str, Any] = dict(kv)
    if file_type:
        settings["file_type"] = file_type
    size = _SIZE.search(printed.get("file size") or printed.get("model size") or "")
    if size:
        unit = GIB if size.group(2) == "GiB" else 1024**2
        settings["file_size_bytes"] = int(float(size.group(1)) * unit)
        settings["bits_per_weight"] = float(size.group(3))
    label = str(name or arch)  # the spec needs an id even when the log prints no model name
    spec = _spec(meta, label, _lines_with(text, "load_tensors: layer"), notes) if arch else None
    variant = _variant(label, file_type, settings.get("file_size_bytes")) if spec else None
    return LogModel(engine, str(name) if name else None, spec, variant, settings, tuple(notes))


def _variant(name: str, file_type: str | None, size: int | None) -> Variant | None:
    """The weights as the log prints them: its file size, else the quant's catalogued bits per weight."""
    from calculator.catalog import Variant, quant_formats

    if size:
        source = "the pasted load log (file size as printed, to 0.01 GiB)"
        return Variant(
            id=name, quant="gguf", gguf_type=file_type or "unknown", size_bytes=size, source=source
        )
    known = {q.name: q for q in quant_formats().weight_formats if q.engine == "gguf"}
    fmt = known.get(file_type or "")
    bpw = fmt.effective_bpw or fmt.block_bpw if fmt else None
    if fmt is None or not file_type or not bpw:
        return None
    return Variant(id=name, quant="gguf", gguf_type=file_type, bits_per_weight=bpw, source=fmt.source)


def _spec(meta: dict[str, Any], name: str, lines: list[str], notes: list[str]) -> ModelSpec | None:
    from calculator.from_config import ConfigError, spec_from_gguf_meta

    arch = meta["general.architecture"]
    window = meta.get(f"{arch}.attention.sliding_window")
    if window == 0:
        meta.pop(f"{arch}.attention.sliding_window")
    elif window:
        pattern = _swa_pattern(lines, meta.get(f"{arch}.block_count"))
        if pattern is not None:
            meta[f"{arch}.attention.sliding_window_pattern"] = pattern
        elif not isinstance(meta.get(f"{arch}.attention.sliding_window_pattern"), list):
            notes.append(
                f"the log gives a {window}-token sliding window but not which layers use it; "
                "every layer is counted as full attention (an upper bound)"
            )
    kv_heads = meta.get(f"{arch}.attention.head_count_kv")
    if meta.get(f"{arch}.ssm.state_size") and not isinstance(kv_heads, list):
        notes.append(
            "the model has recurrent (SSM / linear-attention) layers but the log does not say which; "
            "every layer is counted as attention (an upper bound)"
        )
    try:
        spec = spec_from_gguf_meta(meta, name, "the pasted load log")
    except (ConfigError, ValueError, TypeError):
        return None
    return replace(spec, family="log")


# --- vLLM ---------------------------------------------------------------------------------------


def _value(raw: str) -> Any:
    raw = raw.strip()
    if raw.startswith("'") and raw.endswith("'") and len(raw) >= 2:
        return raw[1:-1]
    if raw in ("True", "False"):
        return raw == "True"
    if raw == "None":
        return None
    for cast in (int, float):
        try:
            return cast(raw)
        except ValueError:
            pass
    return raw.removeprefix("torch.")


def _pairs(pattern: Any, body: str) -> dict[str, Any]:
    found: dict[str, Any] = {}
    for m in pattern.finditer(body):
        key = m.group(1)
        if key in _VLLM_SETTINGS and key not in found:
            found[key] = _value(m.group(2))
    return found


def _model_id(path: str) -> str:
    """A Hugging Face cache path names its repo (``.../models--org--name/snapshots/<sha>``)."""
    m = _HF_CACHE.search(path)
    return f"{m.group(1)}/{m.group(2)}" if m else path


def _following(text: str, start: int, index: int) -> list[str]:
    """The lines from ``start`` on, as many as a config dump at line ``index`` of them reads."""
    end = start
    for _ in range(index + CONFIG_LINES + 1):
        end = text.find("\n", end) + 1
        if end == 0:
            end = len(text)
            break
    return text[start:end].splitlines()


CONFIG_LINES = 40  # a hard-wrapped config dump is read over at most this many lines


def _config_text(lines: list[str], start: int, first: str) -> str:
    """The config dump, rejoined when a terminal or issue form hard-wrapped it mid-word."""
    parts = [first]
    size = len(first)
    for line in lines[start + 1 : start + CONFIG_LINES]:
        if _NEW_RECORD.search(line) or size > 16_000:
            break
        parts.append(line)
        size += len(line)
    return "".join(parts)


def _read_vllm(text: str) -> LogModel | None:
    settings: dict[str, Any] = {}
    # only the lines holding a literal one of the three patterns needs
    for start, lines in _segments(text, ("non-default args: {", "with config: ", "LLM engine (v")):
        for j, line in enumerate(lines):
            args = _VLLM_ARGS.search(line)
            if args:
                for key, value in _pairs(_ARG_PAIR, args.group(1)).items():
                    settings.setdefault(key, value)
            config = _VLLM_CONFIG.search(line)
            if config and "max_seq_len" not in settings:
                dump = _pairs(_VLLM_PAIR, _config_text(_following(text, start, j), j, config.group(1)))
                settings.update({k: v for k, v in dump.items() if k not in settings})
            version = _VLLM_VERSION.search(line)
            if version:
                settings.setdefault("engine_version", version.group(1))
    model = settings.get("model")
    if not isinstance(model, str) or not model:
        return None
    return LogModel("vllm", _model_id(model), settings=settings)


# --- vLLM's speculative config ------------------------------------------------------------------
# where a paste shows it: the ``non-default args`` dict ('speculative_config': {'method': 'mtp',
# 'num_speculative_tokens': 3}), the engine config dump (speculative_config=SpeculativeConfig(
# method='dflash', model='...', num_spec_tokens=5), vllm config/speculative.py __repr__) and the command
# line (--speculative-config '{"method": "mtp", "num_speculative_tokens": 3}')
_SPEC_DICT = LazyPattern(r"""['"]?speculative[_-]config['"]?\s*[:=]?\s*'?(\{[^{}]*\})""")
_SPEC_REPR = LazyPattern(r"speculative_config=SpeculativeConfig\(([^()]*)\)")
_SPEC_PAIR = LazyPattern(r"""['"]?([a-z_]+)['"]?\s*[:=]\s*('[^']*'|"[^"]*"|[^,}\s)]+)""")
_SPEC_TOKENS = ("num_speculative_tokens", "num_spec_tokens")


def speculative_config(text: str) -> SpecDecode | None:
    """The speculative config the paste shows, or None (none shown, or shown without its number of
    draft tokens: a line cut before it says nothing exact)."""
    if not isinstance(text, str) or "peculative" not in text:
        return None
    for line in _lines_with(text, "speculative_config", "speculative-config"):
        for pattern in (_SPEC_REPR, _SPEC_DICT):
            m = pattern.search(line)
            found = _spec_decode(m.group(1)) if m else None
            if found is not None:
                return found
    return None


_SPEC_OPEN = LazyPattern(r"""speculative_config['"]?:\s*\{[^}]*$|SpeculativeConfig\([^)]*$""")


def speculative_cut(text: str) -> bool:
    """vLLM's args or config dump show a speculative config but end inside it, or inside its key (a
    long line cut by a chat or an issue form: ``... 'enable_chunked_prefill': True, 'specula``); only
    the speculative settings start with ``specu``, and the args list only what was set."""
    if not isinstance(text, str) or not ("non-default args" in text or "SpeculativeConfig(" in text):
        return False
    for line in _lines_with(text, "non-default args", "SpeculativeConfig("):
        tail = line.rstrip()
        key = tail[tail.rfind("'") + 1 :]
        if (len(key) >= 5 and "speculative_config".startswith(key)) or _SPEC_OPEN.search(tail):
            return True
    return False


def _spec_decode(body: str) -> SpecDecode | None:
    from calculator.spec_decode import SpecDecode

    pairs = {m.group(1): m.group(2).strip("'\"") for m in _SPEC_PAIR.finditer(body)}
    raw = next((pairs[k] for k in _SPEC_TOKENS if k in pairs), None)
    if raw is None or not raw.isdigit() or not 0 < int(raw) <= 64:
        return None
    method = pairs.get("method")
    model = pairs.get("model")
    return SpecDecode(
        method if method and method != "None" else None,
        int(raw),
        model if model and model != "None" else None,
    )
