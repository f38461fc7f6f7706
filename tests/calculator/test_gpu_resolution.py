"""GPU names as people type them resolve to the exact card, or ask; never to a different card.

Each name below was checked against the card it means: vendor spellings, nvidia-smi / rocminfo names,
size suffixes, and the bare family names that cover several memory sizes.
"""

from __future__ import annotations

import pytest

from calculator import catalog
from calculator.resolve import NameNotFound, resolve_gpu


def ask(*ids: str) -> frozenset[str]:
    return frozenset(ids)


# name typed -> the catalog id it means, or ask(...) with exactly the candidates it must offer
NAMES: dict[str, str | frozenset[str]] = {
    # size suffixes pick the variant (or confirm the only one)
    "RTX 4090 24GB": "rtx-4090",
    "4090 24 GB": "rtx-4090",
    "rtx4090 24g": "rtx-4090",
    "3060 12gb": "rtx-3060-12gb",
    "RTX 3060 8GB": "rtx-3060-8gb",
    "3080 12GB": "rtx-3080-12gb",
    "rtx 3080 10g": "rtx-3080-10gb",
    "4060 Ti 16GB": "rtx-4060-ti-16gb",
    "4060ti 8gb": "rtx-4060-ti-8gb",
    "5060 ti 8 gb": "rtx-5060-ti-8gb",
    "RTX 5060 Ti 16 GB": "rtx-5060-ti-16gb",
    "3050 8gb": "rtx-3050-8gb",
    "2060 12GB": "rtx-2060-12gb",
    "a100 40gb": "a100-40gb",
    "A100 80GB PCIe": "a100-80gb-pcie",
    "v100 32gb": "v100-32gb",
    "M4 Max 36GB": "m4-max-36gb",
    "m4 max 128gb": "m4-max-128gb",
    "MacBook Pro M3 Max 48GB": "m3-max-48gb",
    "Mac Studio M2 Ultra 192GB": "m2-ultra-192gb",
    "Apple M1 8GB": "m1-8gb",
    "Mac mini M4 Pro 64GB": "m4-pro-64gb",
    "M2 Max 38-core GPU 96GB": "m2-max-96gb",
    "M3 Max (16-core CPU, 40-core GPU) 64GB": "m3-max-64gb",
    "strix halo 128gb": "strix-halo-128gb",
    "Ryzen AI Max+ 395 128GB": "strix-halo-128gb",
    "jetson agx orin 64gb": "jetson-agx-orin-64gb",
    "a770 16gb": "arc-a770-16gb",
    # tiers are part of the name: never the Ti / SUPER / XT sibling
    "rtx 5070": "rtx-5070",
    "rtx 5070 ti": "rtx-5070-ti",
    "rtx 4060": "rtx-4060",
    "4070": "rtx-4070",
    "4070 super": "rtx-4070-super",
    "4070 Ti": "rtx-4070-ti",
    "4070 ti super": "rtx-4070-ti-super",
    "3060 ti": "rtx-3060-ti",
    "3070 Ti": "rtx-3070-ti",
    "2080": "rtx-2080",
    "2080 ti": "rtx-2080-ti",
    "GTX 1080 Ti": "gtx-1080-ti",
    "5060": "rtx-5060",
    "rx 7900 xt": "rx-7900-xt",
    # vendor spellings and what nvidia-smi / rocminfo print
    "NVIDIA GeForce RTX 4090": "rtx-4090",
    "NVIDIA GeForce RTX 3090": "rtx-3090",
    "Tesla T4": "t4",
    "NVIDIA A100-SXM4-80GB": "a100-80gb",
    "NVIDIA A100-SXM4-40GB": "a100-40gb",
    "NVIDIA A100-PCIE-40GB": "a100-40gb",
    "NVIDIA H100 80GB HBM3": "h100-sxm",
    "NVIDIA H100 PCIe": "h100-pcie",
    "NVIDIA H100 NVL": "h100-nvl",
    "NVIDIA H200": "h200",
    "Tesla V100-SXM2-16GB": "v100-16gb",
    "NVIDIA RTX A6000": "rtx-a6000",
    "NVIDIA RTX 6000 Ada Generation": "rtx-6000-ada",
    "NVIDIA RTX PRO 6000 Blackwell": "rtx-pro-6000-blackwell",
    "NVIDIA L40S": "l40s",
    "NVIDIA A10G": "a10g",
    "NVIDIA A10": "a10",
    "NVIDIA L4": "l4",
    "NVIDIA A40": "a40",
    "NVIDIA GB10": "gb10-dgx-spark",
    "DGX Spark": "gb10-dgx-spark",
    "AMD Instinct MI300X": "mi300x",
    "AMD Instinct MI250X/MI250": "mi250x",
    "Radeon RX 7900 XTX": "rx-7900-xtx",
    "AMD Radeon RX 7800 XT": "rx-7800-xt",
    "rx 9070 xt": "rx-9070-xt",
    # the non-XT RX 9070 is its own entry now (same 16 GB, fewer CUs): never the XT, never the reverse
    "RX 9070": "rx-9070",
    "Intel Arc B580": "arc-b580",
    "arc b570": "arc-b570",
    # bare names covering several memory sizes: ask, with exactly those candidates
    "a100": ask("a100-40gb", "a100-80gb", "a100-80gb-pcie"),
    "3060": ask("rtx-3060-8gb", "rtx-3060-12gb"),
    "NVIDIA GeForce RTX 3060": ask("rtx-3060-8gb", "rtx-3060-12gb"),
    "3080": ask("rtx-3080-10gb", "rtx-3080-12gb"),
    "4060 ti": ask("rtx-4060-ti-8gb", "rtx-4060-ti-16gb"),
    "5060 Ti": ask("rtx-5060-ti-8gb", "rtx-5060-ti-16gb"),
    "3050": ask("rtx-3050-6gb", "rtx-3050-8gb"),
    "2060": ask("rtx-2060-6gb", "rtx-2060-12gb"),
    "v100": ask("v100-16gb", "v100-32gb"),
    "a770": ask("arc-a770-8gb", "arc-a770-16gb"),
    "M4 Max": ask("m4-max-36gb", "m4-max-48gb", "m4-max-64gb", "m4-max-128gb"),
    "m4": ask("m4-16gb", "m4-24gb", "m4-32gb"),
    "M3 Ultra": ask("m3-ultra-96gb", "m3-ultra-256gb", "m3-ultra-512gb"),
    "MacBook Pro M1 Pro": ask("m1-pro-16gb", "m1-pro-32gb"),
    "jetson agx orin": ask("jetson-agx-orin-32gb", "jetson-agx-orin-64gb"),
    "orin nano": ask("jetson-orin-nano-4gb", "jetson-orin-nano-8gb"),
    "strix halo": ask("strix-halo-64gb", "strix-halo-128gb"),
    "NVIDIA H20": ask("h20-96gb", "h20-141gb"),
    "h20 96gb": "h20-96gb",
}

# same memory in every form factor: answered, with the card taken named in `assumed`
ASSUMED = {
    "h100": ("h100-sxm", "'h100' taken as NVIDIA H100 SXM; NVIDIA H100 PCIe has the same 80 GB"),
    "H100 80GB": ("h100-sxm", "'H100 80GB' taken as NVIDIA H100 SXM; NVIDIA H100 PCIe has the same 80 GB"),
    "a100 80gb": (
        "a100-80gb",
        "'a100 80gb' taken as NVIDIA A100 SXM4 80GB; NVIDIA A100 PCIe 80GB has the same 80 GB",
    ),
    "a100-80g": (
        "a100-80gb",
        "'a100-80g' taken as NVIDIA A100 SXM4 80GB; NVIDIA A100 PCIe 80GB has the same 80 GB",
    ),
}

# cards the catalog does not have: suggestions only, never the nearest card
NOT_CATALOGUED = [
    "rtx 5070 super",
    "RTX 4090 Laptop GPU",
    "NVIDIA GeForce RTX 3060 Laptop GPU",
    "Quadro RTX 6000",
    "rtx 6000",
    "mi300",
    "NVIDIA GH200",
    "4090 ti",
]


def test_the_list_is_long_enough():
    assert len(NAMES) + len(ASSUMED) >= 60


@pytest.mark.parametrize(("name", "expected"), NAMES.items(), ids=list(NAMES))
def test_name_resolves_or_asks(name, expected):
    if isinstance(expected, frozenset):
        with pytest.raises(NameNotFound) as info:
            resolve_gpu(name)
        assert info.value.ambiguous
        assert frozenset(info.value.candidates) == expected
    else:
        gpu = resolve_gpu(name)
        assert gpu.id == expected
        assert gpu.assumed is None


@pytest.mark.parametrize(("name", "expected"), ASSUMED.items(), ids=list(ASSUMED))
def test_same_memory_answers_and_says_which_card(name, expected):
    gpu_id, note = expected
    gpu = resolve_gpu(name)
    assert gpu.id == gpu_id
    assert gpu.assumed == note


def test_assumed_note_stays_off_the_catalog_entry():
    resolve_gpu("h100")
    assert next(g for g in catalog.gpus() if g.id == "h100-sxm").assumed is None


def test_ask_names_the_sizes():
    with pytest.raises(NameNotFound) as info:
        resolve_gpu("3060")
    assert str(info.value) == (
        "GPU name '3060' is ambiguous; did you mean one of: rtx-3060-8gb, rtx-3060-12gb? "
        "(these differ in memory: rtx-3060-8gb (8 GB), rtx-3060-12gb (12 GB); add the size, e.g. '3060 12gb')"
    )


@pytest.mark.parametrize(
    ("name", "message"),
    [
        ("4090 48gb", "unknown GPU '4090 48gb' (rtx-4090 comes with 24 GB, not 48 GB)"),
        (
            "rtx 5070 16gb",
            "unknown GPU 'rtx 5070 16gb'; closest known: rtx-5070-ti (rtx-5070 comes with 12 GB, not 16 GB)",
        ),
        (
            "h100 94gb",
            "unknown GPU 'h100 94gb'; closest known: h100-nvl (h100-pcie, h100-sxm come with 80 GB, not 94 GB)",
        ),
        ("mi250x 128gb", "unknown GPU 'mi250x 128gb' (mi250x comes with 64 GB, not 128 GB)"),
    ],
)
def test_a_size_the_card_does_not_have_is_an_error(name, message):
    with pytest.raises(NameNotFound) as info:
        resolve_gpu(name)
    assert str(info.value) == message
    assert not info.value.ambiguous


def test_two_sizes_are_an_error():
    with pytest.raises(NameNotFound, match="two different memory sizes"):
        resolve_gpu("3060 8gb 12gb")


@pytest.mark.parametrize("name", NOT_CATALOGUED)
def test_unknown_cards_are_never_substituted(name):
    with pytest.raises(NameNotFound) as info:
        resolve_gpu(name)
    assert not info.value.ambiguous


def test_unknown_card_gets_suggestions():
    with pytest.raises(NameNotFound) as info:
        resolve_gpu("rtx 5070 super")
    assert "rtx-5070" in info.value.candidates


@pytest.mark.parametrize(
    "name", ["", "   ", "8gb", "24 GB", "nvidia", "🙂", "\x00", "a" * 10_000, "4090" * 60]
)
def test_bad_input_is_a_clear_error(name):
    with pytest.raises(NameNotFound):
        resolve_gpu(name)
