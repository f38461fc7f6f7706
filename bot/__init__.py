"""The platform-neutral core: message model, detector, diagnosis, reply model, formatter, policy."""

from knowledge.code_cache import install as _install_dataclass_code_cache

_install_dataclass_code_cache()  # before this package builds its first dataclass (knowledge/code_cache.py)
