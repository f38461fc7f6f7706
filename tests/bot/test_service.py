"""The service around the bot: ignore bots, answer once, throttle politely, redact secrets."""

from __future__ import annotations

import asyncio

from bot.core import GardenBot, Paste
from bot.message import Attachment, IncomingMessage, SlashCommand
from bot.metrics import Metrics
from bot.service import GardenService
from bot.settings import Limits
from bot.storage import Storage

KV = "ValueError: The model's max seq len (4096) is larger than the maximum number of tokens that can be stored in KV cache (3664)."


def msg(i="1", user="u1", channel="c1", text=KV, **kw):
    return IncomingMessage(platform="test", text=text, message_id=i, user_id=user, channel_id=channel, **kw)


async def test_answers_once_per_message_even_across_restarts(tmp_path):
    db = tmp_path / "db.sqlite3"
    svc = GardenService(storage=Storage(db))
    out = await svc.handle(msg())
    assert out.kind == "reply"
    assert (await svc.handle(msg())).kind == "duplicate"  # being posted: not a second time
    await svc.remember_reply(msg(), "r1", out.reply)
    restarted = GardenService(storage=Storage(db))
    assert (await restarted.handle(msg())).kind == "duplicate"


async def test_a_message_taken_but_never_posted_is_answered_after_a_restart(tmp_path):
    db = tmp_path / "db.sqlite3"
    svc = GardenService(storage=Storage(db))
    assert (await svc.handle(msg())).kind == "reply"  # then the process stops before posting
    restarted = GardenService(storage=Storage(db))
    assert (await restarted.handle(msg())).kind == "reply"
    assert (await restarted.handle(msg())).kind == "duplicate"


async def test_an_abandoned_answer_is_not_refused_when_redelivered(tmp_path):
    svc = GardenService(storage=Storage(tmp_path / "db.sqlite3"))
    assert (await svc.handle(msg(), event_id="Ev7")).kind == "reply"
    await svc.abandon(msg(), event_id="Ev7")  # the post failed
    assert (await svc.handle(msg(), event_id="Ev7")).kind == "reply"
    assert (await svc.handle(msg(), event_id="Ev7")).kind == "duplicate"


async def test_a_silent_pass_is_settled_and_not_redone_after_a_restart(tmp_path):
    db = tmp_path / "db.sqlite3"
    svc = GardenService(storage=Storage(db))
    assert (await svc.handle(msg(text="nothing to see"))).kind == "ignored"
    restarted = GardenService(storage=Storage(db))
    assert (await restarted.handle(msg(text="nothing to see"))).kind == "duplicate"


async def test_an_edit_waits_for_the_answer_in_flight():
    svc = GardenService()
    order: list[str] = []

    async def first() -> None:
        async with svc.turn(msg()):
            order.append("first starts")
            await asyncio.sleep(0.05)  # posting
            order.append("first posted")

    async def edit() -> None:
        await asyncio.sleep(0.01)
        async with svc.turn(msg()):
            order.append("edit")

    await asyncio.gather(first(), edit())
    assert order == ["first starts", "first posted", "edit"]
    assert svc._turns == {}  # nothing kept once both are done


async def test_outcomes_are_counted_on_the_metrics():
    metrics = Metrics()
    svc = GardenService(metrics=metrics)
    await svc.handle(msg())
    await svc.handle(msg())
    labels = {"platform": "test", "signature": "vllm.kv_cache_too_small.v0", "category": "kv_cache_too_small"}
    assert metrics.value("gpu_garden_messages_total", {"platform": "test", "outcome": "reply"}) == 1.0
    assert metrics.value("gpu_garden_messages_total", {"platform": "test", "outcome": "duplicate"}) == 1.0
    assert metrics.value("gpu_garden_findings_total", labels) == 1.0
    svc.platform_error("test", "send")
    assert metrics.value("gpu_garden_platform_errors_total", {"platform": "test", "kind": "send"}) == 1.0


async def test_edit_is_retriaged():
    svc = GardenService()
    assert (await svc.handle(msg())).kind == "reply"
    assert (await svc.handle(msg(), edited=True)).kind == "reply"


async def test_bots_and_retried_events_are_ignored():
    svc = GardenService()
    assert (await svc.handle(msg(is_bot=True))).kind == "ignored"
    assert (await svc.handle(msg("2"), event_id="Ev1")).kind == "reply"
    assert (await svc.handle(msg("3"), event_id="Ev1")).kind == "duplicate"


async def test_throttle_notices_once_when_addressed():
    svc = GardenService(limits=Limits(user_per_minute=2, channel_per_minute=100))
    kinds = [(await svc.handle(msg(str(i), mentioned=True))) for i in range(5)]
    assert [o.kind for o in kinds] == ["reply", "reply", "throttled", "throttled", "throttled"]
    assert [bool(o.notice) for o in kinds[2:]] == [True, False, False]


async def test_passive_unknown_error_is_silent_but_asked_gets_answer():
    svc = GardenService()
    passive = await svc.handle(msg(text="ImportError: no module named foo"))
    assert passive.kind == "ignored" and passive.reply is None
    asked = await svc.handle(msg("9", text="ImportError: no module named foo", mentioned=True))
    assert asked.reply is not None and asked.reply.kind == "no_finding"


async def test_passive_memory_report_alone_is_silent_but_asked_gets_it():
    # wild_2026d.jsonl iklcpp1483: llama.cpp's compute-buffer lines with no failure after them
    report = "llama_init_from_model:      CUDA0 compute buffer size =   892.00 MiB\nllama_init_from_model: graph splits = 69"
    svc = GardenService()
    passive = await svc.handle(msg(text=report))
    assert passive.kind == "ignored" and passive.reply is None
    asked = await svc.handle(msg("9", text=report, mentioned=True))
    assert asked.reply is not None and asked.reply.title == "llama.cpp: compute buffer size"
    assert (await svc.handle(msg("10", text=KV))).reply is not None  # a failure is still answered unasked


async def test_secret_redacted_and_warned():
    svc = GardenService()
    token = "hf_" + "Q" * 34
    out = await svc.handle(msg(text=f"HF_TOKEN={token}\n{KV}"))
    assert out.secrets and "Hugging Face token" in out.secrets[0]
    assert "rotate" in out.reply.notes[0]
    assert token not in repr(out.reply)


async def test_text_attachment_is_read_binary_skipped():
    svc = GardenService()
    m = msg(
        text="see attached",
        mentioned=True,
        attachments=(
            Attachment("message.txt", KV.encode()),
            Attachment("screenshot.png", b"\x89PNG\x00\x00", content_type="image/png"),
        ),
    )
    out = await svc.handle(m)
    assert out.reply.category == "kv_cache_too_small"
    assert any("screenshot.png" in n for n in out.reply.notes)


async def test_vram_command():
    svc = GardenService()
    out = await svc.handle(
        IncomingMessage(platform="test", command=SlashCommand("vram", raw="gpu:4090 model:qwen-32b-awq"))
    )
    assert out.reply.kind == "vram"


def test_knowledge_reload_keeps_previous_packs_when_one_breaks(tmp_path):
    svc = GardenService()
    before = len(svc.bot.detector.kb.signatures)
    pack = tmp_path / "ours.yaml"
    pack.write_text(
        "engine: custom\nsignatures:\n  - id: ours.cluster_quota\n    category: gpu_oom\n    title: Cluster quota\n"
        "    patterns: ['QuotaExceeded: gpu memory']\n    cause: Your namespace hit its GPU quota.\n"
        "    examples:\n      - text: 'QuotaExceeded: gpu memory'\n"
    )
    ok, _ = svc.reload_knowledge(tmp_path)
    assert ok and len(svc.bot.detector.kb.signatures) == before + 1
    pack.write_text("engine: custom\nsignatures:\n  - id: broken\n    category: not_a_category\n")
    ok, message = svc.reload_knowledge(tmp_path)
    assert not ok and "ours.yaml" in message and "broken" in message
    assert len(svc.bot.detector.kb.signatures) == before + 1  # the previous packs stay in force


def test_a_message_longer_than_the_cap_keeps_its_end():
    from bot.core import collect_paste

    text = "noise line\n" * 300_000 + KV
    paste = collect_paste(IncomingMessage(platform="test", text=text), limit=1 << 20)
    assert paste.truncated and paste.text.endswith(KV)


def test_mamba_blocks_zero_gets_no_zero_max_num_seqs():
    from bot.detector import detect
    from bot.diagnosis import diagnose

    paste = (
        "ValueError: max_num_seqs (256) exceeds available Mamba cache blocks (0). Each decode sequence requires one "
        "Mamba cache block, so CUDA graph capture cannot proceed. Please lower max_num_seqs to at most 0 or increase "
        "gpu_memory_utilization."
    )
    reply = diagnose(detect(paste))
    assert reply is not None
    assert not any("--max-num-seqs 0" in f.command for f in reply.fixes)


def test_absurd_numbers_in_any_signature_never_crash_or_hang():
    """Every signature example with its numbers replaced by absurd ones still gets an answer (the
    dropped numbers read "?"; a TP size of 99,999,999 is not enumerated)."""
    import re

    from bot.detector import detect
    from bot.diagnosis import diagnose
    from knowledge import load_builtin

    for loaded in load_builtin().signatures:
        text = re.sub(r"\d+(?:\.\d+)?", "4294967296", loaded.signature.examples[0].text)
        diagnose(detect(text))
        diagnose(detect(re.sub(r"\d+(?:\.\d+)?", "99999999", loaded.signature.examples[0].text)))


def test_a_llama_cpp_failure_in_ollama_journal_is_answered_for_ollama():
    # wild_wordings.jsonl ollama9260 (journald's "ollama[PID]:" tag): Ollama's runner printed ggml's line;
    # no llama-server flag (--fit, -ngl as a command) is offered to an Ollama user
    text = (
        "Feb 21 01:41:02 paibo ollama[402476]: ggml_backend_cuda_buffer_type_alloc_buffer: allocating 81656.95 MiB "
        "on device 0: cudaMalloc failed: out of memory\n"
        "Feb 21 01:41:16 paibo ollama[402476]: llama_model_load: error loading model: unable to allocate CUDA0 buffer"
    )
    reply = GardenBot().triage(Paste(text, False, []))
    assert reply is not None and reply.title == "Ollama: could not allocate 81,657 MiB for the CUDA0 buffer"
    assert not any("--fit" in f.change or "--fit" in f.command for f in reply.fixes)
    plain = text.replace("paibo ollama[402476]: ", "")  # the same lines from llama-server itself
    assert GardenBot().triage(Paste(plain, False, [])).title.startswith("llama.cpp: ")
