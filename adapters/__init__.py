"""Platform edges: the terminal (``cli``), Discord and Slack.  Only here are platform SDKs imported."""
