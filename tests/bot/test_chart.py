"""The memory chart is a real PNG of the breakdown."""

from __future__ import annotations

import io

from PIL import Image

from bot.chart import memory_png
from bot.reply import MemoryPicture, MemorySegment


def test_png_renders():
    pic = MemoryPicture(
        23.58,
        [
            MemorySegment("weights", 14.96),
            MemorySegment("kv cache", 2.89),
            MemorySegment("not used (1-util)", 2.36),
        ],
    )
    data = memory_png(pic)
    assert data.startswith(b"\x89PNG")
    img = Image.open(io.BytesIO(data))
    assert img.width == 720 and img.height > 100
