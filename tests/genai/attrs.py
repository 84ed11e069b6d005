"""Spans' attributes and events built by hand, in OTLP/JSON, for the view's tests."""

from __future__ import annotations

from typing import Any

import orjson


def value(item: Any) -> dict[str, Any]:
    """An OTLP/JSON AnyValue."""
    if isinstance(item, bool):
        return {"boolValue": item}
    if isinstance(item, int):
        return {"intValue": str(item)}
    if isinstance(item, float):
        return {"doubleValue": item}
    if isinstance(item, list):
        return {"arrayValue": {"values": [value(v) for v in item]}}
    if isinstance(item, dict):
        return {"kvlistValue": {"values": attributes(**item)}}
    return {"stringValue": item}


def attributes(**pairs: Any) -> list[dict[str, Any]]:
    """OTLP/JSON key-values; a key's `__` stands for a dot."""
    return [{"key": key.replace("__", "."), "value": value(item)} for key, item in pairs.items()]


def attrs(pairs: dict[str, Any]) -> list[dict[str, Any]]:
    """OTLP/JSON key-values of a dict keyed by the attributes' own names."""
    return [{"key": key, "value": value(item)} for key, item in pairs.items()]


def event(name: str, pairs: dict[str, Any]) -> dict[str, Any]:
    """An OTLP/JSON span event."""
    return {"name": name, "timeUnixNano": "1", "attributes": attrs(pairs)}


def dumps(item: Any) -> str:
    """JSON text, as instrumentations write message attributes."""
    return orjson.dumps(item).decode()
