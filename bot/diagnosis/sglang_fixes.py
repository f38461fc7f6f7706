"""Fixes that shrink SGLang's activation side (prefill chunks, captured graphs, draft, running requests)."""

from __future__ import annotations

from bot.facts import PasteFacts
from bot.reply import Fix
from calculator.commands import sglang_command


def sglang_activation_fixes(facts: PasteFacts, pre: float | None, rank: int, why: str) -> list[Fix]:
    command = facts.context.get("command")
    model_name = facts.context.get("model")
    chunk = facts.get("max_num_batched_tokens")
    target = max(512, int(chunk) // 2) if chunk else 2048
    freed_mb = 1.5 * (max(int(chunk or 4096), 2048) - max(target, 2048))
    gain = ""
    if freed_mb > 0:
        gain = f"; by SGLang's own sizing rule (1.5 MB per chunk token) about {freed_mb / 1024:.1f} GiB less"
        if pre:
            gain += f", i.e. about {freed_mb / 1024 / pre:.2f} more mem_fraction_static"
    fixes = [
        Fix(
            "sglang",
            f"smaller prefill chunks (--chunked-prefill-size {target})",
            sglang_command(command, model_name, {"--chunked-prefill-size": str(target)}),
            f"the prefill activation peak scales with the chunk: {why}{gain}",
            "long prompts prefill in more steps (slightly slower time to first token)",
            rank=rank,
        ),
        Fix(
            "sglang",
            "capture CUDA graphs for fewer batch sizes (--cuda-graph-max-bs 16)",
            sglang_command(command, model_name, {"--cuda-graph-max-bs": "16"}),
            "graph memory grows with the largest captured decode batch",
            "decode batches above 16 run without graphs (slower at high concurrency)",
            rank=rank + 1,
        ),
        Fix(
            "sglang",
            "smaller speculative draft (if you use speculative decoding)",
            sglang_command(
                command, model_name, {"--speculative-num-draft-tokens": "4", "--speculative-num-steps": "3"}
            ),
            "the draft model's weights, KV and graphs come out of the same memory (0.5.23 counts draft "
            "weights in this very check); fewer draft tokens/steps shrink them, no draft at all frees them",
            "a lower speculative speed-up",
            rank=rank + 2,
        ),
    ]
    running = facts.get("max_num_seqs")
    target_running = max(8, int(running) // 2) if running else 32
    fixes.append(
        Fix(
            "sglang",
            f"fewer running requests (--max-running-requests {target_running})",
            sglang_command(command, model_name, {"--max-running-requests": str(target_running)}),
            "a smaller decode batch needs fewer activations and graph memory",
            "lower peak throughput",
            rank=rank + 3,
        )
    )
    return fixes
