"""One settings model for every way GPU Garden runs.

Sources, highest precedence first:
1. command-line flags (passed in as ``overrides``);
2. environment variables ``GPU_GARDEN_...`` (``GPU_GARDEN_DISCORD_TOKEN``, ``GPU_GARDEN_SLACK_BOT_TOKEN``,
   ``GPU_GARDEN_DATABASE``; lists are comma-separated: ``GPU_GARDEN_DISCORD_CHANNELS=123,456``);
   a ``*_FILE`` variant of any token variable reads the secret from a file (Docker secrets);
3. a ``.env`` file in the working directory;
4. a YAML settings file (``GPU_GARDEN_CONFIG`` or ``--config``);
5. the defaults below.
Tokens are ``SecretStr``: they never appear in logs, reprs or error messages.

Reading the sources needs ``pydantic_settings`` (and through it asyncio, dotenv and the cloud secret
providers: longer to import than the rest of a ``gpu-garden vram``).  When no source but the flags has
anything to say (no ``GPU_GARDEN_...`` variable, no ``.env`` file, no settings file), the same fields
and validators are applied to the flags alone, and that import is skipped.
"""

from __future__ import annotations

import os
from functools import cache
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal

from pydantic import BaseModel, ConfigDict, Field, SecretStr, field_validator, model_validator

CommaList = list[str]  # from the environment as "a,b" (comma-separated, never JSON): see _split
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


class Limits(BaseModel):
    paste_max_bytes: int = Field(default=2 * 1024 * 1024, ge=1024, description="text read from one message")
    attachment_max_bytes: int = Field(default=8 * 1024 * 1024, ge=1024, description="downloaded per file")
    user_per_minute: int = Field(default=6, ge=1, description="replies to one user per minute")
    channel_per_minute: int = Field(default=20, ge=1, description="replies in one channel per minute")
    dedup_ttl_seconds: int = Field(default=24 * 3600, ge=60)


class DiscordSettings(BaseModel):
    token: SecretStr | None = None
    channels: CommaList = Field(default=[], description="channel ids where pasted errors are read passively")
    passive: bool = Field(default=True, description="answer errors in enabled channels without a mention")
    reply_mode: Literal["thread", "reply"] = "thread"
    brief: bool = False
    guild_id: str | None = Field(default=None, description="sync commands to this guild only (instant)")
    api_base: str | None = Field(default=None, description="REST base URL override (tests, proxies)")
    gateway_url: str | None = Field(default=None, description="gateway URL override (tests, proxies)")

    _split_channels = field_validator("channels", mode="before")(classmethod(lambda cls, v: _split(v)))


class SlackSettings(BaseModel):
    bot_token: SecretStr | None = None
    app_token: SecretStr | None = None
    signing_secret: SecretStr | None = None
    api_url: str = "https://slack.com/api/"
    channels: CommaList = Field(default=[], description="channel ids where pasted errors are read passively")
    passive: bool = True
    mode: Literal["socket", "http"] = "socket"
    http_host: str = "0.0.0.0"
    http_port: int = 3000
    brief: bool = False

    _split_channels = field_validator("channels", mode="before")(classmethod(lambda cls, v: _split(v)))

    @field_validator("api_url")
    @classmethod
    def _trailing_slash(cls, v: str) -> str:
        return v if v.endswith("/") else v + "/"


class SettingsFields(BaseModel):
    """Every setting, its default and its checks; :data:`Settings` adds the sources."""

    model_config = ConfigDict(extra="ignore")

    database: Path = Path("gpu-garden.sqlite3")
    knowledge_dir: Path | None = None
    log_level: Literal["DEBUG", "INFO", "WARNING", "ERROR"] = "INFO"
    log_format: Literal["text", "json"] = "text"
    health_host: str = Field(default="127.0.0.1", description="where /healthz and /metrics listen")
    health_port: int | None = Field(default=None, description="serve /healthz and /metrics on this port")
    health_file: Path | None = Field(
        default=None, description="touched while connected (container healthcheck)"
    )
    disconnect_exit_seconds: int = Field(
        default=600, ge=30, description="exit non-zero after this long offline"
    )
    hub_lookup: bool = Field(
        default=True,
        description="look unknown org/name models up on the Hugging Face Hub (HF_HUB_OFFLINE also stops it)",
    )
    hub_cache_dir: Path | None = Field(
        default=None, description="where Hub configs are cached; default: hub-cache next to the database"
    )
    discord: DiscordSettings = DiscordSettings()
    slack: SlackSettings = SlackSettings()
    limits: Limits = Limits()

    @model_validator(mode="after")
    def _hub_cache_in_data_folder(self) -> SettingsFields:
        if self.hub_cache_dir is None:  # the data volume: the database's folder (/data in the image)
            self.hub_cache_dir = self.database.parent / "hub-cache"
        return self

    @property
    def discord_enabled(self) -> bool:
        return self.discord.token is not None

    @property
    def slack_enabled(self) -> bool:
        return self.slack.bot_token is not None


@cache
def settings_class() -> type[SettingsFields]:
    """The fields read from every source (flags, environment, ``.env``, YAML file)."""
    from pydantic_settings import (
        BaseSettings,
        PydanticBaseSettingsSource,
        SettingsConfigDict,
        YamlConfigSettingsSource,
    )

    class Settings(SettingsFields, BaseSettings):
        model_config = SettingsConfigDict(
            env_prefix=ENV_PREFIX,
            env_nested_delimiter="_",
            env_nested_max_split=1,
            env_file=ENV_FILE,
            env_file_encoding="utf-8",
            env_ignore_empty=True,
            enable_decoding=False,  # lists are comma-separated (see _split), not JSON
            extra="ignore",
        )

        @classmethod
        def settings_customise_sources(
            cls,
            settings_cls: type[BaseSettings],
            init_settings: PydanticBaseSettingsSource,
            env_settings: PydanticBaseSettingsSource,
            dotenv_settings: PydanticBaseSettingsSource,
            file_secret_settings: PydanticBaseSettingsSource,
        ) -> tuple[PydanticBaseSettingsSource, ...]:
            yaml_path = os.environ.get("GPU_GARDEN_CONFIG")
            sources: list[PydanticBaseSettingsSource] = [init_settings, env_settings, dotenv_settings]
            if yaml_path:
                sources.append(YamlConfigSettingsSource(settings_cls, yaml_file=yaml_path))
            return tuple(sources)

    Settings.__module__ = __name__
    return Settings


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
    from pydantic import ValidationError

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
    model = SettingsFields if only_flags() else settings_class()
    try:
        return model(**nested)
    except ValidationError as exc:
        parts = []
        for err in exc.errors():
            where = ".".join(str(x) for x in err["loc"])
            parts.append(f"{where}: {err['msg']}")  # pydantic never echoes SecretStr input here
        raise SettingsError("; ".join(parts)) from exc
