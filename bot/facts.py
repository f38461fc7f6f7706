"""Gather what a paste tells us — findings' numbers and the context — into one place, and resolve
the model and GPU it names against the calculator's catalogs (quietly: a miss is not an error)."""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Any

from bot.detector import Detection, Finding
from bot.safe_text import safe_fields
from calculator.catalog import GPU
from calculator.resolve import ModelMatch, NameNotFound, resolve_gpu, resolve_model
from calculator.versions import CURRENT_VLLM, parse_version


@dataclass
class PasteFacts:
    root: Finding
    params: dict[str, Any]  # root finding's numbers, then other findings', then the context's
    context: dict[str, Any]
    model: ModelMatch | None = None
    gpu: GPU | None = None
    notes: list[str] = field(default_factory=list)
    text: str = ""  # the cleaned paste, for details no signature captures

    def get(self, name: str, default: Any = None) -> Any:
        if name in self.params:
            return self.params[name]
        return self.context.get(name, default)

    def source(self, name: str) -> str:
        return "log" if name in self.params or name in self.context else "estimated"

    @property
    def vllm_version(self) -> tuple[int, int, int]:
        """The version in the paste; else the newest that prints the matched wording; else current."""
        if self.context.get("engine_version"):
            return parse_version(self.context["engine_version"], CURRENT_VLLM)
        bound = self.root.versions or ""
        if bound.startswith("<="):
            return parse_version(bound[2:], CURRENT_VLLM)
        if bound.startswith("<"):
            major, minor, _patch = parse_version(bound[1:], CURRENT_VLLM)
            return (major, max(0, minor - 1), 99)
        return parse_version(None, CURRENT_VLLM)

    @property
    def version_known(self) -> bool:
        return bool(self.context.get("engine_version"))


_QUANT_SUFFIX = re.compile(
    r"[-_.](?:i?q[0-9]_[a-z0-9_]+|f16|bf16|fp16|f32|q8_0|mxfp4|awq|gptq(?:-int[48])?|fp8(?:-dynamic)?|nvfp4)$",
    re.IGNORECASE,
)


def model_query(name: str) -> str:
    """A path names its model by its last component (``/data/qwen/Qwen1.5-32B-Chat-AWQ``,
    ``models/Meta-Llama-3.1-8B-Instruct-Q4_K_M.gguf``); file extensions are dropped."""
    name = name.strip().strip("\"'").rstrip("/\\")
    if ("/" in name and (name.startswith(("/", ".", "~")) or name.count("/") > 1)) or "\\" in name:
        name = name.replace("\\", "/").split("/")[-1]
    for ext in (".gguf", ".bin", ".safetensors"):
        name = name.removesuffix(ext)
    return name


def _resolve_model(name: str) -> ModelMatch | None:
    """The catalog entry for a name from a paste; Ollama blob paths name no model."""
    if "/blobs/sha256-" in name or name.startswith("sha256-"):
        return None
    query = model_query(name)
    for candidate in (query, _QUANT_SUFFIX.sub("", query)):
        try:
            return resolve_model(candidate)
        except NameNotFound:
            continue
    raise NameNotFound("model", query, [])


def gather(detection: Detection, root: Finding) -> PasteFacts:
    params: dict[str, Any] = dict(root.params)
    for f in detection.findings:
        for k, v in f.params.items():
            params.setdefault(k, v)
    params = safe_fields(params)  # a GPU name or model id that is not one never reaches a reply
    context = safe_fields(dict(detection.context.fields))
    facts = PasteFacts(root=root, params=params, context=context, text=detection.normalized.views[0].text)
    model_name = context.get("model")
    if model_name:
        try:
            facts.model = _resolve_model(str(model_name))
        except NameNotFound:
            facts.notes.append(
                f"the model {model_name} is not in my catalog; its numbers come from your log only"
            )
    gpu_name = context.get("gpu")
    if gpu_name:
        try:
            facts.gpu = resolve_gpu(str(gpu_name))
        except NameNotFound:
            facts.notes.append(f"the GPU {gpu_name} is not in my catalog")
    return facts
