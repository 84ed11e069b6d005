"""The address of the client a request came from, through trusted proxies only."""

from __future__ import annotations

import ipaddress

from service.settings import IPNetwork


def client_ip(peer: str | None, forwarded_for: str | None, trusted: tuple[IPNetwork, ...]) -> str:
    """The client's address: the socket peer, or, when the peer is a trusted proxy, the
    rightmost X-Forwarded-For address that is not itself a trusted proxy."""
    address = peer or "unknown"
    if not trusted or not forwarded_for:
        return address

    def is_trusted(text: str) -> bool:
        try:
            ip = ipaddress.ip_address(text)
        except ValueError:
            return False
        return any(ip in network for network in trusted)

    if not is_trusted(address):
        return address
    for hop in reversed([part.strip() for part in forwarded_for.split(",") if part.strip()]):
        if not is_trusted(hop):
            return hop
    return address
