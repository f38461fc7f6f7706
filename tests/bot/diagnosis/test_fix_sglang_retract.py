"""SGLang retracting decoding requests: its tuning guide's own setting, --schedule-conservativeness 1.3."""

from __future__ import annotations

from bot.detector import detect
from bot.diagnosis import diagnose
from tests.bot.diagnosis.helpers import runnable


def test_retraction_raises_the_schedule_conservativeness():
    text = "[2025-03-07 21:49:33 TP13] Decode out of memory happened. #retracted_reqs: 1, #new_token_ratio: 0.1474 -> 0.1845"
    reply = diagnose(detect(text))
    assert reply is not None
    assert runnable(reply.fixes[0]) == "+ --schedule-conservativeness 1.3"  # no command in the paste
