"""Bytes of a pasted or attached log as text: UTF-8, or UTF-16 / UTF-32 as PowerShell writes logs
(``Out-File`` and ``>`` wrote UTF-16 LE with a BOM up to PowerShell 5.1; tools piped through it may
drop the BOM).  The platforms and the CLI decode attachments the same way."""

from __future__ import annotations

import codecs

_BOMS = (
    (codecs.BOM_UTF32_LE, "utf-32-le"),  # before UTF-16 LE: it starts with the same two bytes
    (codecs.BOM_UTF32_BE, "utf-32-be"),
    (codecs.BOM_UTF8, "utf-8"),
    (codecs.BOM_UTF16_LE, "utf-16-le"),
    (codecs.BOM_UTF16_BE, "utf-16-be"),
)
SNIFF = 4096  # bytes looked at to tell UTF-16 from binary
UTF16_NUL_SHARE = 0.3  # ASCII text in UTF-16 has a NUL in every other byte; binary files rarely do


def needs_sniffing(data: bytes) -> bool:
    """Whether the bytes start with a byte-order mark or hold a NUL (else they are read as UTF-8)."""
    return (
        data.startswith((codecs.BOM_UTF8, codecs.BOM_UTF16_LE, codecs.BOM_UTF16_BE))
        or b"\x00" in data[:SNIFF]
    )


def decode_text(data: bytes) -> str | None:
    """The text, or None when the bytes are not text (NULs that are not UTF-16's)."""
    for bom, codec in _BOMS:
        if data.startswith(bom):
            return data[len(bom) :].decode(codec, errors="replace")
    if b"\x00" not in data[:SNIFF]:
        return data.decode("utf-8", errors="replace")
    head = data[: SNIFF - SNIFF % 2]
    even, odd = head[0::2], head[1::2]
    half = max(1, len(head) // 2)
    even_nul, odd_nul = even.count(0) / half, odd.count(0) / half
    if odd_nul >= UTF16_NUL_SHARE and even_nul < UTF16_NUL_SHARE / 3:
        return data[: len(data) - len(data) % 2].decode("utf-16-le", errors="replace")
    if even_nul >= UTF16_NUL_SHARE and odd_nul < UTF16_NUL_SHARE / 3:
        return data[: len(data) - len(data) % 2].decode("utf-16-be", errors="replace")
    return None
