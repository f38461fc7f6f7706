"""max_len_exceeds_model@vllm: max_model_len above what the model's config derives."""

from __future__ import annotations

import json
import math
from typing import Any

from bot.diagnosis.commands import vllm_cmd
from bot.diagnosis.common import diagnosis_reply, generic
from bot.diagnosis.engine_facts import vllm_version_note
from bot.diagnosis.numbers import fmt_plain, fmt_version
from bot.facts import PasteFacts
from bot.reply import Fact, Fix, Reply
from calculator.units import fmt_tokens
from calculator.vllm import derived_max_model_len

ALLOW_LONG_ENV = "VLLM_ALLOW_LONG_MAX_MODEL_LEN=1"


HF_OVERRIDES_SINCE = (0, 6, 5)


ROPE_PARAMETERS_SINCE = (0, 12, 0)  # PR #28542: rope_scaling renamed rope_parameters (Transformers v5)


YARN_NOT_SCALED_SINCE = (0, 30, 0)  # PR #56446: YaRN no longer multiplies the derived max_model_len


# rope_theta of the official checkpoints (config.json), needed inside rope_parameters from v0.12
_ROPE_THETA = {"qwen2.5": 1_000_000, "qwen2.5-coder": 1_000_000, "qwq": 1_000_000, "qwen3": 1_000_000}
_ROPE_THETA["qwen3-moe"] = 1_000_000


def _rope_change(
    version: tuple[int, int, int], factor: float, original: int, target: int, theta: int | None
) -> tuple[dict[str, str | None], bool]:
    """The flags that add a YaRN RoPE scaling for this vLLM version, and whether rope_theta is missing."""
    rope: dict[str, Any] = {
        "rope_type": "yarn",
        "factor": factor,
        "original_max_position_embeddings": original,
    }
    if version < HF_OVERRIDES_SINCE:
        return {"--rope-scaling": f"'{json.dumps(rope)}'", "--max-model-len": str(target)}, False
    missing_theta = False
    if version >= ROPE_PARAMETERS_SINCE:
        key = "rope_parameters"
        if theta:
            rope["rope_theta"] = theta
        else:
            missing_theta = True
    else:
        key = "rope_scaling"
    override: dict[str, Any] = {key: rope}
    if version >= YARN_NOT_SCALED_SINCE:
        override = {"max_position_embeddings": target, key: rope}
    return {"--hf-overrides": f"'{json.dumps(override)}'", "--max-model-len": str(target)}, missing_theta


def max_len_exceeds_model(facts: PasteFacts) -> Reply:
    p = facts.params
    want = p.get("max_model_len") or facts.context.get("max_model_len")
    derived = p.get("derived_max_model_len")
    derived_src = "log"
    key = str(p.get("derived_key") or "max_position_embeddings")
    version = facts.vllm_version
    model = facts.model.model if facts.model else None
    catalog_derived = derived_max_model_len(model, fmt_version(version)) if model else None
    if derived is None and catalog_derived:
        derived, derived_src = catalog_derived, "catalog"
    if not want or not derived:
        return generic(facts)
    derived = int(derived)
    notes: list[str] = []
    name = str(facts.context.get("model") or "")
    command = str(facts.context.get("command") or "")
    gguf = "gguf" in (name + " " + command).lower()

    title = f"vLLM: max_model_len {fmt_tokens(want)} is above the model's limit of {fmt_tokens(derived)}"
    sentences = [
        f"vLLM derives the longest context a model supports from its config.json ({key}={fmt_tokens(derived)}, "
        f"after any RoPE scaling it applies), and --max-model-len {fmt_tokens(want)} is "
        f"{want / derived:.1f}x that."
    ]
    rs = model.rope_scaling if model else None
    if rs and rs.type == "yarn" and version >= YARN_NOT_SCALED_SINCE and rs.original_max_position_embeddings:
        sentences.append(
            f"Since v0.30 vLLM no longer multiplies a YaRN factor into that limit (it did up to v0.29: "
            f"{fmt_tokens(int(rs.original_max_position_embeddings * (rs.factor or 1)))})."
        )
    if gguf:
        sentences.append(
            "You serve a GGUF file: vLLM builds that config.json from the GGUF metadata, and the conversion "
            "can get max_position_embeddings wrong."
        )
    else:
        sentences.append(
            "Serve at that limit, or raise it only with a real RoPE scaling the model was trained for; past "
            "the trained positions a RoPE model produces garbage."
        )
    summary = " ".join(sentences)

    numbers = [
        Fact("max_model_len asked for", fmt_tokens(want), "log" if "max_model_len" in p else "given"),
        Fact(f"limit vLLM derived ({key})", fmt_tokens(derived), derived_src),
        Fact("over the limit by", f"{want / derived:.2f}x", "computed"),
    ]
    if model is not None and facts.model is not None:
        numbers.append(Fact("model", facts.model.label, "catalog"))
        numbers.append(Fact("max_position_embeddings", fmt_tokens(model.max_position_embeddings), "catalog"))
        if rs is not None:
            scaling = rs.type + (f" x{fmt_plain(rs.factor)}" if rs.factor else "")
            if rs.original_max_position_embeddings:
                scaling += f" (original {fmt_tokens(rs.original_max_position_embeddings)})"
            numbers.append(Fact("rope_scaling", scaling, "catalog"))
        if catalog_derived:
            numbers.append(
                Fact(
                    f"limit vLLM {fmt_version(version)} derives from the official config",
                    fmt_tokens(catalog_derived),
                    "computed",
                )
            )
        if derived_src == "log" and catalog_derived and derived < catalog_derived:
            notes.append(
                f"your config.json gives {fmt_tokens(derived)}, the official {model.id} config gives "
                f"{fmt_tokens(catalog_derived)}: the config vLLM read is not the official one"
            )

    fixes = [
        Fix(
            "vllm",
            f"serve at the model's limit of {fmt_tokens(derived)} tokens",
            vllm_cmd(facts, {"--max-model-len": str(derived)}),
            "starts, with correct outputs up to the trained length",
            f"prompts plus output beyond {fmt_tokens(derived)} tokens are rejected",
            rank=1,
        )
    ]
    if gguf:
        fixes.append(
            Fix(
                "vllm",
                "take the config from the original model",
                vllm_cmd(
                    facts, {"--hf-config-path": "<original HF repo>", "--tokenizer": "<original HF repo>"}
                ),
                "vLLM reads max_position_embeddings and rope_scaling from the original config.json instead of "
                "the GGUF conversion",
                "needs the original repo id (the unquantized model the GGUF was made from)",
                rank=2,
            )
        )
    # a real extension: YaRN on a model without its own scaling (or with YaRN, on >= 0.30)
    can_scale = rs is None or (rs.type == "yarn" and version >= YARN_NOT_SCALED_SINCE)
    if can_scale:
        if rs is not None and rs.original_max_position_embeddings and rs.factor:
            original, target = rs.original_max_position_embeddings, want
            factor = max(float(rs.factor), math.ceil(want / original * 100) / 100)
        else:
            original = derived
            target = want
            factor = math.ceil(want / derived * 100) / 100
        theta = _ROPE_THETA.get(model.family) if model else None
        changes, missing_theta = _rope_change(version, factor, original, target, theta)
        trained = model is not None and model.family in _ROPE_THETA
        fixes.append(
            Fix(
                "vllm",
                f"YaRN RoPE scaling x{fmt_plain(factor)} to reach {fmt_tokens(target)}",
                vllm_cmd(facts, changes),
                f"positions stretched {fmt_plain(factor)}x from {fmt_tokens(original)}: {fmt_tokens(target)} tokens"
                + (
                    '; first add "rope_theta": <your config.json value> inside rope_parameters'
                    if missing_theta
                    else ""
                ),
                (
                    "Qwen validates YaRN for this model family; short prompts lose a little quality"
                    if trained
                    else "good output only if the model was trained or validated with YaRN at this factor"
                ),
                rank=3,
            )
        )
        if missing_theta:
            notes.append(
                "from v0.12 rope_theta lives inside rope_parameters: copy your config.json's rope_theta into "
                "the --hf-overrides JSON"
            )
        if version >= YARN_NOT_SCALED_SINCE:
            notes.append(
                "on v0.30+ the override also raises max_position_embeddings, because YaRN no longer raises the "
                "derived limit (inferred from the source, vllm_memory.md §4)"
            )
    fixes.append(
        Fix(
            "vllm",
            "override the check",
            f"{ALLOW_LONG_ENV} " + vllm_cmd(facts, {}),
            f"vLLM accepts {fmt_tokens(want)} anyway",
            f"without real RoPE scaling, positions past {fmt_tokens(derived)} produce garbage or NaN "
            "(absolute-position models crash with CUDA out-of-bounds errors)",
            rank=4,
        )
    )
    if not gguf:
        notes.insert(
            0,
            "if you load a GGUF file, vLLM converts its metadata to a config.json and the conversion can be wrong "
            "(transformers#39976: a Qwen3-MoE GGUF came out as 32,768): add --hf-config-path <original repo>",
        )
    vllm_version_note(facts, notes)
    data = {"max_model_len": want, "derived_max_model_len": derived, "gguf": gguf}
    return diagnosis_reply(
        title,
        summary,
        numbers,
        fixes,
        notes,
        f"--max-model-len {fmt_tokens(want)} is above the model's {fmt_tokens(derived)}.",
        data=data,
        numbers_always=True,
    )


RULES = {"max_len_exceeds_model@vllm": max_len_exceeds_model}
