"""NVIDIA GPU generations by compute capability, and example cards of each from the catalog."""

from __future__ import annotations

from calculator.catalog import GPU, gpus

BF16_MIN_CC = 8.0  # bfloat16 needs Ampere or newer

_ARCH = [
    (12.0, "Blackwell (RTX 50xx / RTX PRO)"),
    (10.0, "Blackwell"),
    (9.0, "Hopper"),
    (8.9, "Ada Lovelace"),
    (8.0, "Ampere"),
    (7.5, "Turing"),
    (7.0, "Volta"),
    (6.0, "Pascal"),
    (5.0, "Maxwell"),
    (0.0, "Kepler or older"),
]


def arch_name(cc: float) -> str:
    """The NVIDIA generation of a compute capability."""
    return next(name for lo, name in _ARCH if cc >= lo - 1e-9)


# a spread of common cards, cheapest generations first; names and capabilities come from the catalog
_EXAMPLE_GPUS = ["t4", "v100-32gb", "a10g", "l4", "rtx-3090", "rtx-4090", "a100-80gb", "l40s", "h100-sxm"]


def example_cards(min_cc: float, max_cc: float | None = None, limit: int = 4) -> list[GPU]:
    """Common catalog cards with a capability in [min_cc, max_cc), cheapest generations first."""
    by_id = {g.id: g for g in gpus()}
    out = []
    for gid in _EXAMPLE_GPUS:
        g = by_id.get(gid)
        if g is None or g.cc is None or g.cc < min_cc - 1e-9:
            continue
        if max_cc is not None and g.cc >= max_cc - 1e-9:
            continue
        out.append(g)
    return out[:limit]


def card_list(cards: list[GPU]) -> str:
    """``T4 (7.5), L4 (8.9)``: cards for a sentence."""
    return ", ".join(f"{g.name.removeprefix('NVIDIA ')} ({g.compute_capability})" for g in cards)
