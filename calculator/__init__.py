"""Pure memory math and the catalogs it reads (GPUs, models, quantization formats).

Nothing here imports ``bot`` or ``adapters``; the only I/O is reading the YAML data shipped in
``calculator/data`` (and, on request, a local config.json or GGUF file).
"""
