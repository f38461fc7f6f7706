"""Secrets in a paste are never echoed; the reply names the kind."""

from __future__ import annotations

import json
import unicodedata
from pathlib import Path

import pytest

from bot.redact import redact
from bot.secret_rules import default_rules
from tests.hardening.planted import echoed, planted

DEV = Path(__file__).resolve().parent.parent / "data" / "dev.jsonl"

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


# --- the formats a red-team pass found unrecognised (issue 15), each with its exact result -------

ISSUE_FORMATS = [
    ("GITLAB=glpat-" + "Ab3dE5gH7jK9mN1pQ3sT", "GITLAB=[GitLab token removed]", "GitLab token"),
    (
        "token eyJhbGciOiJIUzI1NiJ9.eyJzdWIiOiIxMjM0NTY3ODkwIn0.dozjgNryP4J3jVmNHl0w5N_XgL0n3I9PlFUP0THsR8U",
        "token [JSON Web Token removed]",
        "JSON Web Token",
    ),
    (
        "curl https://admin:Tr0ub4dor3xyz@api.example.com/v1",
        "curl https://admin:[password in a URL removed]@api.example.com/v1",
        "password in a URL",
    ),
    (
        "MY_SERVICE_API_KEY=9f8e7d6c5b4a39281706f5e4d3c2b1a0",
        "MY_SERVICE_API_KEY=[API key removed]",
        "API key",
    ),
    (
        "VLLM_API_KEY=token-abc123xyz789 vllm serve m",
        "VLLM_API_KEY=[API key removed] vllm serve m",
        "API key",
    ),
    (
        "AZURE_OPENAI_API_KEY=0123456789abcdef0123456789abcdef",
        "AZURE_OPENAI_API_KEY=[API key removed]",
        "API key",
    ),
    (
        "DefaultEndpointsProtocol=https;AccountName=acct;AccountKey=" + "Ab3dE5gH7jK9" * 7 + "Ab==;",
        "DefaultEndpointsProtocol=https;AccountName=acct;AccountKey=[Azure storage account key removed];",
        "Azure storage account key",
    ),
    (
        '{"AccessKeyId": "x", "SecretAccessKey": "wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY"}',
        '{"AccessKeyId": "x", "SecretAccessKey": "[AWS secret access key removed]"}',
        "AWS secret access key",
    ),
    (
        "tool --aws-secret-access-key wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY",
        "tool --aws-secret-access-key [AWS secret access key removed]",
        "AWS secret access key",
    ),
    (
        '{"type": "service_account", "private_key_id": "3f2a9c1b7e6d5a4f3e2d1c0b9a8f7e6d5c4b3a29"}',
        '{"type": "service_account", "private_key_id": "[secret in a JSON field removed]"}',
        "secret in a JSON field",
    ),
    (
        "Authorization: Basic dXNlcjpodW50ZXIyMDI0IQ==",
        "Authorization: Basic [credential in an Authorization header removed]",
        "credential in an Authorization header",
    ),
    (
        "Authorization: token 7e3f9a1c5b2d8e4f6a0c",
        "Authorization: token [credential in an Authorization header removed]",
        "credential in an Authorization header",
    ),
    (
        "hook https://discord.com/api/v10/webhooks/1234567890/Ab3dE5gH7jK9mN1pQ3sTuV5wX7yZ",
        "hook [Discord webhook URL removed]",
        "Discord webhook URL",
    ),
    ("vllm serve m --api-key s3cr3t-k3y-4711", "vllm serve m --api-key [API key removed]", "API key"),
    ("huggingface-cli login --token hf_x1Y2z3", "huggingface-cli login --token [token removed]", "token"),
    ("DB_PASSWORD=correct-horse-battery", "DB_PASSWORD=[password removed]", "password"),
]


@pytest.mark.parametrize(("text", "expected", "kind"), ISSUE_FORMATS, ids=[k for _t, _e, k in ISSUE_FORMATS])
def test_issue_formats_are_removed_exactly(text, expected, kind):
    r = redact(text)
    assert r.text == expected
    assert r.kinds == (kind,)


def test_names_and_placeholders_are_not_secrets():
    """What engines log next to key/token words: Ollama's ``key=OLLAMA_...``, special tokens, plurals,
    environment references, ``--api-key-file`` paths' neighbours."""
    for text in [
        'msg="using default" key=OLLAMA_GPU_OVERHEAD value=0',
        '"pad_token": "<|endoftext|>", "eos_token": "</s>"',
        "--max-num-batched-tokens 8192 --max-model-len 32768",
        'HF_TOKEN="${HF_TOKEN}" vllm serve m --api-key $VLLM_API_KEY',
        "'tokenizer': 'Qwen/Qwen2.5-7B-Instruct', 'max_model_len': 32768",
    ]:
        r = redact(text)
        assert (r.text, r.kinds) == (text, ()), text


def test_no_dev_corpus_paste_has_a_secret():
    rows = [json.loads(line) for line in DEV.read_text(encoding="utf-8").splitlines() if line]
    assert [(row["id"], redact(row["text"]).kinds) for row in rows if redact(row["text"]).found] == []


def test_the_notice_names_every_kind_found():
    text = (
        "HF_TOKEN=hf_" + "A1b2C3d4" * 5 + "\ncurl https://bob:Tr0ub4dor3xyz@example.com\n"
        "GL=glpat-" + "Ab3dE5gH7jK9mN1pQ3sT"
    )
    r = redact(text)
    assert r.kinds == ("Hugging Face token", "password in a URL", "GitLab token")
    assert r.warning() == (
        "Your paste contained a Hugging Face token, a password in a URL and a GitLab token. I removed them "
        "before reading the paste and repeat none of them, but anyone who read the channel has seen them: "
        "rotate them now."
    )


def test_a_secret_wrapped_over_many_lines_is_removed_whole():
    jwt = "eyJhbGciOiJIUzI1NiJ9." + "eyJzdWIiOiIxMjM0NTY3ODkwIiwibmFtZSI6" * 8 + ".sig_Ab3dE5gH7jK9mN1pQ3sT"
    line = "INFO 04-12 08:21:19 [api_server.py:1] Authorization: Bearer " + jwt
    wrapped = "\n".join(line[i : i + 80] for i in range(0, len(line), 80)) + "\nValueError: boom"
    r = redact(wrapped)
    assert all(line[i : i + 80][-12:] not in r.text for i in range(80, len(line), 80))
    assert r.text.endswith("\nValueError: boom")  # the next record is not taken for the secret's tail


def _wrap_columns(line: str, width: int) -> list[str]:
    """``line`` as a terminal of ``width`` columns shows it: a CJK character takes two."""
    rows, row, used = [], "", 0
    for ch in line:
        w = 2 if unicodedata.east_asian_width(ch) in "WF" else 1
        if used + w > width:
            rows, row, used = [*rows, row], "", 0
        row, used = row + ch, used + w
    return [*rows, row]


@pytest.mark.parametrize("cjk", [20, 26, 32, 33])
def test_a_secret_wrapped_after_wide_characters_is_removed_whole(cjk):
    # a line of CJK text holds fewer characters than columns, so the wrapped line after it is longer
    # in characters: the wrap is measured in columns (the first half alone was removed before, and the
    # rest of the token echoed on the next line)
    token = "hf_AbCdEfGhIjKlMnOpQrStUvWxYz0123456789"
    text = "错误日志：服务器启动失败，请检查配置文件和参数。" * 2
    line = text[:cjk] + f" --hf-token {token} --port 8000 --max-model-len 8192 --gpu-memory-utilization 0.9"
    rows = _wrap_columns(line, 80)
    assert len(rows[1]) > len(rows[0]) + 8  # longer in characters than the row it continues
    r = redact("INFO start\n" + "\n".join(rows) + "\nINFO done\n")
    assert [piece for piece in (token[:6], token[10:20], token[-8:]) if piece in r.text] == []
    assert "Hugging Face token" in r.kinds


# --- every gitleaks rule's own examples, in every placement ----------------------------------------

PLANTED = planted()
BY_RULE: dict[str, list] = {}
for _p in PLANTED:
    BY_RULE.setdefault(_p.rule, []).append(_p)


def test_the_corpus_covers_the_rules():
    rules = {r.id for r in default_rules().rules}
    assert len(BY_RULE) >= 200 and set(BY_RULE) <= rules
    assert {p.placement for p in PLANTED} == {
        "example",
        "example wrapped at 80 columns",
        "wrapped at 80 columns",
        "env prefix",
        "flag",
        "header",
        "JSON field",
        "URL",
    }


@pytest.mark.parametrize("rule", sorted(BY_RULE))
def test_every_example_in_every_placement_is_removed(rule):
    for item in BY_RULE[rule]:
        r = redact(item.text)
        assert not echoed(r.text, [item]), (item.placement, item.text)
        assert r.kinds, (item.placement, item.text)
        assert all(kind in r.warning() for kind in r.kinds)


def test_a_secret_wrapped_right_after_a_chain_of_wider_lines_loses_its_tail_too():
    # the log lines before it may all be wraps of one another; the chain ends on the secret's first line,
    # which is shorter: that line still continues on the next, where the token's tail was left behind
    token = "hf_" + "AbCdEfGh12" * 4
    line = f"INFO 04-12 08:21:19 [api_server.py:1] --hf-token {token} --port 8000 and more words here"
    filler = "INFO 04-12 08:21:19 [gpu_model_runner.py:1067] Model loading took 14.99 GiB and 5.1 seconds"
    r = redact("\n".join([filler] * 5 + [line[:80], line[80:]]))
    assert token[-12:] == "12AbCdEfGh12" and "12AbCdEfGh12" not in r.text and "hf_AbCd" not in r.text
    assert r.text.endswith("\n --port 8000 and more words here")


@pytest.mark.parametrize(
    ("head", "width"),
    [
        ("INFO 04-12 08:21:19 [api_server.py:1] args: vllm serve m --hf-token ", 70),
        ("vllm-1  | --api-key ", 40),
    ],
)
def test_a_prefixed_line_is_wide_enough_to_have_wrapped_by_its_raw_width(head, width):
    # the terminal wrapped the line with its log prefix: what is left once the prefix is cut is shorter
    # than a terminal, yet the next line holds the token's tail (none of it may stay, nor of its head)
    token = "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"
    line = head + token + " and more text follows here to fill"
    text = "\n".join(["short line", *(line[i : i + width] for i in range(0, len(line), width)), "   x = 1"])
    r = redact(text)
    assert not any(token[i : i + 8] in r.text for i in range(len(token) - 7)), r.text
