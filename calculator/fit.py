"""The fit solver: from a budget that does not fit (or a question), the ranked changes that make it fit.

Each remedy states what it buys (tokens, GiB) and what it costs.  The same functions serve ``/vram``
(numbers from the calculator) and the diagnosis of a paste (numbers from the user's log).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field

from calculator.catalog import GPU, ModelSpec
from calculator.commands import llamacpp_command, ollama_env_command, sglang_command, vllm_command
from calculator.kv import LLAMACPP_KV_BYTES
from calculator.units import GIB, fmt_tokens, round_down_clean
from calculator.versions import vllm_has_auto_max_len

MAX_SAFE_UTILIZATION = 0.95


@dataclass
class Remedy:
    """A change that makes a /vram request fit: the command, what it buys and costs."""

    engine: str
    change: str
    command: str
    effect: str
    cost: str = ""
    rank: int = 0
    tokens_after: int | None = None
    gib_saved: float | None = None


@dataclass
class KVSituation:
    """What is known about a KV budget on one GPU (from a log, the calculator, or both)."""

    fit_len: int  # longest single request that fits now
    max_model_len: int | None = None  # what was asked for
    kv_gib: float | None = None
    bytes_per_token: float | None = None  # per GPU, all attention layers
    total_gib: float | None = None
    utilization: float | None = None
    version: tuple[int, int, int] = (0, 33, 0)
    gpu: GPU | None = None
    model: ModelSpec | None = None
    tp: int = 1
    kv_cache_dtype: str = "auto"
    enforce_eager: bool = False
    cudagraph_gib: float | None = None
    base_command: str | None = None
    model_name: str | None = None
    notes: list[str] = field(default_factory=list)

    def tokens_for(self, extra_gib: float) -> int | None:
        if not self.bytes_per_token:
            return None
        return int(extra_gib * GIB / self.bytes_per_token)

    def fit_after(self, extra_gib: float) -> int | None:
        """Tokens that fit once ``extra_gib`` more goes to the KV cache (a deficit is paid first)."""
        if not self.bytes_per_token:
            return None
        if self.kv_gib is not None:
            return max(0, int((self.kv_gib + extra_gib) * GIB / self.bytes_per_token))
        return self.fit_len + int(extra_gib * GIB / self.bytes_per_token)

    @property
    def weights_do_not_fit(self) -> bool:
        """Nothing is left for the KV cache: KV levers cannot help, only memory for the weights can."""
        return self.fit_len <= 0 and self.kv_gib is not None and self.kv_gib <= 0


def _fp8_verdict(gpu: GPU | None) -> bool | None:
    """True/False when the GPU is known; None when we cannot tell."""
    return None if gpu is None else gpu.fp8_kv_cache


def _with_len(
    changes: dict[str, str | None], after: int | None, want: int | None, auto: bool = False
) -> dict[str, str | None]:
    """Add ``--max-model-len`` when a lever alone does not reach what was asked for; when what it
    buys cannot be computed (the card is unknown), let vLLM >= 0.14 pick the length (``auto``)."""
    if want and after is not None and after < want and round_down_clean(after) > 0:
        changes = {**changes, "--max-model-len": str(round_down_clean(after))}
    elif want and after is None and auto:
        changes = {**changes, "--max-model-len": "auto"}
    return changes


UNKNOWN_GAIN = "; the context still has to fit: combine it with a --max-model-len the new budget holds"


def _reach(after: int | None, want: int | None) -> str:
    if after is None:
        return ""
    if want and after >= want:
        return f", enough for {fmt_tokens(want)}"
    return f" (about {fmt_tokens(after)} tokens fit)"


def vllm_kv_remedies(s: KVSituation) -> list[Remedy]:
    out: list[Remedy] = []
    want = s.max_model_len
    auto = vllm_has_auto_max_len(s.version)
    clean = round_down_clean(s.fit_len)
    if want and clean > want:  # a contradictory paste (it "fits" more than was asked): never suggest more
        clean = round_down_clean(want)
    if clean > 0:
        out.append(
            Remedy(
                "vllm",
                f"cap the context at {fmt_tokens(clean)} tokens",
                vllm_command(s.base_command, s.model_name, {"--max-model-len": str(clean)}),
                f"fits: one request of up to {fmt_tokens(clean)} tokens"
                + (f" (was {fmt_tokens(want)})" if want else ""),
                "longer prompts are rejected",
                rank=1,
                tokens_after=clean,
            )
        )
        if vllm_has_auto_max_len(s.version):
            out.append(
                Remedy(
                    "vllm",
                    "let vLLM pick the longest context that fits",
                    vllm_command(s.base_command, s.model_name, {"--max-model-len": "auto"}),
                    f"vLLM (>= 0.14) picks about {fmt_tokens(s.fit_len)} tokens by itself",
                    "no headroom for a second long request",
                    rank=2,
                    tokens_after=s.fit_len,
                )
            )
    fp8 = _fp8_verdict(s.gpu)
    if (
        s.kv_cache_dtype in ("auto", "bfloat16", "float16", "bf16", "fp16")
        and fp8 is not False
        and not s.weights_do_not_fit
    ):
        doubled = s.fit_len * 2
        target = min(want, round_down_clean(doubled)) if want else round_down_clean(doubled)
        changes: dict[str, str | None] = {"--kv-cache-dtype": "fp8"}
        if want and doubled < want:
            changes["--max-model-len"] = str(target)
        out.append(
            Remedy(
                "vllm",
                "store the KV cache in fp8",
                vllm_command(s.base_command, s.model_name, changes),
                f"halves KV bytes per token: about {fmt_tokens(doubled)} tokens fit"
                + ("" if not want or doubled < want else f", enough for {fmt_tokens(want)}"),
                "slight quality loss on long contexts"
                + ("; needs an Ada, Hopper or Blackwell GPU (or MI300)" if fp8 is None else ""),
                rank=3,
                tokens_after=doubled,
            )
        )
    if s.utilization is not None and s.utilization < MAX_SAFE_UTILIZATION:
        new_util = MAX_SAFE_UTILIZATION
        after = None
        if s.total_gib:
            extra = (new_util - s.utilization) * s.total_gib
            after = s.fit_after(extra)
            effect = f"+{extra:.2f} GiB for the KV cache" + _reach(after, want)
        else:
            extra = None
            effect = f"+{new_util - s.utilization:.2f} of the GPU's total memory goes to the KV cache"
        if after != 0:  # 0: still nothing left for the KV cache, so not a fix
            out.append(
                Remedy(
                    "vllm",
                    f"raise gpu_memory_utilization to {new_util}",
                    vllm_command(
                        s.base_command,
                        s.model_name,
                        _with_len({"--gpu-memory-utilization": f"{new_util}"}, after, want, auto),
                    ),
                    effect + (UNKNOWN_GAIN if after is None and want and not auto else ""),
                    "only if nothing else uses this GPU; less room for activation spikes",
                    rank=4,
                    tokens_after=after,
                    gib_saved=extra,
                )
            )
    if not s.enforce_eager:
        graphs = s.cudagraph_gib
        counted = s.version >= (0, 21, 0)
        after = None
        if counted and graphs:
            after = s.fit_after(graphs)
            effect = f"frees the CUDA-graph reserve of about {graphs:.2f} GiB" + _reach(after, want)
        else:
            effect = "frees the CUDA-graph memory (typically 0.3-1 GiB per GPU)"
        if after == 0:
            return out  # still nothing left for the KV cache: not a fix
        out.append(
            Remedy(
                "vllm",
                "run without CUDA graphs",
                vllm_command(
                    s.base_command, s.model_name, _with_len({"--enforce-eager": ""}, after, want, auto)
                ),
                effect + (UNKNOWN_GAIN if after is None and want and not auto else ""),
                "decode is roughly 10-30% slower",
                rank=5,
                tokens_after=after,
                gib_saved=graphs,
            )
        )
    return out


def llamacpp_kv_remedies(
    fit_ctx: int,
    want_ctx: int | None,
    base_command: str | None = None,
    model_file: str | None = None,
    bytes_per_token_f16: float | None = None,
    kv_gib: float | None = None,
) -> list[Remedy]:
    out: list[Remedy] = []
    clean = round_down_clean(fit_ctx)
    if clean > 0:
        out.append(
            Remedy(
                "llama.cpp",
                f"context of {fmt_tokens(clean)} tokens",
                llamacpp_command(base_command, model_file, {"-c": str(clean), "-fa": "on"}),
                f"the KV cache for {fmt_tokens(clean)} tokens fits"
                + (f" (asked for {fmt_tokens(want_ctx)})" if want_ctx else ""),
                "longer prompts are cut or rejected",
                rank=1,
                tokens_after=clean,
            )
        )
    q8 = int(fit_ctx * LLAMACPP_KV_BYTES["f16"] / LLAMACPP_KV_BYTES["q8_0"])
    target = round_down_clean(q8)
    if want_ctx:
        target = min(target, want_ctx)
    if target > 0:
        out.append(
            Remedy(
                "llama.cpp",
                "q8_0 KV cache (needs flash attention)",
                llamacpp_command(
                    base_command, model_file, {"-c": str(target), "-fa": "on", "-ctk": "q8_0", "-ctv": "q8_0"}
                ),
                f"q8_0 takes 1.06 bytes per value instead of 2: about {fmt_tokens(q8)} tokens fit",
                "negligible quality loss",
                rank=2,
                tokens_after=q8,
            )
        )
    return out


def ollama_kv_remedies(fit_ctx: int, want_ctx: int | None, model_tag: str | None = None) -> list[Remedy]:
    out: list[Remedy] = []
    clean = round_down_clean(fit_ctx)
    if clean > 0:
        out.append(
            Remedy(
                "ollama",
                f"context of {fmt_tokens(clean)} tokens",
                ollama_env_command({"OLLAMA_CONTEXT_LENGTH": str(clean)}, model_tag),
                f"the KV cache for {fmt_tokens(clean)} tokens fits (per request: /set parameter num_ctx {clean})",
                "Ollama silently drops the oldest messages beyond it",
                rank=1,
                tokens_after=clean,
            )
        )
        q8 = round_down_clean(int(fit_ctx * 2 / LLAMACPP_KV_BYTES["q8_0"]))
        if want_ctx:
            q8 = min(q8, want_ctx)
        out.append(
            Remedy(
                "ollama",
                "q8_0 KV cache",
                ollama_env_command(
                    {"OLLAMA_KV_CACHE_TYPE": "q8_0", "OLLAMA_CONTEXT_LENGTH": str(q8)}, model_tag
                ),
                f"about {fmt_tokens(q8)} tokens in the same memory",
                "negligible quality loss; before Ollama 0.30 also set OLLAMA_FLASH_ATTENTION=1",
                rank=2,
                tokens_after=q8,
            )
        )
    return out


def sglang_kv_remedies(
    fit_ctx: int,
    want_ctx: int | None,
    base_command: str | None = None,
    model: str | None = None,
    mem_fraction: float | None = None,
    fraction_for: Callable[[int], float] | None = None,
) -> list[Remedy]:
    """Shorter context, or a larger --mem-fraction-static computed for the tokens wanted."""
    out: list[Remedy] = []
    clean = round_down_clean(fit_ctx)
    if fraction_for is not None:
        for target in (want_ctx, 8192):
            if not target:
                continue
            needed = round(fraction_for(target) + 0.005, 2)
            if mem_fraction is not None and needed <= mem_fraction:
                continue
            if needed <= 0.93:
                out.append(
                    Remedy(
                        "sglang",
                        f"raise --mem-fraction-static to {needed}",
                        sglang_command(
                            base_command,
                            model,
                            {"--mem-fraction-static": f"{needed}", "--context-length": str(target)},
                        ),
                        f"a KV pool of about {fmt_tokens(target)} tokens next to the weights",
                        "less room for activations and CUDA graphs: if it OOMs, also lower --chunked-prefill-size",
                        rank=2,
                        tokens_after=target,
                    )
                )
                break
    if clean <= 0:
        return out
    return [
        *out,
        Remedy(
            "sglang",
            f"context length {fmt_tokens(clean)}",
            sglang_command(base_command, model, {"--context-length": str(clean)}),
            f"one request of up to {fmt_tokens(clean)} tokens fits in the KV pool",
            "longer prompts are rejected",
            rank=1,
            tokens_after=clean,
        ),
    ]
