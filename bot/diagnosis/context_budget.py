"""What a longer context costs and how much room a reply needs: shared by the context_exceeded rules."""

from __future__ import annotations

from bot.diagnosis.gguf import kv_gguf_gib
from bot.diagnosis.numbers import fmt_gib_or_mib
from calculator.resolve import ModelMatch
from calculator.units import fmt_tokens

REPLY_ROOM = 1024  # tokens left for the answer when only the prompt length is known


def kv_line(
    match: ModelMatch | None, tokens: int, ctk: str = "f16", ctv: str = "f16"
) -> tuple[str, float] | None:
    """A line for a fix: the KV cache ``tokens`` tokens take for the model (and that size in GiB)."""
    if match is None:
        return None
    kv = kv_gguf_gib(match.model, tokens, ctk, ctv)
    return (
        f"KV cache for {fmt_tokens(tokens)} tokens: {fmt_gib_or_mib(kv)} ({match.model.id}, {ctk}/{ctv})",
        kv,
    )
