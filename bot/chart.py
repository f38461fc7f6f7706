"""A PNG picture of a reply's memory breakdown (a stacked bar with a legend), for platforms that
show images.  Pillow only; no fonts beyond Pillow's bundled default."""

from __future__ import annotations

import io

from bot.reply import MemoryPicture

COLOURS = {
    "weights": (66, 133, 244),
    "activations": (251, 188, 4),
    "activations+other": (251, 188, 4),
    "non-torch": (171, 71, 188),
    "non torch": (171, 71, 188),
    "cuda graphs": (234, 67, 53),
    "other": (158, 158, 158),
    "kv cache": (52, 168, 83),
    "compute buffers": (255, 112, 67),
    "cuda context": (121, 85, 72),
}
FREE = (230, 230, 230)
WIDTH, BAR_H, PAD = 720, 56, 20


def memory_png(picture: MemoryPicture) -> bytes:
    from PIL import Image, ImageDraw, ImageFont

    font = ImageFont.load_default(size=15)
    rows = len(picture.segments)
    height = PAD * 3 + 24 + BAR_H + rows * 22
    img = Image.new("RGB", (WIDTH, height), "white")
    draw = ImageDraw.Draw(img)
    draw.text((PAD, PAD), f"{picture.title}: {picture.total_gib:.2f} GiB", fill="black", font=font)
    top = PAD + 28
    inner = WIDTH - 2 * PAD
    total = max(picture.total_gib, sum(max(0.0, s.gib) for s in picture.segments), 1e-9)
    x = float(PAD)
    for seg in picture.segments:
        w = max(0.0, seg.gib) / total * inner
        colour = COLOURS.get(seg.label, FREE)
        if w > 0:
            draw.rectangle([x, top, min(x + w, PAD + inner), top + BAR_H], fill=colour, outline="white")
        x += w
    draw.rectangle([PAD, top, PAD + inner, top + BAR_H], outline="black")
    y = top + BAR_H + PAD
    for seg in picture.segments:
        colour = COLOURS.get(seg.label, FREE)
        draw.rectangle([PAD, y + 3, PAD + 14, y + 17], fill=colour, outline="black")
        draw.text((PAD + 22, y), f"{seg.label}: {seg.gib:.2f} GiB ({seg.source})", fill="black", font=font)
        y += 22
    buf = io.BytesIO()
    img.save(buf, format="PNG", optimize=True)
    return buf.getvalue()
