"""A stable content hash of one canonical span, for the storage worker's re-sending rules.

Independent of member order in every object and of attribute order in every list of
key-value pairs (span, event, link and nested kvlist attributes); event and link order
is content. Because every route produces the same canonical span, the hash does not
depend on the route either.
"""

from __future__ import annotations

import hashlib
from operator import itemgetter
from typing import Any

import orjson

_BY_KEY = itemgetter("key")


def _value(value: dict[str, Any]) -> dict[str, Any]:
    if "kvlistValue" in value:
        return {"kvlistValue": {"values": _pairs(value["kvlistValue"]["values"])}}
    if "arrayValue" in value:
        return {"arrayValue": {"values": [_value(v) for v in value["arrayValue"]["values"]]}}
    return value


def _pairs(pairs: list[dict[str, Any]]) -> list[dict[str, Any]]:
    for pair in pairs:
        value = pair["value"]
        if "kvlistValue" in value or "arrayValue" in value:
            return sorted(
                ({"key": kv["key"], "value": _value(kv["value"])} for kv in pairs), key=_BY_KEY
            )
    return sorted(pairs, key=_BY_KEY)  # scalars only: nothing nested to normalise


def _with_sorted_attributes(item: dict[str, Any]) -> dict[str, Any]:
    attributes = item.get("attributes")
    return {**item, "attributes": _pairs(attributes)} if attributes else item


def span_content_hash(span: dict[str, Any]) -> str:
    """32 hex characters identifying the content of a canonical span."""
    normal = _with_sorted_attributes(span)
    for member in ("events", "links"):
        items = normal.get(member)
        if items:
            normal = {**normal, member: [_with_sorted_attributes(item) for item in items]}
    data = orjson.dumps(normal, option=orjson.OPT_SORT_KEYS)
    return hashlib.blake2b(data, digest_size=16).hexdigest()
