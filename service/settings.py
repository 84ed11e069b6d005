"""All configuration: one frozen dataclass built from an environment mapping.

Nothing else reads os.environ. A bad value raises SettingsError naming the variable,
which the CLI prints as one line before exiting.
"""

from __future__ import annotations

import ipaddress
import re
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import TypeVar

from proto_json import fastpath

PREFIX = "SPANGATE_"
_SECRETS = frozenset(("SESSION_SECRET",))  # never echoed in an error
T = TypeVar("T")

IPNetwork = ipaddress.IPv4Network | ipaddress.IPv6Network


class SettingsError(ValueError):
    """A configuration value is unusable; the message names the variable."""


def _int(text: str) -> int:
    try:
        return int(text)
    except ValueError:
        raise ValueError("must be an integer") from None


def _float(text: str) -> float:
    try:
        return float(text)
    except ValueError:
        raise ValueError("must be a number") from None


def _positive_int(text: str) -> int:
    value = _int(text)
    if value <= 0:
        raise ValueError("must be a positive integer")
    return value


def _non_negative_int(text: str) -> int:
    value = _int(text)
    if value < 0:
        raise ValueError("must be 0 or more")
    return value


def _port(text: str) -> int:
    value = _int(text)
    if not 0 <= value <= 65535:
        raise ValueError("must be a port number 0-65535")
    return value


def _non_negative_float(text: str) -> float:
    value = _float(text)
    if not value >= 0 or value == float("inf"):
        raise ValueError("must be a finite number >= 0")
    return value


def _ratio(text: str) -> float:
    value = _float(text)
    if not 0 < value <= 1:
        raise ValueError("must be a number in (0, 1]")
    return value


def _networks(text: str) -> tuple[IPNetwork, ...]:
    return tuple(
        ipaddress.ip_network(part.strip(), strict=False) for part in text.split(",") if part.strip()
    )


#: An origin as a browser sends it: scheme://host, with a port where one is given (a
#: port of digits, without leading zeros).
_ORIGIN = re.compile(
    r"(?P<head>[a-z][a-z0-9+.-]*://(?:[a-z0-9-]+(?:\.[a-z0-9-]+)*|\[[0-9a-f:.]+\]))"
    r"(?::(?P<port>[1-9][0-9]{0,4}))?"
)
#: The ports a browser leaves out of an origin: its scheme's own.
_DEFAULT_PORTS = {"http": "80", "https": "443", "ws": "80", "wss": "443"}


def _origins(text: str) -> tuple[str, ...]:
    """The allowed origins, each as a browser sends it (its scheme's own port left out,
    as browsers leave it out)."""
    origins = []
    for given in (part.strip().rstrip("/") for part in text.split(",") if part.strip()):
        found = _ORIGIN.fullmatch(given)
        port = found["port"] if found else None
        if given != "*" and (found is None or (port is not None and int(port) > 65535)):
            raise ValueError(
                f"{given!r} is not an origin: each must be * or scheme://host[:port], "
                "in lower case, as a browser sends it"
            )
        if found is not None and port == _DEFAULT_PORTS.get(given.partition(":")[0]):
            given = found["head"]
        origins.append(given)
    return tuple(origins)


#: The largest body limit: a request's queue entry must fit Redis's largest value (512 MB
#: by default), and its canonical form may be twice the body and more.
MAX_BODY_LIMIT = 128 * 1024 * 1024


def _body_bytes(text: str) -> int:
    value = _positive_int(text)
    if value > MAX_BODY_LIMIT:
        raise ValueError(f"must be at most {MAX_BODY_LIMIT} (128 MB)")
    return value


def _log_level(text: str) -> str:
    level = text.strip().lower()
    if level not in ("debug", "info", "warning", "error"):
        raise ValueError("must be one of debug, info, warning, error")
    return level


def _flag(text: str) -> bool:
    if text not in ("0", "1"):
        raise ValueError("must be 0 or 1")
    return text == "1"


def _secret(text: str) -> str:
    if len(text) < 32:
        raise ValueError("must be at least 32 characters")
    return text


def _database_url(text: str) -> str:
    if not text.startswith(("sqlite:///", "postgresql://", "postgres://")):
        raise ValueError("must start with sqlite:/// or postgresql://")
    return text


def _redis_url(text: str) -> str:
    if not text.startswith(("redis://", "rediss://", "unix://")):
        raise ValueError("must start with redis://, rediss:// or unix://")
    return text


@dataclass(frozen=True, slots=True)
class Settings:
    """Every setting of every part; defaults are the documented ones (README, Settings)."""

    host: str = "127.0.0.1"
    ingest_port: int = 4318
    api_port: int = 4319
    app_port: int = 4320
    data_dir: Path = Path(".spangate")
    redis_url: str | None = None
    database_url: str = ""
    database_statement_timeout_ms: int = 30_000
    max_body_bytes: int = 10 * 1024 * 1024
    max_spans_per_request: int = 10_000
    max_attributes_per_request: int = 24_000
    rate_limit_project_rps: float = 1000.0
    rate_limit_ip_rps: float = 500.0
    queue_max_spans_per_project: int = 1_000_000
    redis_memory_high_ratio: float = 0.9
    max_inflight_bytes: int = 256 * 1024 * 1024
    body_timeout_s: int = 60
    enqueue_timeout_ms: int = 2000
    redis_replica_acks: int = 0
    dedup_window_seconds: int = 1200
    trusted_proxies: tuple[IPNetwork, ...] = field(default=())
    cors_allowed_origins: tuple[str, ...] = field(default=())
    log_level: str = "info"
    archive_dir: Path | None = None
    ingestion_record: bool = True
    worker_metrics_port: int = 4321
    app_secure_cookies: bool = False
    session_secret: str | None = field(default=None, repr=False)
    prices_file: Path | None = None

    def __post_init__(self) -> None:
        if not self.database_url:
            url = f"sqlite:///{self.data_dir / 'spangate.db'}"
            object.__setattr__(self, "database_url", url)

    @classmethod
    def from_env(cls, environ: Mapping[str, str]) -> Settings:
        """Settings from `SPANGATE_*` variables; SettingsError names the first bad one."""

        def read(name: str, cast: Callable[[str], T], default: T) -> T:
            raw = environ.get(PREFIX + name)
            if raw is None or raw.strip() == "":
                return default
            try:
                return cast(raw.strip())
            except ValueError as e:
                shown = "(hidden)" if name in _SECRETS else repr(raw)
                raise SettingsError(f"{PREFIX}{name}={shown}: {e}") from None

        d = cls()
        read("PURE_PYTHON", fastpath.pure_python, "")  # read by proto_json/fastpath.py
        data_dir = read("DATA_DIR", Path, d.data_dir)
        return cls(
            host=read("HOST", str, d.host),
            ingest_port=read("INGEST_PORT", _port, d.ingest_port),
            api_port=read("API_PORT", _port, d.api_port),
            app_port=read("APP_PORT", _port, d.app_port),
            data_dir=data_dir,
            redis_url=read("REDIS_URL", _redis_url, None),
            database_url=read("DATABASE_URL", _database_url, ""),
            database_statement_timeout_ms=read(
                "DATABASE_STATEMENT_TIMEOUT_MS", _positive_int, d.database_statement_timeout_ms
            ),
            max_body_bytes=read("MAX_BODY_BYTES", _body_bytes, d.max_body_bytes),
            max_spans_per_request=read(
                "MAX_SPANS_PER_REQUEST", _positive_int, d.max_spans_per_request
            ),
            max_attributes_per_request=read(
                "MAX_ATTRIBUTES_PER_REQUEST", _positive_int, d.max_attributes_per_request
            ),
            rate_limit_project_rps=read(
                "RATE_LIMIT_PROJECT_RPS", _non_negative_float, d.rate_limit_project_rps
            ),
            rate_limit_ip_rps=read("RATE_LIMIT_IP_RPS", _non_negative_float, d.rate_limit_ip_rps),
            queue_max_spans_per_project=read(
                "QUEUE_MAX_SPANS_PER_PROJECT", _positive_int, d.queue_max_spans_per_project
            ),
            redis_memory_high_ratio=read(
                "REDIS_MEMORY_HIGH_RATIO", _ratio, d.redis_memory_high_ratio
            ),
            max_inflight_bytes=read("MAX_INFLIGHT_BYTES", _positive_int, d.max_inflight_bytes),
            body_timeout_s=read("BODY_TIMEOUT_S", _positive_int, d.body_timeout_s),
            enqueue_timeout_ms=read("ENQUEUE_TIMEOUT_MS", _positive_int, d.enqueue_timeout_ms),
            redis_replica_acks=read("REDIS_REPLICA_ACKS", _non_negative_int, d.redis_replica_acks),
            dedup_window_seconds=read(
                "DEDUP_WINDOW_SECONDS", _positive_int, d.dedup_window_seconds
            ),
            trusted_proxies=read("TRUSTED_PROXIES", _networks, d.trusted_proxies),
            cors_allowed_origins=read("CORS_ALLOWED_ORIGINS", _origins, d.cors_allowed_origins),
            log_level=read("LOG_LEVEL", _log_level, d.log_level),
            archive_dir=read("ARCHIVE_DIR", Path, None),
            ingestion_record=read("INGESTION_RECORD", _flag, d.ingestion_record),
            worker_metrics_port=read("WORKER_METRICS_PORT", _port, d.worker_metrics_port),
            app_secure_cookies=read("APP_SECURE_COOKIES", _flag, d.app_secure_cookies),
            session_secret=read("SESSION_SECRET", _secret, None),
            prices_file=read("PRICES_FILE", Path, None),
        )
