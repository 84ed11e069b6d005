"""Settings from the environment."""

from __future__ import annotations

import ipaddress
from pathlib import Path

import pytest

from service.settings import Settings, SettingsError


def test_defaults_are_the_documented_ones() -> None:
    """An empty environment gives the design's defaults, SQLite under the data dir."""
    settings = Settings.from_env({})
    assert (settings.ingest_port, settings.api_port, settings.app_port) == (4318, 4319, 4320)
    assert settings.database_url == "sqlite:///.spangate/spangate.db"
    assert settings.redis_url is None
    assert settings.max_body_bytes == 10_485_760
    assert (settings.max_spans_per_request, settings.max_attributes_per_request) == (10_000, 24_000)
    assert (settings.enqueue_timeout_ms, settings.dedup_window_seconds) == (2000, 1200)
    assert settings.redis_memory_high_ratio == 0.9


def test_values_are_read_and_typed() -> None:
    """Every kind of value is parsed: paths, URLs, numbers, CIDR lists, origin lists."""
    settings = Settings.from_env(
        {
            "SPANGATE_DATA_DIR": "/var/lib/sg",
            "SPANGATE_REDIS_URL": "redis://127.0.0.1:6379/0",
            "SPANGATE_TRUSTED_PROXIES": "10.0.0.0/8, ::1",
            "SPANGATE_CORS_ALLOWED_ORIGINS": (
                "https://app.example.com/,*, http://[::1]:8080, https://b.example:443, "
                "http://c.example:80"
            ),
            "SPANGATE_RATE_LIMIT_IP_RPS": "0",
            "SPANGATE_LOG_LEVEL": "DEBUG",
            "SPANGATE_DATABASE_STATEMENT_TIMEOUT_MS": "1500",
            "SPANGATE_REDIS_REPLICA_ACKS": "1",
        }
    )
    assert settings.redis_replica_acks == 1
    assert settings.database_statement_timeout_ms == 1500
    assert settings.data_dir == Path("/var/lib/sg")
    assert settings.database_url == "sqlite:////var/lib/sg/spangate.db"
    assert settings.trusted_proxies == (
        ipaddress.ip_network("10.0.0.0/8"),
        ipaddress.ip_network("::1"),
    )
    assert settings.cors_allowed_origins == (
        "https://app.example.com",
        "*",
        "http://[::1]:8080",
        "https://b.example",
        "http://c.example",
    )  # a scheme's own port is left out, as browsers leave it out
    assert settings.rate_limit_ip_rps == 0 and settings.log_level == "debug"


@pytest.mark.parametrize(
    ("name", "value"),
    [
        ("INGEST_PORT", "http"),
        ("INGEST_PORT", "70000"),
        ("MAX_BODY_BYTES", "0"),
        ("MAX_BODY_BYTES", "1.5"),
        ("MAX_BODY_BYTES", str(128 * 1024 * 1024 + 1)),
        ("REDIS_MEMORY_HIGH_RATIO", "1.5"),
        ("RATE_LIMIT_PROJECT_RPS", "-1"),
        ("RATE_LIMIT_PROJECT_RPS", "inf"),
        ("TRUSTED_PROXIES", "10.0.0.0/33"),
        ("LOG_LEVEL", "loud"),
        ("REDIS_URL", "localhost:6379"),
        ("DATABASE_URL", "mysql://x"),
        ("ENQUEUE_TIMEOUT_MS", "soon"),
        ("REDIS_REPLICA_ACKS", "-1"),
        ("DATABASE_STATEMENT_TIMEOUT_MS", "0"),
        ("APP_SECURE_COOKIES", "yes"),
        ("SESSION_SECRET", "too short"),
        ("CORS_ALLOWED_ORIGINS", "notorigin"),
        ("PURE_PYTHON", "storage._row"),
        ("PURE_PYTHON", "true"),
        ("CORS_ALLOWED_ORIGINS", "https://app.example.com/path"),
        ("CORS_ALLOWED_ORIGINS", "https://App.example.com"),
        ("CORS_ALLOWED_ORIGINS", "https://user@app.example.com"),
        ("CORS_ALLOWED_ORIGINS", "http://x:99999"),
        ("CORS_ALLOWED_ORIGINS", "http://x:0080"),
    ],
)
def test_bad_value_names_the_variable(name: str, value: str) -> None:
    """A bad value raises SettingsError whose message names the variable."""
    with pytest.raises(SettingsError, match=f"^SPANGATE_{name}="):
        Settings.from_env({f"SPANGATE_{name}": value})


def test_dashboard_settings() -> None:
    """The dashboard's settings are read; a bad session secret is never echoed."""
    secret = "s" * 40
    settings = Settings.from_env(
        {"SPANGATE_APP_SECURE_COOKIES": "1", "SPANGATE_SESSION_SECRET": secret}
    )
    assert settings.app_secure_cookies and settings.session_secret == secret
    assert secret not in repr(settings)
    with pytest.raises(SettingsError) as refused:
        Settings.from_env({"SPANGATE_SESSION_SECRET": "hunter2"})
    assert "hunter2" not in str(refused.value)
