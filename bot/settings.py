"""One settings model for every way GPU Garden runs.

Sources, highest precedence first:
1. command-line flags (passed in as ``overrides``);
2. environment variables ``GPU_GARDEN_...`` (``GPU_GARDEN_DISCORD_TOKEN``, ``GPU_GARDEN_SLACK_BOT_TOKEN``,
   ``GPU_GARDEN_DATABASE``; lists are comma-separated: ``GPU_GARDEN_DISCORD_CHANNELS=123,456``);
   a ``*_FILE`` variant of any token variable reads the secret from a file (Docker secrets);
3. a ``.env`` file in the working directory;
4. a YAML settings file (``GPU_GARDEN_CONFIG`` or ``--config``);
5. the defaults below.
Tokens are :class:`calculator.checks.Secret`: they never appear in logs, reprs or error messages.

Each field, default and check is written once, in the dataclasses below.  With only flags (no variable,
``.env`` or settings file) :mod:`calculator.checks` applies them and pydantic is never imported; otherwise
:func:`settings_class` builds a pydantic-settings class from the same fields, which reads the sources."""

from __future__ import annotations

import os
from dataclasses import dataclass, field
from functools import cache
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any, Literal

from calculator.checks import (
    Checked,
    Convert,
    FieldError,
    Interval,
    Secret,
    build,
    dotted_keys,
    pydantic_fields,
)

ENV_PREFIX = "GPU_GARDEN_"
ENV_FILE = ".env"
# variables with the prefix that are not settings: read elsewhere, ignored by the settings model
NOT_SETTINGS = ("GPU_GARDEN_CACHE_DIR",)


def _split(value: Any) -> Any:
    if isinstance(value, str):
        return [x.strip() for x in value.split(",") if x.strip()]
    if isinstance(value, int):
        return [str(value)]
    if isinstance(value, list):
        return [str(x).strip() for x in value if str(x).strip()]
    return value


CommaList = Annotated[list[str], Convert(_split)]  # from the environment as "a,b" (never JSON)
SlashUrl = Annotated[str, Convert(lambda v: v + "/" if isinstance(v, str) and not v.endswith("/") else v)]


@dataclass
class Limits(Checked):
    """What one paste, one user and one channel may cost the bot."""

    paste_max_bytes: Annotated[int, Interval(ge=1024)] = 2 * 1024 * 1024  # text read from one message
    attachment_max_bytes: Annotated[int, Interval(ge=1024)] = 8 * 1024 * 1024  # downloaded per file
    user_per_minute: Annotated[int, Interval(ge=1)] = 6  # replies to one user per minute
    channel_per_minute: Annotated[int, Interval(ge=1)] = 20  # replies in one channel per minute
    dedup_ttl_seconds: Annotated[int, Interval(ge=60)] = 24 * 3600


@dataclass
class DiscordSettings(Checked):
    token: Secret | None = None
    channels: CommaList = field(default_factory=list)  # channel ids where pasted errors are read passively
    passive: bool = True  # answer errors in enabled channels without a mention
    reply_mode: Literal["thread", "reply"] = "thread"
    brief: bool = False
    guild_id: str | None = None  # sync commands to this guild only (instant)
    api_base: str | None = None  # REST base URL override (tests, proxies)
    gateway_url: str | None = None  # gateway URL override (tests, proxies)


@dataclass
class SlackSettings(Checked):
    bot_token: Secret | None = None
    app_token: Secret | None = None
    signing_secret: Secret | None = None
    api_url: SlashUrl = "https://slack.com/api/"
    channels: CommaList = field(default_factory=list)  # channel ids where pasted errors are read passively
    passive: bool = True
    mode: Literal["socket", "http"] = "socket"
    http_host: str = "0.0.0.0"
    http_port: int = 3000
    brief: bool = False


@dataclass
class SettingsFields(Checked):
    """Every setting, its default and its checks; :func:`load_settings` reads the sources into it."""

    database: Path = Path("gpu-garden.sqlite3")
    knowledge_dir: Path | None = None
    log_level: Literal["DEBUG", "INFO", "WARNING", "ERROR"] = "INFO"
    log_format: Literal["text", "json"] = "text"
    health_host: str = "127.0.0.1"  # where /healthz and /metrics listen
    health_port: int | None = None  # serve /healthz and /metrics on this port
    health_file: Path | None = None  # touched while connected (container healthcheck)
    disconnect_exit_seconds: Annotated[int, Interval(ge=30)] = 600  # exit non-zero after this long offline
    # look unknown org/name models up on the Hugging Face Hub (HF_HUB_OFFLINE also stops it)
    hub_lookup: bool = True
    hub_cache_dir: Path | None = None  # where Hub configs are cached; default: hub-cache next to the database
    discord: DiscordSettings = field(default_factory=DiscordSettings)
    slack: SlackSettings = field(default_factory=SlackSettings)
    limits: Limits = field(default_factory=Limits)

    def __post_init__(self) -> None:
        super().__post_init__()
        if self.hub_cache_dir is None:  # the data volume: the database's folder (/data in the image)
            self.hub_cache_dir = self.database.parent / "hub-cache"
        self.given: frozenset[str] = frozenset()  # what a source set (limits.paste_max_bytes)

    @property
    def discord_enabled(self) -> bool:
        return self.discord.token is not None

    @property
    def slack_enabled(self) -> bool:
        return self.slack.bot_token is not None


@cache
def settings_class() -> Any:
    """A ``BaseSettings`` with :class:`SettingsFields`' fields: reads flags, environment, ``.env``, YAML."""
    import pydantic_settings as ps
    from pydantic import create_model, model_validator

    class Sources(ps.BaseSettings):
        model_config = ps.SettingsConfigDict(
            env_prefix=ENV_PREFIX,
            env_nested_delimiter="_",
            env_nested_max_split=1,
            env_file=ENV_FILE,
            env_file_encoding="utf-8",
            env_ignore_empty=True,
            enable_decoding=False,  # lists are comma-separated (see _split), not JSON
            extra="ignore",
        )
        _given: frozenset[str] = frozenset()

        @model_validator(mode="wrap")
        @classmethod
        def _note_given(cls, data: Any, handler: Any) -> Any:
            read = handler(data)
            read._given = dotted_keys(data) if isinstance(data, dict) else frozenset()
            return read

        @classmethod
        def settings_customise_sources(
            cls,
            settings_cls: type[ps.BaseSettings],
            init_settings: ps.PydanticBaseSettingsSource,
            env_settings: ps.PydanticBaseSettingsSource,
            dotenv_settings: ps.PydanticBaseSettingsSource,
            file_secret_settings: ps.PydanticBaseSettingsSource,
        ) -> tuple[ps.PydanticBaseSettingsSource, ...]:
            yaml_path = os.environ.get("GPU_GARDEN_CONFIG")
            sources: list[ps.PydanticBaseSettingsSource] = [init_settings, env_settings, dotenv_settings]
            if yaml_path:
                sources.append(ps.YamlConfigSettingsSource(settings_cls, yaml_file=yaml_path))
            return tuple(sources)

    spec = pydantic_fields(SettingsFields)
    return create_model("Settings", __base__=Sources, __module__=__name__, **spec)


if TYPE_CHECKING:
    Settings = SettingsFields
else:

    def __getattr__(name: str) -> Any:
        if name == "Settings":
            return settings_class()
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


def only_flags() -> bool:
    """Whether the flags are the only source with anything in it (no variable, ``.env`` or file)."""
    if Path(ENV_FILE).is_file():
        return False
    return not any(k.upper().startswith(ENV_PREFIX) and k.upper() not in NOT_SETTINGS for k in os.environ)


_SECRET_FILES = {
    "GPU_GARDEN_DISCORD_TOKEN": ("discord", "token"),
    "GPU_GARDEN_SLACK_BOT_TOKEN": ("slack", "bot_token"),
    "GPU_GARDEN_SLACK_APP_TOKEN": ("slack", "app_token"),
    "GPU_GARDEN_SLACK_SIGNING_SECRET": ("slack", "signing_secret"),
}


class SettingsError(ValueError):
    """Settings that cannot be used; the message names the setting, never a secret's value."""


def load_settings(config_file: Path | None = None, **overrides: Any) -> SettingsFields:
    """Build settings from all sources; ``overrides`` are CLI flags (highest precedence)."""
    if config_file is not None:
        if not config_file.is_file():
            raise SettingsError(f"settings file {config_file} does not exist")
        os.environ["GPU_GARDEN_CONFIG"] = str(config_file)
    nested: dict[str, Any] = {}
    for var, (section, key) in _SECRET_FILES.items():
        path = os.environ.get(var + "_FILE")
        if path and not os.environ.get(var):
            try:
                nested.setdefault(section, {})[key] = Path(path).read_text(encoding="utf-8").strip()
            except OSError as exc:
                raise SettingsError(f"{var}_FILE: cannot read {path} ({exc.strerror})") from exc
    for key, value in overrides.items():
        if value is None:
            continue
        if "." in key:
            section, sub = key.split(".", 1)
            nested.setdefault(section, {})[sub] = value
        else:
            nested[key] = value
    if only_flags():
        try:
            settings, given = build(SettingsFields, nested), dotted_keys(nested)
        except FieldError as exc:
            raise SettingsError(str(exc)) from exc  # the checker never quotes a value
    else:
        from pydantic import ValidationError

        try:
            read = settings_class()(**nested)
        except ValidationError as exc:  # pydantic never echoes a secret's input in these
            parts = (f"{'.'.join(map(str, e['loc']))}: {e['msg']}" for e in exc.errors())
            raise SettingsError("; ".join(parts)) from exc
        settings = SettingsFields(**{name: getattr(read, name) for name in type(read).model_fields})
        given = read._given
    settings.given = given
    return settings
