"""Platform edges: the terminal (``cli``), Discord and Slack.  Only here are platform SDKs imported.

Each adapter module imports ``bot`` before it builds a dataclass, and ``bot`` installs the dataclass code
table (knowledge/code_cache.py), so this package does not: ``gpu-garden --help`` imports neither it nor
``dataclasses``.
"""
