"""Model and GPU names from vLLM / SGLang / llama.cpp / Ollama / LM Studio threads of 2026-05 .. 2026-11, none of
them in test_names_2026.py: each resolves to the exact entry (and says what it assumed) or asks.

A row is (typed name, catalog model id, checkpoint label, whether a note is required); ``None`` means the resolver
must ask (NameNotFound): releases the catalog does not hold (DeepSeek-V4, Kimi-K2.6 / K3, MiniMax-M3, MiMo-V2.5,
Qwen3.8, Gemma 4 E2B / E4B / 12B, Nemotron 3 Nano 4B), speculative-decoding heads and fine-tunes named after a
catalogued model (``mtp-gemma-4-31B-it.gguf``, ``Qwen3.5-9B-DeepSeek-V4-Flash-MTP``), and sizes a model does not come
in. GPUs: (typed name, card id or ``None``). The comment above each group is the thread.
"""

from __future__ import annotations

import pytest

from calculator.catalog import variant_weight_bytes
from calculator.kv import vllm_layout
from calculator.resolve import NameNotFound, resolve_gpu, resolve_model
from calculator.units import GIB
from tests.calculator.test_names_2026 import assert_gpu_resolves, assert_model_resolves

MODELS: list[tuple[str, str | None, str | None, bool]] = [
    # https://github.com/ggml-org/llama.cpp/issues/24100
    ("gemma-4-E4B-it-Q8_0.gguf", None, None, False),
    ("/ssd/llamacpp_models/gemma-4-E4B-it-Q8_0.gguf", None, None, False),
    # https://github.com/ikawrakow/ik_llama.cpp/issues/1936
    ("gemma-4-E2B_q4_0-it.gguf", None, None, False),
    # https://github.com/ggml-org/llama.cpp/pull/23398
    ("Gemma4-31B-Q8_0.gguf", "google/gemma-4-31B-it", "Gemma4-31B-Q8_0.gguf", True),
    ("mtp-gemma-4-31B-it.gguf", None, None, False),
    # https://github.com/ollama/ollama/issues/16492
    ("gemma4:12b", None, None, False),
    # https://github.com/ggml-org/llama.cpp/issues/25522
    ("/md1200/llm/gemma4-31b/unsloth/gemma-4-31B-it-qat-UD-Q4_K_XL.gguf", None, None, False),
    # https://github.com/vllm-project/vllm/issues/42911
    ("qwen3.6-27B-FP8", "Qwen/Qwen3.6-27B", "qwen3.6-27B-FP8", True),
    # https://github.com/sgl-project/sglang/issues/23763
    ("sgl-project/DeepSeek-V4-Flash-FP8", None, None, False),
    # https://github.com/datawhalechina/self-llm/pull/517
    ("deepseek-ai/DeepSeek-V4-Flash", None, None, False),
    # https://github.com/sgl-project/sglang/pull/23966
    ("deepseek-ai/DeepSeek-V4-Pro", None, None, False),
    # https://github.com/vllm-project/vllm/issues/43412
    ("deepseek-v4-flash", None, None, False),
    # https://github.com/lmstudio-ai/lmstudio-bug-tracker/issues/1950
    ("lmstudio-community/Qwen3.6-35B-A3B-GGUF", None, None, False),
    # https://github.com/lmstudio-ai/lmstudio-bug-tracker/issues/2190
    ("gemma4-26b-a4b-it", "google/gemma-4-26B-A4B-it", "google/gemma-4-26B-A4B-it", False),
    ("ternary-bonsai-27b", None, None, False),
    ("nanbeige-4.2-3b", None, None, False),
    # https://github.com/vllm-project/vllm/issues/42426
    ("Kimi-K2.6", None, None, False),
    # https://github.com/Avarok-Cybersecurity/atlas/issues/146
    ("nvidia/Kimi-K2.6-NVFP4", None, None, False),
    # https://github.com/vllm-project/vllm-ascend/pull/9969
    ("Eco-Tech/Kimi-K2.6-w4a8", None, None, False),
    # https://github.com/SemiAnalysisAI/InferenceX/pull/1932
    ("nvidia/MiniMax-M3-NVFP4", None, None, False),
    # https://github.com/vllm-project/recipes/pull/577
    ("Inferact/MiniMax-M3-EAGLE3", None, None, False),
    # https://github.com/guoqingbao/xinfer/issues/246
    ("nvidia/MiniMax-M2.5-NVFP4", "MiniMaxAI/MiniMax-M2.5", "nvidia/MiniMax-M2.5-NVFP4", False),
    # https://github.com/noonghunna/club-3090/issues/390
    ("qwen3.6-35b-a3b", "Qwen/Qwen3.6-35B-A3B", "Qwen/Qwen3.6-35B-A3B", False),
    # https://github.com/ollama/ollama/issues/16763
    ("gemma4:31b-it-q4_K_M", "google/gemma-4-31B-it", "gemma4:31b-it-q4_K_M", True),
    # https://github.com/vllm-project/vllm/issues/42510
    (
        "/root/.cache/modelscope/hub/models/LLM-Research/Meta-Llama-3___1-8B-Instruct",
        "meta-llama/Llama-3.1-8B-Instruct",
        "meta-llama/Llama-3.1-8B-Instruct",
        False,
    ),
    # https://github.com/vllm-project/recipes/pull/663
    ("nvidia/Qwen3.6-35B-A3B-NVFP4", "Qwen/Qwen3.6-35B-A3B", "nvidia/Qwen3.6-35B-A3B-NVFP4", False),
    # https://github.com/vllm-project/recipes/issues/560
    ("cyankiwi/Qwen3.5-4B-AWQ-INT8-INT4", None, None, False),
    # https://github.com/vllm-project/vllm/issues/34356
    (
        "nvidia/Nemotron-3-Ultra-550B-A55B-RL",
        "nvidia/NVIDIA-Nemotron-3-Ultra-550B-A55B-BF16",
        "nvidia/NVIDIA-Nemotron-3-Ultra-550B-A55B-BF16",
        True,
    ),
    # https://github.com/inference-sim/inference-sim/issues/1552
    (
        "nvidia/NVIDIA-Nemotron-3-Nano-30B-A3B-FP8",
        "nvidia/NVIDIA-Nemotron-3-Nano-30B-A3B-BF16",
        "nvidia/NVIDIA-Nemotron-3-Nano-30B-A3B-FP8",
        True,
    ),
    ("nvidia/NVIDIA-Nemotron-3-Nano-4B-FP8", None, None, False),
    # https://github.com/NVIDIA-NeMo/Nemotron/issues/289
    (
        "nvidia/NVIDIA-Nemotron-3-Ultra-550B-A55B-NVFP4",
        "nvidia/NVIDIA-Nemotron-3-Ultra-550B-A55B-BF16",
        "nvidia/NVIDIA-Nemotron-3-Ultra-550B-A55B-NVFP4",
        True,
    ),
    # https://github.com/mlx-node/mlx-node/pull/120
    ("nvidia/NVIDIA-Nemotron-3.5-Lightning-30B-A3B-NVFP4", None, None, False),
    # https://github.com/ggml-org/llama.cpp/issues/24199
    ("Qwen3.5-9B-DeepSeek-V4-Flash-MTP-Q6_K.gguf", None, None, False),
    ("Qwopus3.5-4B-Coder-MTP-Q6_K.gguf", None, None, False),
    # https://github.com/Nathanw1014/strix-halo-llamacpp/issues/12
    ("Qwen3.8-Flash-Next-UD-Q4_K_XL-00001-of-00004.gguf", None, None, False),
    # https://github.com/abetlen/llama-cpp-python/issues/2234
    ("Qwen3-4B-Q4_K_M.gguf", "Qwen/Qwen3-4B", "qwen3:4b", False),
    # https://github.com/zed-industries/zed/issues/56511
    ("qwen3.6:35b", "Qwen/Qwen3.6-35B-A3B", "Qwen/Qwen3.6-35B-A3B", True),
    # https://github.com/ollama/ollama/issues/17246
    ("qwen3.6:35b-a3b-coding-nvfp4", "Qwen/Qwen3.6-35B-A3B", "nvidia/Qwen3.6-35B-A3B-NVFP4", True),
    ("ornith:35b", None, None, False),
    # https://github.com/vllm-project/vllm/issues/41695
    (
        "Qwen/Qwen3-Coder-30B-A3B-Instruct-FP8",
        "Qwen/Qwen3-Coder-30B-A3B-Instruct",
        "Qwen/Qwen3-Coder-30B-A3B-Instruct-FP8",
        False,
    ),
    (
        "Qwen3-Coder-30B-A3B-Instruct-FP8",
        "Qwen/Qwen3-Coder-30B-A3B-Instruct",
        "Qwen/Qwen3-Coder-30B-A3B-Instruct-FP8",
        False,
    ),
    ("Qwen/Qwen3.6-27B-FP8", "Qwen/Qwen3.6-27B", "Qwen/Qwen3.6-27B-FP8", True),
    ("qwen/qwen3.5-35b-a3b", "Qwen/Qwen3.5-35B-A3B", "Qwen/Qwen3.5-35B-A3B", False),
    # https://github.com/vllm-project/vllm/pull/45056
    ("XiaomiMiMo/MiMo-V2.5-Pro-FP4-DFlash", None, None, False),
    # https://github.com/sgl-project/sglang/pull/40448
    ("/model/MiMo-V2.5-FP4-DFlash/", None, None, False),
    # https://github.com/vllm-project/vllm/pull/57784
    ("XiaomiMiMo/MiMo-V2.5-DFlash", None, None, False),
    # https://github.com/HYGON-AI/inference-cookbook-das/pull/198
    ("hygon/MiMo-V2-Flash-Channel-FP8-w8a8", None, None, False),
    # https://github.com/adiudiuu/tps/pull/4
    ("LongCat-Flash-Omni", None, None, False),
    ("Ling-3.0-flash-VL", None, None, False),
    # https://github.com/ollama/ollama/issues/15087
    ("frob/qwen3.5:122b-a10b-q6_K", "Qwen/Qwen3.5-122B-A10B", "frob/qwen3.5:122b-a10b-q6_K", True),
    # https://github.com/ollama/ollama/issues/17362
    ("gemma4:12b-mlx", None, None, False),
    ("gemma4:26b-mlx", "google/gemma-4-26B-A4B-it", "google/gemma-4-26B-A4B-it", True),
    # https://github.com/magicnight/Mac-MLX/issues/62
    ("gemma-4-e4b-it-8bit", None, None, False),
    # https://github.com/osaurus-ai/osaurus/pull/1977
    ("OsaurusAI/gemma-4-12B-it-MXFP8", None, None, False),
    # https://github.com/jundot/omlx/issues/1729
    ("gemma-4-12B-it-qat-mxfp8", None, None, False),
    # https://github.com/anthony-chaudhary/fak/issues/9836
    ("Qwen3.8-27B-Q4_K_M.gguf", None, None, False),
    # https://github.com/zhongkaifu/TensorSharp/issues/85
    ("qwen3.6-27b-mtp", None, None, False),
    # https://github.com/Nathanw1014/strix-halo-llamacpp/issues/18
    ("qwen3.6-26B", None, None, False),
    # https://github.com/AMD-Ecosystem/llama.cpp/pull/59
    ("Qwen3.5-9B Q4_K_M", "Qwen/Qwen3.5-9B", "Qwen3.5-9B Q4_K_M", True),
    ("Qwen3.5-4B Q4_K_M", None, None, False),
    ("Qwen3-8B Q4_K_M", "Qwen/Qwen3-8B", "qwen3:8b", False),
    ("Qwen2.5-7B-Instruct Q4_K_M", "Qwen/Qwen2.5-7B-Instruct", "qwen2.5:7b", False),
    # https://github.com/ollama/ollama/issues/16685
    ("qwen3.5:9b", "Qwen/Qwen3.5-9B", "Qwen/Qwen3.5-9B", True),
    # https://github.com/HYGON-AI/inference-cookbook-das/pull/471
    ("hygon/Qwen3.6-35B-A3B-Channel-INT8-w8a8", None, None, False),
    # https://github.com/lmstudio-ai/lmstudio-bug-tracker/issues/2272
    ("google/gemma-4-26b-a4b-qat", "google/gemma-4-26B-A4B-it", "google/gemma-4-26B-A4B-it", True),
    # https://github.com/sgl-project/sglang/issues/37792
    ("HaberstrohSystems/Qwen3.8-Flash-Next-int2-mixed-AutoRound-24GB-SGLang", None, None, False),
    ("Qwen/Qwen3.8-Flash-Next-FP8", None, None, False),
    # https://github.com/sgl-project/sglang/issues/34918
    ("RadixArk/Qwen3.8-27B-DSpark", None, None, False),
    # https://github.com/vllm-project/vllm/issues/41108
    ("/vllm-workspace/models/GLM-5.1-NVFP4/", "zai-org/GLM-5.1", "nvidia/GLM-5.1-NVFP4", False),
    ("lukealonso/GLM-5.1-NVFP4", "zai-org/GLM-5.1", "nvidia/GLM-5.1-NVFP4", True),
    # https://github.com/vllm-project/vllm/issues/46679
    ("/mnt/data2/models/zai-org/GLM-5.2-FP8", "zai-org/GLM-5.2", "zai-org/GLM-5.2-FP8", False),
    # https://github.com/lmstudio-ai/lmstudio-bug-tracker/issues/1775
    ("qwen/qwen3.5-9b", "Qwen/Qwen3.5-9B", "Qwen/Qwen3.5-9B", False),
    ("Qwen3.5-27B.Q8_0.gguf", "Qwen/Qwen3.5-27B", "Qwen3.5-27B.Q8_0.gguf", True),
    ("Qwen3.5-27B-Claude-4.6-Opus-Reasoning-Distilled.i1-Q6_K.gguf", None, None, False),
    ("Kimi-Dev-72B-UD-Q8_K_XL-00001-of-00002.gguf", None, None, False),
    # https://github.com/ggml-org/llama.cpp/issues/21825
    ("ggml-org/gemma-4-E4B-it-GGUF:Q4_K_M", None, None, False),
    # https://github.com/ollama/ollama/issues/15388
    ("gemma4:26b", "google/gemma-4-26B-A4B-it", "google/gemma-4-26B-A4B-it", True),
]
GPUS: list[tuple[str, str | None]] = [
    # https://github.com/ggml-org/llama.cpp/issues/24100
    ("Nvidia AGX Orin", None),
    # https://github.com/ikawrakow/ik_llama.cpp/issues/1936
    ("NVIDIA GeForce GTX 1660 Ti", None),
    # https://github.com/ollama/ollama/issues/16492
    ("Radeon 7900 XT", "rx-7900-xt"),
    # https://github.com/ggml-org/llama.cpp/issues/25522
    ("2080Ti 22GB", None),
    # https://github.com/sgl-project/sglang/issues/23763
    ("NVIDIA H20-3e", "h20-141gb"),
    # https://github.com/Avarok-Cybersecurity/atlas/issues/146
    ("DGX Spark (GB10)", "gb10-dgx-spark"),
    # https://github.com/kvcache-ai/ktransformers/issues/2076
    ("H200 NVL", "h200"),
    ("NVIDIA H20", None),
    # https://github.com/vllm-project/vllm/issues/40608
    ("RTX 6000 Pro Blackwell", "rtx-pro-6000-blackwell"),
    # https://github.com/vllm-project/vllm/issues/43412
    ("NVIDIA RTX PRO 6000 Blac...", "rtx-pro-6000-blackwell"),
    # https://github.com/vllm-project/vllm/pull/44106
    ("RTX 6000 Pro Blackwell Server Edition", "rtx-pro-6000-blackwell"),
    # https://github.com/ai-dynamo/aiconfigurator/issues/654
    ("RTX PRO 6000 Blackwell, 96GB", "rtx-pro-6000-blackwell"),
    # https://github.com/ggml-org/llama.cpp/issues/24199
    ("Intel Arc A770 16GB", "arc-a770-16gb"),
    # https://github.com/abetlen/llama-cpp-python/issues/2234
    ("NVIDIA GeForce GTX 1060 6GB", "gtx-1060-6gb"),
    # https://github.com/estebanstifli/LocalText2Voice/issues/13
    ("NVIDIA GeForce RTX 5060 Ti", None),
    # https://github.com/Nathanw1014/strix-halo-llamacpp/issues/12
    ("AMD Ryzen AI Max+ 395 / Radeon 8060S", None),
    # https://github.com/Nathanw1014/strix-halo-llamacpp/issues/18
    ("Radeon 860M", None),
    ("AMD Ryzen AI 9 HX 470", None),
    # https://github.com/anthony-chaudhary/fak/issues/9836
    ("AMD Radeon RX 7600", None),
    # https://github.com/ollama/ollama/issues/16562
    ("Apple M4", None),
    # https://github.com/magicnight/Mac-MLX/issues/62
    ("Apple M5 Max", None),
    # https://github.com/jundot/omlx/issues/1729
    ("M1 MAX 32G", "m1-max-32gb"),
    ("M5 Pro 48GB", None),
    # https://github.com/osaurus-ai/osaurus/pull/1977
    ("Apple M4 Max", None),
    # https://github.com/ollama/ollama/issues/16030
    ("Apple M1 Max", None),
    # https://github.com/ollama/ollama/issues/14500
    ("NVIDIA GeForce RTX 2080 Ti", "rtx-2080-ti"),
    # https://github.com/ikawrakow/ik_llama.cpp/issues/1420
    ("NVIDIA GeForce RTX 3080 Laptop GPU", None),
    # https://github.com/lmstudio-ai/lmstudio-bug-tracker/issues/1745
    ("NVIDIA GeForce RTX 3070", "rtx-3070"),
    # https://github.com/ollama/ollama/issues/9170
    ("NVIDIA RTX 6000 Ada Generation", "rtx-6000-ada"),
    # https://github.com/ggml-org/llama.cpp/issues/24400
    ("Tesla T4", "t4"),
    # https://github.com/vllm-project/recipes/issues/381
    ("8x NVIDIA H200", None),
    # https://github.com/NVIDIA-NeMo/Nemotron/issues/289
    ("H100", "h100-sxm"),
    # https://github.com/SemiAnalysisAI/InferenceX/pull/1932
    ("B200", "b200"),
    # https://github.com/datawhalechina/self-llm/pull/517
    ("NVIDIA H200 141GB", "h200"),
    # https://github.com/AMD-Ecosystem/llama.cpp/pull/59
    ("Strix Halo gfx1151, 40 CUs, 31 GiB unified memory", None),
    # https://github.com/ggml-org/llama.cpp/pull/23398
    ("NVIDIA GeForce RTX 4090", "rtx-4090"),
    # https://github.com/ggml-org/llama.cpp/issues/18317
    ("Radeon RX 7900 XTX", "rx-7900-xtx"),
    # https://github.com/lmstudio-ai/lmstudio-bug-tracker/issues/1745
    ("NVIDIA GeForce RTX 3070 (Used: 1.57 GB, Total: 8.59 GB, Free: 7.02 GB)", "rtx-3070"),
    # https://github.com/HYGON-AI/inference-cookbook-das/pull/469
    ("BW1000 64GB", None),
    # https://github.com/lmstudio-ai/lmstudio-bug-tracker/issues/1836
    ("24GB 7900XTX", "rx-7900-xtx"),
    ("8GB 2070 Super", "rtx-2070-super"),
    # https://github.com/ggml-org/llama.cpp/pull/23398
    ("NVIDIA GeForce RTX 5090 (32108 MiB, 28410 MiB free)", "rtx-5090"),
    ("NVIDIA GeForce RTX 4090 (24082 MiB, 23671 MiB free)", "rtx-4090"),
    # https://github.com/lmstudio-ai/lmstudio-bug-tracker/issues/1365
    ("NVIDIA GeForce RTX 3090 (Used: 2.62 GB, Total: 25.77 GB, Free: 23.15 GB)", "rtx-3090"),
]


def test_the_harvest_is_long_enough():
    assert len({n for n, *_ in MODELS}) == len(MODELS) >= 75
    assert len({n for n, _ in GPUS}) == len(GPUS) >= 40


@pytest.mark.parametrize(("name", "model_id", "label", "noted"), MODELS, ids=[m[0] for m in MODELS])
def test_model_name_resolves_exactly_or_asks(name: str, model_id: str | None, label: str | None, noted: bool):
    assert_model_resolves(name, model_id, label, noted)


@pytest.mark.parametrize(("name", "gpu_id"), GPUS, ids=[g[0] for g in GPUS])
def test_gpu_name_resolves_exactly_or_asks(name: str, gpu_id: str | None):
    assert_gpu_resolves(name, gpu_id)


def test_a_sibling_of_a_vendor_id_that_names_its_precision_is_that_model_in_its_own_quant():
    # the catalog holds nvidia/NVIDIA-Nemotron-3-Nano-30B-A3B-BF16; the FP8 repo is the same shapes at 8 bits
    match = resolve_model("nvidia/NVIDIA-Nemotron-3-Nano-30B-A3B-FP8")
    assert match.model.id == "nvidia/NVIDIA-Nemotron-3-Nano-30B-A3B-BF16"
    assert match.variant is not None and match.variant.quant == "fp8"
    # the bare name is the BF16 checkpoint itself
    bare = resolve_model("NVIDIA-Nemotron-3-Nano-30B-A3B")
    assert (bare.label, bare.note) == ("nvidia/NVIDIA-Nemotron-3-Nano-30B-A3B-BF16", "")


def test_an_ollama_moe_tag_by_total_size_is_the_one_model_of_that_size():
    # Ollama's library tags gemma-4-26B-A4B as gemma4:26b (total size only)
    assert resolve_model("gemma4:26b").model.id == "google/gemma-4-26B-A4B-it"
    assert resolve_model("gemma4:26b-it-q4_K_M").variant.gguf_type == "Q4_K_M"  # type: ignore[union-attr]
    # no catalogued Gemma 4 has 12B: asked, never rounded to the 26B or the 31B
    with pytest.raises(NameNotFound):
        resolve_model("gemma4:12b")


def test_an_ollama_tag_naming_a_safetensors_quant_weighs_as_that_quant():
    # "-nvfp4" is not the catalogued Q4_K_M Ollama build nor the bf16 checkpoint
    match = resolve_model("qwen3.6:27b-nvfp4")
    assert (match.label, match.variant and match.variant.quant) == ("nvidia/Qwen3.6-27B-NVFP4", "nvfp4")
    # an fp16 tag of a model whose only catalogued Ollama build is Q4_K_M stays 16-bit
    fp16 = resolve_model("qwen3:235b-a22b-fp16")
    assert fp16.variant is not None and fp16.variant.quant == "fp16"
    assert round(variant_weight_bytes(fp16.model, fp16.variant) / GIB, 1) == 437.9


def test_a_catalogued_build_under_another_organisation_says_whose_weights_it_used():
    match = resolve_model("lukealonso/GLM-5.1-NVFP4")
    assert match.label == "nvidia/GLM-5.1-NVFP4"
    assert match.note == "lukealonso/GLM-5.1-NVFP4 is another nvfp4 build; weights as nvidia/GLM-5.1-NVFP4"
    # a local folder of that name and the vendor's own repo id are the build itself
    assert resolve_model("/vllm-workspace/models/GLM-5.1-NVFP4/").note == ""
    assert resolve_model("nvidia/GLM-5.1-NVFP4").note == ""


def test_a_gguf_type_after_a_space_is_the_file_type():
    match = resolve_model("Qwen3.5-9B Q4_K_M")
    assert (match.model.id, match.variant and match.variant.gguf_type) == ("Qwen/Qwen3.5-9B", "Q4_K_M")


def test_qwen35_9b_keeps_its_hybrid_cache_geometry():
    layout = vllm_layout(resolve_model("Qwen/Qwen3.5-9B").model)
    # 8 full-attention layers x 4 KV heads x 256 x (K+V) x 2 B
    assert layout.growing_bytes_per_token == 32768
    # 24 Gated DeltaNet layers x (conv 3 x 8,192 x 2 B + SSM 32 x 128 x 128 x 4 B)
    assert layout.state_bytes_per_seq == 24 * 2146304
    assert layout.sliding == ()
    # 9,653,104,368 parameters (GGUF general.parameter_count) x 2 B
    match = resolve_model("Qwen/Qwen3.5-9B")
    assert round(variant_weight_bytes(match.model, match.variant) / GIB, 2) == 17.98


def test_an_nvidia_smi_name_cut_short_resolves_only_when_its_cards_share_one_size():
    assert resolve_gpu("NVIDIA RTX PRO 6000 Blac...").id == "rtx-pro-6000-blackwell"
    with pytest.raises(NameNotFound) as info:
        resolve_gpu("NVIDIA GeForce RTX 506...")
    assert info.value.candidates == ["rtx-5060", "rtx-5060-ti-8gb", "rtx-5060-ti-16gb"]
    # too short to say anything
    with pytest.raises(NameNotFound):
        resolve_gpu("NVIDIA A1...")


def test_a_bracketed_second_name_resolves_unless_it_is_another_card():
    assert resolve_gpu("DGX Spark (GB10)").id == "gb10-dgx-spark"
    with pytest.raises(NameNotFound, match="two cards"):
        resolve_gpu("RTX 4090 (RTX 3090)")


def test_a_gtx_1060_without_its_size_asks():
    with pytest.raises(NameNotFound) as info:
        resolve_gpu("GTX 1060")
    assert info.value.candidates == ["gtx-1060-3gb", "gtx-1060-6gb"]


def test_memory_reported_in_brackets_must_fit_the_card():
    # LM Studio prints decimal GB (8 GiB = 8.59 GB), llama.cpp's device list MiB: both fit the cards named
    assert (
        resolve_gpu("NVIDIA GeForce RTX 3070 (Used: 1.57 GB, Total: 8.59 GB, Free: 7.02 GB)").id == "rtx-3070"
    )
    assert resolve_gpu("NVIDIA GeForce RTX 5090 (32108 MiB, 28410 MiB free)").id == "rtx-5090"
    # a 48 GB board is not the 24 GB RTX 4090, whatever the name outside the brackets says
    with pytest.raises(NameNotFound, match=r"rtx-4090 has 24 GB; the brackets report 51\.53 GB"):
        resolve_gpu("NVIDIA GeForce RTX 4090 (49140 MiB, 48000 MiB free)")
