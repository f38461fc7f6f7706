"""tp_divisibility@vllm: the tensor-parallel size must divide the attention heads (and the MLP)."""

from __future__ import annotations

from bot.diagnosis.commands import vllm_cmd
from bot.diagnosis.common import diagnosis_reply, generic
from bot.diagnosis.engine_facts import vllm_version_note
from bot.diagnosis.numbers import fmt_plain, fmt_version
from bot.facts import PasteFacts
from bot.reply import Fact, Fix, Reply
from calculator.catalog import ModelSpec, variant_weight_bytes
from calculator.units import GIB

PIPELINE_PARALLEL_SINCE = (0, 5, 1)  # --pipeline-parallel-size serves online from v0.5.1


MAX_PLAUSIBLE_GPUS = 1024  # GPUs one vLLM deployment spans; beyond it the paste's number is nonsense
MAX_PLAUSIBLE_HEADS = 1 << 12
MAX_REPLICA_LINES = 8


def _tp_ok(t: int, heads: int, kv: int | None, widths: list[int]) -> bool:
    """vLLM's checks (§2.4): heads % tp == 0; KV heads split (kv >= tp) or replicate (tp % kv == 0);
    the MLP's column-parallel width splits evenly too."""
    if heads % t:
        return False
    if kv is not None and ((kv >= t and kv % t) or (kv < t and t % kv)):
        return False
    return all(w % t == 0 for w in widths)


def tp_divisibility(facts: PasteFacts) -> Reply:
    p = facts.params
    tp = p.get("tp") or facts.context.get("tp")
    heads = p.get("num_attention_heads")
    heads_src = "log"
    model: ModelSpec | None = facts.model.model if facts.model else None
    notes: list[str] = []
    if heads is None and model is not None:
        heads, heads_src = model.num_attention_heads, "catalog"
    if not heads or not tp or tp > MAX_PLAUSIBLE_GPUS or heads > MAX_PLAUSIBLE_HEADS:
        return generic(facts)  # absent or absurd numbers: no arithmetic on them
    if model is not None and model.num_attention_heads != heads:
        notes.append(
            f"my catalog's {model.id} has {model.num_attention_heads} heads, your log says {heads}: "
            "I used the log and ignored the catalog entry"
        )
        model = None
    kv = model.num_key_value_heads if model else None
    widths = [w for w in ((model.intermediate_size, model.moe_intermediate_size) if model else ()) if w]
    pp_now = facts.context.get("pp") or 1
    gpu_count = facts.context.get("gpu_count")
    n_gpus = min(int(gpu_count or tp * pp_now), MAX_PLAUSIBLE_GPUS)
    limit = max(n_gpus, 8)
    valid = [t for t in range(1, limit + 1) if _tp_ok(t, heads, kv, widths)]
    # without the KV-head count, only sizes that also divide any power-of-two KV count are safe
    safe = valid if kv is not None else [t for t in valid if t & (t - 1) == 0]
    usable = [t for t in safe if t <= n_gpus] or [1]
    best = max(usable)
    combo: tuple[int, int] | None = None
    for t in sorted(usable, reverse=True):
        stages = n_gpus // t
        if stages >= 2 and t * stages > best and (combo is None or t * stages > combo[0] * combo[1]):
            combo = (t, stages)
    version = facts.vllm_version
    per_gpu = heads // best

    title = f"vLLM: {heads} attention heads cannot be split over tensor_parallel_size {tp}"
    share = heads / tp
    sentences = [
        "Tensor parallelism gives every GPU an equal share of the attention heads, so tensor_parallel_size "
        f"must divide the head count: {heads} heads over {tp} GPUs would be {fmt_plain(share)} heads each.",
        (
            f"Valid sizes for this model are {', '.join(map(str, valid))}."
            if safe == valid
            else f"Sizes that divide {heads} are {', '.join(map(str, valid))}; of those, "
            f"{', '.join(map(str, safe))} also split the KV heads of almost every model."
        ),
    ]
    if combo:
        used = combo[0] * combo[1]
        sentences.append(
            f"Use tensor-parallel {combo[0]}, and pipeline-parallel {combo[1]} to keep all {used} GPUs busy."
        )
    else:
        sentences.append(f"Use tensor-parallel {best} ({per_gpu} heads per GPU).")
    summary = " ".join(sentences)

    numbers = [
        Fact("attention heads", str(heads), heads_src),
        Fact("tensor_parallel_size asked for", str(tp), "log" if "tp" in p else "given"),
    ]
    if kv is not None:
        numbers.append(Fact("KV heads", str(kv), "catalog"))
    if widths:
        numbers.append(Fact("MLP width (intermediate_size)", ", ".join(f"{w:,}" for w in widths), "catalog"))
    numbers.append(
        Fact(
            "GPUs",
            str(n_gpus),
            "log" if gpu_count else "computed",
        )
    )
    numbers.append(Fact(f"valid tensor-parallel sizes up to {limit}", ", ".join(map(str, valid)), "computed"))
    if safe != valid:
        numbers.append(Fact("of those, safe whatever the KV heads", ", ".join(map(str, safe)), "computed"))
    if facts.model is not None and model is not None:
        numbers.append(Fact("model", facts.model.label, "catalog"))

    weights_note = ""
    if model is not None and facts.model is not None:
        weights = variant_weight_bytes(model, facts.model.variant) / GIB
        weights_note = f"; about {weights / best:.1f} GiB of weights per GPU"

    fixes: list[Fix] = [
        Fix(
            "vllm",
            f"tensor-parallel {best}",
            vllm_cmd(facts, {"--tensor-parallel-size": str(best), "--pipeline-parallel-size": None}),
            f"{per_gpu} attention heads per GPU on {best} GPU{'s' if best > 1 else ''}{weights_note}",
            f"{n_gpus - best} of your {n_gpus} GPUs stay idle" if n_gpus > best else "",
            rank=1,
        )
    ]
    if combo:
        t, stages = combo
        cmd = vllm_cmd(facts, {"--tensor-parallel-size": str(t), "--pipeline-parallel-size": str(stages)})
        layers = f" (about {model.num_hidden_layers // stages} layers each)" if model else ""
        change = f"tensor-parallel {t} x pipeline-parallel {stages}"
        cost = "each token passes the stages in turn: a little more latency at low concurrency"
        if facts.version_known and version < PIPELINE_PARALLEL_SINCE:
            cmd = f'pip install -U "vllm>={fmt_version(PIPELINE_PARALLEL_SINCE)}"\n{cmd}'
            change = f"upgrade vLLM, then {change}"
            cost = f"your vLLM {fmt_version(version)} has no pipeline parallelism for serving; " + cost
        fixes.append(
            Fix(
                "vllm",
                change,
                cmd,
                f"uses all {t * stages} GPUs: heads split {t} ways, layers split into {stages} stages{layers}",
                cost,
                rank=2,
            )
        )
    if n_gpus // best >= 2:
        replicas = n_gpus // best
        lines = []
        for i in range(min(replicas, MAX_REPLICA_LINES)):
            devices = ",".join(str(d) for d in range(i * best, (i + 1) * best))
            run = vllm_cmd(
                facts,
                {
                    "--tensor-parallel-size": str(best),
                    "--pipeline-parallel-size": None,
                    "--port": str(8000 + i),
                },
            )
            lines.append(f"CUDA_VISIBLE_DEVICES={devices} {run}")
        fixes.append(
            Fix(
                "vllm",
                f"{replicas} replicas of tensor-parallel {best}",
                "\n".join(lines),
                f"{replicas} independent servers on {best} GPUs each: more throughput, no pipeline stages",
                "a load balancer in front; every replica holds a full copy of the weights",
                rank=3,
            )
        )

    if kv is None:
        odd = [t for t in valid if t not in safe]
        if odd:
            notes.append(
                f"{', '.join(map(str, odd))} divide{'s' if len(odd) == 1 else ''} the {heads} heads, but vLLM also "
                "splits the KV heads (num_key_value_heads in config.json) and the MLP width evenly; these are "
                "almost always powers of two, so I only suggest power-of-two sizes"
            )
    ctx_tp = facts.context.get("tp")
    if ctx_tp and ctx_tp != tp:
        notes.append(
            f"your log also shows tensor_parallel_size={ctx_tp}: "
            + (
                f"{ctx_tp} divides the heads, but the KV heads and the MLP width must split evenly too, "
                "so odd sizes usually fail a moment later; stick to the sizes above"
                if heads % ctx_tp == 0 and ctx_tp & (ctx_tp - 1)
                else "the same rule applies to it"
            )
        )
    vllm_version_note(facts, notes)
    data = {
        "num_attention_heads": heads,
        "tp": tp,
        "valid_tp_sizes": valid,
        "suggested_tp": best,
        "suggested_tp_pp": list(combo) if combo else None,
        "gpus": n_gpus,
    }
    return diagnosis_reply(
        title,
        summary,
        numbers,
        fixes,
        notes,
        f"{heads} heads do not divide over {tp} GPUs; valid tensor-parallel sizes: {', '.join(map(str, valid))}.",
        data=data,
        numbers_always=True,
    )


RULES = {"tp_divisibility@vllm": tp_divisibility}
