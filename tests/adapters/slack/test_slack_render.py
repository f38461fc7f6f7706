"""Reply → Block Kit: limits, escaping (no pings), fallback text, overflow to a file, feedback values."""

from __future__ import annotations

import json

from slack_sdk.models.blocks import Block

from adapters.slack.feedback import ACTION_HELPFUL, ACTION_NOT_HELPFUL, FeedbackRef
from adapters.slack.render import (
    BLOCKS_MAX,
    SECTION_MAX,
    TOTAL_MAX,
    block_text_size,
    code_block,
    cut,
    escape,
    pack,
    render_reply,
)
from bot.core import GardenBot, Paste
from bot.reply import Fact, Fix, MemoryPicture, MemorySegment, Reply, Section

PASTE = (
    "ValueError: The model's max seq len (131072) is larger than the maximum number of tokens that can be "
    "stored in KV cache (5728). Try increasing gpu_memory_utilization or decreasing max_model_len when "
    "initializing the engine."
)
PINGS = "<!channel> <!here> <!everyone> <@U123> <!subteam^S1|@oncall> <#C1|general> <https://x.test|click>"


def all_text(rendered) -> str:
    return json.dumps(rendered.payload())


def sections(rendered) -> list[str]:
    return [b["text"]["text"] for b in rendered.blocks if b["type"] == "section"]


def test_kv_reply_renders_numbers_fixes_and_fallback():
    reply = GardenBot().triage(Paste(PASTE, False, []))
    rendered = render_reply(reply, feedback=FeedbackRef("C1:1.0", reply.signature))
    body = "\n".join(sections(rendered))
    assert "5,728" in body and "131,072" in body
    # no command or model in the paste: the flag to add, no code block (no other engine either)
    assert "(add `--max-model-len 5120` to your vLLM command)" in body
    assert body.count("```") == 0
    assert rendered.text.startswith("vLLM: the KV cache holds 5,728 tokens")
    assert rendered.overflow is None
    assert len(rendered.blocks) <= BLOCKS_MAX and block_text_size(rendered.blocks) <= TOTAL_MAX
    assert all(len(t) <= SECTION_MAX for t in sections(rendered))
    actions = [b for b in rendered.blocks if b["type"] == "actions"]
    assert [e["action_id"] for e in actions[0]["elements"]] == [ACTION_HELPFUL, ACTION_NOT_HELPFUL]
    ref = FeedbackRef.parse(actions[0]["elements"][0]["value"])
    assert ref == FeedbackRef("C1:1.0", "vllm.kv_cache_too_small.v0")
    for block in rendered.blocks:  # slack_sdk's own Block Kit validators accept every block
        parsed = Block.parse(block)
        parsed.validate_json()
        assert parsed.to_dict() == block


def test_every_user_derived_field_is_escaped():
    reply = Reply(
        kind="diagnosis",
        title=f"title {PINGS}",
        summary=f"summary {PINGS}. More & more",
        sections=[Section(f"head {PINGS}", body=f"line1 {PINGS}\nline2", facts=[Fact(PINGS, PINGS)])],
        fixes=[Fix("vllm", PINGS, f"vllm serve {PINGS}", PINGS, PINGS)],
        memory=MemoryPicture(24.0, [MemorySegment(PINGS, 10.0)], title=PINGS),
        notes=[PINGS],
        signature=f"sig {PINGS}",
    )
    rendered = render_reply(reply, feedback=FeedbackRef("k"))
    dumped = all_text(rendered)
    for raw in ("<!", "<@", "<#", "<http"):
        assert raw not in dumped
    assert "&lt;!channel&gt;" in dumped and "&amp;" in dumped
    assert "&amp;lt;" not in dumped.replace("More &amp; more", "")  # escaped exactly once


def test_escape_and_cut_never_split_an_entity():
    assert escape("a & <b> >") == "a &amp; &lt;b&gt; &gt;"
    text = escape("x" * 10 + "<" * 10)
    for limit in range(5, 40):
        out = cut(text, limit)
        assert len(out) <= limit
        tail = out.removesuffix("…")
        assert tail.count("&") == tail.count(";")


def test_code_block_cannot_be_closed_by_the_content():
    block = code_block("echo ``` <!here>")
    assert block.count("```") == 2
    assert "&lt;!here&gt;" in block


def test_pack_splits_long_text_and_code_within_the_section_limit():
    long_code = code_block("\n".join(f"line {i} " + "x" * 80 for i in range(200)))
    parts = pack(["*heading*", long_code, "y" * 5000], limit=SECTION_MAX)
    assert all(len(p) <= SECTION_MAX for p in parts)
    for part in parts:
        assert part.count("```") % 2 == 0  # every chunk opens and closes its fences


def test_too_big_reply_goes_brief_and_full_markdown_overflows_to_a_file():
    fixes = [Fix("vllm", f"fix {i}", "vllm serve m " + "--flag " * 420, "effect", rank=i) for i in range(40)]
    reply = Reply(
        kind="diagnosis",
        title="Huge",
        summary="First sentence. Second sentence." + " More." * 12000,
        sections=[Section("What I matched", body="log line\n" * 2000)],
        fixes=fixes,
        signature="sig.v0",
    )
    rendered = render_reply(reply, feedback=FeedbackRef("k", "sig.v0"))
    assert len(rendered.blocks) <= BLOCKS_MAX and block_text_size(rendered.blocks) <= TOTAL_MAX
    assert rendered.overflow is not None and "fix 39" in rendered.overflow
    assert "attached file" in all_text(rendered)
    assert rendered.text == "Huge: First sentence."
    assert any(b["type"] == "actions" for b in rendered.blocks)
    ephemeral = render_reply(reply, can_attach=False)
    assert ephemeral.overflow is None and "Shortened" in all_text(ephemeral)


def test_brief_setting_keeps_the_key_point_and_the_fix():
    reply = GardenBot().triage(Paste(PASTE, False, []))
    rendered = render_reply(reply, brief=True)
    body = "\n".join(sections(rendered))
    assert "*Fix:*" in body and "*Or:*" not in body
    assert "(add `--max-model-len 5120` to your vLLM command)" in body


def test_memory_bar_is_in_a_code_block():
    reply = Reply(
        kind="vram",
        title="fits",
        memory=MemoryPicture(24.0, [MemorySegment("weights", 18.0), MemorySegment("kv cache", 4.0)]),
    )
    body = "\n".join(sections(render_reply(reply)))
    assert "```\nGPU memory: 24.00 GiB\n[WWWW" in body


def test_help_and_error_replies_have_no_feedback_buttons():
    for kind in ("help", "error"):
        rendered = render_reply(Reply(kind=kind, title="t"), feedback=FeedbackRef("k"))
        assert not [b for b in rendered.blocks if b["type"] == "actions"]


def test_feedback_value_parse_rejects_garbage():
    for junk in (None, "", "not json", "[]", '{"k": 3}', '{"s": "x"}', 42):
        assert FeedbackRef.parse(junk) is None
    assert FeedbackRef.parse(FeedbackRef("a:b", None).value()) == FeedbackRef("a:b", None)
    assert len(FeedbackRef("k" * 5000, "s" * 5000).value()) <= 2000


def test_an_action_fix_without_a_command_renders_no_empty_code_block():
    reply = Reply(
        kind="diagnosis",
        title="SGLang: CUDA out of memory while serving",
        summary="A later allocation found no room.",
        fixes=[
            Fix("any", "lower --mem-fraction-static by 0.04 from the value in force", "", "3.16 GiB more")
        ],
    )
    body = "\n".join(sections(render_reply(reply)))
    assert "*Fix:* lower --mem-fraction-static by 0.04 from the value in force: 3.16 GiB more." in body
    assert "```" not in body
