"""Validation into the plain dataclasses: pydantic's checks (types, constraints, unknown keys) and the
``__post_init__`` checks, with the messages an operator sees for a bad pack or catalog entry."""

from __future__ import annotations

import dataclasses

import pytest
import yaml
from pydantic import ValidationError

from calculator.catalog import LayerGroup, ModelSpec, _ModelFile
from calculator.constants import EngineConstant
from knowledge.levers import LeverFile
from knowledge.loader import KnowledgeError, load_knowledge
from knowledge.validate import validate

SIGNATURE = {
    "id": "t.x",
    "category": "gpu_oom",
    "title": "t",
    "patterns": ["port (?P<port>[0-9]+) busy"],
    "captures": {"port": "count"},
    "cause": "c",
    "examples": [{"text": "port 80 busy"}],
}
MODEL = {
    "id": "m",
    "family": "f",
    "architecture": "LlamaForCausalLM",
    "source": "config.json",
    "num_hidden_layers": 4,
    "hidden_size": 64,
    "num_attention_heads": 4,
    "num_key_value_heads": 2,
    "head_dim": 16,
    "vocab_size": 1000,
    "max_position_embeddings": 2048,
    "params_b": 0.1,
}


def _pack_error(**over: object) -> str:
    text = yaml.safe_dump({"engine": "custom", "signatures": [SIGNATURE | over]})
    with pytest.raises(KnowledgeError) as info:
        load_knowledge([("p.yaml", text)])
    return str(info.value)


def test_a_valid_pack_loads_into_dataclasses():
    kb = load_knowledge([("p.yaml", yaml.safe_dump({"engine": "custom", "signatures": [SIGNATURE]}))])
    sig = kb.signatures[0].signature
    assert dataclasses.is_dataclass(sig) and sig.priority == 50 and sig.requires == []
    assert sig.examples[0].params == {} and sig.examples[0].expect == "match"


@pytest.mark.parametrize(
    ("over", "message"),
    [
        ({"colour": "red"}, "p.yaml: signature 't.x': colour: unknown field (not in the schema)"),
        ({"priority": 500}, "p.yaml: signature 't.x': priority: Input should be less than or equal to 100"),
        ({"examples": [{"text": ""}]}, "p.yaml: signature 't.x': examples.0.text: String should have at least 1 character"),
        ({"id": "Bad ID"}, "p.yaml: signature 'Bad ID': id: String should match pattern '^[a-z0-9_.:-]+$'"),
        ({"captures": {}}, "p.yaml: signature 't.x': capture 'port' in a pattern is not declared under captures"),
        ({"captures": {"port": "gib"}}, "p.yaml: signature 't.x': memory capture 'port' must end in _gib, _mib or _bytes"),
    ],
)  # fmt: skip
def test_a_bad_pack_entry_names_the_file_the_entry_and_the_field(over, message):
    assert _pack_error(**over) == message


def test_an_unknown_remedy_and_a_pattern_re2_rejects_name_their_field():
    assert _pack_error(remedies=["nope"]).startswith(
        "p.yaml: signature 't.x': remedies: unknown remedies ['nope']"
    )
    assert _pack_error(patterns=["(unclosed"]).startswith(
        "p.yaml: signature 't.x': patterns: pattern does not compile under RE2: "
    )


def test_unknown_keys_are_refused_in_every_schema():
    with pytest.raises(ValidationError, match="unexpected_keyword_argument"):
        validate(LeverFile, {"levers": [], "extra": 1})
    with pytest.raises(ValidationError, match="unexpected_keyword_argument"):
        validate(_ModelFile, {"models": [MODEL | {"num_layers": 4}]})
    with pytest.raises(ValidationError, match="unexpected_keyword_argument"):
        validate(EngineConstant, {"value": 1, "unit": "GiB", "kind": "exact", "source": "x" * 10, "note": ""})


def test_catalog_checks_run_in_validation_and_in_code():
    with pytest.raises(ValidationError, match="layer groups sum to 3, num_hidden_layers is 4"):
        validate(_ModelFile, {"models": [MODEL | {"layers": [{"kind": "full", "count": 3}]}]})
    with pytest.raises(ValueError, match=r"^num_hidden_layers must be greater than 0, not 0$"):
        ModelSpec(**(MODEL | {"num_hidden_layers": 0}))  # type: ignore[arg-type]
    with pytest.raises(ValueError, match=r"^sliding layers need a window$"):
        LayerGroup(kind="sliding", count=2)
    spec = validate(_ModelFile, {"models": [MODEL]}).models[0]
    assert dataclasses.replace(spec, family="log").family == "log" and spec.family == "f"


def test_every_schema_dataclass_forbids_unknown_keys_itself():
    # a nested stdlib dataclass without a config of its own takes its parent's, so only a class
    # validated at the top level shows a missing one: check each class
    import importlib

    from knowledge.validate import STRICT

    not_schemas = {"LoadedSignature", "KnowledgeBase", "SecretRule", "_RuleFile", "RuleSet", "ReleaseRange"}
    modules = ["calculator.catalog", "calculator.constants", "knowledge.schema", "knowledge.levers"]
    modules += ["knowledge.features", "knowledge.loader", "knowledge.log_lines", "knowledge.log_prefixes"]
    modules += ["bot.secret_rules"]
    checked = []
    for name in modules:
        for cls in vars(importlib.import_module(name)).values():
            ours = isinstance(cls, type) and dataclasses.is_dataclass(cls) and cls.__module__ == name
            if ours and cls.__name__ not in not_schemas:
                assert getattr(cls, "__pydantic_config__", None) is STRICT, cls
                checked.append(cls.__name__)
    assert len(checked) == 35  # with Drafter, _DrafterFile, LogLine, LogLineTable, Host, LogPrefix(Table)


def test_a_config_json_with_impossible_shapes_is_refused_when_the_spec_is_built():
    from calculator.from_config import spec_from_config

    cfg = {"num_hidden_layers": 0, "hidden_size": 64, "num_attention_heads": 4, "vocab_size": 100}
    with pytest.raises(ValueError, match=r"^num_hidden_layers must be greater than 0, not 0$"):
        spec_from_config(cfg | {"max_position_embeddings": 128}, "x", "config.json")
    with pytest.raises(ValueError, match=r"^max_position_embeddings must be greater than 0, not -1$"):
        spec_from_config(cfg | {"num_hidden_layers": 2, "max_position_embeddings": -1}, "x", "config.json")


def test_a_log_prefix_that_does_not_compile_is_refused():
    from knowledge.log_prefixes import LogPrefixTable

    with pytest.raises(ValueError, match=r"prefix pattern does not compile"):
        validate(LogPrefixTable, {"max_layers": 1, "prefixes": [{"pattern": "[unclosed", "what": "x"}]})
