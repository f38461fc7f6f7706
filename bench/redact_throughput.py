"""Redactor throughput (MiB/s) on four shapes of paste: a realistic engine log, the same with a secret
every 200 lines, one 4 MiB line with no newline, and adversarial text full of the rules' keywords
(``token=``, ``key:``, ``://``, ``ey``) that never completes a secret.

Run from a checkout: .venv/bin/python bench/redact_throughput.py [MiB] [checkout]
(``checkout`` defaults to this one; pass another worktree to compare two versions on one machine.)
"""

from __future__ import annotations

import sys
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))

from _machine import describe  # noqa: E402

FILLER = [
    "INFO 04-12 08:21:19 [gpu_model_runner.py:1067] Model loading took 14.99 GiB and 5.1 seconds",
    "(EngineCore_DP0 pid=1133552) INFO 10-03 16:22:17 [loggers.py:123] Engine 000: Avg prompt throughput: "
    "12.3 tokens/s, Avg generation throughput: 45.6 tokens/s, Running: 3 reqs, GPU KV cache usage: 12.5%",
    'vllm-1  | INFO:     127.0.0.1:53422 - "POST /v1/chat/completions HTTP/1.1" 200 OK',
    "INFO 04-12 08:21:19 [arg_utils.py:1234] non-default args: {'model': 'Qwen/Qwen2.5-7B-Instruct', "
    "'max_model_len': 32768, 'tokenizer': 'Qwen/Qwen2.5-7B-Instruct'}",
    "srv  update_slots: id  0 | task 1234 | prompt done, n_past = 2048, n_tokens = 512",
]
SECRET = "HF_TOKEN=hf_" + "AbCdEfGh12" * 4


def shapes(mib: int) -> dict[str, str]:
    size = mib << 20
    log_lines = []
    total = 0
    while total < size:
        line = FILLER[len(log_lines) % len(FILLER)]
        if len(log_lines) % 200 == 199:
            line = f"{line} {SECRET}"
        log_lines.append(line)
        total += len(line) + 1
    plain = "\n".join(line for line in log_lines if SECRET not in line)
    hostile = ("token= key: x:// ey.ey Bearer -----BEGIN " * (size // 40))[:size]
    return {
        "engine log": plain,
        "engine log + secrets": "\n".join(log_lines),
        "one 4 MiB line": ("a" * 63 + " ") * (4 << 14),
        "keywords, no secret": hostile,
    }


def main() -> int:
    mib = int(sys.argv[1]) if len(sys.argv) > 1 else 4
    checkout = Path(sys.argv[2]).resolve() if len(sys.argv) > 2 else HERE.parent
    sys.path.insert(0, str(checkout))
    from bot.redact import redact

    print(f"redactor at {checkout} on {describe()}")
    for name, text in shapes(mib).items():
        redact(text[:10000])  # warm up (compiles the rules)
        start = time.perf_counter()
        found = redact(text)
        seconds = time.perf_counter() - start
        size = len(text.encode()) / (1 << 20)
        print(
            f"{name:22s} {size:6.1f} MiB  {seconds:6.2f} s  {size / seconds:7.1f} MiB/s  kinds={list(found.kinds)}"
        )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
