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
from tests.bot.test_oom_phase import PROFILE


def _reply(text: str) -> Reply:
    reply = GardenBot().triage(Paste(text, False, []))
    assert reply is not None
    return reply


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
    # https://github.com/ollama/ollama/issues/15546
    reply = _reply(
        "llama_model_load: error loading model: error loading model architecture: unknown model architecture: "
        "'gemma4' llama_model_load_from_file_impl: failed to load model"
    )
    assert reply.signature == "llamacpp.unknown_architecture"
    text = to_markdown(reply)
    assert "vLLM" not in text and "flash-attn" not in text
    assert "update llama.cpp to a build that supports 'gemma4'" in text


def test_vllms_unsupported_architecture_stays_engine_neutral():
    # https://github.com/vllm-project/vllm/issues/10481
    reply = _reply("ValueError: Model architectures ['LlamaModel'] are not supported for now.")
    assert reply.signature == "common.unsupported_architecture"
    assert "GGUF" not in to_markdown(reply)
