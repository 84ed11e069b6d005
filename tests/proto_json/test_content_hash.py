"""The content hash of a canonical span."""

from __future__ import annotations

import proto_json
from tests.proto_json.spans import only_span, span, spans_body


def canonical(**fields: object) -> dict[str, object]:
    return only_span(proto_json.convert_spans(spans_body(span(**fields))).request)


def test_attribute_and_member_order_do_not_matter() -> None:
    """Reordered attributes (also nested and in events) and members hash the same."""
    a = canonical(
        attributes={"x": 1, "y": {"p": 1, "q": 2}},
        events=[{"name": "e", "attributes": {"m": 1, "n": 2}}],
    )
    b = canonical(
        attributes={"y": {"q": 2, "p": 1}, "x": 1},
        events=[{"name": "e", "attributes": {"n": 2, "m": 1}}],
    )
    assert a != b
    assert proto_json.span_content_hash(a) == proto_json.span_content_hash(b)
    assert proto_json.span_content_hash(dict(reversed(list(a.items())))) == (
        proto_json.span_content_hash(a)
    )


def test_any_content_change_changes_the_hash() -> None:
    """Changing a name, a time, a value's type, an event or event order changes the hash."""
    base = proto_json.span_content_hash(canonical(attributes={"x": 1}))
    changed = [
        canonical(attributes={"x": 1}, name="other"),
        canonical(attributes={"x": 1}, endTime="2026-11-22T10:00:01Z"),
        canonical(attributes={"x": "1"}),
        canonical(attributes={"x": 1.0}),
        canonical(attributes={"x": 1}, events=[{"name": "e"}]),
    ]
    hashes = {proto_json.span_content_hash(c) for c in changed}
    assert base not in hashes and len(hashes) == len(changed)
    two = canonical(events=[{"name": "a"}, {"name": "b"}])
    swapped = canonical(events=[{"name": "b"}, {"name": "a"}])
    assert proto_json.span_content_hash(two) != proto_json.span_content_hash(swapped)


def test_hash_is_stable_hex() -> None:
    """The hash is 32 lowercase hex characters and the same on every call."""
    value = proto_json.span_content_hash(canonical())
    assert len(value) == 32 and int(value, 16) >= 0 and value == value.lower()
    assert value == proto_json.span_content_hash(canonical())
