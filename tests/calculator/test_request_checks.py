"""VramRequest's bounds, written once in its annotations, checked without pydantic; pydantic, reading the
same annotations, agrees; ``--json`` prints exactly what pydantic printed for these results."""

from __future__ import annotations

import dataclasses
from pathlib import Path
from typing import Annotated, Literal

import pytest

from calculator.checks import Convert, FieldError, Interval, build, check
from calculator.estimate import VramRequest, VramResult, estimate, result_json


@pytest.mark.parametrize(
    ("field", "value", "message"),
    [
        ("gpus", 0, "Input should be greater than or equal to 1"),
        ("gpus", 65, "Input should be less than or equal to 64"),
        ("tp", 65, "Input should be less than or equal to 64"),
        ("gpu_memory_gib", 0.0, "Input should be greater than 0"),
        ("gpu_memory_utilization", 1.5, "Input should be less than or equal to 1"),
        ("max_model_len", 1 << 26, "Input should be less than or equal to 33554432"),
        ("max_num_batched_tokens", 0, "Input should be greater than or equal to 1"),
        ("parallel", 257, "Input should be less than or equal to 256"),
        ("engine", "tgi", "Input should be 'vllm', 'llama.cpp', 'ollama' or 'sglang'"),
        ("gpus", "2", "Input should be a valid integer"),
        ("gpus", 2.5, "Input should be a valid integer"),
        ("enforce_eager", "yes", "Input should be a valid boolean"),
    ],
)
def test_a_value_out_of_bounds_names_its_field_and_the_bound(field: str, value: object, message: str):
    with pytest.raises(FieldError) as err:
        VramRequest(model="m", gpu="g", **{field: value})
    assert err.value.loc == (field,)
    assert err.value.msg == message
    assert str(err.value) == f"{field}: {message}"


def test_pydantic_reads_the_same_bounds_and_words_them_the_same():
    from pydantic import TypeAdapter, ValidationError

    adapter = TypeAdapter(VramRequest)
    for field, value in [("gpus", 0), ("tp", 65), ("gpu_memory_utilization", 1.5), ("engine", "tgi")]:
        with pytest.raises(ValidationError) as by_pydantic:
            adapter.validate_python({"model": "m", "gpu": "g", field: value})
        with pytest.raises(FieldError) as by_check:
            VramRequest(model="m", gpu="g", **{field: value})
        assert by_pydantic.value.errors()[0]["msg"] == by_check.value.msg


def test_values_are_converted_as_their_type_says():
    req = VramRequest(model="m", gpu="g", gpu_memory_gib=24, max_model_len=8192.0)
    assert req.gpu_memory_gib == 24.0 and type(req.gpu_memory_gib) is float
    assert req.max_model_len == 8192 and type(req.max_model_len) is int
    assert dataclasses.replace(req, gpus=4).gpus == 4
    with pytest.raises(FieldError):
        dataclasses.replace(req, gpus=0)  # a copy is checked too


@dataclasses.dataclass
class _Inner:
    level: Literal["a", "b"] = "a"
    url: Annotated[str, Convert(lambda v: v if not isinstance(v, str) or v.endswith("/") else v + "/")] = "x/"

    def __post_init__(self) -> None:
        check(self)


@dataclasses.dataclass
class _Outer:
    path: Path = Path("p")
    count: Annotated[int, Interval(ge=30)] = 30
    inner: _Inner = dataclasses.field(default_factory=_Inner)

    def __post_init__(self) -> None:
        check(self)


def test_nested_sections_paths_and_conversions():
    out = build(_Outer, {"path": "/data", "inner": {"url": "http://h/api", "level": "b"}, "unknown": 1})
    assert out == _Outer(Path("/data"), 30, _Inner("b", "http://h/api/"))
    with pytest.raises(FieldError) as err:
        build(_Outer, {"inner": {"level": "c"}})
    assert str(err.value) == "inner.level: Input should be 'a' or 'b'"
    with pytest.raises(FieldError) as err:
        build(_Outer, {"count": 29})
    assert str(err.value) == "count: Input should be greater than or equal to 30"
    with pytest.raises(FieldError) as err:
        build(_Outer, {"inner": 3})
    assert str(err.value) == "inner: Input should be a dictionary or an instance of _Inner"


REQUESTS = [
    VramRequest(model="qwen2.5-coder-32b-awq", gpu="4090"),
    VramRequest(model="qwen2.5-coder-32b-awq", gpu="3090", max_model_len=131072),
    VramRequest(model="llama3.1:8b", gpu="3090", engine="ollama"),
    VramRequest(model="llama3.1:8b", gpu="4090", engine="llama.cpp", ctx_size=65536, cache_type_k="q8_0"),
    VramRequest(model="meta-llama/Llama-3.3-70B-Instruct", gpu="h100-sxm", gpus=4, max_model_len=65536),
    VramRequest(model="deepseek-ai/DeepSeek-V3-0324", gpu="h200", gpus=8, engine="sglang"),
    VramRequest(model="gpt-oss-120b", gpu="h100-sxm"),
    VramRequest(model="gemma3:27b", gpu="3060 12gb", engine="ollama"),
]


@pytest.mark.parametrize("req", REQUESTS, ids=lambda r: f"{r.model}@{r.gpu}/{r.engine}")
def test_json_is_byte_for_byte_what_pydantic_printed(req: VramRequest):
    from pydantic import TypeAdapter

    result = estimate(req)
    assert result_json(result) == TypeAdapter(VramResult).dump_json(result, indent=2).decode()
    assert list(dataclasses.asdict(result))[:3] == ["model", "variant", "quantization"]
