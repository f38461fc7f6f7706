"""Speculative decoding's share of vLLM V1's KV pool, replayed on real logs (calculator/spec_decode.py).

- club-3090#95 (vLLM 0.20.2rc1, Qwen3.6-27B at TP 2, bf16 KV, a DFlash drafter of 5 layers with 8 KV
  heads of 128, 5 speculative tokens): "Available KV cache memory: 10.16 GiB", "GPU KV cache size:
  200,769 tokens", "Maximum concurrency for 200,000 tokens per request: 1.00x";
- club-3090#295 / #294 (Qwen3.6-27B at TP 2, fp8_e5m2 KV, MTP with 3 speculative tokens): "GPU KV cache
  size: 620,944 tokens" / "622,408 tokens" for 262,144 tokens per request.
"""

from __future__ import annotations

import math

from calculator import vllm
from calculator.from_log import speculative_config, speculative_cut
from calculator.kv import vllm_layout
from calculator.resolve import resolve_model
from calculator.spec_decode import SPEC_CUT_NOTE, SpecDecode, draft_attention, find_drafter
from calculator.units import GIB
from calculator.vllm import kv_capacity, reported_kv_tokens
from tests.conftest import situation_of
from tests.conftest import wild_log as record

QWEN36_27B = "Qwen/Qwen3.6-27B"
DFLASH = SpecDecode("dflash", 5, "~/.cache/huggingface/qwen3.6-27b-dflash")
MTP3 = SpecDecode("mtp", 3)


def model(name: str):
    return resolve_model(name, "vllm").model


def test_speculative_config_is_read_from_the_args_dict_the_config_dump_and_the_command():
    args = record("club3090-95-qwen36-27b-dflash-2gpu-bf16kv")["text"]
    assert speculative_config(args) == DFLASH
    dump = (
        "Initializing a V1 LLM engine (v0.20.1) with config: model='~/.cache/huggingface/qwen3.6-27b-"
        "autoround-int4', speculative_config=SpeculativeConfig(method='mtp', model='~/.cache/huggingface/"
        "qwen3.6-27b-autoround-int4', num_spec_tokens=3), tokenizer='~/.cache/huggingface/qwen3.6-27b'"
    )  # club-3090#91
    assert speculative_config(dump) == SpecDecode("mtp", 3, "~/.cache/huggingface/qwen3.6-27b-autoround-int4")
    command = (
        'vllm serve Qwen/Qwen3.6-27B --speculative-config \'{"method":"mtp","num_speculative_tokens":3}\''
    )
    assert speculative_config(command) == MTP3


def test_a_cut_args_line_gives_no_speculative_config():
    # club-3090 PR #594: the args line ends at 'specula' (the number of draft tokens is not shown)
    assert speculative_config(record("club3090-pr594-qwen36-27b-fp8-2x3090")["text"]) is None
    assert speculative_config("'speculative_config': {'method': 'mtp'}") is None


def test_a_speculative_config_cut_off_is_seen_as_one():
    cut = record("club3090-pr594-qwen36-27b-fp8-2x3090")["text"]  # the args line ends at 'specula'
    assert speculative_cut(cut)
    args = "INFO 07-06 10:43:59 [api_utils.py:273] non-default args: {'model': 'x', 'max_num_seqs': 2, "
    assert not speculative_cut(args + "'enable_chunked_prefill': True}")
    assert not speculative_cut(args + "'enable_chunked_prefill': True, 'spe")  # too short to be only it
    assert speculative_cut(args + "'speculative_config': {'method': 'mtp', 'num_specul")
    dump = "Initializing a V1 LLM engine (v0.20.1) with config: model='/m', speculative_config="
    assert speculative_cut(dump + "SpeculativeConfig(method='dflash', model='/d', num_sp")
    assert not speculative_cut(dump + "None, tokenizer='/m', skip_tokenizer_init=False")
    assert not speculative_cut(dump + "SpeculativeConfig(method='mtp', num_spec_tokens=3), tokenizer='/m'")


def test_a_reply_says_a_cut_speculative_config_is_not_counted():
    notes = situation_of(record("club3090-pr594-qwen36-27b-fp8-2x3090")["text"]).notes
    assert SPEC_CUT_NOTE in notes
    whole = record("club3090-95-qwen36-27b-dflash-2gpu-bf16kv")["text"]  # its config is read whole
    assert SPEC_CUT_NOTE not in situation_of(whole).notes


def test_mtp_drafts_with_the_models_own_layer_in_the_targets_group():
    draft = draft_attention(model(QWEN36_27B), MTP3)
    assert draft is not None and (draft.layers, draft.kv_heads, draft.head_dim) == (1, 4, 256)
    assert draft.shares_target_spec
    lay = vllm_layout(model(QWEN36_27B), "fp8_e5m2", tp=2, spec=MTP3)
    assert (lay.growing_layers, lay.draft_type_layers, lay.spec_tokens) == (17, 0, 3)
    # conv state: kernel - 1 + 3 columns of 10,240 x 2 B, halved by TP
    assert lay.state_bytes_per_seq == 48 * (3_207_168 + 3 * 20_480) / 2


def test_mtp_pages_make_the_logged_pool_a_whole_number_of_pages():
    lay = vllm_layout(model(QWEN36_27B), "fp8_e5m2", tp=2, spec=MTP3)
    p = vllm.hybrid_pages(lay)
    # a 1,600-token block (state page 1,634,304 B per rank), 17 layers per group, 1 + 3 groups,
    # 164 attention pages + 3 groups x (2 + 3) state pages per 262,144-token request
    assert (p.block, p.group_size, p.attention_groups, p.state_groups) == (1600, 17, 1, 3)
    assert p.blocks_for(262144) == 179
    for pages, logged in ((424, 620_944), (425, 622_408)):  # club-3090#295, #294
        _b, tokens, _fit, conc = kv_capacity(lay, pages * p.page_bytes * p.group_size / GIB, 262144)
        assert reported_kv_tokens(lay, tokens, conc, 262144, False) == logged
    plain = vllm.hybrid_pages(vllm_layout(model(QWEN36_27B), "fp8_e5m2", tp=2))
    per = plain.blocks_for(262144)  # 174 without the drafter: no whole page count gives 620,944
    assert all(int(n / per * 262144) != 620_944 for n in range(1, 2000))


def test_dflash_drafter_is_a_kv_type_of_its_own():
    drafter = find_drafter("~/.cache/huggingface/qwen3.6-27b-dflash")
    assert drafter is not None and drafter.id == "z-lab/Qwen3.6-27B-DFlash"
    draft = draft_attention(model(QWEN36_27B), DFLASH)
    assert draft is not None and not draft.shares_target_spec  # 8 KV heads of 128, not 4 of 256
    p = vllm.hybrid_pages(vllm_layout(model(QWEN36_27B), "auto", tp=2, spec=DFLASH))
    # groups of 5 layers: 4 target, 1 drafter, 10 recurrent; the drafter's 4 x 128 heads per rank
    # take the same 2,048 B per token as the target's 2 x 256, so the same 816-token block
    assert (p.block, p.group_size, p.attention_groups, p.draft_groups, p.state_groups) == (816, 5, 4, 1, 10)
    assert (p.draft_block, p.state_blocks) == (816, 7)


def test_dflash_pool_replays_club3090_95():
    rec = record("club3090-95-qwen36-27b-dflash-2gpu-bf16kv")
    lay = vllm_layout(model(QWEN36_27B), "auto", tp=2, spec=speculative_config(rec["text"]))
    blocks, tokens, fit, conc = kv_capacity(lay, 10.16, 200_000)
    assert blocks == 1305
    assert reported_kv_tokens(lay, tokens, conc, 200_000, False) == 200_769
    assert f"{conc:.2f}" == "1.00"
    assert fit == (1305 - 70) // 5 * 816  # 70 state pages held, 5 attention groups of 816 tokens


def test_without_a_speculative_config_the_layout_is_unchanged():
    m = model(QWEN36_27B)
    assert vllm_layout(m, "fp8", tp=2, spec=None) == vllm_layout(m, "fp8", tp=2)
    # n-gram drafting has no layers; its draft tokens still widen the conv state
    ngram = vllm_layout(m, "fp8", tp=2, spec=SpecDecode("ngram", 4))
    assert (ngram.growing_layers, ngram.spec_tokens) == (16, 4)
    assert math.isclose(
        ngram.state_bytes_per_seq - vllm_layout(m, "fp8", tp=2).state_bytes_per_seq, 48 * 4 * 10_240
    )


def test_the_bot_reads_the_speculative_config_into_its_vllm_budget():
    from bot.detector import detect
    from bot.diagnosis.budgets import budget_for
    from bot.situation import read

    detection = detect(record("club3090-95-qwen36-27b-dflash-2gpu-bf16kv")["text"])
    assert detection.root is not None
    situation = read(detection, detection.root)
    assert situation.spec == DFLASH
    budget = budget_for(situation)
    assert budget is not None and isinstance(budget.estimate, vllm.VllmEstimate)
    assert budget.estimate.spec == DFLASH
    # its layout holds the drafter's 5 layers: 16 + 5 attention layers of 2,048 B per token per rank
    assert budget.estimate.bytes_per_token(budget.plan0) == 21 * 2048


def test_deepseek_mtp_is_one_more_mla_layer_in_the_pool():
    # config.json num_nextn_predict_layers 1; the MTP layer's latent (512 + 64) joins the target's 61
    ds = model("deepseek-ai/DeepSeek-V3")
    lay = vllm_layout(ds, "fp8", spec=SpecDecode("deepseek_mtp", 1))
    assert (lay.growing_layers, lay.draft_type_layers) == (62, 0)
    assert lay.all_attention_bytes_per_token == 62 * 576
    assert vllm_layout(ds, "fp8").all_attention_bytes_per_token == 61 * 576


def test_a_hub_config_gives_the_mtp_layers_and_the_conv_column():
    from calculator.from_config import spec_from_config

    cfg = {
        "architectures": ["Qwen3_5ForConditionalGeneration"],
        "text_config": {
            "num_hidden_layers": 64, "hidden_size": 5120, "num_attention_heads": 24, "num_key_value_heads": 4,
            "head_dim": 256, "vocab_size": 248320, "intermediate_size": 17408, "max_position_embeddings": 262144,
            "full_attention_interval": 4, "linear_num_key_heads": 16, "linear_num_value_heads": 48,
            "linear_key_head_dim": 128, "linear_value_head_dim": 128, "linear_conv_kernel_dim": 4,
            "mtp_num_hidden_layers": 1,
        },
    }  # fmt: skip
    spec, _variant = spec_from_config(cfg, "Qwen/Qwen3.6-27B", "test")
    assert spec.mtp_layers == 1
    linear = next(g for g in spec.layer_groups if g.kind == "linear")
    assert (linear.count, linear.conv_column_bytes) == (48, 20480)


def test_a_drafter_outside_the_catalog_is_said_not_counted():
    from bot.detector import detect
    from bot.situation import read

    text = record("club3090-95-qwen36-27b-dflash-2gpu-bf16kv")["text"].replace(
        "qwen3.6-27b-dflash'", "my-own-eagle3'"
    )
    detection = detect(text)
    assert detection.root is not None
    situation = read(detection, detection.root)
    assert situation.spec == SpecDecode("dflash", 5, "~/.cache/huggingface/my-own-eagle3")
    assert (
        "your run drafts 5 tokens (dflash); the draft model my-own-eagle3 is not in my catalog, "
        "so the KV pool is counted without them"
    ) in situation.notes
    # the catalogued drafter gives no such note
    detection = detect(record("club3090-95-qwen36-27b-dflash-2gpu-bf16kv")["text"])
    assert detection.root is not None
    assert not any("draft" in n for n in read(detection, detection.root).notes)


def test_the_threads_mtp_config_replays_the_pools_their_cut_pastes_logged():
    # club-3090 PR #594 and issue #642 cut the args line before the speculative config; the threads'
    # compose files (the record's flags, with their source) name MTP with 3 draft tokens
    for rid, kv_gib, logged, ours in (
        ("club3090-pr594-qwen36-27b-fp8-2x3090", 5.33, 300_220, 300_220),
        ("club3090-642-qwen36-27b-autoround-mtp-2x3090-proxmox", 11.05, 623_873, 622_408),
    ):
        rec = record(rid)
        stated = rec["flags"]["speculative_config"]
        spec = SpecDecode(stated["method"], stated["num_speculative_tokens"])
        assert spec == MTP3 and rec["logged"]["kv_tokens"] == logged
        lay = vllm_layout(model(QWEN36_27B), "fp8", tp=2, spec=spec)
        _b, tokens, _fit, conc = kv_capacity(lay, kv_gib, 262144)
        assert reported_kv_tokens(lay, tokens, conc, 262144, False) == ours
        assert abs(ours - logged) / logged < 0.005
