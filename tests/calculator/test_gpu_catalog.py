"""The GPU catalog covers the cards people ask about, and the names they type resolve to one entry."""

from __future__ import annotations

import contextlib
from collections import defaultdict

import pytest

from calculator import catalog, resolve
from calculator.resolve import NameNotFound
from calculator.units import GIB

# name typed in chat -> catalog id it must resolve to
REQUIRED = {
    "4090": "rtx-4090",
    "3060 12gb": "rtx-3060-12gb",
    "a100-80g": "a100-80gb",
    "h100 sxm": "h100-sxm",
    "mi300x": "mi300x",
    "7900xtx": "rx-7900-xtx",
    "m2 ultra 192gb": "m2-ultra-192gb",
    "t4": "t4",
    "l40s": "l40s",
    "5090": "rtx-5090",
    "a6000": "rtx-a6000",
    "rtx 6000 ada": "rtx-6000-ada",
    "b200": "b200",
    # the rest of the issue's required coverage
    "2080 ti": "rtx-2080-ti",
    "3070": "rtx-3070",
    "3080 10gb": "rtx-3080-10gb",
    "3080 12gb": "rtx-3080-12gb",
    "3080 ti": "rtx-3080-ti",
    "RTX-3090": "rtx-3090",
    "3090 ti": "rtx-3090-ti",
    "4060 ti 16gb": "rtx-4060-ti-16gb",
    "4070 ti super": "rtx-4070-ti-super",
    "4080": "rtx-4080",
    "4080 super": "rtx-4080-super",
    "5060 ti 16gb": "rtx-5060-ti-16gb",
    "5070 ti": "rtx-5070-ti",
    "5080": "rtx-5080",
    "a4000": "rtx-a4000",
    "a5000": "rtx-a5000",
    "rtx pro 6000": "rtx-pro-6000-blackwell",
    "dgx spark": "gb10-dgx-spark",
    "p100 16gb": "p100-16gb",
    "Tesla P100-PCIE-16GB": "p100-16gb",
    "v100 16gb": "v100-16gb",
    "v100 32gb": "v100-32gb",
    "a10": "a10",
    "a10g": "a10g",
    "a30": "a30",
    "l4": "l4",
    "l40": "l40",
    "a100 40gb": "a100-40gb",
    "A100-SXM4-80GB": "a100-80gb",
    "h100 pcie": "h100-pcie",
    "H100 80GB HBM3": "h100-sxm",
    "h100 nvl": "h100-nvl",
    "h200": "h200",
    "h20 96gb": "h20-96gb",
    "gb200": "gb200",
    "mi210": "mi210",
    "mi250x": "mi250x",
    "mi325x": "mi325x",
    "mi355x": "mi355x",
    "7900 xt": "rx-7900-xt",
    "a770 16gb": "arc-a770-16gb",
    "b580": "arc-b580",
    "arc pro b60": "arc-pro-b60",
    "m1 8gb": "m1-8gb",
    "m1 max 64gb": "m1-max-64gb",
    "m3 ultra 512gb": "m3-ultra-512gb",
    "m4 max 128gb": "m4-max-128gb",
    "m4 pro 48gb": "m4-pro-48gb",
    "NVIDIA GeForce RTX 4090": "rtx-4090",
    "Tesla T4": "t4",
}

# bare names covering several memory variants: the resolver must ask, not pick one
AMBIGUOUS = {
    "a100": {"a100-40gb", "a100-80gb", "a100-80gb-pcie"},
    "v100": {"v100-16gb", "v100-32gb"},
    "3060": {"rtx-3060-8gb", "rtx-3060-12gb"},
    "m2 ultra": {"m2-ultra-64gb", "m2-ultra-128gb", "m2-ultra-192gb"},
    "NVIDIA H20": {"h20-96gb", "h20-141gb"},
    "p100": {"p100-12gb", "p100-16gb"},
}

# every card issue 13 asks the catalog to carry, by id
ISSUE_13_IDS = {
    "rtx-3050-8gb",
    "rtx-3060-8gb",
    "rtx-3060-12gb",
    "rtx-3060-ti",
    "rtx-3070",
    "rtx-3070-ti",
    "rtx-3080-10gb",
    "rtx-3080-12gb",
    "rtx-4060",
    "rtx-4060-ti-8gb",
    "rtx-4060-ti-16gb",
    "rtx-4070",
    "rtx-4070-super",
    "rtx-4070-ti",
    "rtx-5060",
    "rtx-5060-ti-8gb",
    "rtx-5060-ti-16gb",
    "rtx-5070",
    "rtx-5070-ti",
    "rtx-5080",
    "rtx-5090",
    "rtx-2060-6gb",
    "rtx-2070",
    "rtx-2080",
    "gtx-1080-ti",
    "t4",
    "a10",
    "a10g",
    "l4",
    "l40",
    "l40s",
    "a40",
    "rtx-a6000",
    "rtx-6000-ada",
    "rtx-pro-6000-blackwell",
    "a100-40gb",
    "a100-80gb",
    "a100-80gb-pcie",
    "h100-pcie",
    "h100-sxm",
    "h100-nvl",
    "h200",
    "h20-96gb",
    "b200",
    "gb200",
    "gb10-dgx-spark",
    "jetson-agx-orin-32gb",
    "jetson-agx-orin-64gb",
    "jetson-orin-nano-8gb",
    "strix-halo-128gb",
    "rx-7900-xtx",
    "rx-7900-xt",
    "rx-7800-xt",
    "rx-9070-xt",
    "mi210",
    "mi250x",
    "mi300x",
    "mi325x",
    "arc-a770-16gb",
    "arc-b570",
    "arc-b580",
    "m4-max-36gb",
    "m4-max-48gb",
    "m4-max-64gb",
    "m4-max-128gb",
}


def test_at_least_80_entries():
    assert len(catalog.gpus()) >= 80


def test_issue_13_cards_are_catalogued():
    assert ISSUE_13_IDS - {g.id for g in catalog.gpus()} == set()


def test_apple_chips_have_every_memory_size():
    """Each memory configuration is its own entry, so "m4 max" can ask which one."""
    sizes = {g.id: g.memory_gb for g in catalog.gpus() if g.vendor == "apple"}
    m4_max = sorted(gb for gid, gb in sizes.items() if gid.startswith("m4-max-"))
    assert m4_max == [36, 48, 64, 128]
    m3_max = sorted(gb for gid, gb in sizes.items() if gid.startswith("m3-max-"))
    assert m3_max == [36, 48, 64, 96, 128]


@pytest.mark.parametrize(("query", "gpu_id"), sorted(REQUIRED.items()))
def test_required_names_resolve(query, gpu_id):
    assert resolve.resolve_gpu(query).id == gpu_id


@pytest.mark.parametrize(("query", "expected"), sorted(AMBIGUOUS.items()))
def test_bare_family_names_are_ambiguous(query, expected):
    with pytest.raises(NameNotFound) as info:
        resolve.resolve_gpu(query)
    assert info.value.ambiguous
    assert set(info.value.candidates) == expected


def test_aliases_unique_across_entries():
    owners: dict[str, set[str]] = defaultdict(set)
    for gpu in catalog.gpus():
        for alias in gpu.aliases:
            owners[resolve.normalise(alias)].add(gpu.id)
    clashes = {key: ids for key, ids in owners.items() if len(ids) > 1}
    assert not clashes


@pytest.mark.parametrize("gpu", catalog.gpus(), ids=lambda g: g.id)
def test_every_name_of_an_entry_resolves_to_it(gpu):
    """Ids, names and aliases all lead back to their own entry: an alias that named a family with
    several memory sizes, or another card's name, would ask or misroute here."""
    for name in (gpu.id, gpu.name, *gpu.aliases):
        assert resolve.resolve_gpu(name).id == gpu.id, name


@pytest.mark.parametrize("gpu", catalog.gpus(), ids=lambda g: g.id)
def test_entry_facts(gpu):
    assert gpu.assumed is None  # only the resolver sets it
    assert "http" in gpu.source or "ark.intel.com" in gpu.source
    if gpu.usable_gib is not None:
        # every measured total names where it was measured
        assert "usable_gib" in gpu.source
    if gpu.vendor == "nvidia":
        assert gpu.compute_capability is not None
        cc = float(gpu.compute_capability)
        assert gpu.fp8 == (cc >= 8.9)
        assert gpu.fp4 == (cc >= 10.0)
    else:
        assert gpu.compute_capability is None
    if gpu.vendor == "apple":
        assert gpu.segment == "apple"
        assert gpu.unified_memory
        assert not gpu.fp8
        assert gpu.bf16 == (gpu.arch != "apple-m1")
    if gpu.segment == "apple":
        assert gpu.vendor == "apple"
    assert gpu.memory_bytes == int(gpu.memory_gb) * GIB
    if gpu.price is not None:
        year, month = gpu.price.date.split("-")
        assert len(year) == 4 and 1 <= int(month) <= 12


def test_near_miss_name_does_not_crash():
    with contextlib.suppress(NameNotFound):
        resolve.resolve_gpu("m3 ultra")


def test_mi250x_is_one_of_two_64gb_devices():
    """ROCm shows an MI250X module as two 64 GB GCDs; the entry is what one device holds."""
    gpu = resolve.resolve_gpu("mi250x")
    assert gpu.memory_bytes == 64 * GIB
    assert gpu.bandwidth_gbs == 1638.4


def test_dgx_spark_total_is_what_cuda_reports():
    assert resolve.resolve_gpu("dgx spark").total_gib == 121.69


def test_a10g_total_comes_from_a_log():
    assert resolve.resolve_gpu("a10g").total_gib == 22.49
