"""SGLang's and TGI's worker out-of-memory answered by the start-up phase it hit (knowledge/signatures/
sglang.yaml and tgi.yaml, the engines10 block), llama.cpp's unknown architecture told in llama.cpp's terms,
and an advice reply whose every step lacked its number printing no empty "What to do".  The pastes are real:
the signatures' own examples, whose threads are cited beside them in the YAML."""

from __future__ import annotations

import dataclasses

from bot.core import GardenBot, Paste
from bot.detector import detect
from bot.diagnosis.advice import advice
from bot.formatter import to_markdown
from bot.reply import Reply
from bot.situation import read
from knowledge import load_builtin
from tests.bot.test_oom_phase import PROFILE
from tests.conftest import wild_text


def _reply(text: str) -> Reply:
    reply = GardenBot().triage(Paste(text, False, []))
    assert reply is not None
    return reply


def _steps(reply: Reply) -> list[str]:
    return next(s.body for s in reply.sections if s.heading == "What to do").splitlines()


def _example(signature: str, index: int) -> str:
    loaded = next(x for x in load_builtin().signatures if x.signature.id == signature)
    return loaded.signature.examples[index].text


# https://github.com/huggingface/text-generation-inference/issues/2301 (TGI 2.2): the raw OOM inside warmup
TGI_PREFILL = _example("tgi.gpu_oom.warmup", 0)
# https://github.com/huggingface/text-generation-inference/issues/2572: a CUDA graph's capture_end in the warm-up
TGI_GRAPHS = _example("tgi.gpu_oom.warmup", 1)
# https://github.com/sgl-project/sglang/issues/12496: init_memory_pool -> MHATokenToKVPool._create_buffers
SGLANG_POOL = _example("sglang.gpu_oom.pool_or_serving", 0)
# https://github.com/sgl-project/sglang/issues/4547: the overlap worker's forward thread while serving
SGLANG_SERVING = _example("sglang.gpu_oom.pool_or_serving", 1)
# the server_args fields of https://github.com/sgl-project/sglang/issues/4708 (shortened), put before a traceback
SERVER_ARGS = (
    "[2025-03-24 13:34:35] server_args=ServerArgs(model_path='/home/diaomuxi/model_zoo/gemma-3-4b-it', "
    "mem_fraction_static=0.88, max_running_requests=None, max_total_tokens=None, chunked_prefill_size=8192, "
    "max_prefill_tokens=16384, tp_size=1)\n"
)


# ------------------------------------------------------------------ TGI: the warm-up
def test_tgi_warmup_prefill_oom_is_answered_by_the_warmup_phase():
    reply = _reply(TGI_PREFILL)
    assert reply.signature == "tgi.gpu_oom.warmup"
    assert reply.engine == "tgi"
    steps = _steps(reply)
    assert steps[0] == (
        "- if the traceback runs through generate_token or the model's forward, the warm-up prefill did not fit: "
        "lower --max-batch-prefill-tokens (it must stay at or above --max-input-tokens)."
    )
    assert "--num-shard" in steps[2]


def test_tgi_warmup_graph_capture_names_the_prefill_the_router_sent_and_the_graph_sizes():
    reply = _reply(TGI_GRAPHS)
    # vLLM's capture signature keys on torch/cuda/graphs.py too; TGI's warm-up span decides
    assert reply.signature == "tgi.gpu_oom.warmup"
    steps = _steps(reply)
    assert steps[0].endswith("This warm-up ran a prefill of 550 tokens.")
    assert steps[1] == (
        "- if it runs through cuda_graph_warmup or torch/cuda/graphs.py, the CUDA graphs did not fit beside the "
        "KV cache: capture fewer batch sizes with a shorter --cuda-graphs list (the launcher's default is "
        "1,2,4,8,16,32; 0 captures none), or a lower --cuda-memory-fraction so the KV cache leaves the graphs "
        "more room"
    )
    assert "--enforce-eager" not in to_markdown(reply)


def test_tgi_warmup_finished_is_no_longer_the_warmup():
    later = (
        "2024-11-13T08:25:00.000000Z  INFO text_generation_router: Setting max batch total tokens to 30816\n"
    )
    assert _reply(later + TGI_PREFILL).signature != "tgi.gpu_oom.warmup"


# ------------------------------------------------------------------ SGLang: the KV pool and serving
def test_sglang_kv_pool_oom_is_the_pool_phase_not_a_step_sized_from_one_layer():
    reply = _reply(SGLANG_POOL)
    assert reply.signature == "sglang.gpu_oom.pool_or_serving"
    assert "while it allocated the KV pool or while it served requests" in reply.summary
    # one 32 MiB per-layer buffer does not size the pool's shortfall: no fraction is computed
    assert not reply.fixes
    assert _steps(reply)[0].startswith("- lower --mem-fraction-static: the KV pool takes less")


def test_sglang_pool_advice_names_the_settings_the_server_args_printed():
    steps = _steps(_reply(SERVER_ARGS + SGLANG_POOL))
    assert steps[0].endswith("This run used 0.88.")
    assert steps[1] == (
        "- if it failed on a long prompt (prefill), prefill in smaller chunks with a lower --chunked-prefill-size "
        "(slower prefill of long prompts). This run used 8,192."
    )
    # max_running_requests=None prints no number: the sentence that would name it is dropped
    assert (
        steps[2]
        == "- if it failed while decoding many requests, run fewer at once with a lower --max-running-requests."
    )


def test_sglang_serving_oom_is_sglangs_not_the_generic_pytorch_answer():
    reply = _reply(SGLANG_SERVING)
    assert reply.signature == "sglang.gpu_oom.pool_or_serving"
    assert reply.engine == "sglang"
    assert any("--max-running-requests" in step for step in _steps(reply))


def test_sglang_capture_oom_keeps_its_own_fix():
    # https://github.com/sgl-project/sglang/issues/5285: the capture's own message
    reply = _reply(_example("sglang.cuda_graph_oom.v0", 1))
    assert reply.signature == "sglang.cuda_graph_oom.v0"
    assert (
        reply.fixes[0].change == "run without CUDA graphs (add `--disable-cuda-graph` to your SGLang command)"
    )


# ------------------------------------------------------------------ advice with every step dropped
def test_advice_whose_steps_all_lack_their_number_prints_no_heading():
    detection = detect(PROFILE)
    root = next(f for f in detection.findings if f.signature == "vllm.gpu_oom.profile_run")
    # the paste prints no max_num_seqs: the one step is dropped, and with it the heading
    root = dataclasses.replace(root, advice=["restart with --max-num-seqs below {max_num_seqs}."])
    reply = advice(read(detection, root))
    assert "What to do" not in [s.heading for s in reply.sections]


def test_advice_keeps_the_heading_for_the_steps_that_remain():
    detection = detect(PROFILE)
    root = next(f for f in detection.findings if f.signature == "vllm.gpu_oom.profile_run")
    root = dataclasses.replace(
        root, advice=["restart with --max-num-seqs below {max_num_seqs}.", "check nvidia-smi"]
    )
    sections = {s.heading: s.body for s in advice(read(detection, root)).sections}
    assert sections["What to do"] == "- check nvidia-smi"


# ------------------------------------------------------------------ llama.cpp: unknown architecture
def test_an_unknown_gguf_architecture_is_answered_in_llamacpp_terms():
    # https://github.com/ollama/ollama/issues/15546 (a held-out wild record)
    reply = _reply(wild_text("wild_engines.jsonl", "ollama15546-gemma4-arch"))
    assert reply.signature == "llamacpp.unknown_architecture"
    text = to_markdown(reply)
    assert "vLLM" not in text and "flash-attn" not in text
    assert "update llama.cpp to a build that supports 'gemma4'" in text


def test_vllms_unsupported_architecture_stays_engine_neutral():
    # https://github.com/vllm-project/vllm/issues/10481
    reply = _reply("ValueError: Model architectures ['LlamaModel'] are not supported for now.")
    assert reply.signature == "common.unsupported_architecture"
    assert "GGUF" not in to_markdown(reply)
