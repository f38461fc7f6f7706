"""The memory chart is a real PNG of the breakdown: a colour per segment, the engine's target marked;
and the text bar marks the target with ``|``."""

from __future__ import annotations

import io
import math

from PIL import Image

from bot.chart import (
    BAR_H,
    BAR_TOP,
    CARD_END,
    COLOURS,
    LEGEND_TOP,
    MARKER,
    PAD,
    ROW,
    TICK,
    layout,
    memory_png,
    palette,
)
from bot.formatter import memory_bar
from bot.reply import MemoryPicture, MemorySegment

# vllm-project/vllm#10517: total_gpu_memory=23.58GiB, weights 14.9888 GB, non_torch_memory=0.35GiB,
# kv_cache_size=2.89GiB, gpu_memory_utilization=0.90
VLLM_10517 = MemoryPicture(
    23.58,
    [
        MemorySegment("weights", 14.99, "log"),
        MemorySegment("non-torch", 0.35, "log"),
        MemorySegment("kv cache", 2.89, "computed"),
        MemorySegment("not used (1-util)", 2.36, "computed"),
    ],
    target_gib=0.90 * 23.58,
)
# vllm-project/vllm-omni#276: "Free memory on device (0.49/79.32 GiB) on startup is less than desired GPU
# memory utilization (0.6, 47.59 GiB)"
OMNI_276 = MemoryPicture(
    79.32,
    [MemorySegment("held by others", 79.32 - 0.49, "log"), MemorySegment("free", 0.49, "log")],
    target_gib=47.59,
)
EVERY_LABEL = [
    "weights",
    "non-torch",
    "activations",
    "cuda graphs",
    "kv cache",
    "other",
    "compute buffers",
    "cuda context",
    "held by others",
    "not used (1-util)",
    "free",
    "something new",
]


def _image(picture: MemoryPicture) -> Image.Image:
    data = memory_png(picture)
    assert data.startswith(b"\x89PNG")
    return Image.open(io.BytesIO(data)).convert("RGB")


def _swatch(img: Image.Image, row: int) -> tuple[int, int, int]:
    return img.getpixel((PAD + 7, LEGEND_TOP + row * ROW + 10))


def test_png_renders():
    img = _image(VLLM_10517)
    assert img.width == 720 and img.height > 100


def test_every_label_has_its_own_colour_in_the_legend_and_the_bar():
    pic = MemoryPicture(len(EVERY_LABEL) * 2.0, [MemorySegment(label, 2.0) for label in EVERY_LABEL])
    img = _image(pic)
    swatches = [_swatch(img, i) for i in range(len(EVERY_LABEL))]
    assert len(set(swatches)) == len(EVERY_LABEL)
    assert (255, 255, 255) not in swatches  # white is the blank end of the bar, never a segment
    geo = layout(pic)
    for i, colour in enumerate(swatches):  # the bar's segment is the legend's colour
        assert img.getpixel((round(geo.x(2.0 * i + 0.3)), BAR_TOP + 4)) == colour


def test_held_by_others_free_and_not_used_differ():
    img = _image(OMNI_276)
    held, free = _swatch(img, 0), _swatch(img, 1)
    assert held != free
    not_used = _swatch(_image(VLLM_10517), 3)
    assert len({held, free, not_used}) == 3


def test_each_kind_of_memory_keeps_one_colour_across_pictures():
    """The table itself gives each kind its own colour, so held-by-others looks the same in every reply."""
    known = [label for label in EVERY_LABEL if label in COLOURS]
    assert len({COLOURS[label] for label in known}) == len(known) == len(EVERY_LABEL) - 1
    assert palette(known) == {label: COLOURS[label] for label in known}


def test_labels_sharing_a_colour_get_different_ones_in_one_picture():
    colours = palette(["activations", "activations+other", "reserved free", "not used (1-util)", "x", "y"])
    assert len(set(colours.values())) == 6


def test_the_target_is_marked_on_the_bar():
    img = _image(OMNI_276)
    x = round(layout(OMNI_276).x(47.59))
    assert img.getpixel((x, BAR_TOP - TICK // 2)) == MARKER  # above the bar, in the white gap
    assert img.getpixel((x, BAR_TOP + BAR_H // 2)) == MARKER  # across the dark "held by others" segment
    assert img.getpixel((x, BAR_TOP + BAR_H + TICK // 2)) == MARKER
    assert _swatch(img, 2) == MARKER  # and named in the legend, after the segments


def test_no_marker_without_a_target():
    for target in (None, 0.0, -3.0, math.inf, math.nan):
        pic = MemoryPicture(79.32, OMNI_276.segments, target_gib=target)
        img = _image(pic)
        x = round(layout(pic).x(47.59))
        assert img.getpixel((x, BAR_TOP - TICK // 2)) == (255, 255, 255)
        assert img.height == _image(MemoryPicture(79.32, OMNI_276.segments)).height


def test_text_bar_marks_the_target_at_its_cell():
    pic = MemoryPicture(
        10.0,
        [
            MemorySegment("weights", 5.0),
            MemorySegment("kv cache", 3.0),
            MemorySegment("not used (1-util)", 2.0),
        ],
        target_gib=9.0,
    )
    lines = memory_bar(pic, width=10).splitlines()
    assert lines[1] == "[WWWWWKKK-|]"
    assert lines[-1] == "  | target (util x total)         9.00 GiB"


def test_text_bar_without_a_target_has_no_marker():
    pic = MemoryPicture(10.0, [MemorySegment("weights", 5.0), MemorySegment("held by others", 4.0)])
    lines = memory_bar(pic, width=10).splitlines()
    assert lines[1] == "[WWWWWHHHHH]"
    assert not any("|" in line for line in lines)
    for target in (0.0, -1.0, math.inf, math.nan):
        pic.target_gib = target
        assert memory_bar(pic, width=10).splitlines()[1] == "[WWWWWHHHHH]"


def test_text_bar_of_a_real_vllm_budget():
    lines = memory_bar(VLLM_10517).splitlines()
    assert lines[1].index("|") == 1 + int(0.90 * 48)  # the cell 0.90 x total falls in, after "["


def test_a_breakdown_over_the_card_shows_where_the_card_ends():
    pic = MemoryPicture(
        23.58, [MemorySegment("weights", 26.0, "catalog"), MemorySegment("kv cache", 2.0, "computed")]
    )
    img = _image(pic)
    x = round(layout(pic).x(23.58))
    assert img.getpixel((x, BAR_TOP + 4)) == CARD_END
    fits = _image(MemoryPicture(30.0, pic.segments))
    assert CARD_END not in {fits.getpixel((x, BAR_TOP + 4)), fits.getpixel((x, BAR_TOP + BAR_H + 4))}
