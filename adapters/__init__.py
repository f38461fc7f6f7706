"""Platform edges: the terminal (``cli``), Discord and Slack.  Only here are platform SDKs imported."""

from knowledge.code_cache import install as _install_dataclass_code_cache

_install_dataclass_code_cache()  # before this package builds its first dataclass (knowledge/code_cache.py)
