"""The matchmaker's early-stopping scan gives the same options as trying every GPU at every count,
and a repeated question is answered from the answers kept."""

from __future__ import annotations

import dataclasses

import pytest

from calculator.catalog import gpus, models
from calculator.estimate import VramRequest, estimate_for
from calculator.matchmaker import COUNTS, _engine_ok, _variant_ok, gpus_for_model


def exhaustive(model, variant, want, engine, limit):
    """Every GPU at 1, 2, 4, 8 cards (its smallest count that fits), sorted: the definition."""
    options = []
    for gpu in gpus():
        if not _engine_ok(gpu, engine) or not _variant_ok(variant, gpu, engine):
            continue
        for n in COUNTS:
            if gpu.unified_memory and n > 1:
                break
            if engine in ("vllm", "sglang") and model.num_attention_heads % n:
                continue
            req = VramRequest(model=model.id, gpu=gpu.id, gpus=n, engine=engine, max_model_len=want)
            result = estimate_for(model, variant, gpu, req, hardware=False)
            if result.fits:
                options.append((gpu.id, n, result))
                break
    price = {g.id: g.price.usd if g.price else float("inf") for g in gpus()}
    total = {g.id: g.total_gib for g in gpus()}
    options.sort(key=lambda o: (o[1] > 1, total[o[0]] * o[1], price[o[0]] * o[1]))
    return options[:limit]


MODELS = [
    m
    for m in models()
    if m.id.lower().split("/")[-1] in {"qwen2.5-coder-32b-instruct", "llama-3.1-8b-instruct"}
]


@pytest.mark.parametrize("engine", ["vllm", "llama.cpp"])
@pytest.mark.parametrize("limit", [2, 12])
@pytest.mark.parametrize("want", [8192, 131072])
def test_scan_equals_trying_every_setup(engine, limit, want):
    assert MODELS, "the catalog models this test reads are missing"
    for model in MODELS:
        for variant in [None, *model.variants[:3]]:
            got = gpus_for_model(model, variant, context=want, engine=engine, limit=limit)
            assert [(o.gpu.id, o.count, o.result) for o in got] == exhaustive(
                model, variant, want, engine, limit
            )


def test_repeated_question_is_answered_from_kept_answers():
    model = MODELS[0]
    first = gpus_for_model(model, None, context=32768)
    again = gpus_for_model(model, None, context=32768)
    assert again == first and all(a is b for a, b in zip(again, first, strict=True))
    again.clear()  # the caller's list is its own
    assert len(gpus_for_model(model, None, context=32768)) == len(first)


def test_another_object_with_the_same_id_is_computed_again():
    model = MODELS[0]
    first = gpus_for_model(model, None, context=32768)
    copy = dataclasses.replace(model)
    other = gpus_for_model(copy, None, context=32768)
    assert [(o.gpu.id, o.count) for o in other] == [(o.gpu.id, o.count) for o in first]
    assert all(a is not b for a, b in zip(other, first, strict=True))
