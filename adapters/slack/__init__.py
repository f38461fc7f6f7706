"""GPU Garden on Slack (slack-bolt ``AsyncApp``): Socket Mode by default, HTTP mode with a signing secret.

``serve(settings, service, health)`` is what ``adapters.runner`` starts; ``create_app`` builds the Bolt
app alone (tests, custom servers).  Translation lives in ``events``/``commands``, rendering in
``render``, file downloads in ``files``, the feedback buttons in ``feedback``.
"""

from adapters.slack.app import SlackBridge, SlackConfigError, bridge_for, build_client, create_app, serve

__all__ = ["SlackBridge", "SlackConfigError", "bridge_for", "build_client", "create_app", "serve"]
