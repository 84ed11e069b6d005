"""How times and durations read on the pages."""

from __future__ import annotations

from datetime import UTC, datetime


def nanos(value: int | str | None) -> str:
    """A Unix nanosecond time as UTC, to the microsecond."""
    if value is None or value == "":
        return ""
    ns = int(value)
    moment = datetime.fromtimestamp(ns // 10**9, UTC)
    return f"{moment:%Y-%m-%d %H:%M:%S}.{ns % 10**9 // 1000:06d} UTC"


def millis(value: float | None) -> str:
    """A duration for people: 0.042 ms, 12.3 ms, 4.56 s."""
    if value is None:
        return "not ended"
    if value == 0:
        return "0 ms"
    if value >= 1000:
        return f"{value / 1000:.2f} s"
    return f"{value:.3f} ms" if value < 1 else f"{value:.1f} ms"


def count(value: int | None) -> str:
    """A token count with thousands separators; "—" when unknown."""
    return "—" if value is None else f"{value:,}"


def usd(value: float | None) -> str:
    """A cost in US dollars, to four significant places below a cent; "—" when unknown."""
    if value is None:
        return "—"
    if value == 0:
        return "$0"
    return f"${value:.2f}" if value >= 1 else f"${value:.4g}"


#: Why a cost shows "—" (the title of the dash).
NO_COST = (
    "No cost known: the span sent none, and neither the operator's price file "
    "(SPANGATE_PRICES_FILE) nor the genai-prices table has a price for its model"
)
