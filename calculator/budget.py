"""One budget per engine from what a run showed: the numbers its log printed (by the names the knowledge
base captures them under), the GPU and model from the catalogs, the settings in force (a Plan); each
engine's estimate fills the rest with its sourced constants.  The bot reads a paste into ``Seen``; this
module is the only place a budget is built from it.

Each engine's estimator is imported when its budget is built: a diagnosis that never builds one (a
PyTorch OOM) does not load the four of them."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from calculator.catalog import GGUF_DEFAULT, GPU, ModelSpec, Variant, gguf_weight_bytes, variant_weight_bytes
from calculator.plan import Plan, Sourced
from calculator.spec_decode import SpecDecode
from calculator.units import GIB

if TYPE_CHECKING:
    from calculator.llamacpp import LlamaCppEstimate
    from calculator.ollama import OllamaEstimate
    from calculator.sglang import SglangEstimate
    from calculator.vllm import VllmEstimate

    Estimate = VllmEstimate | LlamaCppEstimate | OllamaEstimate | SglangEstimate


@dataclass(frozen=True)
class Seen:
    """What is known of one run: the log's numbers by name, the model, the GPU and how many."""

    params: Mapping[str, Any] = field(default_factory=dict)
    model: ModelSpec | None = None
    variant: Variant | None = None
    gpu: GPU | None = None
    device_gib: Sourced | None = None  # memory per device, from the paste or the catalog
    devices: int = 1
    version: tuple[int, int, int] | None = None
    engine_v0: bool | None = None  # vLLM's engine generation when the paste shows it
    spec: SpecDecode | None = None  # the speculative config the paste shows (vLLM)

    def logged(self, *names: str) -> Sourced | None:
        """The first of ``names`` the log printed."""
        return next((Sourced(self.params[n], "log") for n in names if self.params.get(n) is not None), None)


@dataclass
class Budget:
    """An engine's estimate plus the plan in force."""

    engine: str
    estimate: Estimate
    plan0: Plan


def _vllm(seen: Seen, plan0: Plan) -> VllmEstimate:
    from calculator.versions import CURRENT_VLLM, parse_version
    from calculator.vllm import VllmEstimate, VllmObserved, loaded_weight_bytes

    p, want = seen.params, plan0.max_len
    bpt = None
    if p.get("kv_needed_gib") and want:
        bpt = Sourced(p["kv_needed_gib"] * GIB / want, "log")
    elif p.get("kv_cache_gib") and p.get("kv_tokens"):
        bpt = Sourced(p["kv_cache_gib"] * GIB / p["kv_tokens"], "log")
    kv = seen.logged("kv_cache_gib")
    if kv is None and p.get("kv_deficit_gib") is not None:
        kv = Sourced(-abs(p["kv_deficit_gib"]), "log")
    obs = VllmObserved(
        total_gib=seen.logged("total_gib") or seen.device_gib,
        weights_gib=seen.logged("weights_gib"),
        non_torch_gib=seen.logged("non_torch_gib"),
        activation_gib=seen.logged("activation_gib"),
        cudagraph_gib=seen.logged("cudagraph_estimate_gib"),
        kv_cache_gib=kv,
        kv_bytes_per_token=bpt,
        fit_len=seen.logged("estimated_max_model_len", "kv_tokens"),
        free_gib=seen.logged("free_gib", "gpu_available_gib"),
    )
    cc = seen.gpu.cc if seen.gpu else None
    weights = loaded_weight_bytes(seen.model, seen.variant, cc, plan0.tp) if seen.model else None
    version = seen.version or parse_version(None, CURRENT_VLLM)
    gpu_id = seen.gpu.id if seen.gpu else ""
    return VllmEstimate(
        version, plan0, obs, seen.model, weights, gpu_id, engine_v0=seen.engine_v0, spec=seen.spec
    )


def gguf_weights(seen: Seen) -> int | None:
    """The GGUF a llama.cpp / Ollama user runs: the paste's quant when it names one, else Q4_K_M."""
    if seen.model is None:
        return None
    if seen.variant is not None and seen.variant.quant == "gguf":
        return variant_weight_bytes(seen.model, seen.variant)
    named = next((v for v in seen.model.variants if v.quant == "gguf" and v.gguf_type == GGUF_DEFAULT), None)
    return gguf_weight_bytes(seen.model, named)[0]


def build(engine: str, seen: Seen, plan0: Plan) -> Budget | None:
    """The budget of ``engine`` for what was seen, at the settings ``plan0``; None for an engine
    without one."""
    if engine == "vllm":
        return Budget(engine, _vllm(seen, plan0), plan0)
    if engine == "llama.cpp":
        from calculator.llamacpp import LlamaCppEstimate, LlamaCppObserved

        obs = LlamaCppObserved(
            device_gib=seen.device_gib,
            devices=seen.devices,
            model_buffer_mib=seen.logged("model_buffer_mib"),
            kv_buffer_mib=seen.logged("kv_buffer_mib", "kv_self_mib", "kv_size_mib"),
            compute_buffer_mib=seen.logged("compute_buffer_mib"),
        )
        return Budget(engine, LlamaCppEstimate(plan0, obs, seen.model, gguf_weights(seen)), plan0)
    if engine == "ollama":
        from calculator.ollama import OllamaEstimate

        est = OllamaEstimate(plan0, seen.device_gib, seen.model, gguf_weights(seen), seen.devices)
        return Budget(engine, est, est.plan0)
    if engine == "sglang":
        from calculator.sglang import SglangEstimate

        weights = variant_weight_bytes(seen.model, seen.variant) if seen.model else None
        return Budget(engine, SglangEstimate(plan0, seen.device_gib, seen.model, weights), plan0)
    return None
