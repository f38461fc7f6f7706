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
    "3060": "rtx-3060-12gb",
    "a100-80g": "a100-80gb",
    "h100 sxm": "h100-sxm",
    "mi300x": "mi300x",
    "7900xtx": "rx-7900-xtx",
    "m2 ultra": "m2-ultra-192gb",
    "t4": "t4",
    "l40s": "l40s",
    "5090": "rtx-5090",
    "a6000": "rtx-a6000",
    "rtx 6000 ada": "rtx-6000-ada",
    "b200": "b200",
    # the rest of the required coverage
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
    "p100": "p100-16gb",
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
    "h20": "h20",
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
    "a100": {"a100-40gb", "a100-80gb"},
    "h100": {"h100-pcie", "h100-sxm", "h100-nvl"},
    "v100": {"v100-16gb", "v100-32gb"},
}


def test_at_least_50_entries():
    assert len(catalog.gpus()) >= 50


@pytest.mark.parametrize(("query", "gpu_id"), sorted(REQUIRED.items()))
def test_required_names_resolve(query, gpu_id):
    assert resolve.resolve_gpu(query).id == gpu_id


@pytest.mark.parametrize(("query", "expected"), sorted(AMBIGUOUS.items()))
def test_bare_family_names_are_ambiguous(query, expected):
    with pytest.raises(NameNotFound) as info:
        resolve.resolve_gpu(query)
    assert info.value.ambiguous
    assert expected <= set(info.value.candidates)


def test_aliases_unique_across_entries():
    owners: dict[str, set[str]] = defaultdict(set)
    for gpu in catalog.gpus():
        for alias in gpu.aliases:
            owners[resolve.normalise(alias)].add(gpu.id)
    clashes = {key: ids for key, ids in owners.items() if len(ids) > 1}
    assert not clashes


def test_no_name_key_points_at_two_entries():
    """Ids, names and aliases (as the resolver normalises them) never collide across entries:
    the index keeps the first owner, so a clash would silently misroute the second card."""
    owners: dict[str, set[str]] = defaultdict(set)
    for gpu in catalog.gpus():
        for name in (gpu.id, gpu.name, *gpu.aliases):
            for key in resolve._key_variants(name):
                owners[key].add(gpu.id)
    clashes = {key: ids for key, ids in owners.items() if len(ids) > 1}
    assert not clashes


@pytest.mark.parametrize("gpu", catalog.gpus(), ids=lambda g: g.id)
def test_entry_facts(gpu):
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
