"""A cause template's sentence that names a number the paste lacks is dropped whole, not cut."""

from __future__ import annotations

from bot.detector import detect
from bot.diagnosis import diagnose
from bot.diagnosis.parts import fill


def test_a_sentence_whose_number_is_missing_is_dropped_whole():
    template = "The request needs {requested_tokens} tokens but a slot holds {n_ctx}.  Slots split -c."
    assert fill(template, {"n_ctx": 2048}) == "Slots split -c."


def test_a_question_mark_still_ends_a_sentence():
    assert fill("Is it {a}? It is {b}.", {"a": 1}) == "Is it 1?"


def test_every_number_present_keeps_every_sentence():
    template = "The request needs {requested_tokens} tokens but a slot holds {n_ctx}.  Slots split -c."
    assert fill(template, {"requested_tokens": 2059, "n_ctx": 2048}) == (
        "The request needs 2,059 tokens but a slot holds 2,048. Slots split -c."
    )


def test_a_forced_ollama_num_gpu_is_told_to_go_and_an_unforced_layout_is_not():
    forced = diagnose(
        detect("Error: 500 Internal Server Error: memory layout cannot be allocated with num_gpu = 49")
    )
    assert forced is not None
    assert forced.summary.endswith(
        "Remove num_gpu 49 from the request options or the Modelfile (or send -1, its default), and Ollama "
        "puts on the GPU only the layers that fit."
    )
    free = diagnose(detect("Error: 500 Internal Server Error: memory layout cannot be allocated"))
    assert free is not None and "num_gpu" not in free.summary


def test_a_fraction_keeps_its_third_decimal_and_a_size_two():
    # SGLang's "Raise --mem-fraction-static above 0.773": 0.77 would be below what it asks for
    assert fill("above {f}, {g} GiB", {"f": 0.773, "g": 1.2345}) == "above 0.773, 1.23 GiB"
    assert fill("{u}", {"u": 0.9}) == "0.9"


def test_a_value_with_its_own_full_stop_stays_in_its_sentence():
    template = "It stopped (code {code}: {quoted}).  The quoted text says why."
    quoted = "this model is not supported by your version of Ollama. You may need to upgrade"
    assert fill(template, {"quoted": quoted}) == "The quoted text says why."  # the code is missing
    assert fill(template, {"code": 2, "quoted": quoted}) == (
        f"It stopped (code 2: {quoted}). The quoted text says why."
    )
