"""Take a model name apart the way people type it: ``TheBloke/zephyr-7B-beta-AWQ``,
``Qwen2.5-7B-Instruct-Q4_K_M.gguf``, ``model-00001-of-00003.gguf``, ``gpt-oss:20b``.

Pure string work (RE2, linear time): what is left is the base model name; the quantization found is
returned next to it, so the resolver can pair the base geometry with that quant's weight size.
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import cache

from calculator.catalog import quant_formats
from calculator.lazy_re import LazyPattern

# Organisations that republish other vendors' checkpoints (quantized or reformatted).
THIRD_PARTY_ORGS = frozenset(
    {
        "thebloke",
        "unsloth",
        "bartowski",
        "lmstudio-community",
        "redhatai",
        "nm-testing",
        "neuralmagic",
        "hugging-quants",
        "mlx-community",
        "second-state",
        "quantfactory",
        "mradermacher",
        "casperhansen",
        "ggml-org",
        "mistral-community",
    }
)

# Repo-name suffixes -> catalog quant name. Longest first, matched at the end of the name.
# Intel's AutoRound int4 exports pack GPTQ's layout: quantization_config.json "bits": 4, "group_size": 128,
# "packing_format": "auto_round:auto_gptq" (huggingface.co/Intel/gemma-4-31B-it-int4-AutoRound,
# Intel/Seed-OSS-36B-Instruct-int4-AutoRound, INC4AI/MiniMax-M2.1-int4-AutoRound), so they weigh as gptq.
_QUANT_SUFFIXES: tuple[tuple[str, str], ...] = (
    ("int4-autoround", "gptq"),
    ("autoround-int4", "gptq"),
    ("int4-auto-round", "gptq"),
    ("autoround", "gptq"),
    ("unsloth-bnb-4bit", "bnb-4bit"),
    ("bnb-4bit", "bnb-4bit"),
    ("bnb-nf4", "bnb-4bit"),
    ("awq-int4", "awq"),
    ("int4-awq", "awq"),
    ("awq-4bit", "awq"),
    ("awq", "awq"),
    ("gptq-int4", "gptq"),
    ("gptq-4bit", "gptq"),
    ("4bit-gptq", "gptq"),
    ("gptq-int8", "gptq-int8"),
    ("gptq-8bit", "gptq-int8"),
    ("gptq", "gptq"),
    ("quantized.w4a16", "gptq"),
    ("quantized.w8a16", "gptq-int8"),
    ("quantized.w8a8", "fp8"),
    ("w4a16", "gptq"),
    ("w8a16", "gptq-int8"),
    ("int4", "gptq"),
    ("int8", "gptq-int8"),
    ("fp8-dynamic", "fp8"),
    ("fp8-static", "fp8"),
    ("fp8-block", "fp8"),
    ("fp8", "fp8"),
    ("nvfp4", "nvfp4"),
    ("fp4", "nvfp4"),
    ("mxfp4", "mxfp4"),
    ("bf16", "bf16"),
    ("fp16", "fp16"),
)

# gguf-split shards (``-00001-of-00003``), also with LM Studio's ``-split`` word before the numbers
_SHARD = LazyPattern(r"(?i)(?:[-_.]split)?[-_.]?0*\d+-of-0*\d+$")


# Spellings of one name that file and repo names use: ``qwen1_5-1_8b`` is Qwen1.5-1.8B (an underscore
# where a dot cannot go in a file name), ``Qwen2___5-VL-72B`` is Qwen2.5-VL-72B (ModelScope's download
# directories write a dot as three underscores), ``Meta-Llama-3.3-70B`` is Llama-3.3-70B (Meta's name before
# the 3.1 release dropped it). Tried only after the name as typed matched nothing.
_MODELSCOPE_DOT = LazyPattern(r"([0-9])___([0-9])")
_DIGIT_UNDERSCORE = LazyPattern(r"([0-9])_([0-9])")
_META_PREFIX = LazyPattern(r"(?i)^meta[-_ ](llama)")
_SPELLINGS = ((_MODELSCOPE_DOT, r"\1.\2"), (_DIGIT_UNDERSCORE, r"\1.\2"), (_META_PREFIX, r"\1"))


def spellings(base: str) -> list[str]:
    """``base`` and the other spellings of it (see above), without repeats, ``base`` first."""
    out = [base]
    for pattern, repl in _SPELLINGS:
        out += [pattern.sub(repl, name) for name in out]
    return list(dict.fromkeys(out))


@dataclass(frozen=True)
class ParsedName:
    """``base``: the model name with organisation, file extension and quant tokens removed."""

    original: str
    org: str
    base: str
    quant: str | None = None  # catalog quant name ("awq", "gguf", ...)
    gguf_type: str | None = None  # "Q4_K_M" for GGUF files and tags
    ollama_tag: str | None = None  # "20b" in "gpt-oss:20b"
    ollama: bool = False  # typed as an Ollama name ("glm-4.7-flash:latest" has no size tag but is one)

    @property
    def third_party(self) -> bool:
        return self.org.lower() in THIRD_PARTY_ORGS

    @property
    def typed_name(self) -> str:
        """The name as typed without host, folders or organisation: ``/data/Qwen/Qwen3-8B-AWQ/`` -> ``Qwen3-8B-AWQ``."""
        name = self.original.strip().strip("`'\"").replace("\\", "/")
        return name.split("?", 1)[0].rstrip("/").rsplit("/", 1)[-1]


@cache
def gguf_types() -> tuple[str, ...]:
    """GGUF file types llama.cpp names, longest first (``Q4_K_M`` before ``Q4_K``)."""
    names = [f.name for f in quant_formats().weight_formats if f.engine == "gguf"]
    return tuple(sorted(names, key=len, reverse=True))


def _strip_gguf_type(stem: str) -> tuple[str, str | None]:
    """``Qwen2.5-7B-Instruct-Q4_K_M`` -> (``Qwen2.5-7B-Instruct``, ``Q4_K_M``); unsloth ``UD-`` too."""
    low = stem.lower()
    for t in gguf_types():
        tl = t.lower()
        for sep in ("-", ".", "_", " "):
            if low.endswith(sep + tl):
                base = stem[: -(len(tl) + 1)].rstrip()
                if base.lower().endswith(("-ud", ".ud", "_ud")):
                    base = base[:-3]
                return base, t
    return stem, None


# A llama.cpp-style type name the table does not hold, at the end of a .gguf file name: Unsloth's per-tensor
# mixes ("Qwen3.5-35B-A3B-UD-Q6_K_XL.gguf"). Read so the model is still named; no size is known for it.
_OTHER_GGUF_TYPE = LazyPattern(r"(?i)^(.+?)[-._](?:ud[-._])?(i?q[0-9](?:_[a-z0-9]+)+)$")
# llama.cpp's -hf cache names a download "{org}_{repo}_{file}":
# ~/.cache/llama.cpp/unsloth_Qwen3-Coder-Next-GGUF_Qwen3-Coder-Next-UD-Q4_K_XL.gguf
_HF_CACHE_PREFIX = LazyPattern(r"(?i)^.*-gguf_")
_WHOLE_OTHER_GGUF_TYPE = LazyPattern(r"(?i)^(?:ud[-._])?(i?q[0-9](?:_[a-z0-9]+)+)$")


def _strip_other_gguf_type(stem: str) -> tuple[str, str | None]:
    m = _OTHER_GGUF_TYPE.match(stem)
    return (m.group(1), m.group(2).upper()) if m else (stem, None)


def _strip_quant_suffix(name: str) -> tuple[str, str | None]:
    low = name.lower()
    for suffix, quant in _QUANT_SUFFIXES:
        for sep in ("-", "_", "."):
            if low.endswith(sep + suffix):
                return name[: -(len(suffix) + 1)], quant
    return name, None


def parse_name(query: str) -> ParsedName:
    """Split ``query`` into organisation, base name and quantization (nothing is looked up here)."""
    # a Windows path ("F:\\AI\\models\\gemma-3-12b-it-Q4_K_M.gguf") splits like a POSIX one
    q = query.strip().strip("`'\"").replace("\\", "/")
    for prefix in ("https://huggingface.co/", "http://huggingface.co/", "huggingface.co/", "hf.co/"):
        if q.lower().startswith(prefix):
            q = q[len(prefix) :]
    q = q.split("?", 1)[0].rstrip("/")
    org, _, name = q.rpartition("/") if "/" in q else ("", "", q)
    if "/" in org:  # a path: keep the first component after the host as org only when it is a repo id
        org = org.rsplit("/", 1)[1]
    gguf_type = None
    quant = None
    tag = None
    if name.lower().endswith(".gguf"):
        stem = _HF_CACHE_PREFIX.sub("", _SHARD.sub("", name[: -len(".gguf")]))
        stem, gguf_type = _strip_gguf_type(stem)
        if gguf_type is None:
            stem, gguf_type = _strip_other_gguf_type(stem)
        return ParsedName(query, org, stem, "gguf", gguf_type)
    ollama = ":" in name
    if ollama:
        name, _, tag = name.partition(":")
        tag, gguf_type = _strip_gguf_type(tag)
        # the whole tag is the file type: Ollama's Hugging Face pulls ("hf.co/bartowski/X-GGUF:Q4_K_M")
        whole = next((t for t in gguf_types() if t.lower() == tag.lower()), None)
        other = _WHOLE_OTHER_GGUF_TYPE.match(tag)
        if gguf_type is None and (whole or other):
            tag, gguf_type = "", whole or (other.group(1).upper() if other else None)
        if gguf_type is None:
            # Ollama's safetensors-format builds name their quant in the tag ("qwen3.6:27b-nvfp4", "...-fp16")
            tag, quant = _strip_quant_suffix(tag)
        tag = tag.lower().removesuffix("latest").strip("-") or None
    if gguf_type is None:
        name, gguf_type = _strip_gguf_type(name)
    if name.lower().endswith("-gguf"):
        name = name[: -len("-gguf")]
        quant = "gguf"
    if gguf_type:
        quant = "gguf"
    while True:
        stripped, found = _strip_quant_suffix(name)
        if found is None:
            break
        name, quant = stripped, quant or found
    return ParsedName(query, org, name, quant, gguf_type, tag, ollama)


def model_key(name: str) -> str:
    """Lower-case, separators dropped, except between two digits where they are kept as ``.``/``-``:
    ``Llama-3.1-8B`` -> ``llama3.1-8b``, so ``opt-1.3b`` and ``opt-13b`` stay apart."""
    out: list[str] = []
    pending = ""
    for ch in name.lower():
        if ch.isalnum():
            if pending and out and out[-1].isdigit() and ch.isdigit():
                out.append("." if pending == "." else "-")
            pending = ""
            out.append(ch)
        elif ch == "." and not pending:
            pending = "."
        elif not pending:
            pending = "-"
    return "".join(out)


_NUMBER = LazyPattern(r"[0-9]+(?:\.[0-9]+)?(?:x[0-9]+)?[bmke]?")


def key_numbers(key: str) -> list[str]:
    """Numbers in a key with their unit (``3.1``, ``8b``, ``8x7b``): a match may not change any of them."""
    return _NUMBER.findall(key)


__all__ = [
    "THIRD_PARTY_ORGS",
    "ParsedName",
    "gguf_types",
    "key_numbers",
    "model_key",
    "parse_name",
    "spellings",
]
