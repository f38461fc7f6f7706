"""One settings model: environment, YAML file and flags, with one precedence order; secrets stay secret."""

from __future__ import annotations

import dataclasses

import pytest

from bot.settings import SettingsError, load_settings

ENV = [
    "GPU_GARDEN_DISCORD_TOKEN",
    "GPU_GARDEN_DISCORD_CHANNELS",
    "GPU_GARDEN_DATABASE",
    "GPU_GARDEN_SLACK_BOT_TOKEN",
    "GPU_GARDEN_SLACK_API_URL",
    "GPU_GARDEN_CONFIG",
    "GPU_GARDEN_LIMITS_USER_PER_MINUTE",
]


@pytest.fixture(autouse=True)
def clean_env(monkeypatch, tmp_path):
    for var in ENV:
        monkeypatch.delenv(var, raising=False)
    monkeypatch.chdir(tmp_path)  # no stray .env


def test_env_vars(monkeypatch):
    monkeypatch.setenv("GPU_GARDEN_DISCORD_TOKEN", "secret-token-value")
    monkeypatch.setenv("GPU_GARDEN_DISCORD_CHANNELS", "111, 222")
    monkeypatch.setenv("GPU_GARDEN_DATABASE", "/data/bot.sqlite3")
    monkeypatch.setenv("GPU_GARDEN_SLACK_API_URL", "http://127.0.0.1:9/api")
    monkeypatch.setenv("GPU_GARDEN_LIMITS_USER_PER_MINUTE", "3")
    s = load_settings()
    assert s.discord.channels == ["111", "222"]
    assert str(s.database) == "/data/bot.sqlite3"
    assert s.slack.api_url == "http://127.0.0.1:9/api/"
    assert s.limits.user_per_minute == 3
    assert "secret-token-value" not in repr(s) and "secret-token-value" not in str(s)
    assert s.discord_enabled and not s.slack_enabled


def test_precedence_flags_over_env_over_yaml(monkeypatch, tmp_path):
    cfg = tmp_path / "gg.yaml"
    cfg.write_text("database: /from/yaml.sqlite3\nlog_level: DEBUG\ndiscord:\n  channels: ['9']\n")
    monkeypatch.setenv("GPU_GARDEN_DATABASE", "/from/env.sqlite3")
    s = load_settings(config_file=cfg)
    assert str(s.database) == "/from/env.sqlite3"  # env beats YAML
    assert s.log_level == "DEBUG"  # YAML beats defaults
    assert s.discord.channels == ["9"]
    s = load_settings(config_file=cfg, database="/from/flag.sqlite3")
    assert str(s.database) == "/from/flag.sqlite3"  # flags beat env


def test_token_file(monkeypatch, tmp_path):
    secret = tmp_path / "token"
    secret.write_text("xoxb-from-file\n")
    monkeypatch.setenv("GPU_GARDEN_SLACK_BOT_TOKEN_FILE", str(secret))
    s = load_settings()
    assert s.slack.bot_token.get_secret_value() == "xoxb-from-file"


def test_bad_value_names_setting_not_secret(monkeypatch):
    monkeypatch.setenv("GPU_GARDEN_DISCORD_TOKEN", "tok-ABCDEF")
    monkeypatch.setenv("GPU_GARDEN_LIMITS_USER_PER_MINUTE", "zero")
    with pytest.raises(SettingsError) as err:
        load_settings()
    assert "user_per_minute" in str(err.value) and "tok-ABCDEF" not in str(err.value)
    monkeypatch.setenv("GPU_GARDEN_LIMITS_USER_PER_MINUTE", "0")  # the bound in the field, read by pydantic
    with pytest.raises(SettingsError) as err:
        load_settings()
    assert str(err.value) == "limits.user_per_minute: Input should be greater than or equal to 1"


def test_flags_alone_skip_the_sources_and_give_the_same_settings(monkeypatch):
    from bot.settings import SettingsFields, only_flags, settings_class

    monkeypatch.delenv("GPU_GARDEN_HUB_CACHE_DIR", raising=False)
    flags = {"database": "/x/bot.sqlite3", "knowledge_dir": "/packs", "hub_lookup": False}
    assert only_flags()
    fast = load_settings(**flags)
    assert type(fast) is SettingsFields
    assert [f.name for f in dataclasses.fields(fast)] == list(settings_class().model_fields)
    monkeypatch.setenv("GPU_GARDEN_LOG_FORMAT", "text")  # the default, but now every source is read
    assert not only_flags() and load_settings(**flags) == fast
    assert str(fast.hub_cache_dir) == "/x/hub-cache" and fast.hub_lookup is False


def test_any_variable_or_env_file_reads_every_source(monkeypatch, tmp_path):
    from bot.settings import SettingsFields, only_flags

    monkeypatch.delenv("GPU_GARDEN_HUB_CACHE_DIR", raising=False)
    monkeypatch.setenv("GPU_GARDEN_KNOWLEDGE_DIR", "/from/env")
    assert not only_flags()
    s = load_settings()
    assert type(s) is SettingsFields and str(s.knowledge_dir) == "/from/env" and "knowledge_dir" in s.given
    monkeypatch.delenv("GPU_GARDEN_KNOWLEDGE_DIR")
    (tmp_path / ".env").write_text("GPU_GARDEN_LIMITS_PASTE_MAX_BYTES=4096\n")
    assert not only_flags()
    assert load_settings().limits.paste_max_bytes == 4096


def test_flags_alone_are_checked_like_every_source_and_a_token_stays_hidden(monkeypatch):
    from bot.settings import only_flags
    from calculator.checks import Secret

    monkeypatch.delenv("GPU_GARDEN_HUB_CACHE_DIR", raising=False)
    assert only_flags()
    with pytest.raises(SettingsError) as err:
        load_settings(log_level="LOUD")
    assert str(err.value) == "log_level: Input should be 'DEBUG', 'INFO', 'WARNING' or 'ERROR'"
    with pytest.raises(SettingsError) as err:
        load_settings(**{"limits.user_per_minute": 0})
    assert str(err.value) == "limits.user_per_minute: Input should be greater than or equal to 1"
    s = load_settings(**{"discord.token": "tok-ABCDEF", "discord.channels": "1, 2"})
    assert isinstance(s.discord.token, Secret) and s.discord.token.get_secret_value() == "tok-ABCDEF"
    assert s.discord.channels == ["1", "2"] and s.discord_enabled
    assert "tok-ABCDEF" not in repr(s) and "tok-ABCDEF" not in str(s.discord.token)
    assert "tok-ABCDEF" not in repr(dataclasses.asdict(s))  # a dump of the settings keeps it hidden


def test_given_tells_a_configured_value_from_a_default(monkeypatch, tmp_path):
    monkeypatch.delenv("GPU_GARDEN_HUB_CACHE_DIR", raising=False)
    assert "limits.paste_max_bytes" not in load_settings().given
    assert load_settings(**{"limits.paste_max_bytes": 4096}).given == {"limits.paste_max_bytes"}
    (tmp_path / ".env").write_text("GPU_GARDEN_LIMITS_PASTE_MAX_BYTES=2097152\n")  # the default, but set
    s = load_settings()
    assert "limits.paste_max_bytes" in s.given and "limits.user_per_minute" not in s.given
