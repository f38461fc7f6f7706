"""Sizes, counts and versions written the way the replies print them."""

from __future__ import annotations

import math
import re

from calculator.units import GIB, KIB, MIB


def fmt_gib(x: float) -> str:
    """``1,234.56 GiB``."""
    return f"{x:,.2f} GiB"


def fmt_mib(x: float) -> str:
    """MiB with two decimals below 100, whole MiB above."""
    return f"{x:,.2f} MiB" if x < 100 else f"{x:,.0f} MiB"


def fmt_size(gib: float) -> str:
    """A size for prose: MiB below 1 GiB, GiB above."""
    if gib <= 0:
        return "0 bytes"
    n = gib * GIB
    if n < KIB:
        return f"{n:,.0f} bytes"
    if n < MIB:
        return f"{n / KIB:,.2f} KiB"
    return fmt_mib(gib * 1024) if gib < 1 else fmt_gib(gib)


def ceil2(x: float) -> float:
    """Round up to two decimals (a utilization or fraction that must be enough)."""
    return math.ceil(x * 100 - 1e-6) / 100


def floor2(x: float) -> float:
    """Round down to two decimals (a utilization or fraction that must stay below)."""
    return math.floor(x * 100 + 1e-6) / 100


def fmt_number(x: float, digits: int = 2) -> str:
    """A number with thousands separators and at most ``digits`` decimals, trailing zeros dropped."""
    return f"{x:,.{digits}f}".rstrip("0").rstrip(".") if digits else f"{x:,.0f}"


def fmt_gib_or_mib(x: float) -> str:
    """A memory size in GiB with two decimals (MiB below 0.1 GiB)."""
    if abs(x) < 0.1:
        return f"{x * 1024:,.0f} MiB"
    return f"{x:,.2f} GiB"


def fmt_mib_or_gib(x: float) -> str:
    """A size the log printed in MiB: MiB below 1 GiB, like the log, else GiB."""
    return f"{x:,.1f} MiB".replace(".0 MiB", " MiB") if x < 1024 else f"{x / 1024:,.2f} GiB"


def article(n: float) -> str:
    """The article for a number as it is read aloud: 'an 8,312-token', 'a 2,048-token'."""
    lead = f"{int(n):,}".split(",")[0]
    return "an" if lead.startswith("8") or lead in ("11", "18") else "a"


def round_up_ctx(n: int) -> int:
    """The smallest context a person would type that holds ``n`` tokens: a power of two up to 8192,
    then a multiple of 4096."""
    n = max(int(n), 1)
    if n <= 512:
        return 512
    if n <= 8192:
        return 1 << (n - 1).bit_length()
    return -(-n // 4096) * 4096


def pow2_floor(n: float) -> int:
    """The largest power of two at most ``n`` (0 below 1)."""
    n = int(n)
    return 0 if n < 1 else 1 << (n.bit_length() - 1)


BYTES_UNITS = {
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


def size_to_bytes(value: str) -> int | None:
    """A size as Ollama reads an environment variable (``8G``, ``1.5GiB``, ``512mb``) in bytes; None if not one."""
    m = re.fullmatch(r"\s*([0-9]+(?:\.[0-9]+)?)\s*([A-Za-z]*)\s*", value)
    if not m or m.group(2).lower() not in BYTES_UNITS:
        return None
    return int(float(m.group(1)) * BYTES_UNITS[m.group(2).lower()])


def fmt_version(version: tuple[int, int, int]) -> str:
    """``(0, 10, 1)`` -> ``0.10.1``."""
    return ".".join(str(x) for x in version)


def fmt_plain(x: float) -> str:
    """0.9 -> '0.9', 19.84 -> '19.84', 4.0 -> '4'."""
    return f"{x:.2f}".rstrip("0").rstrip(".")


def fmt_cc(x: float) -> str:
    """Compute capability as NVIDIA writes it: 7.0, 8.6."""
    return f"{x:.1f}"
