"""Webhooks: operators add them; the dashboard only lists them. Delivery is off during
the beta: nothing sends to them."""

from __future__ import annotations

import ipaddress
import re
import unicodedata
import uuid
from dataclasses import dataclass
from urllib.parse import urlsplit

from storage.clock import utc_now_iso
from storage.database import Database

EVENTS = ("alert.triggered",)


@dataclass(frozen=True, slots=True)
class Webhook:
    """A webhook as listed."""

    id: str
    url: str
    events: tuple[str, ...]
    created_at: str

    @property
    def shown_url(self) -> str:
        """The scheme, host and port, with the path masked and no query or credentials:
        any of those may hold the secret (Slack's webhooks keep it in the path)."""
        parts = urlsplit(self.url)
        host = parts.hostname or ""
        if ":" in host:
            host = f"[{host}]"
        port = f":{parts.port}" if parts.port else ""
        path = "/…" if parts.path.strip("/") else "/"
        return f"{parts.scheme}://{host}{port}{path}"


#: A host name as DNS has them (after IDNA, for one written in another script).
_HOST_NAME = re.compile(r"[a-z0-9_]([a-z0-9_-]*[a-z0-9_])?(\.[a-z0-9_]([a-z0-9_-]*[a-z0-9_])?)*\.?")


def check_url(url: str) -> str:
    """An http(s) URL with a host name or an IP address (and a port, where it has one),
    nothing in it that a request could not send as it is (a space, a control
    character), or ValueError saying what is wrong."""
    url = url.strip()
    parts = urlsplit(url)
    if parts.scheme not in ("http", "https") or not parts.hostname:
        raise ValueError("a webhook URL must be http:// or https:// with a host")
    if any(_unsendable(character) for character in url):
        raise ValueError("a webhook URL holds no space or control character")
    if "\\" in url:  # a backslash: some URL parsers read it as a slash, others not
        raise ValueError("a webhook URL holds no backslash")
    if not _host(parts.hostname):
        raise ValueError(f"{parts.hostname!r} is not a host name or an IP address")
    try:
        parts.port  # noqa: B018 - ValueError when it is not a port
    except ValueError:
        raise ValueError("a webhook URL's port must be a number from 0 to 65535") from None
    return url


def _unsendable(character: str) -> bool:
    """A space, a separator or a control character, of any script (U+0085, U+00A0,
    U+2028)."""
    return character.isspace() or unicodedata.category(character) in ("Cc", "Cf", "Zl", "Zp")


def _host(host: str) -> bool:
    try:
        ipaddress.ip_address(host)
        return True
    except ValueError:
        pass
    if host.replace(".", "").isdigit():  # dotted numbers that are no IPv4 address
        return False
    try:
        name = host.encode("idna").decode("ascii")
    except UnicodeError:
        return False
    return len(name) <= 253 and _HOST_NAME.fullmatch(name) is not None


class WebhookStore:
    """The webhooks of projects."""

    def __init__(self, db: Database) -> None:
        self.db = db

    def add(self, project_id: str, url: str, events: tuple[str, ...] = EVENTS) -> Webhook:
        """An operator's new webhook (stored; nothing is delivered to it)."""
        unknown = set(events) - set(EVENTS)
        if unknown or not events:
            raise ValueError(f"events must be some of {', '.join(EVENTS)}")
        hook = Webhook(f"whk_{uuid.uuid4().hex[:20]}", check_url(url), events, utc_now_iso())
        with self.db.transaction() as tx:
            tx.execute(
                "INSERT INTO webhooks (id, project_id, url, events, created_at) "
                "VALUES (?, ?, ?, ?, ?)",
                (hook.id, project_id, hook.url, ",".join(events), hook.created_at),
            )
        return hook

    def list(self, project_id: str) -> list[Webhook]:
        """A project's webhooks, newest first."""
        with self.db.transaction() as tx:
            rows = tx.query(
                "SELECT id, url, events, created_at FROM webhooks WHERE project_id = ? "
                "ORDER BY created_at DESC, id",
                (project_id,),
            )
        return [Webhook(i, url, tuple(events.split(",")), at) for i, url, events, at in rows]
