"""The attribute index's hashes: an attribute value's string form (as the `attr` filter
compares it) hashed to 64 bits, from a stored row's attributes or from the AnyValue's
JSON text the C row builder gives (`text_hash`, storage/_rows_tokens.h). A trace's
tokens are made of them (storage/trace_facets.py)."""

from __future__ import annotations

import hashlib
from typing import Any

import orjson


def value_hash(value: str) -> int:
    """An attribute value's key in the attribute index: 8 bytes of its BLAKE2b, signed
    (a BIGINT), so that a prompt-long value costs the index what a short one does."""
    digest = hashlib.blake2b(value.encode("utf-8", "surrogatepass"), digest_size=8).digest()
    return int.from_bytes(digest, "big", signed=True)


def value_text(value: Any) -> str | None:
    """An OTLP/JSON AnyValue's string form, as the `attr` filter compares it: strings
    as they are, `true`/`false`, integers in decimal, doubles as JSON writes them,
    arrays and maps as their JSON; None for an empty value."""
    if not isinstance(value, dict) or not value:
        return None
    for kind, inner in value.items():
        return _text_of(kind, inner)
    return None


def _text_of(kind: str, inner: Any) -> str:
    if kind == "stringValue":
        return str(inner)
    if kind == "boolValue":
        return "true" if inner else "false"
    if kind == "intValue":
        return str(int(inner))
    if kind == "doubleValue":
        return orjson.dumps(float(inner)).decode()
    return orjson.dumps(inner).decode()


#: Value hashes by (kind, type, value): a batch's spans repeat their attributes' values.
#: Short texts, ints and booleans only: long texts (a model call's messages) rarely
#: repeat, and 100,000 of them held 150-200 MB of the worker's memory; doubles are equal
#: where their texts differ (-0.0 and 0.0), as True, 1 and 1.0 are (the type keeps those
#: apart, for a kind that holds another type than its own).
_hashes: dict[tuple[str, type, Any], int] = {}
_HASHES_KEPT = 100_000
KEPT_CHARS = 256
_EMPTY = value_hash("")


def _hash_of(value: Any) -> int:
    """The hash of an AnyValue's string form (that of "" for what has none)."""
    if type(value) is not dict:
        return _EMPTY
    for kind, inner in value.items():
        if type(inner) in (dict, list):  # arrays and maps: their JSON, not kept
            dumped = orjson.dumps(inner).decode()
            return KEY_ONLY if len(dumped) > MAX_HASHED_JSON else value_hash(dumped)
        kind_of = type(inner)
        kept = kind_of in (int, bool) or (kind_of is str and len(inner) <= KEPT_CHARS)
        hashed = _hashes.get((kind, kind_of, inner)) if kept else None
        if hashed is None:
            try:
                hashed = value_hash(_text_of(kind, inner))
            except (TypeError, ValueError):
                hashed = _EMPTY
            if kept:
                if len(_hashes) >= _HASHES_KEPT:
                    _hashes.clear()
                _hashes[(kind, kind_of, inner)] = hashed
        return hashed
    return _EMPTY


#: The value hash of a row that says only that a trace has the key (the `attr=key`
#: filter's row: one seek, where the key's rows of every value would be read).
KEY_ONLY = 0
#: An array or map whose JSON is longer than this is indexed by its key alone: its
#: value's hash would be made of a parse of it (an array of a million numbers took the
#: worker 350 MB), for an `attr=key=value` filter nobody types.
MAX_HASHED_JSON = 65_536
#: The canonical text of an array's or a map's value begins with one of these.
_COMPOSITE_HEADS = ('{"arrayValue":', '{"kvlistValue":')


def attribute_pairs(attributes: str) -> list[tuple[str, int]]:
    """The (key, value hash) pairs of a row's attributes (their stored JSON text),
    each key also with KEY_ONLY."""
    return _pairs(orjson.loads(attributes))


def resource_pairs(resource: str) -> list[tuple[str, int]]:
    """`attribute_pairs` of a resource's attributes (the resource's JSON text)."""
    parsed = orjson.loads(resource)
    return _pairs(parsed.get("attributes")) if type(parsed) is dict else []


def _pairs(attributes: Any) -> list[tuple[str, int]]:
    found: list[tuple[str, int]] = []
    if type(attributes) is not list:
        return found
    hashes = _hashes
    for pair in attributes:
        try:
            key, value = pair["key"], pair["value"]
            ((kind, inner),) = value.items()
            hashed = hashes[kind, type(inner), inner]
        except (KeyError, TypeError, ValueError, AttributeError):  # not seen, or odd
            if type(pair) is not dict or type(pair.get("key")) is not str:
                continue
            key, hashed = pair["key"], _hash_of(pair.get("value"))
        found += ((key, hashed), (key, KEY_ONLY))
    return found


#: Value hashes by an AnyValue's JSON text (short ones: long ones rarely repeat).
_text_hashes: dict[str, int] = {}


def text_hash(text: str) -> int:
    """The hash of an AnyValue's string form (`value_hash(value_text(...))`), from the
    AnyValue's JSON text."""
    hashed = _text_hashes.get(text)
    if hashed is None:
        inner = text[16:-2] if text.startswith('{"stringValue":"') else None
        if (
            inner is not None
            and text.endswith('"}')
            and "\\" not in inner
            and '"' not in inner  # one member: a quote unescaped would end the string
        ):
            hashed = value_hash(inner)
        elif text.startswith(_COMPOSITE_HEADS) and _inner_length(text) > MAX_HASHED_JSON:
            hashed = KEY_ONLY  # as _hash_of decides, without parsing it
        else:
            try:
                hashed = _hash_of(orjson.loads(text))
            except orjson.JSONDecodeError:
                hashed = _EMPTY
        if len(text) <= KEPT_CHARS:
            if len(_text_hashes) >= _HASHES_KEPT:
                _text_hashes.clear()
            _text_hashes[text] = hashed
    return hashed


def _inner_length(text: str) -> int:
    """The length of an array's or a map's JSON inside its canonical text (what
    `_hash_of` writes of it: the canonical form is compact, as orjson writes)."""
    head = len(_COMPOSITE_HEADS[0] if text.startswith(_COMPOSITE_HEADS[0]) else _COMPOSITE_HEADS[1])
    return len(text) - head - 1
