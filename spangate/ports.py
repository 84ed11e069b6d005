"""The ports a command is about to serve on, checked before anything starts.

A second `spangate serve` on ports that are taken used to start Redis and every child,
announce itself ready (the first instance was answering) and print a traceback per child.
Now it stops first, in one line that names the port, the part and the setting that moves
it. Checked by binding the port as Hypercorn will (SO_REUSEADDR: a port left in
TIME_WAIT is free, one being listened on is not). The worker's metrics port is not
checked: a worker runs without its metrics when that port is taken.
"""

from __future__ import annotations

import errno
import socket
from collections.abc import Iterable

from service.settings import Settings

#: part -> (its Settings field, the variable that sets it)
PORTS = {
    "collector": ("ingest_port", "SPANGATE_INGEST_PORT"),
    "sidecar": ("api_port", "SPANGATE_API_PORT"),
    "dashboard": ("app_port", "SPANGATE_APP_PORT"),
}


class PortTaken(Exception):
    """A port a part needs is taken, or given to two parts: the message says which."""


def _taken(host: str, port: int) -> bool:
    family = socket.AF_INET6 if ":" in host else socket.AF_INET
    with socket.socket(family, socket.SOCK_STREAM) as probe:
        probe.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        try:
            probe.bind((host, port))
        except socket.gaierror as e:
            raise PortTaken(f"cannot listen on {host}: {e.strerror}; check SPANGATE_HOST") from e
        except OSError as e:
            if e.errno == errno.EADDRNOTAVAIL:
                raise PortTaken(f"{host} is no address of this machine; check SPANGATE_HOST") from e
            return True
    return False


def check_ports(settings: Settings, parts: Iterable[str]) -> None:
    """PortTaken unless every part's port is free and its own (a port 0 is none)."""
    owners: dict[int, str] = {}
    for part in parts:
        field, variable = PORTS[part]
        port = int(getattr(settings, field))
        if port == 0:
            continue
        if port in owners:
            raise PortTaken(
                f"port {port} is set for both {owners[port]} and {variable}: give each its own"
            )
        owners[port] = variable
        if _taken(settings.host, port):
            raise PortTaken(
                f"port {port} on {settings.host} is taken (another spangate, or another "
                f"program), and the {part} needs it: stop that, or set {variable} to a free port"
            )
