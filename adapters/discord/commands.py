"""Application commands: ``/vram`` (typed options, autocomplete), ``/triage`` (a paste modal) and the
message context menu "Triage this error".

Every command defers first (Discord's 3-second rule), asks the service, then sends a follow-up.
Autocomplete reads the in-memory catalogs only.
"""

from __future__ import annotations

import logging
from dataclasses import replace
from typing import TYPE_CHECKING, Any

import discord
from discord import app_commands

from bot.message import IncomingMessage, SlashCommand
from calculator.resolve import suggest_gpus, suggest_models

from . import details, events, render
from .feedback import feedback_view

if TYPE_CHECKING:
    from .bot import GardenClient

log = logging.getLogger("gpu_garden.discord")

NO_MENTIONS = discord.AllowedMentions.none()
CHOICES_MAX = 25
PASTE_MAX = 4000  # a modal's paragraph input
CONTEXT_MENU_NAME = "Triage this error"

ENGINES = [
    app_commands.Choice(name="vLLM", value="vllm"),
    app_commands.Choice(name="llama.cpp", value="llama.cpp"),
    app_commands.Choice(name="Ollama", value="ollama"),
    app_commands.Choice(name="SGLang", value="sglang"),
]
KV_TYPES = [
    app_commands.Choice(name="auto (model dtype)", value="auto"),
    app_commands.Choice(name="fp8 (vLLM, SGLang)", value="fp8"),
    app_commands.Choice(name="fp8_e4m3 (vLLM, SGLang)", value="fp8_e4m3"),
    app_commands.Choice(name="fp8_e5m2 (vLLM, SGLang)", value="fp8_e5m2"),
    app_commands.Choice(name="f16 (llama.cpp, Ollama)", value="f16"),
    app_commands.Choice(name="q8_0 (llama.cpp, Ollama)", value="q8_0"),
    app_commands.Choice(name="q4_0 (llama.cpp, Ollama)", value="q4_0"),
]


def _client(interaction: discord.Interaction) -> GardenClient:
    return interaction.client  # type: ignore[return-value]


def choices(pairs: list[tuple[str, str]]) -> list[app_commands.Choice[str]]:
    return [app_commands.Choice(name=n[:100] or v[:100], value=v[:100]) for n, v in pairs[:CHOICES_MAX]]


async def respond(
    interaction: discord.Interaction,
    incoming: IncomingMessage,
    *,
    ephemeral: bool,
    remember_for: IncomingMessage | None = None,
) -> None:
    """Defer (thinking), ask the service, follow up with the rendered reply (or a notice)."""
    client = _client(interaction)
    if not interaction.response.is_done():
        await interaction.response.defer(ephemeral=ephemeral, thinking=True)
    outcome = await client.service.handle(incoming, event_id=f"interaction:{interaction.id}")
    if outcome.kind == "reply" and outcome.reply is not None:
        rendered = await client.render(outcome.reply)
        key = str(interaction.id)
        stored = await details.keep(client.service, key, outcome.reply, rendered)
        sent = await interaction.followup.send(
            embeds=rendered.embeds,
            files=rendered.discord_files(),
            view=feedback_view(key, outcome.reply.signature, stored),
            ephemeral=ephemeral,
            allowed_mentions=NO_MENTIONS,
            wait=True,
        )
        if remember_for is not None and not ephemeral:
            await client.service.remember_reply(remember_for, f"{sent.channel.id}/{sent.id}", outcome.reply)
        return
    notice = outcome.notice if outcome.kind == "throttled" else None
    if outcome.kind == "duplicate":
        notice = "I already answered that."
    await quiet_notice(interaction, notice, ephemeral)


async def quiet_notice(interaction: discord.Interaction, notice: str | None, ephemeral: bool) -> None:
    """Replace the public "thinking…" with an ephemeral notice (or with nothing)."""
    if not ephemeral or notice is None:
        try:
            await interaction.delete_original_response()
        except discord.HTTPException:
            log.debug("could not delete the deferred response", exc_info=True)
    if notice:
        await interaction.followup.send(
            render.notice_text(notice), ephemeral=True, allowed_mentions=NO_MENTIONS
        )


async def vram(
    interaction: discord.Interaction,
    gpu: str | None = None,
    model: str | None = None,
    engine: app_commands.Choice[str] | None = None,
    context: str | None = None,
    kv_cache_dtype: app_commands.Choice[str] | None = None,
    gpus: int | None = None,
    utilization: float | None = None,
    ephemeral: bool = True,
) -> None:
    args: dict[str, Any] = {
        "gpu": gpu,
        "model": model,
        "engine": engine.value if engine else None,
        "context": context,
        "kv_cache_dtype": kv_cache_dtype.value if kv_cache_dtype else None,
        "gpus": gpus,
        "utilization": utilization,
    }
    named = {k: str(v).strip() for k, v in args.items() if v is not None and str(v).strip()}
    incoming = IncomingMessage(
        platform="discord",
        command=SlashCommand("vram", args=named),
        user_id=str(interaction.user.id),
        channel_id=str(interaction.channel_id or ""),
        is_dm=interaction.guild_id is None,
        mentioned=True,
    )
    await respond(interaction, incoming, ephemeral=ephemeral)


async def complete_gpu(current: str) -> list[app_commands.Choice[str]]:
    try:
        return choices(suggest_gpus(current or "", CHOICES_MAX))
    except Exception:
        log.exception("gpu autocomplete failed")
        return []


async def complete_model(current: str) -> list[app_commands.Choice[str]]:
    try:
        return choices(suggest_models(current or "", CHOICES_MAX))
    except Exception:
        log.exception("model autocomplete failed")
        return []


class TriageModal(discord.ui.Modal, title="Triage an error"):
    paste: discord.ui.TextInput = discord.ui.TextInput(
        label="Paste the error (the last lines of the log)",
        style=discord.TextStyle.paragraph,
        placeholder="ValueError: The model's max seq len (131072) is larger than …",
        max_length=PASTE_MAX,
        required=True,
    )

    def __init__(self, ephemeral: bool) -> None:
        super().__init__(timeout=600)  # a dismissed modal is forgotten after 10 minutes
        self.ephemeral = ephemeral

    async def on_submit(self, interaction: discord.Interaction) -> None:
        incoming = IncomingMessage(
            platform="discord",
            text=self.paste.value or "",
            command=SlashCommand("triage"),
            user_id=str(interaction.user.id),
            channel_id=str(interaction.channel_id or ""),
            is_dm=interaction.guild_id is None,
            mentioned=True,
        )
        await respond(interaction, incoming, ephemeral=self.ephemeral)

    async def on_error(self, interaction: discord.Interaction, error: Exception) -> None:
        log.error("triage modal failed: %s", error.__class__.__name__, exc_info=error)


async def triage_target(interaction: discord.Interaction, message: discord.Message) -> None:
    """Right-click a message: its content arrives even without the message-content intent."""
    client = _client(interaction)
    source = IncomingMessage(
        platform="discord", channel_id=str(message.channel.id), message_id=str(message.id)
    )
    previous = await client.service.previous_reply(source)
    if previous:
        channel_id, _, message_id = previous.partition("/")
        link = f"https://discord.com/channels/{interaction.guild_id or '@me'}/{channel_id}/{message_id}"
        await interaction.response.send_message(
            f"I already answered that message: {link}", ephemeral=True, allowed_mentions=NO_MENTIONS
        )
        return
    await interaction.response.defer(thinking=True)  # public: the answer is for the message's author
    me = client.user
    assert me is not None
    incoming = await events.to_incoming(
        message,
        me,
        client.fetch_attachment,
        client.settings.limits.attachment_max_bytes,
        mentioned=True,
        command=SlashCommand("triage"),
        keep_ids=False,  # the interaction is the event (the target may have been read passively)
    )
    # a human asked, even about a bot's message: rate-limit the asker, not the author
    incoming = replace(incoming, is_bot=False, user_id=str(interaction.user.id))
    await respond(interaction, incoming, ephemeral=False, remember_for=source)


def build_commands() -> list[app_commands.Command | app_commands.ContextMenu]:
    """Fresh command objects for one client's tree."""

    @app_commands.command(
        name="vram", description="Does a model fit on a GPU? Memory math, context and flags."
    )
    @app_commands.describe(
        gpu="The GPU (start typing: 4090, A100 80GB, H100…); alone: which models fit it",
        model="The model or quant (start typing: qwen2.5-32b-awq…); alone: which GPUs fit it",
        engine="The serving engine (default vLLM)",
        context="Context length in tokens, e.g. 32k or 131072",
        kv_cache_dtype="KV cache type (fp8 for vLLM/SGLang, q8_0 for llama.cpp/Ollama)",
        gpus="Number of GPUs (tensor parallel)",
        utilization="vLLM gpu_memory_utilization, e.g. 0.9",
        ephemeral="Only you see the answer (default: yes)",
    )
    @app_commands.choices(engine=ENGINES, kv_cache_dtype=KV_TYPES)
    async def vram_command(
        interaction: discord.Interaction,
        gpu: app_commands.Range[str, 1, 100] | None = None,
        model: app_commands.Range[str, 1, 200] | None = None,
        engine: app_commands.Choice[str] | None = None,
        context: app_commands.Range[str, 1, 20] | None = None,
        kv_cache_dtype: app_commands.Choice[str] | None = None,
        gpus: app_commands.Range[int, 1, 64] | None = None,
        utilization: app_commands.Range[float, 0.05, 1.0] | None = None,
        ephemeral: bool = True,
    ) -> None:
        await vram(interaction, gpu, model, engine, context, kv_cache_dtype, gpus, utilization, ephemeral)

    @vram_command.autocomplete("gpu")
    async def gpu_autocomplete(
        interaction: discord.Interaction, current: str
    ) -> list[app_commands.Choice[str]]:
        return await complete_gpu(current)

    @vram_command.autocomplete("model")
    async def model_autocomplete(
        interaction: discord.Interaction, current: str
    ) -> list[app_commands.Choice[str]]:
        return await complete_model(current)

    @app_commands.command(
        name="triage", description="Paste an LLM-serving error; get the memory math and fixes."
    )
    @app_commands.describe(ephemeral="Only you see the answer (default: yes)")
    async def triage_command(interaction: discord.Interaction, ephemeral: bool = True) -> None:
        await interaction.response.send_modal(TriageModal(ephemeral))

    @app_commands.context_menu(name=CONTEXT_MENU_NAME)
    async def triage_message(interaction: discord.Interaction, message: discord.Message) -> None:
        await triage_target(interaction, message)

    return [vram_command, triage_command, triage_message]


def register(tree: app_commands.CommandTree) -> None:
    for command in build_commands():
        tree.add_command(command)
    tree.on_error = on_tree_error  # type: ignore[method-assign]


async def on_tree_error(interaction: discord.Interaction, error: app_commands.AppCommandError) -> None:
    name = interaction.command.name if interaction.command else "?"
    log.error("command %s failed: %s", name, error.__class__.__name__, exc_info=error)
    text = "Sorry, that failed on my side. Try again in a moment."
    try:
        if interaction.response.is_done():
            await interaction.followup.send(text, ephemeral=True, allowed_mentions=NO_MENTIONS)
        else:
            await interaction.response.send_message(text, ephemeral=True, allowed_mentions=NO_MENTIONS)
    except discord.HTTPException:
        log.debug("could not tell the user about the failure", exc_info=True)
