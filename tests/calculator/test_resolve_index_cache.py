"""The name indexes of calculator/resolve.py, kept in the validated-data cache: what is read back is
what a fresh build gives, and each index has its own entry."""

from __future__ import annotations

import pytest

from calculator import resolve as R

INDEXES = [R._gpu_index, R._model_index, R._loose_index, R._ollama_index]


@pytest.mark.parametrize("index", INDEXES, ids=lambda f: f.__name__)
def test_index_read_back_from_the_cache_equals_a_fresh_build(index, tmp_path, monkeypatch):
    uncached = index.__wrapped__  # below functools.cache: reads or fills the data cache
    build = uncached.__wrapped__  # the builder itself
    fresh = build()
    monkeypatch.setenv("GPU_GARDEN_CACHE_DIR", str(tmp_path))
    written = uncached()
    entries = [p.name.split(".")[0] for p in tmp_path.iterdir()]
    assert entries == [f"index-{build.__name__.strip('_')}"]
    assert fresh == written == uncached()
    assert len(fresh) > 10


def test_indexes_have_distinct_entries(tmp_path, monkeypatch):
    monkeypatch.setenv("GPU_GARDEN_CACHE_DIR", str(tmp_path))
    for index in INDEXES:
        index.__wrapped__()
    assert sorted(p.name.split(".")[0] for p in tmp_path.iterdir()) == [
        "index-gpu_index",
        "index-loose_index",
        "index-model_index",
        "index-ollama_index",
    ]
