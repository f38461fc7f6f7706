"""Pure memory math and the catalogs it reads (GPUs, models, quantization formats).

Nothing here imports ``bot`` or ``adapters``; the only I/O is reading the YAML data shipped in
``calculator/data`` (and, on request, a local config.json or GGUF file), through the caches of
:mod:`knowledge.cache` and :mod:`knowledge.code_cache`.
"""

from knowledge.code_cache import install as _install_dataclass_code_cache

_install_dataclass_code_cache()  # before this package builds its first dataclass (knowledge/code_cache.py)
