"""slack-manifest.yaml creates the app this adapter expects, in one paste."""

from __future__ import annotations

from pathlib import Path

import yaml

from adapters.slack.app import TRIAGE_CALLBACK

MANIFEST = Path(__file__).resolve().parents[3] / "slack-manifest.yaml"


def test_manifest_matches_the_adapter():
    data = yaml.safe_load(MANIFEST.read_text(encoding="utf-8"))
    scopes = set(data["oauth_config"]["scopes"]["bot"])
    assert scopes == {
        "commands",
        "chat:write",
        "app_mentions:read",
        "channels:history",
        "groups:history",
        "im:history",
        "files:read",
        "files:write",
    }
    settings = data["settings"]
    assert set(settings["event_subscriptions"]["bot_events"]) == {
        "message.channels",
        "message.groups",
        "message.im",
        "app_mention",
    }
    assert settings["interactivity"]["is_enabled"] is True
    assert settings["socket_mode_enabled"] is True
    features = data["features"]
    assert [c["command"] for c in features["slash_commands"]] == ["/vram"]
    (shortcut,) = features["shortcuts"]
    assert shortcut["type"] == "message" and shortcut["callback_id"] == TRIAGE_CALLBACK
    assert features["bot_user"]["display_name"]
