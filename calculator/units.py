"""Byte units and the rounding helpers used when talking to people."""

from __future__ import annotations

import math

GIB = 1 << 30
MIB = 1 << 20
KIB = 1 << 10
GB = 1_000_000_000


def gib(n_bytes: float) -> float:
    return n_bytes / GIB


def to_bytes(value: float, unit: str) -> float:
    """Convert a value printed by an engine (``GiB``, ``GB``, ``MiB``, ``MB``, ``KiB``, ``B``) to bytes.

    Engines are loose with labels: vLLM prints ``GB`` for what it computed in GiB, Ollama and SGLang
    likewise.  Callers that know an engine's habit pass the unit it *means*.
    """
    u = unit.strip().lower()
    table = {
        "b": 1,
        "bytes": 1,
        "kib": KIB,
        "kb": 1000,
        "mib": MIB,
        "mb": 1_000_000,
        "gib": GIB,
        "gb": GB,
        "tib": 1 << 40,
        "tb": 10**12,
        "g": GIB,
        "m": MIB,
        "k": KIB,
    }
    if u not in table:
        raise ValueError(f"unknown unit {unit!r}")
    return value * table[u]


def round_down_clean(tokens: int) -> int:
    """Round a token count down to a number a person would type.

    Powers of two when close (within ~12%), otherwise the largest multiple of 1024 (or 256 below 4096).
    """
    if tokens <= 0:
        return 0
    if tokens < 256:
        return tokens
    p2 = 1 << (int(tokens).bit_length() - 1)
    if tokens - p2 <= p2 // 8:
        return p2
    step = 1024 if tokens >= 4096 else 256
    return max(step, (tokens // step) * step)


def round_up_clean(tokens: int) -> int:
    """Round a token count up to a multiple of 1024 (of 256 up to 4096), as a person would type it."""
    step = 1024 if tokens > 4096 else 256
    return (tokens + step - 1) // step * step


def fmt_tokens(n: int | float | None) -> str:
    """``131,072``; a number the paste did not give (or gave absurdly, so it was dropped) reads ``?``."""
    if n is None or (isinstance(n, float) and not math.isfinite(n)):
        return "?"
    return f"{int(n):,}"


def fmt_mem(gib_value: float) -> str:
    """A memory size as PyTorch prints it: MiB below 1 GiB (``50.00 MiB``), GiB from there (``4.66 GiB``)."""
    return f"{gib_value * 1024:.2f} MiB" if abs(gib_value) < 1 else f"{gib_value:.2f} GiB"


def fmt_gib(x: float, digits: int = 2) -> str:
    if not math.isfinite(x):
        return "?"
    return f"{x:.{digits}f} GiB"
