"""Secrets in a paste are never echoed; the reply names the kind."""

from __future__ import annotations

import pytest

from bot.redact import redact

SECRETS = {
    "Hugging Face token": "hf_" + "A1b2C3d4" * 5,
    "OpenAI-style API key": "sk-proj-" + "x" * 40,
    "Anthropic API key": "sk-ant-api03-" + "y" * 40,
    "AWS access key id": "AKIA" + "ABCDEFGHIJKLMNOP",
    "GitHub token": "ghp_" + "a" * 36,
    "Slack token": "xoxb-1234567890-abcdefghijkl",
    "Slack app token": "xapp-1-A0123456789-abcdefghij",
    "Discord token": "MTIzNDU2Nzg5MDEyMzQ1Njc4.GAbCdE." + "z" * 38,
    "bearer token": "Authorization: Bearer " + "t" * 40,
}


@pytest.mark.parametrize(("kind", "secret"), SECRETS.items())
def test_each_kind_is_removed(kind, secret):
    r = redact(f"INFO starting with {secret} and more text")
    assert secret not in r.text
    assert kind in r.kinds
    assert "rotate" in r.warning()


def test_private_key_block_removed():
    key = "-----BEGIN OPENSSH PRIVATE KEY-----\nb3BlbnNzaC1rZXktdjEAAAAA\nAAAABG5vbmU=\n-----END OPENSSH PRIVATE KEY-----"
    r = redact("before\n" + key + "\nafter")
    assert "b3BlbnNzaC1rZXkt" not in r.text and "after" in r.text
    assert r.kinds == ("private key",)


def test_ordinary_log_is_untouched():
    text = "ValueError: The model's max seq len (131072) is larger than ... KV cache (5728). sk-short"
    r = redact(text)
    assert r.text == text and not r.found
