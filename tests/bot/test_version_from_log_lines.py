"""The release a vLLM paste that prints no version ran, from its log lines' source line numbers
(knowledge/log_lines.yaml): a printed version wins, the markers of knowledge/features.yaml narrow it."""

from __future__ import annotations

from tests.conftest import situation_of, wild_log

HOW = "from your log's source line numbers"
V1_ERROR = (
    "ValueError: To serve at least one request with the model's max seq len (32768), (4.00 GiB KV cache is "
    "needed, which is larger than the available KV cache memory (2.00 GiB). Based on the available memory, "
    "the estimated maximum model length is 16384. Try increasing `gpu_memory_utilization` or decreasing "
    "`max_model_len` when initializing the engine."
)


def test_club3090_295_reads_as_022_from_its_kv_cache_lines():
    # club-3090#295 prints no version; [kv_cache_utils.py:1733] / [:1734] and [utils.py:278] are 0.22.x
    situation = situation_of(wild_log("club3090-295-qwen36-27b-autoround-2x3090-p2p-on")["text"])
    assert situation.version == (0, 22, 0)
    assert situation.version_src is not None
    assert (situation.version_src.value, situation.version_src.source) == ("0.22.0-0.22.1", "estimated")
    assert situation.version_src.how == HOW


def test_a_printed_version_wins():
    # club-3090#612 prints "Initializing a V1 LLM engine (v0.24.0)"; its lines say 0.24.0 too
    situation = situation_of(wild_log("club3090-612-qwen36-35b-a3b-nvfp4-5090")["text"])
    assert situation.version == (0, 24, 0)
    assert situation.version_src is not None
    assert (situation.version_src.value, situation.version_src.how) == ("0.24.0", "printed in your log")


def test_two_lines_give_one_release():
    # vllm#13882: 0.7.0-0.7.3 and 0.7.3-0.8.2 meet at 0.7.3
    situation = situation_of(wild_log("vllm13882-qwen25-7b-rtx4060-util070")["text"])
    assert situation.version == (0, 7, 3)
    assert situation.version_src is not None and situation.version_src.value == "0.7.3"


def test_a_marker_inside_the_range_narrows_it():
    # [executor_base.py:116] "Maximum concurrency for" is 0.7.3-0.8.2; V1's start check wording is 0.8.0+
    line = (
        "INFO 03-20 10:00:00 [executor_base.py:116] Maximum concurrency for 32768 tokens per request: 2.50x"
    )
    situation = situation_of(f"{line}\n{V1_ERROR}")
    assert situation.version == (0, 8, 0)
    assert situation.version_src is not None and situation.version_src.value == "0.8.0-0.8.2"


def test_a_marker_outside_the_range_leaves_it():
    # [model_runner.py:1115] "Loading model weights took" is 0.7.0-0.7.3 (V1 ran there behind VLLM_USE_V1=1)
    line = "INFO 02-26 10:00:00 [model_runner.py:1115] Loading model weights took 5.2032 GB"
    situation = situation_of(f"{line}\n{V1_ERROR}")
    assert situation.version == (0, 7, 0)
    assert situation.version_src is not None and situation.version_src.value == "0.7.0-0.7.3"


def test_lines_that_fit_no_release_fall_back_to_the_markers():
    # club-3090#104: [gpu_worker.py:460] Available KV cache memory is in no release (a build between them)
    situation = situation_of(wild_log("club3090-104-qwen36-27b-autoround-2x3090")["text"])
    assert situation.version == (0, 8, 0)
    assert situation.version_src is not None and situation.version_src.value == ">=0.8.0"
