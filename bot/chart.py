"""A PNG picture of a reply's memory breakdown, for platforms that show images.

A stacked bar scaled to the card's total, each segment in its own colour with its GiB written on it when
there is room, the engine's target (utilization x total) as a marker on the bar, and a legend that names
every segment with its size and where the number comes from.  Pillow only, with its bundled font."""

from __future__ import annotations

import io
from dataclasses import dataclass

from bot.formatter import MEMORY_KINDS, SOURCE_LABEL, target_of
from bot.reply import MemoryPicture

RGB = tuple[int, int, int]

# One colour per kind of memory (bot.formatter.MEMORY_KINDS, by its bar symbol): its labels share it.
_KIND_COLOUR: dict[str, RGB] = {
    "W": (66, 133, 244),
    "A": (251, 188, 4),
    "N": (171, 71, 188),
    "G": (234, 67, 53),
    "o": (0, 172, 193),
    "K": (52, 168, 83),
    "C": (255, 112, 67),
    "X": (121, 85, 72),
    "H": (55, 71, 79),  # memory another process holds: dark, it is often the cause
    "-": (188, 170, 164),  # left out on purpose by the utilization
    ".": (230, 230, 230),
}
COLOURS: dict[str, RGB] = {label: _KIND_COLOUR[s] for s, labels in MEMORY_KINDS.items() for label in labels}
# For labels the table does not know, or a second label that would repeat a colour in one picture.
SPARE: tuple[RGB, ...] = ((233, 30, 99), (0, 150, 136), (205, 220, 57), (63, 81, 181),
                          (255, 152, 0), (139, 195, 74), (96, 125, 139), (156, 39, 176))  # fmt: skip
MARKER: RGB = (0, 0, 0)
CARD_END: RGB = (198, 40, 40)  # where the card ends, when the segments ask for more than it has
WIDTH, BAR_H, PAD, ROW = 720, 56, 20, 22
GAP_MIN_GIB = 0.05  # below this a blank end of the bar is rounding, not a missing term
TICK = 8  # how far the target marker reaches above and below the bar
BAR_TOP = PAD + 28 + ROW  # the title, then a row for the target's label
LEGEND_TOP = BAR_TOP + BAR_H + TICK + PAD


@dataclass(frozen=True)
class Layout:
    top: int  # the bar's upper edge
    left: int
    inner: int  # the bar's width in pixels
    scale: float  # GiB the bar's full width stands for

    def x(self, gib: float) -> float:
        return self.left + max(0.0, gib) / self.scale * self.inner


def palette(labels: list[str]) -> dict[str, RGB]:
    """A colour per label, never the same colour for two labels of one picture."""
    out: dict[str, RGB] = {}
    taken: set[RGB] = set()
    spare = iter(c for c in SPARE if c not in COLOURS.values())
    for label in dict.fromkeys(labels):
        colour = COLOURS.get(label)
        if colour is None or colour in taken:
            colour = next(spare, None) or _fallback(len(out))
        out[label] = colour
        taken.add(colour)
    return out


def _fallback(i: int) -> RGB:
    return ((37 * i + 90) % 256, (91 * i + 40) % 256, (53 * i + 160) % 256)


def layout(picture: MemoryPicture) -> Layout:
    used = sum(max(0.0, s.gib) for s in picture.segments)
    scale = max(picture.total_gib, used, target_of(picture) or 0.0, 1e-9)
    return Layout(BAR_TOP, PAD, WIDTH - 2 * PAD, scale)


def unaccounted(picture: MemoryPicture) -> float:
    """GiB of the card the segments leave out (drawn blank at the bar's end), when it is worth a row."""
    gap = picture.total_gib - sum(max(0.0, s.gib) for s in picture.segments)
    return gap if gap > GAP_MIN_GIB else 0.0


def _ink(colour: RGB) -> str:
    r, g, b = colour
    return "black" if 0.299 * r + 0.587 * g + 0.114 * b > 140 else "white"


def memory_png(picture: MemoryPicture) -> bytes:
    from PIL import Image, ImageDraw, ImageFont

    font = ImageFont.load_default(size=15)
    small = ImageFont.load_default(size=13)
    colours = palette([s.label for s in picture.segments])
    target = target_of(picture)
    legend_rows = len(picture.segments) + bool(target) + bool(unaccounted(picture))
    height = LEGEND_TOP + legend_rows * ROW + PAD
    img = Image.new("RGB", (WIDTH, height), "white")
    draw = ImageDraw.Draw(img)
    draw.text((PAD, PAD), f"{picture.title}: {picture.total_gib:.2f} GiB total", fill="black", font=font)
    geo = layout(picture)
    _bar(draw, picture, geo, colours, small)
    if target:
        _target(draw, target, picture.total_gib, geo, small)
    if 0 < picture.total_gib < geo.scale - 0.005:
        _card_end(draw, picture.total_gib, geo, small)
    _legend(draw, picture, colours, LEGEND_TOP, font)
    buf = io.BytesIO()
    img.save(buf, format="PNG", optimize=True)
    return buf.getvalue()


def _bar(draw, picture: MemoryPicture, geo: Layout, colours: dict[str, RGB], font) -> None:
    bottom = geo.top + BAR_H
    start = 0.0
    for seg in picture.segments:
        x0, x1 = geo.x(start), geo.x(start + seg.gib)
        start += max(0.0, seg.gib)
        if x1 - x0 < 0.5:
            continue
        colour = colours[seg.label]
        draw.rectangle([x0, geo.top, x1, bottom], fill=colour, outline="white")
        labels = (f"{seg.gib:.1f} GiB", f"{seg.gib:.1f}")
        text = next((t for t in labels if draw.textlength(t, font=font) + 6 < x1 - x0), "")
        if text:
            draw.text(((x0 + x1) / 2, geo.top + BAR_H / 2), text, fill=_ink(colour), font=font, anchor="mm")
    draw.rectangle([geo.left, geo.top, geo.left + geo.inner, bottom], outline="black")


def _target(draw, target: float, total: float, geo: Layout, font) -> None:
    x = round(geo.x(target))
    ends = [(x, geo.top - TICK), (x, geo.top + BAR_H + TICK)]
    draw.line(ends, fill="white", width=7)  # a halo: the marker shows on dark segments too
    draw.line(ends, fill=MARKER, width=3)
    share = f" = {target / total:.2f} x total" if total else ""
    text = f"engine target {target:.2f} GiB{share}"
    width = draw.textlength(text, font=font)
    left = min(max(geo.left, x - width / 2), geo.left + geo.inner - width)
    draw.text((left, geo.top - TICK - 16), text, fill="black", font=font)


def _card_end(draw, total: float, geo: Layout, font) -> None:
    x = round(geo.x(total))
    bottom = geo.top + BAR_H
    draw.line([(x, geo.top), (x, bottom + TICK)], fill=CARD_END, width=3)
    text = f"the card ends here: {total:.2f} GiB; {geo.scale - total:.2f} GiB over"
    left = max(geo.left, x - draw.textlength(text, font=font) - 4)
    draw.text((left, bottom + 3), text, fill=CARD_END, font=font)


def _legend(draw, picture: MemoryPicture, colours: dict[str, RGB], y: int, font) -> None:
    for seg in picture.segments:
        draw.rectangle([PAD, y + 3, PAD + 14, y + 17], fill=colours[seg.label], outline="black")
        source = SOURCE_LABEL.get(seg.source, seg.source)
        draw.text((PAD + 22, y), f"{seg.label}: {seg.gib:.2f} GiB ({source})", fill="black", font=font)
        y += ROW
    if gap := unaccounted(picture):
        draw.rectangle([PAD, y + 3, PAD + 14, y + 17], fill="white", outline="black")
        draw.text((PAD + 22, y), f"not in the breakdown: {gap:.2f} GiB", fill="black", font=font)
        y += ROW
    if target := target_of(picture):
        draw.line([(PAD + 7, y + 1), (PAD + 7, y + 19)], fill=MARKER, width=3)
        text = f"engine target (utilization x total): {target:.2f} GiB"
        draw.text((PAD + 22, y), text, fill="black", font=font)
