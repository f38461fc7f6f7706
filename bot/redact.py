"""Find secrets in a paste and replace them before anything else reads it.

The reply then says which kinds were found and that they should be rotated; the secret itself is
never echoed, logged or stored.  All patterns are RE2 (linear time).
"""

from __future__ import annotations

from dataclasses import dataclass

import re2

# (kind, pattern); the whole match is replaced
_PATTERNS: list[tuple[str, str]] = [
    (
        "private key",
        r"-----BEGIN [A-Z ]*PRIVATE KEY-----[A-Za-z0-9+/=\s]*(?:-----END [A-Z ]*PRIVATE KEY-----)?",
    ),
    ("Hugging Face token", r"\bhf_[A-Za-z0-9]{30,}"),
    ("Anthropic API key", r"\bsk-ant-[A-Za-z0-9_-]{20,}"),
    ("OpenAI-style API key", r"\bsk-(?:proj-|svcacct-|admin-)?[A-Za-z0-9_-]{20,}"),
    ("AWS access key id", r"\b(?:AKIA|ASIA)[0-9A-Z]{16}\b"),
    ("AWS secret access key", r"(?i)aws_?secret_?access_?key[\"']?\s*[:=]\s*[\"']?[A-Za-z0-9/+=]{40}"),
    ("GitHub token", r"\b(?:gh[pousr]_[A-Za-z0-9]{36,}|github_pat_[A-Za-z0-9_]{40,})"),
    ("Slack token", r"\bxox[abposr]-[A-Za-z0-9-]{10,}"),
    ("Slack app token", r"\bxapp-[0-9]-[A-Za-z0-9-]{10,}"),
    ("Slack webhook URL", r"https://hooks\.slack\.com/services/[A-Za-z0-9/_-]{20,}"),
    ("Discord token", r"\b[MNO][A-Za-z0-9_-]{23,27}\.[A-Za-z0-9_-]{6}\.[A-Za-z0-9_-]{27,40}\b"),
    (
        "Discord webhook URL",
        r"https://(?:ptb\.|canary\.)?discord(?:app)?\.com/api/webhooks/[0-9]+/[A-Za-z0-9_-]{20,}",
    ),
    ("Google API key", r"\bAIza[0-9A-Za-z_-]{35}\b"),
    ("bearer token", r"(?i)\bbearer\s+[A-Za-z0-9._~+/-]{20,}=*"),
    (
        "API key",
        r"(?i)\b(?:api[_-]?key|access[_-]?token|secret[_-]?key|hf_token|hugging_face_hub_token|openai_api_key)[\"']?\s*[:=]\s*[\"']?[A-Za-z0-9._~+/-]{16,}",
    ),
]
_COMPILED = [(kind, re2.compile(p)) for kind, p in _PATTERNS]


@dataclass(frozen=True)
class Redaction:
    text: str
    kinds: tuple[str, ...]  # kinds found, in order of first appearance

    @property
    def found(self) -> bool:
        return bool(self.kinds)

    def warning(self) -> str:
        return (
            "Your paste contained "
            + ", ".join(f"a {k}" for k in self.kinds)
            + ". I did not repeat it, but anyone who read the channel has seen it: rotate it now."
        )


def redact(text: str) -> Redaction:
    kinds: list[str] = []
    for kind, pattern in _COMPILED:
        if pattern.search(text) is None:
            continue
        text = pattern.sub(f"[{kind} removed]", text)
        if kind not in kinds:
            kinds.append(kind)
    return Redaction(text, tuple(kinds))
