"""vLLM V1 printed how long a request its KV budget holds ("the estimated maximum model length is N"):
a fix never promises more than that relation allows, whatever the modelled layout says.  Two held-out
pipeline-parallel logs (tests/data/wild_logs.jsonl), where V1's start check asks each stage for the
whole model's KV: vllm#34076 (0.15.2rc1, version printed) and vllm#32105 (a nightly with no version,
read as the current release, so only the log's own figure catches it)."""

from __future__ import annotations

from bot.detector import detect
from bot.diagnosis import diagnose
from bot.shell import find_command
from tests.conftest import wild_log, wild_text


def _vllm_commands(text: str) -> list[str]:
    reply = diagnose(detect(text))
    assert reply is not None
    return [f.command for f in sorted(reply.fixes, key=lambda f: f.rank) if f.engine == "vllm"]


def test_pipeline_stage_check_on_the_printed_version():
    first = _vllm_commands(wild_log("vllm34076-pp2-qwen3coder30b-fp8")["text"])[0]
    # 3.18 GiB holds 34,736 tokens of the whole 48-layer model (logged); the per-stage layout alone
    # would have said 69,456 and printed --max-model-len 65536, which fails as printed
    assert first.endswith("--pipeline-parallel-size 2 --enable-chunked-prefill --enable-auto-tool-choice "
                          "--tool-call-parser qwen3_coder --max-model-len 32768")  # fmt: skip


def test_the_logged_fit_wins_when_the_version_is_unknown():
    commands = _vllm_commands(wild_log("vllm32105-pp8-glm47-fp8-a100")["text"])
    assert [c.rsplit("--reasoning-parser glm45 ", 1)[1] for c in commands] == [
        "--max-model-len 80896",  # 81,392 logged, rounded down to a multiple of 1024
        "--max-model-len 161792 --kv-cache-dtype fp8",
    ]


def test_a_command_quoted_as_inline_code_is_read_without_its_backticks():
    command = find_command("`bash CUDA_VISIBLE_DEVICES=0,1 vllm serve ./m --pipeline-parallel-size 2`\nerror")
    assert command is not None
    assert command.env == ["CUDA_VISIBLE_DEVICES=0,1"]
    assert command.argv == ["vllm", "serve", "./m", "--pipeline-parallel-size", "2"]


def test_the_logged_fit_bounds_a_model_less_plan_too():
    # club-3090#35 (tests/data/wild_2026c.jsonl): 3.05 GiB needed for 180,000 tokens, 2.17 GiB there, the
    # engine's estimate 111,456; no model named.  Linear in kv_needed / length it would be 128,064 tokens
    # (--max-model-len 128000, refused as printed): a hybrid model's per-request state is not per token
    reply = diagnose(detect(wild_text("wild_2026c.jsonl", "club3090-35-kv-180k-backticked")))
    assert reply is not None
    assert [f.adds for f in reply.fixes] == ["--kv-cache-dtype fp8", "--max-model-len 110592"]
    assert reply.fixes[0].verification["fit_tokens"] == 222912  # 2 x 128,064 x the logged 111,456 / 128,064


def test_the_cap_never_passes_the_engines_own_estimate():
    # vllm PR #46778 (tests/data/wild_2026e.jsonl, a hybrid Qwen3.5 model): 9.29 GiB needed for 262,144
    # tokens, 9.28 GiB there, the engine's estimate 260,800.  Linear in the two sizes it would be 261,862
    # (--max-model-len 261120, refused as printed): the cap stays at or below the printed estimate
    reply = diagnose(detect(wild_text("wild_2026e.jsonl", "vllm46778-wrapped-kv-262144")))
    assert reply is not None
    assert [f.adds for f in reply.fixes] == ["--kv-cache-dtype fp8", "--max-model-len 260096"]
