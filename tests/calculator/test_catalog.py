"""The shipped catalogs load, carry sources, and hold the facts the math depends on."""

from __future__ import annotations

import pytest

from calculator import catalog
from calculator.units import GIB


def test_catalogs_load():
    assert catalog.gpus()
    assert catalog.models()
    assert catalog.quant_formats().weight_formats


@pytest.mark.parametrize("gpu", catalog.gpus(), ids=lambda g: g.id)
def test_gpu_entry_is_sane(gpu):
    assert gpu.source.strip()
    assert 2 * GIB <= gpu.memory_bytes <= 1024 * GIB
    if gpu.usable_gib is not None:
        # what the driver reports is a little below the physical memory, never above it; Metal gives
        # the GPU only its recommended working set (two thirds to three quarters of unified memory)
        floor = 0.6 if gpu.unified_memory else 0.85
        assert floor * gpu.memory_bytes / GIB <= gpu.usable_gib <= gpu.memory_bytes / GIB + 0.01
    if gpu.vendor == "nvidia":
        assert gpu.compute_capability is not None
        assert gpu.bf16 == (float(gpu.compute_capability) >= 8.0)
    if gpu.price is not None:
        assert gpu.price.source.strip()


def test_gpu_ids_and_aliases_unique():
    ids = [g.id for g in catalog.gpus()]
    assert len(ids) == len(set(ids))


@pytest.mark.parametrize("model", catalog.models(), ids=lambda m: m.id)
def test_model_entry_is_sane(model):
    assert model.source.strip()
    assert model.num_attention_heads % model.num_key_value_heads == 0 or model.mla is not None
    for variant in model.variants:
        assert variant.source.strip()
        if variant.size_bytes is not None:
            bits = variant.size_bytes * 8 / (model.params_b * 1e9)
            # a checkpoint stores between ~1.5 and ~17 bits per parameter (vision towers, embeddings)
            assert 1.5 <= bits <= 17.5, f"{variant.id}: {bits:.2f} bits per weight"


def test_catalog_read_back_from_the_cache_equals_a_fresh_parse(tmp_path, monkeypatch):
    from calculator import catalog as C

    monkeypatch.setenv("GPU_GARDEN_CACHE_DIR", "off")
    fresh = C._validated("catalog-models", "models", C._build_models, tuple)
    monkeypatch.setenv("GPU_GARDEN_CACHE_DIR", str(tmp_path))
    built = C._validated("catalog-models", "models", C._build_models, tuple)
    read_back = C._validated("catalog-models", "models", C._build_models, tuple)
    assert fresh == built == read_back
    assert [p.name.split(".")[0] for p in tmp_path.iterdir()] == ["catalog-models"]


def test_a_catalog_key_changes_with_any_of_its_files(tmp_path, monkeypatch):
    """Entries are keyed by one digest per file or folder (each file's name and bytes, computed once a
    process): an edited, added or renamed model file gives another key."""
    from calculator import catalog as C

    folder = tmp_path / "data"
    (folder / "models").mkdir(parents=True)
    (folder / "models" / "a.yaml").write_bytes(b"models: []\n")
    monkeypatch.setattr(C, "DATA_DIR", folder)
    digests = []
    for change in (None, b"models: [] # edited\n", "b.yaml"):
        if isinstance(change, bytes):
            (folder / "models" / "a.yaml").write_bytes(change)
        elif change:
            (folder / "models" / "a.yaml").rename(folder / "models" / change)
        C._read_group.cache_clear()
        C._group_digest.cache_clear()
        digests.append(C.catalog_digests("models"))
    C._read_group.cache_clear()
    C._group_digest.cache_clear()
    assert len({d[0][1] for d in digests}) == 3 and all(d[0][0] == "models" for d in digests)
