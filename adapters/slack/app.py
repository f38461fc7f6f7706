"""The Slack edge: a Bolt ``AsyncApp`` wired to the GardenService, and ``serve`` for the runner.

Listeners only translate (``events``, ``commands``), call the service, and render (``render``):
- ``message`` in enabled channels (passive), DMs, and shared snippets / text files;
- ``app_mention`` anywhere the bot is;
- ``/vram`` (ack first, then compute, then ``respond``, ephemeral);
- the "Triage this error" message shortcut (ephemeral answer);
- the feedback and Details buttons.
Every listener catches and logs its own faults, so a malformed payload costs one event, never the
connection.  Slack retries carry the same ``event_id`` and every message its ``ts``: both go to the
service, which answers each message once.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import random
from collections.abc import AsyncIterator
from dataclasses import replace
from typing import Any

from aiohttp import web
from slack_bolt.adapter.socket_mode.async_handler import AsyncSocketModeHandler
from slack_bolt.async_app import AsyncApp
from slack_sdk.errors import SlackApiError
from slack_sdk.http_retry.builtin_async_handlers import (
    AsyncConnectionErrorRetryHandler,
    AsyncRateLimitErrorRetryHandler,
    AsyncServerErrorRetryHandler,
)
from slack_sdk.web.async_client import AsyncWebClient

from adapters.slack import details
from adapters.slack.commands import command_text, from_vram_command, is_help, vram_help
from adapters.slack.events import (
    Incoming,
    deleted_message,
    from_app_mention,
    from_message_event,
    from_message_shortcut,
)
from adapters.slack.feedback import (
    ACTION_DETAILS,
    ACTION_HELPFUL,
    ACTION_NOT_HELPFUL,
    FeedbackRef,
    record_click,
    thanks,
)
from adapters.slack.files import FileFetcher
from adapters.slack.render import Rendered, render_notice, render_reply
from bot.chart import memory_png
from bot.formatter import to_markdown
from bot.health import Health
from bot.message import Attachment, IncomingMessage
from bot.reply import Reply
from bot.service import GardenService
from bot.settings import Settings, SlackSettings

log = logging.getLogger("gpu_garden.slack")

PLATFORM = "slack"
TRIAGE_CALLBACK = "triage_message"
EVENTS_PATH = "/slack/events"
HEALTH_POLL_SECONDS = 5.0
# on SIGTERM, answers being computed or posted get this long to finish (Docker's default stop
# timeout is 10 s before SIGKILL; the compose file gives the bot more)
SHUTDOWN_GRACE_SECONDS = 10.0
AUTH_ERRORS = {"invalid_auth", "not_authed", "account_inactive", "token_revoked", "token_expired"}
BLOCK_ERRORS = {"invalid_blocks", "invalid_blocks_format", "msg_blocks_too_long", "msg_too_long"}


class SlackConfigError(RuntimeError):
    """The Slack settings cannot work; the message names the setting, never a secret."""


class RetryAfterHandler(AsyncRateLimitErrorRetryHandler):
    """Retries a 429 after its ``Retry-After`` (capped), with a little jitter so bursts spread out."""

    def __init__(self, max_retry_count: int = 3, jitter: float = 0.25, max_wait: float = 120.0):
        super().__init__(max_retry_count=max_retry_count)
        self.jitter = jitter
        self.max_wait = max_wait

    async def prepare_for_next_attempt_async(self, *, state, request, response=None, error=None) -> None:
        if response is None:
            raise error  # type: ignore[misc]
        state.next_attempt_requested = True
        wait = 1.0
        for key, values in response.headers.items():
            if key.lower() == "retry-after":
                value = values[0] if isinstance(values, list | tuple) else values
                with contextlib.suppress(TypeError, ValueError):
                    wait = float(value)
                break
        await asyncio.sleep(min(max(0.0, wait), self.max_wait) + random.random() * self.jitter)
        state.increment_current_attempt()


def _secret(value) -> str | None:
    return value.get_secret_value() if value is not None else None


def build_client(slack: SlackSettings) -> AsyncWebClient:
    """The Web API client: the configured base URL, retries on 429 (Retry-After), 5xx and resets."""
    token = _secret(slack.bot_token)
    if not token:
        raise SlackConfigError("GPU_GARDEN_SLACK_BOT_TOKEN (an xoxb- bot token) is not set")
    return AsyncWebClient(
        token=token,
        base_url=slack.api_url,
        retry_handlers=[
            AsyncConnectionErrorRetryHandler(max_retry_count=2),
            RetryAfterHandler(max_retry_count=3),
            AsyncServerErrorRetryHandler(max_retry_count=2),
        ],
    )


class SlackBridge:
    """Owns the Bolt app, its client and the file downloads; one per process."""

    def __init__(
        self,
        settings: Settings,
        service: GardenService,
        *,
        client: AsyncWebClient | None = None,
        charts: bool = True,
    ):
        self.settings = settings
        self.slack = settings.slack
        self.service = service
        self.charts = charts
        self.client = client or build_client(self.slack)
        signing_secret = _secret(self.slack.signing_secret) or ""
        if self.slack.mode == "http" and not signing_secret:
            raise SlackConfigError("HTTP mode needs GPU_GARDEN_SLACK_SIGNING_SECRET")
        self.fetcher = FileFetcher(
            self.client.token or "",
            settings.limits.attachment_max_bytes,
            self.slack.api_url,
            on_failure=lambda: service.platform_error(PLATFORM, "download"),
        )
        self._tasks: set[asyncio.Task] = set()
        self.completed = 0  # listeners finished (answered, ignored or failed): for tests and stats
        self.app = AsyncApp(
            name="gpu-garden",
            client=self.client,
            signing_secret=signing_secret,
            # Socket Mode requests are not signed; Bolt verifies every HTTP request when a secret is set
            request_verification_enabled=bool(signing_secret),
            logger=logging.getLogger("gpu_garden.slack.bolt"),
        )
        self.app._gpu_garden = self  # type: ignore[attr-defined]
        self._register()

    # wiring ------------------------------------------------------------------------------------
    def _register(self) -> None:
        app = self.app
        app.event("message")(self._on_message)
        app.event("app_mention")(self._on_mention)
        app.command("/vram")(self._on_vram)
        app.message_shortcut(TRIAGE_CALLBACK)(self._on_shortcut)
        app.action(ACTION_HELPFUL)(self._on_feedback)
        app.action(ACTION_NOT_HELPFUL)(self._on_feedback)
        app.action(ACTION_DETAILS)(self._on_details)

    @contextlib.asynccontextmanager
    async def _guard(self, what: str) -> AsyncIterator[None]:
        """Track the listener (for a clean shutdown) and keep one bad event from hurting others."""
        task = asyncio.current_task()
        if task is not None:
            self._tasks.add(task)
        try:
            yield
        except asyncio.CancelledError:
            raise
        except SlackApiError as exc:
            log.error("slack %s: API error %s", what, exc.response.get("error"))
        except Exception:
            log.exception("slack %s failed", what)
        finally:
            self.completed += 1
            if task is not None:
                self._tasks.discard(task)

    async def drain(self, timeout: float = SHUTDOWN_GRACE_SECONDS) -> None:
        """Wait for the listeners in flight (then cancel what is left)."""
        current = asyncio.current_task()
        pending = [t for t in self._tasks if t is not current and not t.done()]
        if not pending:
            return
        _done, still = await asyncio.wait(pending, timeout=timeout)
        for task in still:
            task.cancel()
        if still:
            await asyncio.gather(*still, return_exceptions=True)

    async def aclose(self) -> None:
        await self.drain()
        await self.fetcher.aclose()

    async def check_auth(self) -> dict[str, Any]:
        """``auth.test`` once at start: a rejected token stops the adapter with a clear message."""
        try:
            resp = await self.client.auth_test()
        except SlackApiError as exc:
            error = exc.response.get("error")
            if error in AUTH_ERRORS:
                raise SlackConfigError(f"Slack rejected the bot token ({error})") from None
            raise
        return dict(resp.data) if isinstance(resp.data, dict) else {}

    # listeners ---------------------------------------------------------------------------------
    async def _on_message(self, body: dict, event: dict, context) -> None:
        async with self._guard("message"):
            gone = deleted_message(event)
            if gone is not None:
                await self._remove_answer(gone)
                return
            incoming = from_message_event(event, self.slack, context.bot_user_id)
            if incoming is not None:
                await self._answer(incoming, body.get("event_id"))

    async def _on_mention(self, body: dict, event: dict, context) -> None:
        async with self._guard("app_mention"):
            incoming = from_app_mention(event, context.bot_user_id)
            if incoming is not None:
                await self._answer(incoming, body.get("event_id"))

    async def _on_vram(self, ack, command: dict, respond) -> None:
        await ack()
        async with self._guard("/vram"):
            if is_help(command_text(command)):
                await respond(
                    **render_reply(vram_help(), can_attach=False).payload(), response_type="ephemeral"
                )
                return
            msg = from_vram_command(command)
            trigger = str(command.get("trigger_id") or "")
            outcome = await self.service.handle(msg, event_id=f"cmd:{trigger}" if trigger else None)
            rendered = self._outcome(outcome, FeedbackRef(f"vram:{trigger or msg.channel_id}"))
            if rendered is not None:
                await respond(**rendered.payload(), response_type="ephemeral")

    async def _on_shortcut(self, ack, shortcut: dict, respond) -> None:
        await ack()
        async with self._guard("shortcut"):
            incoming = from_message_shortcut(shortcut)
            if incoming is None:
                return
            msg = await self._with_files(incoming)
            trigger = str(shortcut.get("trigger_id") or "")
            outcome = await self.service.handle(msg, event_id=f"shortcut:{trigger}" if trigger else None)
            key = f"triage:{trigger or incoming.thread_ts}"
            stored = outcome.reply is not None and await details.keep(self.service, key, outcome.reply)
            rendered = self._outcome(outcome, FeedbackRef(key), with_details=stored)
            if rendered is None:
                return
            if respond is not None and shortcut.get("response_url"):
                await respond(**rendered.payload(), response_type="ephemeral", replace_original=False)
            else:
                await self.client.chat_postEphemeral(
                    channel=msg.channel_id,
                    user=msg.user_id,
                    thread_ts=incoming.thread_ts or None,
                    **rendered.payload(),
                )

    async def _on_feedback(self, ack, body: dict, action: dict, respond) -> None:
        await ack()
        async with self._guard("feedback"):
            stored = await record_click(self.service, body, action)
            if stored is not None and respond is not None and body.get("response_url"):
                helpful = action.get("action_id") == ACTION_HELPFUL
                await respond(text=thanks(helpful, stored), response_type="ephemeral", replace_original=False)

    async def _on_details(self, ack, body: dict, action: dict, respond) -> None:
        await ack()
        async with self._guard("details"):
            await details.answer_click(self, body, action, respond)

    # answering ---------------------------------------------------------------------------------
    def _outcome(self, outcome, feedback: FeedbackRef, with_details: bool = False) -> Rendered | None:
        """An ephemeral answer (slash command, shortcut): no files can go along."""
        if outcome.kind == "throttled" and outcome.notice:
            return render_notice(outcome.notice)
        if outcome.kind != "reply" or outcome.reply is None:
            return None
        reply = outcome.reply
        return render_reply(
            reply,
            brief=self.slack.brief,
            feedback=FeedbackRef(feedback.reply_key, reply.signature),
            can_attach=False,
            details=with_details,
        )

    async def _with_files(self, incoming: Incoming) -> IncomingMessage:
        attachments = await self.fetcher.fetch_all(incoming.files)
        # non-text files ride along empty so the reply can say they were skipped
        skipped = [Attachment(name, b"", "application/octet-stream") for name in incoming.skipped]
        if not attachments and not skipped:
            return incoming.msg
        return replace(incoming.msg, attachments=(*attachments, *skipped))

    async def _answer(self, incoming: Incoming, event_id: str | None) -> None:
        msg = await self._with_files(incoming)
        async with self.service.turn(msg):
            try:
                await self._answer_in_turn(incoming, msg, event_id)
            except BaseException as exc:
                if isinstance(exc, SlackApiError | OSError | TimeoutError):
                    self.service.platform_error(PLATFORM, "send")
                raise

    async def _answer_in_turn(self, incoming: Incoming, msg: IncomingMessage, event_id: str | None) -> None:
        """Triage, then post or update the answer; a post that fails releases the message."""
        previous: str | None = None
        if incoming.edited:
            previous = await self.service.previous_reply(msg)
        edited = previous is not None  # seen before: re-triage; never seen: a new message
        outcome = await self.service.handle(msg, event_id=event_id, edited=edited)
        if outcome.kind == "throttled":
            if outcome.notice:
                await self.client.chat_postEphemeral(
                    channel=msg.channel_id,
                    user=msg.user_id,
                    thread_ts=incoming.thread_ts,
                    **render_notice(outcome.notice).payload(),
                )
            return
        reply = outcome.reply if outcome.kind == "reply" else None
        if previous:  # our earlier answer to this message: update it in place
            await self._update(msg, previous, reply)
            return
        if reply is None:
            return
        try:
            await self.post_reply(msg, incoming.thread_ts, reply)
        except BaseException:
            if not edited:
                await asyncio.shield(self.service.abandon(msg, event_id))
            raise

    async def _remove_answer(self, source: IncomingMessage) -> None:
        """The original was deleted: delete our answer to it, and remember that there is none."""
        async with self.service.turn(source):
            reply_ts = await self.service.previous_reply(source)
            if not reply_ts:
                return
            try:
                await self.client.chat_delete(channel=source.channel_id, ts=reply_ts)
            except SlackApiError as exc:
                if exc.response.get("error") != "message_not_found":
                    self.service.platform_error(PLATFORM, "delete")
                    raise
            await self.service.remember_reply(source, None, None)

    async def _update(self, msg: IncomingMessage, reply_ts: str, reply: Reply | None) -> None:
        if reply is None:
            rendered = render_notice("The message was edited; I no longer see a known error in it.")
        else:
            key = f"{msg.channel_id}:{msg.message_id}"
            rendered = render_reply(
                reply,
                brief=self.slack.brief,
                feedback=FeedbackRef(key, reply.signature),
                can_attach=False,
                details=await details.keep(self.service, key, reply),
            )
        await self.client.chat_update(channel=msg.channel_id, ts=reply_ts, **rendered.payload())
        await self.service.remember_reply(msg, reply_ts, reply)

    async def post_reply(self, msg: IncomingMessage, thread_ts: str, reply: Reply) -> str | None:
        """Post in the thread; then (best effort) the full answer as a file and the memory chart."""
        key = f"{msg.channel_id}:{msg.message_id or thread_ts}"
        rendered = render_reply(
            reply,
            brief=self.slack.brief,
            feedback=FeedbackRef(key, reply.signature),
            details=await details.keep(self.service, key, reply),
        )
        overflow = rendered.overflow
        try:
            resp = await self._post(msg.channel_id, thread_ts, rendered)
        except SlackApiError as exc:
            if exc.response.get("error") not in BLOCK_ERRORS:
                raise
            # Slack refused the blocks (its aggregate limit is undocumented): text now, the rest as a file
            log.warning("slack refused the blocks (%s); sending text and a file", exc.response.get("error"))
            plain = Rendered(rendered.text + "\n(The full answer is in the attached file.)", [])
            resp = await self._post(msg.channel_id, thread_ts, plain)
            overflow = rendered.overflow or to_markdown(reply, full=True)
        reply_ts = resp.get("ts")
        await self.service.remember_reply(msg, reply_ts, reply)
        if overflow:
            await self._upload(
                msg.channel_id,
                thread_ts,
                content=overflow.encode("utf-8"),
                filename="gpu-garden-answer.md",
                title="GPU Garden: the full answer",
            )
        if self.charts and reply.memory is not None:
            png = await asyncio.to_thread(memory_png, reply.memory)
            await self._upload(
                msg.channel_id,
                thread_ts,
                content=png,
                filename="gpu-memory.png",
                title=reply.memory.title,
                alt_txt="Stacked bar of GPU memory: " + ", ".join(s.label for s in reply.memory.segments),
            )
        return reply_ts

    async def _post(self, channel: str, thread_ts: str, rendered: Rendered):
        kwargs: dict[str, Any] = {"text": rendered.text}
        if rendered.blocks:
            kwargs["blocks"] = rendered.blocks
        return await self.client.chat_postMessage(
            channel=channel, thread_ts=thread_ts, unfurl_links=False, unfurl_media=False, **kwargs
        )

    async def _upload(self, channel: str, thread_ts: str, **kwargs: Any) -> bool:
        """files_upload_v2 into the thread; a failure (no files:write, a restricted channel) is logged."""
        try:
            await self.client.files_upload_v2(channel=channel, thread_ts=thread_ts, **kwargs)
        except asyncio.CancelledError:
            raise
        except Exception as exc:
            detail = exc.response.get("error") if isinstance(exc, SlackApiError) else exc.__class__.__name__
            log.warning("could not upload %s: %s", kwargs.get("filename"), detail)
            return False
        return True


def create_app(settings: Settings, service: GardenService, **kwargs: Any) -> AsyncApp:
    """The Bolt app with GPU Garden's listeners (``bridge_for(app)`` reaches the rest)."""
    return SlackBridge(settings, service, **kwargs).app


def bridge_for(app: AsyncApp) -> SlackBridge:
    return app._gpu_garden  # type: ignore[attr-defined]


async def start_http(bridge: SlackBridge, health: Health | None, host: str, port: int) -> web.AppRunner:
    """Serve Bolt's aiohttp app (``POST /slack/events``) plus ``GET /healthz``; returns the runner."""
    web_app = bridge.app.web_app(path=EVENTS_PATH)

    async def healthz(_request: web.Request) -> web.Response:
        ok = health.healthy() if health is not None else True
        return web.json_response({"ok": ok}, status=200 if ok else 503)

    web_app.router.add_get("/healthz", healthz)
    runner = web.AppRunner(web_app, access_log=None)
    await runner.setup()
    try:
        await web.TCPSite(runner, host, port).start()
    except BaseException:
        await runner.cleanup()
        raise
    return runner


async def _serve_http(bridge: SlackBridge, health: Health) -> None:
    slack = bridge.slack
    runner = await start_http(bridge, health, slack.http_host, slack.http_port)
    log.info("slack: HTTP mode on %s:%s%s", slack.http_host, slack.http_port, EVENTS_PATH)
    health.connected(PLATFORM)
    try:
        await asyncio.Event().wait()
    finally:
        await runner.cleanup()


async def _serve_socket(bridge: SlackBridge, health: Health, poll: float) -> None:
    app_token = _secret(bridge.slack.app_token)
    if not app_token:
        raise SlackConfigError(
            "Socket Mode needs GPU_GARDEN_SLACK_APP_TOKEN (an xapp- token with connections:write), "
            "or set GPU_GARDEN_SLACK_MODE=http"
        )
    if not app_token.startswith("xapp-"):
        kind = "a bot token (xoxb-)" if app_token.startswith("xoxb-") else "not an app-level token"
        raise SlackConfigError(
            f"GPU_GARDEN_SLACK_APP_TOKEN is {kind}; Socket Mode needs the app-level token that starts "
            "with xapp- (Basic Information > App-Level Tokens, scope connections:write)"
        )
    handler = AsyncSocketModeHandler(bridge.app, app_token)
    try:
        await handler.connect_async()
        log.info("slack: Socket Mode connected")
        while True:
            if await handler.client.is_connected():
                health.connected(PLATFORM)
            else:
                health.disconnected(PLATFORM)
            await asyncio.sleep(poll)
    finally:
        await handler.close_async()


async def serve(
    settings: Settings,
    service: GardenService,
    health: Health,
    *,
    health_poll: float = HEALTH_POLL_SECONDS,
) -> None:
    """Run the Slack adapter until cancelled (Socket Mode, or HTTP when ``slack.mode == "http"``)."""
    bridge = SlackBridge(settings, service)
    try:
        try:
            await bridge.check_auth()
        except SlackConfigError:
            raise
        except Exception as exc:  # network trouble at start: the connection loop retries
            log.warning("slack: auth.test failed (%s); connecting anyway", exc.__class__.__name__)
        if settings.slack.mode == "http":
            await _serve_http(bridge, health)
        else:
            await _serve_socket(bridge, health, health_poll)
    except asyncio.CancelledError:
        raise
    except BaseException as exc:
        health.disconnected(PLATFORM)
        if isinstance(exc, SlackConfigError):
            log.error("slack: %s", exc)  # the runner logs only the class; the message says what to fix
        raise
    finally:
        await bridge.aclose()
