"""Model and GPU names as 2025-26 threads write them, each resolving to the exact entry or asking.

Every name below was read from a public vLLM / llama.cpp / Ollama / SGLang (or downstream) thread; the comment
above each group is the thread. A row is (typed name, catalog model id, checkpoint label, whether a note is
required); ``None`` means the resolver must ask (NameNotFound) rather than answer for another model: unreleased or
uncatalogued releases (Qwen3.8, Kimi-K2.6 / K3, GLM-5.3, DeepSeek-V4, Mistral Small 4, Gemma 4 E2B), and
files whose size no catalogued quant gives (Unsloth's UD-*_K_XL mixes). GPUs: (typed name, card id or ``None``).
"""

from __future__ import annotations

import pytest

from calculator.catalog import variant_weight_bytes
from calculator.kv import vllm_layout
from calculator.resolve import NameNotFound, resolve_gpu, resolve_model
from calculator.units import GIB

MODELS: list[tuple[str, str | None, str | None, bool]] = [
    # https://github.com/QwenLM/Qwen3-VL/issues/1493
    (
        "Qwen3-VL-235B-A22B-Instruct",
        "Qwen/Qwen3-VL-235B-A22B-Instruct",
        "Qwen/Qwen3-VL-235B-A22B-Instruct",
        False,
    ),
    # https://github.com/intel/llm-scaler/issues/703
    ("Qwen/Qwen3.8-27B", None, None, False),
    # https://github.com/vllm-project/vllm/issues/35191
    ("Qwen/Qwen3-VL-8B-Instruct-FP8", "Qwen/Qwen3-VL-8B-Instruct", "Qwen/Qwen3-VL-8B-Instruct-FP8", False),
    # https://github.com/vllm-project/vllm-ascend/issues/5020
    ("Qwen3-Next", "Qwen/Qwen3-Next-80B-A3B-Instruct", "Qwen/Qwen3-Next-80B-A3B-Instruct", False),
    # https://github.com/ollama/ollama/issues/13423
    ("qwen3:30b", "Qwen/Qwen3-30B-A3B", "qwen3:30b", False),
    # https://github.com/ollama/ollama/issues/14532
    ("qwen3-vl:30b", "Qwen/Qwen3-VL-30B-A3B-Instruct", "Qwen/Qwen3-VL-30B-A3B-Instruct", True),
    # https://github.com/ollama/ollama/issues/16447
    ("qwen3-embedding:8B", None, None, False),
    # https://github.com/ggml-org/llama.cpp/issues/19355
    ("unsloth_Qwen3-Coder-Next-GGUF_Qwen3-Coder-Next-UD-Q4_K_XL.gguf", None, None, False),
    ("Qwen3-Coder-Next-UD-Q8_K_XL-00001-of-00003.gguf", None, None, False),
    # https://github.com/janhq/jan/issues/8181
    ("Qwen3_6-35B-A3B-Uncensored-HauhauCS-Aggressive-IQ2_M", None, None, False),
    # https://github.com/KLL535/ComfyUI_Simple_Qwen3-VL-gguf/issues/25
    (
        "gemma-4-26B-A4B-it-UD-Q4_K_M.gguf",
        "google/gemma-4-26B-A4B-it",
        "gemma-4-26B-A4B-it-UD-Q4_K_M.gguf",
        True,
    ),
    # https://github.com/sgl-project/sglang/issues/22757
    ("models/DeepSeek-V3.2-AWQ", "deepseek-ai/DeepSeek-V3.2", "models/DeepSeek-V3.2-AWQ", True),
    ("models/GLM-5-NVFP4-MTP", None, None, False),
    # https://github.com/sgl-project/sglang/issues/9590
    ("deepseek-ai/DeepSeek-V3.2-Exp", None, None, False),
    ("deepseek-ai/DeepSeek-V3.2", "deepseek-ai/DeepSeek-V3.2", "deepseek-ai/DeepSeek-V3.2", False),
    ("/deepseek/deepseek-ai/DeepSeek-V3.1/", "deepseek-ai/DeepSeek-V3.1", "deepseek-ai/DeepSeek-V3.1", False),
    # https://github.com/sgl-project/sglang/issues/37852
    ("/models/DeepSeek-V4-Flash", None, None, False),
    # https://github.com/Ascend/sglang/pull/1185
    ("DeepSeek-V4-Flash-0731-w8a8", None, None, False),
    ("DeepSeek-R1-0528", "deepseek-ai/DeepSeek-R1-0528", "deepseek-ai/DeepSeek-R1-0528", False),
    # https://github.com/sgl-project/sglang-jax/pull/564
    (
        "deepseek-ai/DeepSeek-V2-Lite",
        "deepseek-ai/DeepSeek-V2-Lite-Chat",
        "deepseek-ai/DeepSeek-V2-Lite-Chat",
        False,
    ),
    # https://github.com/vllm-project/vllm/issues/40437
    ("gemma-4-31B-it-unsloth-bnb-4bit", "google/gemma-4-31B-it", "gemma-4-31B-it-unsloth-bnb-4bit", True),
    # https://github.com/vllm-project/vllm/issues/45259
    ("google/gemma-4-E2B-it", None, None, False),
    # https://github.com/vllm-project/vllm/issues/53836
    ("nvidia/Gemma-4-26B-A4B-NVFP4", "google/gemma-4-26B-A4B-it", "nvidia/Gemma-4-26B-A4B-NVFP4", True),
    ("google/gemma-4-26B-A4B-it-assistant", None, None, False),
    # https://github.com/vllm-project/recipes/pull/648
    ("Qwen3.6-27B", "Qwen/Qwen3.6-27B", "Qwen/Qwen3.6-27B", False),
    ("Qwen3.6-35B-A3B", "Qwen/Qwen3.6-35B-A3B", "Qwen/Qwen3.6-35B-A3B", False),
    (
        "NVIDIA-Nemotron-3-Super-120B-A12B",
        "nvidia/NVIDIA-Nemotron-3-Super-120B-A12B-BF16",
        "nvidia/NVIDIA-Nemotron-3-Super-120B-A12B-BF16",
        False,
    ),
    ("nvidia/Qwen3.6-27B-NVFP4", "Qwen/Qwen3.6-27B", "nvidia/Qwen3.6-27B-NVFP4", False),
    # https://github.com/ai-dynamo/aiconfigurator/issues/654
    (
        "meta-llama/Llama-3.3-70B-Instruct",
        "meta-llama/Llama-3.3-70B-Instruct",
        "meta-llama/Llama-3.3-70B-Instruct",
        False,
    ),
    ("gpt-oss-120b", "openai/gpt-oss-120b", "openai/gpt-oss-120b", False),
    # https://github.com/vllm-project/vllm-project.github.io/pull/214
    (
        "Nemotron-3-Super-120B-A12B-NVFP4",
        "nvidia/NVIDIA-Nemotron-3-Super-120B-A12B-BF16",
        "Nemotron-3-Super-120B-A12B-NVFP4",
        True,
    ),
    (
        "nvidia/NVIDIA-Nemotron-3-Super-120B-A12B-NVFP4",
        "nvidia/NVIDIA-Nemotron-3-Super-120B-A12B-BF16",
        "nvidia/NVIDIA-Nemotron-3-Super-120B-A12B-NVFP4",
        True,
    ),
    # https://github.com/vllm-project/recipes/pull/187
    (
        "nvidia/NVIDIA-Nemotron-3-Nano-30B-A3B-BF16",
        "nvidia/NVIDIA-Nemotron-3-Nano-30B-A3B-BF16",
        "nvidia/NVIDIA-Nemotron-3-Nano-30B-A3B-BF16",
        False,
    ),
    # https://github.com/vllm-project/recipes/pull/632
    (
        "NVIDIA-Nemotron-3-Super-120B-A12B-BF16",
        "nvidia/NVIDIA-Nemotron-3-Super-120B-A12B-BF16",
        "nvidia/NVIDIA-Nemotron-3-Super-120B-A12B-BF16",
        False,
    ),
    # https://github.com/mark-ramsey-ri/vllm-dgx-spark/issues/4
    (
        "meta-llama/Llama-3.1-70B-Instruct",
        "meta-llama/Llama-3.1-70B-Instruct",
        "meta-llama/Llama-3.1-70B-Instruct",
        False,
    ),
    ("openai/gpt-oss-120b", "openai/gpt-oss-120b", "openai/gpt-oss-120b", False),
    # https://github.com/olafkfreund/nixos_config/pull/816
    ("qwen2.5-coder:14b", "Qwen/Qwen2.5-Coder-14B-Instruct", "qwen2.5-coder:14b", False),
    # https://github.com/davealtena/homelab/pull/1984
    ("qwen3:14b", "Qwen/Qwen3-14B", "qwen3:14b", False),
    ("openai/qwen3:14b", "Qwen/Qwen3-14B", "qwen3:14b", True),
    # https://github.com/goruck/home-generative-agent/issues/131
    ("qwen2.5:32b", "Qwen/Qwen2.5-32B-Instruct", "qwen2.5:32b", False),
    # https://github.com/ollama/ollama/issues/14774
    ("qwen3:32b", "Qwen/Qwen3-32B", "qwen3:32b", False),
    # https://github.com/geerlingguy/ai-benchmarks/issues/43
    ("tinyllama-1.1b-1t-openorca.Q4_K_M.gguf", None, None, False),
    ("Llama-3.2-3B-Instruct-Q4_K_M.gguf", "meta-llama/Llama-3.2-3B-Instruct", "llama3.2:3b", False),
    # https://github.com/MiniMax-AI/MiniMax-M2.5/issues/30
    (
        "/lustre/fsn1/projects/rech/ari/uls42ep/models/MiniMax-M2.5",
        "MiniMaxAI/MiniMax-M2.5",
        "MiniMaxAI/MiniMax-M2.5",
        False,
    ),
    # https://github.com/kyuz0/amd-strix-halo-vllm-toolboxes/issues/2
    (
        "Qwen/Qwen3-Coder-30B-A3B-Instruct",
        "Qwen/Qwen3-Coder-30B-A3B-Instruct",
        "Qwen/Qwen3-Coder-30B-A3B-Instruct",
        False,
    ),
    ("Qwen3 30B A3B Instruct", "Qwen/Qwen3-30B-A3B", "Qwen/Qwen3-30B-A3B", True),
    # https://github.com/vllm-project/vllm/issues/27706
    ("Qwen/Qwen3-VL-2B-Instruct", "Qwen/Qwen3-VL-2B-Instruct", "Qwen/Qwen3-VL-2B-Instruct", False),
    ("Qwen2.5-VL-3B", None, None, False),
    # https://github.com/gpustack/gpustack/issues/4963
    ("qwen3.5-0.8b", None, None, False),
    # https://github.com/mixa3607/ML-gfx906/issues/3
    (
        "/home/model/Qwen3-VL-8B-Instruct-AWQ",
        "Qwen/Qwen3-VL-8B-Instruct",
        "/home/model/Qwen3-VL-8B-Instruct-AWQ",
        True,
    ),
    (
        "cpatonn/Qwen3-VL-8B-Instruct-AWQ-4bit",
        "Qwen/Qwen3-VL-8B-Instruct",
        "cpatonn/Qwen3-VL-8B-Instruct-AWQ-4bit",
        True,
    ),
    # https://github.com/lmstudio-ai/lmstudio-bug-tracker/issues/1343
    (
        "Qwen3VL-32B-Instruct-F16-split-00001-of-00002.gguf",
        "Qwen/Qwen3-VL-32B-Instruct",
        "Qwen3VL-32B-Instruct-F16-split-00001-of-00002.gguf",
        True,
    ),
    # https://github.com/ggml-org/llama.cpp/issues/22425
    (
        "bartowski/Qwen_Qwen3.6-35B-A3B-GGUF/Qwen_Qwen3.6-35B-A3B-Q4_0.gguf",
        "Qwen/Qwen3.6-35B-A3B",
        "bartowski/Qwen_Qwen3.6-35B-A3B-GGUF/Qwen_Qwen3.6-35B-A3B-Q4_0.gguf",
        True,
    ),
    (
        "unsloth/Qwen3.6-35B-A3B-GGUF/Qwen3.6-35B-A3B-UD-Q4_K_M.gguf",
        "Qwen/Qwen3.6-35B-A3B",
        "unsloth/Qwen3.6-35B-A3B-GGUF/Qwen3.6-35B-A3B-UD-Q4_K_M.gguf",
        True,
    ),
    # https://github.com/ggml-org/llama.cpp/issues/24223
    ("Qwen3.6-35B-A3B-UD-IQ4_XS.gguf", "Qwen/Qwen3.6-35B-A3B", "Qwen3.6-35B-A3B-UD-IQ4_XS.gguf", True),
    # https://github.com/ikawrakow/ik_llama.cpp/issues/1520
    (
        "bartowski/Qwen_Qwen3.5-27B-Q8_0.gguf",
        "Qwen/Qwen3.5-27B",
        "bartowski/Qwen_Qwen3.5-27B-Q8_0.gguf",
        True,
    ),
    # https://github.com/ikawrakow/ik_llama.cpp/issues/1420
    ("/mnt2/srcds/ai/Qwen3.5-35B-A3B-UD-Q6_K_XL.gguf", None, None, False),
    # https://github.com/unslothai/unsloth/issues/5636
    ("Qwen3.6-27B-MTP-GGUF", None, None, False),
    # https://github.com/ggml-org/llama.cpp/issues/21919
    (
        "/home/raghuboi/Desktop/models/Qwen3.6-35B-A3B-UD-Q4_K_M.gguf",
        "Qwen/Qwen3.6-35B-A3B",
        "/home/raghuboi/Desktop/models/Qwen3.6-35B-A3B-UD-Q4_K_M.gguf",
        True,
    ),
    ("qwen3.5-27b", "Qwen/Qwen3.5-27B", "Qwen/Qwen3.5-27B", False),
    # https://github.com/ggml-org/llama.cpp/issues/20024
    (
        "~/ssdModels/Qwen_Qwen3.5-35B-A3B-Q8_0.gguf",
        "Qwen/Qwen3.5-35B-A3B",
        "~/ssdModels/Qwen_Qwen3.5-35B-A3B-Q8_0.gguf",
        True,
    ),
    # https://github.com/vllm-project/vllm/issues/44911
    (
        "mistralai/Devstral-Small-2-24B-Instruct-2512",
        "mistralai/Devstral-Small-2-24B-Instruct-2512",
        "mistralai/Devstral-Small-2-24B-Instruct-2512",
        False,
    ),
    ("mistralai/Mistral-Small-4-119B-2603-NVFP4", None, None, False),
    # https://github.com/btbtyler09/mi100-llm-testing/issues/5
    ("btbtyler09/Devstral-Small-2-24B-Instruct-INT4-INT8-Mixed-GPTQ", None, None, False),
    # https://github.com/MetaX-MACA/vLLM-metax/issues/335
    (
        "mistralai/Ministral-3-14B-Instruct-2512",
        "mistralai/Ministral-3-14B-Instruct-2512",
        "mistralai/Ministral-3-14B-Instruct-2512",
        False,
    ),
    # https://github.com/vllm-project/vllm-ascend/issues/8817
    ("Eco-Tech/GLM-5.1-w8a8", None, None, False),
    # https://github.com/ollama/ollama/issues/13805
    ("glm-4.7-flash:latest", "zai-org/GLM-4.7-Flash", "zai-org/GLM-4.7-Flash", True),
    # https://github.com/vllm-project/vllm/issues/46985
    ("GLM-5.1-AWQ", "zai-org/GLM-5.1", "GLM-5.1-AWQ", True),
    # https://github.com/vllm-project/vllm/issues/44545
    ("GLM-5 FP8", "zai-org/GLM-5", "zai-org/GLM-5-FP8", False),
    # https://github.com/yhfgyyf/vllm-deepseek-v4-sm89/issues/74
    ("GLM5.3flash", None, None, False),
    # https://github.com/wtdcode/vllm-backport/issues/87
    ("JJ48-24/GLM-5.3-Flash-AWQ-W4A16-aggr-w8-mtpq8c-int4g32-mixA", None, None, False),
    # https://github.com/sgl-project/sglang/issues/28525
    ("GLM-5.2-FP8", "zai-org/GLM-5.2", "zai-org/GLM-5.2-FP8", False),
    # https://github.com/sgl-project/sglang/issues/29562
    ("/data/models/nvidia/GLM-5.2-NVFP4", "zai-org/GLM-5.2", "nvidia/GLM-5.2-NVFP4", False),
    # https://github.com/zai-org/GLM-V/issues/246
    ("GLM-4.6V", None, None, False),
    # https://github.com/MoonshotAI/Kimi-K2/issues/122
    ("kimi-k2.5", "moonshotai/Kimi-K2.5", "moonshotai/Kimi-K2.5", False),
    # https://github.com/vllm-project/recipes/issues/698
    ("/root/.cache/huggingface/moonshotai/Kimi-K3", None, None, False),
    # https://github.com/kvcache-ai/ktransformers/issues/2076
    ("/mnt/qjhs-sh-lab-01/models/Kimi-K2.6", None, None, False),
    # https://github.com/vllm-project/vllm/issues/42426
    ("Lightseekorg/kimi-k2.6-eagle3.1-mla", None, None, False),
    # https://github.com/vllm-project/recipes/pull/395
    ("moonshotai/Kimi-K2.5", "moonshotai/Kimi-K2.5", "moonshotai/Kimi-K2.5", False),
    # https://github.com/guqiong96/Lvllm/issues/32
    ("/data/models/moonshotai/Kimi-K25/", None, None, False),
    # https://github.com/ROCm/ATOM/pull/1193
    ("Kimi-K2.5-MXFP4", "moonshotai/Kimi-K2.5", "Kimi-K2.5-MXFP4", True),
    # https://github.com/vllm-project/recipes/pull/62
    ("moonshotai/Kimi-K2-Instruct", "moonshotai/Kimi-K2-Instruct", "moonshotai/Kimi-K2-Instruct", False),
    # https://github.com/CrispStrobe/CrispASR/issues/30
    ("qwen3-asr-1.7b-q8_0.gguf", None, None, False),
    # https://github.com/withcatai/node-llama-cpp/issues/560
    ("hf_tobil_qmd-query-expansion-1.7B-q4_k_m.gguf", None, None, False),
    # https://github.com/LostRuins/koboldcpp/issues/2262
    ("gemma-4-26B-A4B-it-qat-UD-Q4_K_XL.gguf", None, None, False),
    # https://github.com/ikawrakow/ik_llama.cpp/issues/2173
    ("mtp-gemma-4-26B-A4B-it-BF16.gguf", None, None, False),
    # https://github.com/aarora79/agentic-coding-harness-benchmarks/pull/14
    ("google/gemma-4-31B-it", "google/gemma-4-31B-it", "google/gemma-4-31B-it", False),
    # https://github.com/vllm-project/recipes/pull/716
    ("google/gemma-4-26B-A4B-it", "google/gemma-4-26B-A4B-it", "google/gemma-4-26B-A4B-it", False),
    (
        "RedHatAI/gemma-4-26B-A4B-it-FP8-dynamic",
        "google/gemma-4-26B-A4B-it",
        "RedHatAI/gemma-4-26B-A4B-it-FP8-dynamic",
        True,
    ),
    (
        "RedHatAI/gemma-4-26B-A4B-it-NVFP4",
        "google/gemma-4-26B-A4B-it",
        "RedHatAI/gemma-4-26B-A4B-it-NVFP4",
        True,
    ),
    ("RedHatAI/gemma-4-26B-A4B-it-speculator.eagle3", None, None, False),
    # https://github.com/lmstudio-ai/lmstudio-bug-tracker/issues/1740
    ("google/gemma-4-31b", "google/gemma-4-31B-it", "google/gemma-4-31B-it", False),
    # https://github.com/vllm-project/vllm/issues/17604
    (
        "/data1/llm-models/qwen/Qwen3-235B-A22B-GPTQ-Int4",
        "Qwen/Qwen3-235B-A22B",
        "Qwen/Qwen3-235B-A22B-GPTQ-Int4",
        False,
    ),
    # https://github.com/ollama/ollama/issues/10810
    ("qwen3:235b", "Qwen/Qwen3-235B-A22B", "qwen3:235b", False),
    # https://github.com/ollama/ollama/issues/10848
    ("qwen3-4b:latest", "Qwen/Qwen3-4B", "qwen3:4b", True),
    # https://github.com/ollama/ollama/issues/9002
    ("Deepseek-r1-70B", "deepseek-ai/DeepSeek-R1-Distill-Llama-70B", "deepseek-r1:70b", False),
    # https://github.com/EricLBuehler/mistral.rs/issues/1310
    ("final-Qwen--QwQ-32B.gguf", None, None, False),
    # https://github.com/geerlingguy/raspberry-pi-pcie-devices/issues/680
    ("llama-3.2-1b-instruct-Q4_K_M.gguf", "meta-llama/Llama-3.2-1B-Instruct", "llama3.2:1b", False),
    # https://github.com/lmstudio-ai/lmstudio-bug-tracker/issues/635
    ("qwen3-30b-a3b", "Qwen/Qwen3-30B-A3B", "Qwen/Qwen3-30B-A3B", False),
    # https://github.com/EricLBuehler/mistral.rs/issues/1576
    ("Devstral-Small-2507-Q4_K_M.gguf", "mistralai/Devstral-Small-2505", "devstral:24b", True),
    # https://github.com/vllm-project/vllm/issues/20902
    ("Devstral-Small-2507", "mistralai/Devstral-Small-2505", "mistralai/Devstral-Small-2505", True),
    # https://github.com/vllm-project/vllm/issues/15027
    (
        "mistralai/Mistral-Small-3.1-24B-Instruct-2503",
        "mistralai/Mistral-Small-3.1-24B-Instruct-2503",
        "mistralai/Mistral-Small-3.1-24B-Instruct-2503",
        False,
    ),
    # https://github.com/sgl-project/sglang/issues/1439
    (
        "meta-llama/Meta-Llama-3.1-405B-Instruct-FP8",
        "meta-llama/Llama-3.1-405B-Instruct",
        "meta-llama/Llama-3.1-405B-Instruct-FP8",
        False,
    ),
    # https://github.com/vllm-project/vllm/pull/6611
    ("mgoin/Nemotron-4-340B-Instruct-FP8-Dynamic", None, None, False),
    # https://github.com/DeepAuto-AI/hip-attention/pull/66
    (
        "ibnzterrell/Meta-Llama-3.3-70B-Instruct-AWQ-INT4",
        "meta-llama/Llama-3.3-70B-Instruct",
        "casperhansen/llama-3.3-70b-instruct-awq",
        True,
    ),
    ("Qwen/QwQ-32B", "Qwen/QwQ-32B", "Qwen/QwQ-32B", False),
    # https://github.com/vllm-project/vllm/issues/17469
    ("Qwen/Qwen3-30B-A3B", "Qwen/Qwen3-30B-A3B", "Qwen/Qwen3-30B-A3B", False),
    # https://github.com/vllm-project/vllm/issues/13124
    (
        "/home/lzh/llm_model/Qwen/Qwen2___5-VL-72B-Instruct",
        "Qwen/Qwen2.5-VL-72B-Instruct",
        "Qwen/Qwen2.5-VL-72B-Instruct",
        False,
    ),
    # https://github.com/nlzy/vllm-gfx906/issues/14
    ("/model/Qwen3-32B-autoround-4bit-gptq", "Qwen/Qwen3-32B", "/model/Qwen3-32B-autoround-4bit-gptq", True),
    # https://github.com/ollama/ollama/issues/9701
    ("qwen2.5-coder:32b", "Qwen/Qwen2.5-Coder-32B-Instruct", "qwen2.5-coder:32b", False),
    ("gemma3:27b", "google/gemma-3-27b-it", "gemma3:27b", False),
    # https://github.com/ollama/ollama/issues/10341
    ("gemma3:12b-it-qat", "google/gemma-3-12b-it", "gemma3:12b-it-qat", False),
    ("gemma3:12b", "google/gemma-3-12b-it", "gemma3:12b", False),
    # https://github.com/fredlas/optimize_llamacpp_ngl/issues/1
    (
        "DeepSeek-R1-Distill-Qwen-14B-GGUF/DeepSeek-R1-Distill-Qwen-14B-Q4_K_M.gguf",
        "deepseek-ai/DeepSeek-R1-Distill-Qwen-14B",
        "deepseek-r1:14b",
        False,
    ),
    # https://github.com/ggml-org/llama.cpp/issues/6758
    ("Falcon3-Mamba-7B-Instruct-q5_k_m.gguf", None, None, False),
    # https://github.com/ggml-org/llama.cpp/issues/6184
    (
        "./models/Llama-2-7B-GGUF/llama-2-7b.Q8_0.gguf",
        "meta-llama/Llama-2-7b-chat-hf",
        "./models/Llama-2-7B-GGUF/llama-2-7b.Q8_0.gguf",
        True,
    ),
    # https://github.com/vllm-project/vllm/issues/18156
    (
        "cognitivecomputations/Qwen3-235B-A22B-AWQ",
        "Qwen/Qwen3-235B-A22B",
        "cognitivecomputations/Qwen3-235B-A22B-AWQ",
        True,
    ),
    # https://github.com/QwenLM/Qwen3-VL/issues/1224
    (
        "Qwen/Qwen2.5-VL-7B-Instruct-AWQ",
        "Qwen/Qwen2.5-VL-7B-Instruct",
        "Qwen/Qwen2.5-VL-7B-Instruct-AWQ",
        False,
    ),
    # https://github.com/ikawrakow/ik_llama.cpp/pull/972
    ("gemma-3-12b-it-Q4_K_M.gguf", "google/gemma-3-12b-it", "gemma3:12b", False),
    # https://github.com/ollama/ollama/issues/11676
    ("gpt-oss:120b", "openai/gpt-oss-120b", "gpt-oss:120b", False),
    # https://github.com/TheBlewish/Automated-AI-Web-Researcher-Ollama/issues/61
    ("Phi3:3.8b", "microsoft/Phi-3-mini-4k-instruct", "phi3:3.8b", False),
    # https://github.com/kyuz0/amd-strix-halo-vllm-toolboxes/issues/7
    ("Devstral-2", None, None, False),
    # https://github.com/vllm-project/vllm/issues/49886
    ("GLM-5.2-NVFP4", "zai-org/GLM-5.2", "nvidia/GLM-5.2-NVFP4", False),
]
GPUS: list[tuple[str, str | None]] = [
    # https://github.com/ollama/ollama/issues/13423
    ("NVIDIA GeForce RTX 5070 Ti", "rtx-5070-ti"),
    # https://github.com/ollama/ollama/issues/14960
    ("NVIDIA GeForce RTX 5070 Ti (12GB)", None),
    # https://github.com/ollama/ollama/issues/10810
    ("NVIDIA GeForce RTX 4090 D", "rtx-4090-d"),
    # https://github.com/ollama/ollama/issues/14548
    ("NVIDIA GeForce RTX 5090", "rtx-5090"),
    # https://github.com/ggml-org/llama.cpp/issues/24223
    ("NVIDIA GeForce RTX 3090 (24 GB)", "rtx-3090"),
    # https://github.com/ikawrakow/ik_llama.cpp/pull/370
    ("NVIDIA GeForce RTX 3090 Ti", "rtx-3090-ti"),
    # https://github.com/ikawrakow/ik_llama.cpp/pull/333
    ("NVIDIA RTX A6000", "rtx-a6000"),
    # https://github.com/fredlas/optimize_llamacpp_ngl/issues/1
    ("NVIDIA GeForce RTX 4070 Ti SUPER", "rtx-4070-ti-super"),
    # https://github.com/ggml-org/llama.cpp/issues/6758
    ("NVIDIA GeForce RTX 4050 Laptop GPU", None),
    # https://github.com/CrispStrobe/CrispASR/issues/30
    ("NVIDIA GeForce RTX 5060", "rtx-5060"),
    # https://github.com/LostRuins/koboldcpp/issues/2262
    ("NVIDIA GeForce RTX 4060 Ti", None),
    # https://github.com/KLL535/ComfyUI_Simple_Qwen3-VL-gguf/issues/25
    ("4070 SUPER", "rtx-4070-super"),
    # https://github.com/olafkfreund/nixos_config/pull/816
    ("RTX 3060", None),
    # https://github.com/davealtena/homelab/pull/1984
    ("RTX 5060 Ti", None),
    # https://github.com/goruck/home-generative-agent/issues/131
    ("RTX3090", "rtx-3090"),
    # https://github.com/geerlingguy/ai-benchmarks/issues/43
    ("Nvidia RTX 4090", "rtx-4090"),
    # https://github.com/vllm-project/vllm/issues/35191
    ("L4 - 24GB", "l4"),
    # https://github.com/QwenLM/Qwen3-VL/issues/1493
    ("H20(96G)", "h20-96gb"),
    # https://github.com/sgl-project/sglang/issues/9590
    ("H20", None),
    # https://github.com/vllm-project/vllm/issues/44545
    ("H200", "h200"),
    # https://github.com/sgl-project/sglang/issues/22757
    ("B300", "b300"),
    # https://github.com/xorbitsai/inference/issues/3776
    ("NVIDIA RTX PRO 6000 Blackwell Workstation Edition", "rtx-pro-6000-blackwell"),
    # https://github.com/ai-dynamo/aiconfigurator/issues/654
    ("RTX PRO 6000 BSE", "rtx-pro-6000-blackwell"),
    # https://github.com/vllm-project/vllm/issues/23497
    ("RTX 6000 Pro (Blackwell)", "rtx-pro-6000-blackwell"),
    # https://github.com/Datura-ai/lium-io/pull/1198
    ("NVIDIA RTX PRO 6000D Blackwell Workstation Edition", None),
    # https://github.com/vllm-project/vllm/issues/49886
    ("RTX PRO 6000D", None),
    # https://github.com/bigstack-oss/cubecos/issues/312
    ("NVIDIA H200 NVL", "h200"),
    # https://github.com/sgl-project/sglang/issues/23264
    ("NVIDIA GB10", "gb10-dgx-spark"),
    # https://github.com/vllm-project/vllm/issues/53836
    ("NVIDIA DGX Spark", "gb10-dgx-spark"),
    # https://github.com/ggml-org/llama.cpp/issues/19355
    ("Radeon 8060S Graphics", None),
    # https://github.com/lmstudio-ai/lmstudio-bug-tracker/issues/1343
    ("AMD RYZEN AI MAX+ 395 w/ Radeon 8060S", None),
    # https://github.com/davidgasquez/dotfiles/issues/20
    ("AMD Radeon RX 7900 XTX", "rx-7900-xtx"),
    # https://github.com/vllm-project/vllm/issues/27706
    ("RX 7800 XT", "rx-7800-xt"),
    # https://github.com/geerlingguy/raspberry-pi-pcie-devices/issues/706
    ("AMD Radeon RX 7600 XT", "rx-7600-xt"),
    # https://github.com/geerlingguy/raspberry-pi-pcie-devices/issues/680
    ("AMD Radeon RX 6700 XT", "rx-6700-xt"),
    # https://github.com/mixa3607/ML-gfx906/issues/3
    ("MI50", None),
    # https://github.com/ggml-org/llama.cpp/issues/20024
    ("AMD MI60 32GB", "mi60"),
    # https://github.com/ROCm/ATOM/pull/1193
    ("MI355X", "mi355x"),
    # https://github.com/gemmaclaw/gemmaclaw/pull/302
    ("Intel Arc B70", None),
    # https://github.com/intel/llm-scaler/issues/703
    ("B60", "arc-pro-b60"),
    # https://github.com/lmstudio-ai/lmstudio-bug-tracker/issues/635
    ("AMD Radeon 780M", None),
    # https://github.com/ggml-org/llama.cpp/issues/22425
    ("Ryzen AI 9 HX 370", None),
    # https://github.com/vllm-project/vllm/issues/17469
    ("A10", "a10"),
    # https://github.com/vllm-project/vllm/issues/17604
    ("A800-40G", "a800-40gb"),
    # https://github.com/ollama/ollama/issues/9002
    ("A100 40GB", "a100-40gb"),
    # https://github.com/vllm-project/recipes/pull/395
    ("NVIDIA H100 80GB", "h100-sxm"),
    # https://github.com/aarora79/agentic-coding-harness-benchmarks/pull/14
    ("L40S", "l40s"),
    # https://github.com/vllm-project/vllm-ascend/issues/8817
    ("910B3", None),
    # https://github.com/unslothai/unsloth/issues/5636
    ("M5 Max", None),
    # https://github.com/ollama/ollama/issues/9701
    ("M3 Max", None),
    # https://github.com/withcatai/node-llama-cpp/issues/560
    ("Jetson Orin", None),
    # https://github.com/wtdcode/vllm-backport/issues/87
    ("4090 48gb", None),
    # https://github.com/ollama/ollama/issues/10588
    ("NVIDIA RTX 2000 Ada Generation Laptop GPU", None),
    # https://github.com/vllm-project/recipes/pull/716
    ("DGX Station GB300", None),
    # https://github.com/btbtyler09/mi100-llm-testing/issues/5
    ("AMD Radeon r9700", "radeon-ai-pro-r9700"),
    # https://github.com/MoonshotAI/Kimi-K2/issues/51
    ("H20x16 (96x16)", None),
    # https://github.com/vllm-project/recipes/pull/62
    ("H800", "h800"),
    # https://github.com/hiyouga/LlamaFactory/issues/7131
    ("A6000", "rtx-a6000"),
]


# print_info / llama_model_loader general.name lines and more file names (2026 Gemma 4 threads)
MODELS += [
    # https://github.com/ggml-org/llama.cpp/pull/21760
    (
        "/mnt/Speed/AI/Models/bartowski/google_gemma-4-31B-it-GGUF/google_gemma-4-31B-it-Q8_0.gguf",
        "google/gemma-4-31B-it",
        "/mnt/Speed/AI/Models/bartowski/google_gemma-4-31B-it-GGUF/google_gemma-4-31B-it-Q8_0.gguf",
        True,
    ),
    ("Gemma 4 31B It", "google/gemma-4-31B-it", "google/gemma-4-31B-it", False),
    # https://github.com/ggml-org/llama.cpp/issues/21690
    (
        "models/gemma-4-31B-it/gemma-4-31B-it-IQ4_XS.gguf",
        "google/gemma-4-31B-it",
        "models/gemma-4-31B-it/gemma-4-31B-it-IQ4_XS.gguf",
        True,
    ),
    # https://github.com/KLL535/ComfyUI_Simple_Qwen3-VL-gguf/issues/34
    ("gemma-4-26B-A4B-it-uncensored-heretic-MXFP4_MOE_F16.gguf", None, None, False),
    ("Gemma 4 26B A4B It", "google/gemma-4-26B-A4B-it", "google/gemma-4-26B-A4B-it", False),
    # https://github.com/ikawrakow/ik_llama.cpp/issues/1772
    ("gemopus-4-26B-A4B-APEX-I-Quality.gguf", None, None, False),
    # https://github.com/ollama/ollama/issues/11292
    (
        "Meta Llama 3.1 8B Instruct",
        "meta-llama/Llama-3.1-8B-Instruct",
        "meta-llama/Llama-3.1-8B-Instruct",
        False,
    ),
    # https://github.com/ikawrakow/ik_llama.cpp/issues/1205
    ("Gemma-3-12B-It", "google/gemma-3-12b-it", "google/gemma-3-12b-it", False),
    # a Windows path splits like a POSIX one
    (
        "F:\\AI\\LlamaCompanion\\models\\gemma-3-12b-it-Q4_K_M.gguf",
        "google/gemma-3-12b-it",
        "gemma3:12b",
        False,
    ),
    # https://github.com/KLL535/ComfyUI_Simple_Qwen3-VL-gguf/issues/25
    (
        "C:\\Content\\Gemma4\\gemma-4-26B-A4B-it-UD-Q4_K_M.gguf",
        "google/gemma-4-26B-A4B-it",
        "C:\\Content\\Gemma4\\gemma-4-26B-A4B-it-UD-Q4_K_M.gguf",
        True,
    ),
    # https://github.com/ollama/ollama/issues/18123
    ("gemma4:e4b", None, None, False),
]


def test_the_harvest_is_long_enough():
    assert len({n for n, *_ in MODELS}) == len(MODELS) >= 120
    assert len({n for n, _ in GPUS}) == len(GPUS) >= 55


def assert_model_resolves(name: str, model_id: str | None, label: str | None, noted: bool) -> None:
    """The name resolves to exactly that model and variant (a note said or not), or asks (None)."""
    if model_id is None:
        with pytest.raises(NameNotFound):
            resolve_model(name)
        return
    match = resolve_model(name)
    assert (match.model.id, match.label) == (model_id, label)
    assert bool(match.note) is noted, match.note


def assert_gpu_resolves(name: str, gpu_id: str | None) -> None:
    """The name resolves to exactly that GPU, or asks (None)."""
    if gpu_id is None:
        with pytest.raises(NameNotFound):
            resolve_gpu(name)
        return
    assert resolve_gpu(name).id == gpu_id


@pytest.mark.parametrize(("name", "model_id", "label", "noted"), MODELS, ids=[m[0] for m in MODELS])
def test_model_name_resolves_exactly_or_asks(name: str, model_id: str | None, label: str | None, noted: bool):
    assert_model_resolves(name, model_id, label, noted)


@pytest.mark.parametrize(("name", "gpu_id"), GPUS, ids=[g[0] for g in GPUS])
def test_gpu_name_resolves_exactly_or_asks(name: str, gpu_id: str | None):
    assert_gpu_resolves(name, gpu_id)


@pytest.mark.parametrize(
    ("name", "growing", "sliding", "state"),
    [
        # 10 full layers x 4 KV heads x 512 x (K+V) x 2 B; 50 sliding layers x 16 x 256 x 2 x 2 B within 1,024 tokens
        ("google/gemma-4-31B-it", 81920, (819200, 1024, 50), 0),
        # 5 full x 2 x 512 x 2 x 2 B; 25 sliding x 8 x 256 x 2 x 2 B
        ("google/gemma-4-26B-A4B-it", 20480, (204800, 1024, 25), 0),
        # 40 layers x 8 KV heads x 128 x 2 x 2 B
        ("mistralai/Ministral-3-14B-Instruct-2512", 163840, None, 0),
        # 34 layers x 8 x 128 x 2 x 2 B
        ("mistralai/Ministral-3-8B-Instruct-2512", 139264, None, 0),
        ("mistralai/Devstral-Small-2-24B-Instruct-2512", 163840, None, 0),
        # 8 attention layers x 2 x 128 x 2 x 2 B; 40 Mamba2 layers x 4,255,744 B per sequence
        ("nvidia/NVIDIA-Nemotron-3-Super-120B-A12B-BF16", 8192, None, 170229760),
        # 12 attention layers x 2 x 128 x 2 x 2 B; 48 Mamba2 layers x 8,499,200 B
        ("nvidia/NVIDIA-Nemotron-3-Ultra-550B-A55B-BF16", 12288, None, 407961600),
        # MLA: 78 layers x (latent 512 + rope 64) x 2 B, as GLM-5.1
        ("zai-org/GLM-5.2", 89856, None, 0),
    ],
)
def test_new_entries_keep_their_cache_geometry(name: str, growing: int, sliding: tuple | None, state: int):
    layout = vllm_layout(resolve_model(name).model)
    assert layout.growing_bytes_per_token == growing
    parts = [(p.bytes_per_token, p.window, p.layers) for p in layout.sliding]
    assert parts == ([sliding] if sliding else [])
    assert layout.state_bytes_per_seq == state


@pytest.mark.parametrize(
    ("name", "gib"),
    [
        # 31,241,840,640 parameters x 2 B (text + vision encoder)
        ("google/gemma-4-31B-it", 58.2),
        ("google/gemma-4-26B-A4B-it", 48.0),
        ("nvidia/NVIDIA-Nemotron-3-Super-120B-A12B-BF16", 224.8),
        ("nvidia/NVIDIA-Nemotron-3-Ultra-550B-A55B-BF16", 1023.2),
        ("mistralai/Ministral-3-14B-Instruct-2512", 25.2),
        # GLM-5.1's shapes and FP8 scheme
        ("zai-org/GLM-5.2", 1384.3),
        ("GLM-5.2-FP8", 694.2),
        # NVFP4 on the routed experts only (hf_quant_config exclude_modules): 4.785 bits per parameter
        ("nvidia/GLM-5.2-NVFP4", 414.0),
    ],
)
def test_new_entries_weigh_what_their_shapes_give(name: str, gib: float):
    match = resolve_model(name)
    assert round(variant_weight_bytes(match.model, match.variant) / GIB, 1) == gib


def test_an_ollama_tag_without_a_catalogued_build_says_whose_weights_it_used():
    match = resolve_model("qwen3-vl:30b")
    assert match.variant is not None and match.variant.quant == "bf16"
    assert "Ollama tag" in match.note and "Qwen/Qwen3-VL-30B-A3B-Instruct" in match.note
    # the same for a tag with no size ("latest" only)
    assert "Ollama tag" in resolve_model("glm-4.7-flash:latest").note


def test_another_repos_build_of_the_quant_is_named_not_swapped_in_silently():
    match = resolve_model("ibnzterrell/Meta-Llama-3.3-70B-Instruct-AWQ-INT4")
    assert match.label == "casperhansen/llama-3.3-70b-instruct-awq"
    assert match.note.endswith("weights as casperhansen/llama-3.3-70b-instruct-awq")
    # the vendor's own repo in a local folder is the same build: no note
    assert resolve_model("/data1/llm-models/qwen/Qwen3-235B-A22B-GPTQ-Int4").note == ""


def test_file_and_folder_spellings_meet_the_catalog_name():
    # ModelScope writes the dot of Qwen2.5 as three underscores; Qwen's own GGUF files use one
    assert (
        resolve_model("/home/lzh/llm_model/Qwen/Qwen2___5-VL-72B-Instruct").model.id
        == "Qwen/Qwen2.5-VL-72B-Instruct"
    )
    assert resolve_model("qwen1_5-1_8b-chat-q4_0.gguf").model.id == "Qwen/Qwen1.5-1.8B-Chat"
    # LM Studio's "-split-" shards carry the type before the shard number
    split = resolve_model("Qwen3VL-32B-Instruct-F16-split-00001-of-00002.gguf")
    assert (split.model.id, split.variant and split.variant.gguf_type) == (
        "Qwen/Qwen3-VL-32B-Instruct",
        "F16",
    )


def test_a_size_the_card_does_not_come_in_is_refused_not_rounded():
    # ollama/ollama#14960 calls its RTX 5070 Ti "12GB"; the card has 16 GB, so neither is assumed
    with pytest.raises(NameNotFound, match="16 GB, not 12 GB"):
        resolve_gpu("NVIDIA GeForce RTX 5070 Ti (12GB)")
    with pytest.raises(NameNotFound, match="24 GB, not 48 GB"):
        resolve_gpu("4090 48gb")


def test_the_name_nvidia_smi_prints_for_rtx_pro_blackwell_resolves():
    for name in (
        "NVIDIA RTX PRO 6000 Blackwell Workstation Edition",
        "NVIDIA RTX PRO 6000 Blackwell Server Edition",
    ):
        assert resolve_gpu(name).id == "rtx-pro-6000-blackwell"
    # the 84 GB China card is not the 96 GB one
    with pytest.raises(NameNotFound):
        resolve_gpu("NVIDIA RTX PRO 6000D Blackwell Workstation Edition")


@pytest.mark.parametrize(
    ("name", "model_id", "file_type"),
    [
        ("/mnt2/srcds/ai/Qwen3.5-35B-A3B-UD-Q6_K_XL.gguf", "Qwen/Qwen3.5-35B-A3B", "Q6_K_XL"),
        # llama.cpp's -hf cache names a download {org}_{repo}_{file}
        (
            "unsloth_Qwen3-Coder-Next-GGUF_Qwen3-Coder-Next-UD-Q4_K_XL.gguf",
            "Qwen/Qwen3-Coder-Next",
            "Q4_K_XL",
        ),
        ("gemma-4-26B-A4B-it-qat-UD-Q4_K_XL.gguf", "google/gemma-4-26B-A4B-it", "Q4_K_XL"),
    ],
)
def test_a_mix_file_type_names_the_model_and_asks_only_for_the_size(name: str, model_id: str, file_type: str):
    with pytest.raises(NameNotFound) as info:
        resolve_model(name)
    assert info.value.candidates == [model_id]
    assert f"no size is known for GGUF type {file_type}" in info.value.hint


def test_an_ollama_size_label_far_from_the_matched_model_asks():
    # "deepseek-r1" alone is the 671B R1; an 8b tag is another model (the 8B distill), never the 671B weights
    for name in ("deepseek-r1:8b", "deepseek-r1:8b-q4_K_M"):
        with pytest.raises(NameNotFound, match="the tag names a 8b model"):
            resolve_model(name)
    # labels round the count: gemma2:2b is 2.61B, kimi-k2:1t is 1,026B
    assert resolve_model("gemma2:2b").model.id == "google/gemma-2-2b-it"
    assert resolve_model("kimi-k2:1t").model.id == "moonshotai/Kimi-K2-Instruct"


@pytest.mark.parametrize(
    ("name", "gpu_id"),
    [
        # driver-reported names carry trademark marks (SYCL / xpu-smi)
        ("Intel(R) Arc(TM) B580 Graphics", "arc-b580"),
        ("Intel(R) Arc(TM) Pro B60 Graphics", "arc-pro-b60"),
        # the Max-Q Workstation Edition has the same 96 GB
        ("NVIDIA RTX PRO 6000 Blackwell Max-Q Workstation Edition", "rtx-pro-6000-blackwell"),
    ],
)
def test_driver_spellings_of_a_card_resolve(name: str, gpu_id: str):
    assert resolve_gpu(name).id == gpu_id


@pytest.mark.parametrize(
    "name",
    [
        "NVIDIA GeForce RTX 5090 Laptop GPU",
        "NVIDIA GeForce RTX 4090 Laptop GPU",
        "AMD Instinct MI300A",
        "NVIDIA GH200 480GB",
    ],
)
def test_a_laptop_or_sibling_card_is_never_the_desktop_one(name: str):
    # laptop parts have less memory than the desktop card of the same number (5090 Laptop: 24 GB, not 32)
    with pytest.raises(NameNotFound):
        resolve_gpu(name)


def test_an_ollama_pull_from_hugging_face_reads_the_file_type_from_the_tag():
    # ollama run hf.co/{user}/{repo}-GGUF:{type}
    match = resolve_model("hf.co/bartowski/Qwen_Qwen3.6-35B-A3B-GGUF:Q4_K_M")
    assert (match.model.id, match.variant and match.variant.gguf_type) == ("Qwen/Qwen3.6-35B-A3B", "Q4_K_M")
    assert resolve_model("Qwen/Qwen1.5-72B-Chat-GGUF:q3_k_m").label == "Qwen/Qwen1.5-72B-Chat-GGUF:q3_k_m"
    with pytest.raises(NameNotFound) as info:
        resolve_model("hf.co/unsloth/gemma-3-27b-it-GGUF:Q4_K_XL")
    assert info.value.candidates == ["google/gemma-3-27b-it"]
