"""A Hub lookup against the fake Hub on 127.0.0.1 (the real huggingface_hub client): the first lookup
(config.json + safetensors header by range request), the second (disk cache, no request), and a Hub that
stalls (the answer comes at the 3 s bound, saying so).  Includes importing huggingface_hub in the first.

Run: .venv/bin/python bench/hub_lookup.py
"""

from __future__ import annotations

import json
import os
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from _machine import describe

from bot.model_sources import resolve_model_arg
from calculator.resolve import NameNotFound
from tests.bot.fake_hub import FakeHub, safetensors_header
from tests.bot.test_hub import CONFIG, REPO, TENSORS


def main() -> None:
    print(describe())
    fake = FakeHub()
    fake.add(
        REPO, {"config.json": json.dumps(CONFIG).encode(), "model.safetensors": safetensors_header(TENSORS)}
    )
    fake.start()
    os.environ["HF_ENDPOINT"] = fake.url
    os.environ.pop("HF_HUB_OFFLINE", None)
    cache = Path(tempfile.mkdtemp())
    start = time.monotonic()
    resolve_model_arg(REPO, allow_hub=True, cache_dir=cache)
    first, asked = time.monotonic() - start, len(fake.requests)
    start = time.monotonic()
    resolve_model_arg(REPO, allow_hub=True, cache_dir=cache)
    second = time.monotonic() - start
    print(f"first lookup: {first * 1000:.0f} ms, {asked} requests")
    print(f"second lookup: {second * 1000:.1f} ms, {len(fake.requests) - asked} requests")
    fake.delay = 10.0
    start = time.monotonic()
    try:
        resolve_model_arg("acme-labs/Zq-Unlisted-Xk9", allow_hub=True, cache_dir=cache)
    except NameNotFound as exc:
        print(f"stalled Hub: answered after {time.monotonic() - start:.2f} s: ...{str(exc)[-70:]}")
    sys.stdout.flush()
    os._exit(0)  # the stalled worker is a daemon still waiting on the fake


if __name__ == "__main__":
    main()
