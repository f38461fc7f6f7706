"""The helpful / not helpful buttons under each answer, and storing a click.

A button's ``value`` carries the reply key (which answer) and the signature id (what it diagnosed),
so a click needs no lookup: it goes straight to ``GardenService.feedback``.
"""

from __future__ import annotations

import json
import logging
from dataclasses import dataclass
from typing import Any

from bot.service import GardenService

log = logging.getLogger("gpu_garden.slack.feedback")

ACTION_HELPFUL = "garden_feedback_helpful"
ACTION_NOT_HELPFUL = "garden_feedback_not_helpful"
ACTION_DETAILS = "garden_details"
FEEDBACK_BLOCK_ID = "garden_feedback"
BUTTON_VALUE_MAX = 2000


@dataclass(frozen=True)
class FeedbackRef:
    """What a feedback click needs to be stored: the reply's key and the signature it answered."""

    reply_key: str
    signature: str | None = None

    def value(self) -> str:
        key = self.reply_key[:500]
        sig = (self.signature or "")[:500]
        return json.dumps({"k": key, "s": sig}, separators=(",", ":"))[:BUTTON_VALUE_MAX]

    @classmethod
    def parse(cls, value: Any) -> FeedbackRef | None:
        try:
            data = json.loads(value) if isinstance(value, str) else None
        except ValueError:
            return None
        if not isinstance(data, dict) or not isinstance(data.get("k"), str) or not data["k"]:
            return None
        sig = data.get("s")
        return cls(data["k"], sig if isinstance(sig, str) and sig else None)


def details_button(ref: FeedbackRef) -> dict:
    """The "Details" button: its value names the reply whose full answer was stored."""
    return {
        "type": "button",
        "action_id": ACTION_DETAILS,
        "text": {"type": "plain_text", "text": "Details", "emoji": True},
        "value": FeedbackRef(ref.reply_key).value(),
    }


def feedback_block(ref: FeedbackRef, details: bool = False) -> dict:
    """The helpful / not helpful buttons, and Details when the reply's full answer is stored."""
    value = ref.value()
    return {
        "type": "actions",
        "block_id": FEEDBACK_BLOCK_ID,
        "elements": [
            {
                "type": "button",
                "action_id": ACTION_HELPFUL,
                "text": {"type": "plain_text", "text": "Helpful", "emoji": True},
                "value": value,
            },
            {
                "type": "button",
                "action_id": ACTION_NOT_HELPFUL,
                "text": {"type": "plain_text", "text": "Not helpful", "emoji": True},
                "value": value,
            },
            *([details_button(ref)] if details else []),
        ],
    }


async def record_click(service: GardenService, body: dict[str, Any], action: dict[str, Any]) -> bool | None:
    """Store one click; None when the payload is not one of our buttons (or is malformed)."""
    ref = FeedbackRef.parse(action.get("value"))
    user = (body.get("user") or {}).get("id")
    if ref is None or not user:
        log.warning("feedback click without a usable value or user; ignored")
        return None
    helpful = action.get("action_id") == ACTION_HELPFUL
    return await service.feedback("slack", ref.reply_key, str(user), ref.signature, helpful)


def thanks(helpful: bool, stored: bool) -> str:
    if not stored:
        return "Thanks! (I could not save your vote just now.)"
    return "Thanks, glad it helped." if helpful else "Thanks for telling me; I'll count it against this fix."
