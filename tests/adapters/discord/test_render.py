"""Reply -> embeds: Discord's limits, the reply.md fallback, code blocks a paste cannot break."""

from __future__ import annotations

import pytest

from adapters.discord import render as r
from bot.reply import Fact, Fix, MemoryPicture, MemorySegment, Reply, Section
from tests.adapters.discord.conftest import KV_PASTE

ENGINES = ["vllm", "llama.cpp", "ollama", "sglang"]


def big_reply(fixes: int = 40, notes: int = 30) -> Reply:
    return Reply(
        kind="diagnosis",
        title="vLLM: " + "very long title " * 30,
        summary="The cause. " * 50,
        sections=[Section("Your numbers", facts=[Fact(f"fact {i}", f"{i:,}", "log") for i in range(30)])],
        fixes=[
            Fix(
                ENGINES[i % 4],
                f"change {i}",
                f"vllm serve m --flag-{i} " + "x" * 150,
                "effect " * 10,
                "cost",
                i,
            )
            for i in range(fixes)
        ],
        memory=MemoryPicture(24.0, [MemorySegment("weights", 14.0), MemorySegment("kv cache", 8.0)]),
        notes=[f"note {i}: " + "assumption " * 12 for i in range(notes)],
        signature="vllm.kv_cache_too_small.v0",
    )


def check_limits(embeds) -> None:
    assert 1 <= len(embeds) <= r.EMBEDS_MAX
    assert sum(len(e) for e in embeds) <= r.EMBED_TOTAL_MAX
    for e in embeds:
        assert len(e.title or "") <= r.TITLE_MAX
        assert len(e.description or "") <= r.DESCRIPTION_MAX
        assert len(e.fields) <= r.FIELDS_MAX
        for f in e.fields:
            assert len(f.name) <= r.FIELD_NAME_MAX and len(f.value) <= r.FIELD_VALUE_MAX


def test_a_normal_reply_fits_with_fixes_as_bash_blocks():
    reply = Reply(
        kind="diagnosis",
        title="vLLM: the KV cache holds 5,728 tokens",
        summary="Not even one request fits.",
        sections=[Section("Your numbers", facts=[Fact("max_model_len asked for", "131,072", "log")])],
        fixes=[Fix("vllm", "cap the context", "vllm serve <model> --max-model-len 5120", "fits")],
        notes=["GPU unknown"],
    )
    out = r.render(reply)
    assert not out.overflow and out.files == []
    check_limits(out.embeds)
    fields = {f.name: f.value for f in out.embeds[0].fields}
    assert list(fields) == ["Fix", "Note"]  # the first post: the fix; the numbers are details
    assert fields["Fix"].endswith("```bash\nvllm serve <model> --max-model-len 5120\n```")
    assert out.embeds[0].footer.text == "GPU Garden"


def test_the_memory_bar_is_a_code_block_and_the_chart_an_attachment():
    reply = big_reply(fixes=2, notes=1)
    reply.title = "fits"
    reply.summary = "ok."
    out = r.render(reply)
    assert not out.overflow
    assert out.embeds[0].description == "ok."  # the bar is a detail; the chart goes along
    assert [name for name, _ in out.files] == ["memory.png"]
    assert out.embeds[-1].image.url == "attachment://memory.png"
    assert [f.filename for f in out.discord_files()] == ["memory.png"]


def test_long_fix_lists_are_split_over_fields():
    reply = big_reply(fixes=12, notes=0)
    for fix in reply.fixes:
        fix.engine = "vllm"
    reply.sections = []
    reply.summary = "short."
    reply.title = "t"
    embeds = r.layout(reply)
    check_limits(embeds)
    names = [f.name for e in embeds for f in e.fields]
    assert names == ["Fix", "Or", "Or"]  # the fix and at most two alternatives


def test_a_reply_over_the_limits_becomes_a_short_embed_and_reply_md():
    reply = big_reply()
    reply.summary = "The cause. " * 500  # beyond an embed's description
    with pytest.raises(r.DoesNotFit):
        r.layout(reply)
    out = r.render(reply)
    assert out.overflow
    check_limits(out.embeds)
    names = [name for name, _ in out.files]
    assert names == ["reply.md", "memory.png"]
    md = dict(out.files)["reply.md"].decode()
    assert "note 29" in md and "--flag-39" in md  # everything is in the file
    assert "reply.md" in out.embeds[0].description


def test_brief_shows_the_cause_and_one_fix_per_engine():
    reply = big_reply(notes=2)
    reply.short = "The KV cache is too small."
    reply.title = "t"
    embeds = r.layout(reply, brief=True)
    check_limits(embeds)
    assert embeds[0].description == "The KV cache is too small."
    assert [f.name for f in embeds[0].fields] == ["Fix"]


def test_pasted_backticks_and_ansi_cannot_break_the_layout():
    evidence = f"\x1b[31mERROR\x1b[0m ```` oops ```bash\n{KV_PASTE}\n```\r\n@everyone"
    reply = Reply(
        kind="diagnosis",
        title="t ```x```",
        summary="s ```",
        sections=[Section("What I matched", body=evidence)],
        fixes=[Fix("vllm", "c", "echo ```; rm -rf /tmp/x", "e")],
    )
    embeds = r.layout(reply)
    for embed in embeds:
        texts = [embed.title or "", embed.description or ""] + [f.value for f in embed.fields]
        for text in texts:
            assert "\x1b" not in text and "\r" not in text
    fix = embeds[0].fields[0].value
    assert fix.count("```") == 2  # only our fences: the paste's runs are broken with zero-width spaces
    md = r.full_markdown(reply).decode()
    assert "\x1b" not in md and "ERROR" in md and "5728" in md


def test_clean_and_defuse():
    assert r.clean("a\x1b[1;32mb\x1b[0m\x07c\r\nd") == "abc\nd"
    assert "```" not in r.defuse("x```y``````z")
    assert r.defuse("x```y").replace(r.ZWSP, "") == "x```y"
    assert r.cut("abcdef", 4) == "abc…"
    assert len(r.thread_name(Reply(kind="vram", title="x" * 300))) == 100


def test_an_action_fix_without_a_command_renders_no_empty_code_block():
    reply = Reply(
        kind="diagnosis",
        title="SGLang: CUDA out of memory while serving",
        summary="A later allocation found no room.",
        fixes=[
            Fix("any", "lower `--mem-fraction-static` by 0.04 from the value in force", "", "3.16 GiB more")
        ],
    )
    fields = {f.name: f.value for f in r.render(reply).embeds[0].fields}
    assert (
        fields["Fix"] == "**lower `--mem-fraction-static` by 0.04 from the value in force**: 3.16 GiB more."
    )
