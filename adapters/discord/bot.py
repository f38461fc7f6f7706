"""The Discord client: gateway events in, rendered replies out.  The decisions live in GardenService.

``create_bot`` builds the configured client (run it, or test it against a fake Discord); ``serve``
runs it until cancelled and reports the connection to Health; ``sync_commands`` registers the
application commands once (never on every start).
"""

from __future__ import annotations

import asyncio
import contextlib
import functools
import logging
from collections import OrderedDict
from collections.abc import Callable, Iterator
from typing import Any

import aiohttp
import discord
from discord import app_commands

from bot.health import Health
from bot.message import IncomingMessage
from bot.reply import Reply
from bot.service import GardenService
from bot.settings import Settings

from . import commands, details, events
from .feedback import FeedbackButton, feedback_view
from .render import Rendered, notice_text, render, thread_name

log = logging.getLogger("gpu_garden.discord")

PLATFORM = "discord"
NO_MENTIONS = discord.AllowedMentions.none()
THREAD_ARCHIVE_MINUTES = 1440
RECENT_REPLIES = 2000  # source message -> our reply, when there is no database
DOWNLOAD_TIMEOUT = aiohttp.ClientTimeout(total=30, sock_connect=10)
# on SIGTERM, answers being computed or posted get this long to finish before the connection closes
# (Docker's default stop timeout is 10 s before SIGKILL; the compose file gives the bot more)
DRAIN_SECONDS = 10.0


def _guarded_parser(event: str, parse: Callable[[Any], None]) -> Callable[[Any], None]:
    """A gateway parser that logs a malformed payload instead of killing the connection."""

    @functools.wraps(parse)
    def guarded(data: Any) -> None:
        try:
            parse(data)
        except Exception as exc:  # the payload may hold a paste: log the kind of fault, not its text
            log.warning("ignored a malformed %s payload (%s)", event, exc.__class__.__name__)

    return guarded


class GardenClient(discord.Client):
    def __init__(
        self,
        settings: Settings,
        service: GardenService | None,
        health: Health | None = None,
        guild_ready_timeout: float = 2.0,
        drain_seconds: float = DRAIN_SECONDS,
    ):
        intents = discord.Intents.default()
        intents.typing = False
        intents.dm_typing = False
        intents.presences = False
        intents.members = False
        # passive reading needs the privileged intent; mentions, DMs and the context menu do not
        intents.message_content = bool(settings.discord.passive and settings.discord.channels)
        super().__init__(
            intents=intents,
            allowed_mentions=NO_MENTIONS,
            chunk_guilds_at_startup=False,
            max_messages=1000,
            guild_ready_timeout=guild_ready_timeout,
        )
        self.settings = settings
        self.service = service  # type: ignore[assignment]
        self.health = health
        self.passive_channels = {int(c) for c in settings.discord.channels if str(c).strip().isdigit()}
        self.tree = app_commands.CommandTree(self)
        commands.register(self.tree)
        self._session: aiohttp.ClientSession | None = None
        self._recent: OrderedDict[str, str] = OrderedDict()
        self._answering: set[asyncio.Task] = set()  # message events in flight (drained on close)
        self._closing = False
        self.drain_seconds = drain_seconds
        for name, parse in list(self._connection.parsers.items()):
            self._connection.parsers[name] = _guarded_parser(name, parse)

    # lifecycle ---------------------------------------------------------------------------------
    async def setup_hook(self) -> None:
        # buttons on old replies keep working after a restart
        self.add_dynamic_items(FeedbackButton, details.DetailsButton)
        self._session = aiohttp.ClientSession(timeout=DOWNLOAD_TIMEOUT)

    async def close(self) -> None:
        """Stop taking messages, let the answers in flight be posted (bounded), then disconnect."""
        self._closing = True
        await self.drain(self.drain_seconds)
        try:
            await super().close()
        finally:
            if self._session is not None:
                await self._session.close()
                self._session = None

    async def on_ready(self) -> None:
        log.info("discord connected as %s (%s guilds)", self.user, len(self.guilds))
        if self.health is not None:
            self.health.connected(PLATFORM)

    async def on_resumed(self) -> None:
        if self.health is not None:
            self.health.connected(PLATFORM)

    async def on_disconnect(self) -> None:
        if self.health is not None:
            self.health.disconnected(PLATFORM)
        if not self._closing:
            self._platform_error("disconnect")

    async def drain(self, timeout: float) -> None:
        """Wait up to ``timeout`` s for the message events in flight; cancel what is left (a cancelled
        answer releases its claim, so it is answered after the restart)."""
        current = asyncio.current_task()
        pending = [t for t in self._answering if t is not current and not t.done()]
        if not pending:
            return
        log.info("waiting up to %.0f s for %d answer(s) in flight", timeout, len(pending))
        _done, still = await asyncio.wait(pending, timeout=timeout)
        for task in still:
            task.cancel()
        if still:
            log.warning(
                "stopped %d answer(s) still in flight; they are answered after the restart", len(still)
            )
            await asyncio.gather(*still, return_exceptions=True)

    def _platform_error(self, kind: str) -> None:
        if self.service is not None:
            self.service.platform_error(PLATFORM, kind)

    async def on_error(self, event_method: str, /, *args: Any, **kwargs: Any) -> None:
        log.exception("discord event %s failed", event_method)

    # helpers -----------------------------------------------------------------------------------
    @property
    def brief(self) -> bool:
        return self.settings.discord.brief

    async def render(self, reply: Reply) -> Rendered:
        return await asyncio.to_thread(render, reply, self.brief)

    async def fetch_attachment(self, url: str, size: int, cap: int) -> tuple[bytes, bool]:
        if self._session is None:
            self._session = aiohttp.ClientSession(timeout=DOWNLOAD_TIMEOUT)
        try:
            return await events.http_fetch(self._session, url, size, cap)
        except (aiohttp.ClientError, OSError, TimeoutError):
            self._platform_error("download")
            raise

    def _remember(self, key: str, location: str) -> None:
        self._recent[key] = location
        self._recent.move_to_end(key)
        while len(self._recent) > RECENT_REPLIES:
            self._recent.popitem(last=False)

    # messages ----------------------------------------------------------------------------------
    @contextlib.contextmanager
    def _in_flight(self) -> Iterator[None]:
        task = asyncio.current_task()
        if task is not None:
            self._answering.add(task)
        try:
            yield
        finally:
            if task is not None:
                self._answering.discard(task)

    async def on_message(self, message: discord.Message) -> None:
        with self._in_flight():
            try:
                await self.handle_message(message)
            except Exception:
                log.exception("message %s: failed to answer", getattr(message, "id", "?"))

    async def on_raw_message_edit(self, payload: discord.RawMessageUpdateEvent) -> None:
        with self._in_flight():
            try:
                before = payload.cached_message
                after = payload.message
                if (
                    before is not None
                    and before.content == after.content
                    and before.attachments == after.attachments
                ):
                    return  # an embed preview or a pin, not an edit of the text
                if before is None and ("content" not in payload.data or after.edited_at is None):
                    return  # not cached and never edited: a link preview after a restart, not an edit
                await self.handle_message(after, edited=True)
            except Exception:
                log.exception("message %s: failed to re-triage the edit", payload.message_id)

    async def on_raw_message_delete(self, payload: discord.RawMessageDeleteEvent) -> None:
        """The original is gone: so is our answer to it."""
        if self.service is None or self._closing:
            return
        with self._in_flight():
            source = IncomingMessage(
                platform=PLATFORM, channel_id=str(payload.channel_id), message_id=str(payload.message_id)
            )
            try:
                async with self.service.turn(source):
                    await self._remove_answer(source)
            except Exception:
                log.exception("message %s: failed to remove our answer", payload.message_id)

    async def handle_message(self, message: discord.Message, edited: bool = False) -> None:
        me = self.user
        if me is None or self.service is None or self._closing:
            return
        why = events.trigger(message, me, self.passive_channels, self.settings.discord.passive)
        if why is None:
            return
        incoming = await events.to_incoming(
            message,
            me,
            self.fetch_attachment,
            self.settings.limits.attachment_max_bytes,
            mentioned=why in ("mention", "dm"),
        )
        async with self.service.turn(incoming):
            await self._answer(message, incoming, edited)

    async def _answer(self, message: discord.Message, incoming: IncomingMessage, edited: bool) -> None:
        """Triage, then post (or edit, or remove) the answer; nothing posted releases the claim."""
        assert self.service is not None
        outcome = await self.service.handle(incoming, edited=edited)
        if outcome.kind == "throttled" and outcome.notice and not edited:
            await message.reply(
                notice_text(outcome.notice), mention_author=False, allowed_mentions=NO_MENTIONS
            )
            return
        if outcome.kind != "reply" or outcome.reply is None:
            if edited and outcome.kind == "ignored":
                await self._remove_answer(incoming)  # the error was edited away
            return
        reply = outcome.reply
        key = f"{incoming.channel_id}:{incoming.message_id}"
        try:
            rendered = await self.render(reply)
            if edited and await self._edit_previous(incoming, key, rendered, reply):
                return
            sent = await self._send(message, rendered, reply)
        except BaseException as exc:
            if not edited:
                await asyncio.shield(self.service.abandon(incoming))
            if isinstance(exc, discord.HTTPException | aiohttp.ClientError):
                self._platform_error("send")
            raise
        location = f"{sent.channel.id}/{sent.id}"
        self._remember(key, location)
        await self.service.remember_reply(incoming, location, reply)

    async def _remove_answer(self, incoming: IncomingMessage) -> None:
        """Delete our answer to this message, if there is one, and remember that there is none."""
        assert self.service is not None
        key = f"{incoming.channel_id}:{incoming.message_id}"
        location = await self.service.previous_reply(incoming) or self._recent.get(key)
        if not location or "/" not in location:
            return
        channel_id, _, reply_id = location.partition("/")
        target = self.get_partial_messageable(int(channel_id)).get_partial_message(int(reply_id))
        try:
            await target.delete()
        except discord.NotFound:
            pass  # already gone
        except discord.HTTPException:
            self._platform_error("delete")
            raise
        self._recent.pop(key, None)
        await self.service.remember_reply(incoming, None, None)

    async def _send(self, message: discord.Message, rendered: Rendered, reply: Reply) -> discord.Message:
        """In a new thread on the message; as a reply where threads are off or not allowed."""
        view_key = str(message.id)
        stored = await details.keep(self.service, view_key, reply, rendered)
        view = feedback_view(view_key, reply.signature, stored)
        if self.settings.discord.reply_mode == "thread" and isinstance(message.channel, discord.TextChannel):
            try:
                thread = await message.create_thread(
                    name=thread_name(reply), auto_archive_duration=THREAD_ARCHIVE_MINUTES
                )
                return await thread.send(
                    embeds=rendered.embeds,
                    files=rendered.discord_files(),
                    view=view,
                    allowed_mentions=NO_MENTIONS,
                )
            except discord.HTTPException as exc:
                log.info("no thread for message %s (%s); replying instead", message.id, exc.status)
        return await message.reply(
            embeds=rendered.embeds,
            files=rendered.discord_files(),
            view=view,
            mention_author=False,
            allowed_mentions=NO_MENTIONS,
        )

    async def _edit_previous(
        self, incoming: IncomingMessage, key: str, rendered: Rendered, reply: Reply
    ) -> bool:
        """Edit our earlier reply to this message in place; False when there is none to edit."""
        location = await self.service.previous_reply(incoming) or self._recent.get(key)
        if not location or "/" not in location:
            return False
        channel_id, _, reply_id = location.partition("/")
        target = self.get_partial_messageable(int(channel_id)).get_partial_message(int(reply_id))
        stored = await details.keep(self.service, incoming.message_id, reply, rendered)
        try:
            await target.edit(
                embeds=rendered.embeds,
                attachments=rendered.discord_files(),
                view=feedback_view(incoming.message_id, reply.signature, stored),
                allowed_mentions=NO_MENTIONS,
            )
        except discord.NotFound:
            return False  # our reply was deleted: answer afresh
        await self.service.remember_reply(incoming, location, reply)
        return True


def _apply_endpoints(settings: Settings) -> None:
    """Point discord.py at another REST base / gateway (proxies, tests) when the settings say so."""
    import discord.gateway
    import discord.http
    import yarl

    if settings.discord.api_base:
        discord.http.Route.BASE = settings.discord.api_base.rstrip("/")
    if settings.discord.gateway_url:
        discord.gateway.DiscordWebSocket.DEFAULT_GATEWAY = yarl.URL(settings.discord.gateway_url)


def create_bot(
    settings: Settings,
    service: GardenService | None,
    health: Health | None = None,
    *,
    guild_ready_timeout: float = 2.0,
    drain_seconds: float = DRAIN_SECONDS,
) -> GardenClient:
    """The configured client, not started: ``await client.start(token)`` or use ``serve``.

    ``guild_ready_timeout``: how long discord.py waits for more guilds before READY (tests use less).
    """
    _apply_endpoints(settings)
    return GardenClient(
        settings, service, health, guild_ready_timeout=guild_ready_timeout, drain_seconds=drain_seconds
    )


def _token(settings: Settings) -> str:
    if settings.discord.token is None:
        raise RuntimeError("GPU_GARDEN_DISCORD_TOKEN is not set")
    return settings.discord.token.get_secret_value()


async def serve(settings: Settings, service: GardenService, health: Health) -> None:
    """Run the bot until cancelled; reconnects are discord.py's job, the connection state is Health's."""
    client = create_bot(settings, service, health)
    health.started(PLATFORM)
    try:
        async with client:
            await client.start(_token(settings), reconnect=True)
    except discord.PrivilegedIntentsRequired:
        log.error(
            "Discord refused the message-content intent: enable it in the Developer Portal "
            "(Bot > Privileged Gateway Intents) or remove discord.channels to answer mentions only"
        )
        raise
    except discord.LoginFailure:
        log.error("Discord rejected the token (GPU_GARDEN_DISCORD_TOKEN)")
        raise
    finally:
        health.disconnected(PLATFORM)


async def sync_commands(settings: Settings, guild_id: str | None = None) -> int:
    """Register /vram, /triage and the context menu: to one guild (instant) or globally (slow to
    appear; rate-limited, so run it when the commands change, not on every start).  Exit code."""
    guild = guild_id or settings.discord.guild_id
    client = create_bot(settings, service=None)
    try:
        async with client:
            await client.login(_token(settings))
            if guild:
                target = discord.Object(id=int(guild))
                client.tree.copy_global_to(guild=target)
                synced = await client.tree.sync(guild=target)
            else:
                synced = await client.tree.sync()
    except discord.LoginFailure:
        log.error("Discord rejected the token (GPU_GARDEN_DISCORD_TOKEN)")
        return 1
    except discord.Forbidden:
        log.error(
            "not allowed to register commands in guild %s: invite the bot with the applications.commands scope",
            guild,
        )
        return 1
    except (discord.HTTPException, aiohttp.ClientError, ValueError) as exc:
        log.error("command sync failed: %s", exc.__class__.__name__)
        return 1
    where = f"guild {guild}" if guild else "all guilds (global commands can take a while to appear)"
    log.info("synced %d commands to %s: %s", len(synced), where, ", ".join(c.name for c in synced))
    return 0
