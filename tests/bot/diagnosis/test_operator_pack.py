"""A new error family in an existing diagnosis form is YAML only: an operator pack's signature gets a
full reply with verified fixes, without any Python."""

from __future__ import annotations

from bot.core import GardenBot, Paste
from bot.detector import Detector
from knowledge.loader import load_with_extra

PACK = """engine: vllm
signatures:
  - id: acme.vllm_fork.kv_short
    category: kv_cache_too_small
    title: "ACME vLLM fork: the KV cache is too small"
    patterns: ['KVBudgetError: need (?P<max_model_len>[0-9]+) tokens, pool holds (?P<kv_tokens>[0-9]+)']
    captures: {max_model_len: tokens, kv_tokens: tokens}
    cause: "The pool holds {kv_tokens} tokens and one request of {max_model_len} does not fit."
    remedies: [max_model_len]
    examples:
      - text: "KVBudgetError: need 65536 tokens, pool holds 20000"
        params: {max_model_len: 65536, kv_tokens: 20000}
"""


def test_an_operator_pack_signature_gets_verified_fixes(tmp_path):
    (tmp_path / "acme.yaml").write_text(PACK)
    bot = GardenBot(detector=Detector(load_with_extra(tmp_path)))
    text = "$ vllm serve acme/model-7b --max-model-len 65536\nKVBudgetError: need 65536 tokens, pool holds 20000\n"
    reply = bot.triage(Paste(text, False, []))
    assert reply is not None and reply.signature == "acme.vllm_fork.kv_short"
    assert reply.summary.startswith("What is left for the KV cache holds 20,000 tokens")
    (fix,) = [f for f in reply.fixes if f.engine == "vllm"]
    assert fix.command == "vllm serve acme/model-7b --max-model-len 19456"
    assert fix.verification == {"starts": True, "fit_tokens": 20000, "kv_cache_gib": None, "serves": 19456}
