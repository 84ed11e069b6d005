"""The C row builder (storage/_rows.c), rows from a request's bytes, against rows_of in
Python: the very same rows."""

from __future__ import annotations

import gc
import sys
import threading
import time
from typing import Any

import orjson
import pytest
from hypothesis import given
from hypothesis import strategies as st

import proto_json
from proto_json.values import MAX_DEPTH
from storage import span_rows
from tests.fuzz import FUZZ
from tests.proto_json.test_fastpath import BUILT as CONVERTER_BUILT
from tests.proto_json.test_fastpath import (
    FLOATS_NEAR_THE_LARGEST_DOUBLE,
    _deep_bodies,
    otlp_span,
)
from tests.proto_json.test_properties import JSON_VALUES, native_span

FAST = span_rows.FAST_ROWS
pytestmark = pytest.mark.skipif(FAST is None, reason="the C row builder is not built")


def test_built_together_with_the_converter() -> None:
    """Both extensions build the same way: one missing alone is a broken build."""
    assert (span_rows.FAST_ROWS is None) == (CONVERTER_BUILT is None)


#: A minimal canonical span, one of whose members the junk tests replace.
_CANONICAL_SPAN = {
    "traceId": "1" * 32,
    "spanId": "2" * 16,
    "name": "n",
    "kind": 1,
    "startTimeUnixNano": "5",
    "status": {"code": 0},
}


def _texts_carried(rows: list[span_rows.SpanRow]) -> list[tuple[str | None, str | None]]:
    """The resource and scope texts the rows' keys carry (storage/shared_texts.py)."""
    return [(getattr(row.resource, "body", None), getattr(row.scope, "body", None)) for row in rows]


def _same_rows_from_bytes(body: bytes, must_take: bool) -> None:
    """The C builder gives rows_of(orjson.loads(body)), or declines."""
    assert FAST is not None
    fast = FAST.span_rows_json(body, "project", 1234, span_rows.SpanRow)
    try:
        reference = span_rows.rows_of(orjson.loads(body), "project", 1234)
    except (KeyError, ValueError, TypeError, AttributeError, IndexError):
        assert fast is None  # the worker dead-letters what Python cannot read
        return
    if must_take and b"\\" not in body:  # escaped keys are sorted in Python
        assert fast is not None, "bytes written by spangate must take the fused path"
    assert fast is None or fast == reference
    assert fast is None or _texts_carried(fast) == _texts_carried(reference)
    assert fast is None or all(type(row) is span_rows.SpanRow for row in fast)
    # texts, numbers and None only: left out of the cyclic GC's walks, as a plain tuple
    # of them would be after one collection (a NamedTuple never is)
    assert fast is None or not any(gc.is_tracked(row) for row in fast)
    assert span_rows.rows_of_json(body, "project", 1234) == reference


@pytest.mark.parametrize(
    "value",
    ['a\x00\x08\x0c\x1f"\\é😀', 1e16, 1e-7, 0.00001, -0.0, 2**63 - 1, True, None],
)
def test_content_hash_matches_on_awkward_values(value: Any) -> None:
    """Texts with escapes, floats orjson writes in exponent form, the largest integer:
    the builder's content hash is Python's."""
    conversion = proto_json.convert_spans(
        orjson.dumps(
            {
                "spans": [
                    {
                        "traceId": "1" * 32,
                        "spanId": "2" * 16,
                        "name": "n",
                        "startTime": "2026-11-22T10:00:00Z",
                        "attributes": {"z": value, "a": [value, {"y": value, "b": 1}], "m": 1},
                    }
                ]
            }
        )
    )
    _same_rows_from_bytes(conversion.payload, must_take=True)
    _same_rows_from_bytes(orjson.dumps(conversion.request), must_take=True)


@FUZZ
@given(st.lists(native_span(), max_size=4))
def test_rows_from_bytes_of_native_spans(spans: list[dict[str, Any]]) -> None:
    conversion = proto_json.convert_spans(orjson.dumps({"spans": spans}))
    _same_rows_from_bytes(conversion.payload, must_take=True)  # written by the C converter
    _same_rows_from_bytes(orjson.dumps(conversion.request), must_take=True)  # by orjson


@FUZZ
@given(st.lists(otlp_span(broken=False), max_size=4))
def test_rows_from_bytes_of_otlp_spans(spans: list[Any]) -> None:
    body = {
        "resourceSpans": [
            {
                "resource": {"attributes": [{"key": "k", "value": {"doubleValue": 1e-7}}]},
                "scopeSpans": [{"scope": {"name": "s"}, "spans": spans}],
            }
        ]
    }
    conversion = proto_json.convert_otlp(orjson.dumps(body))
    _same_rows_from_bytes(conversion.payload, must_take=True)
    _same_rows_from_bytes(orjson.dumps(conversion.request), must_take=True)


def test_numbers_written_as_orjson_writes_them_however_they_were_written_and_repeated() -> None:
    """The builder keeps the last few number texts it read and what it wrote for them:
    texts written otherwise than orjson writes them (0.20, 2e-1) still come out as
    orjson's, and numbers cycling through more texts than it keeps stay right."""
    texts = ["0.2", "0.20", "2e-1", "2E-1", "-0.0", "1.5e300", "1e-7", "123.456"]
    texts += [f"{k}.25" for k in range(12)]
    attributes = ",".join(
        f'{{"key":"k{i}","value":{{"doubleValue":{text}}}}}' for i, text in enumerate(texts * 3)
    )
    span = (
        '{"traceId":"' + "1" * 32 + '","spanId":"' + "2" * 16 + '","name":"n","kind":1,'
        '"startTimeUnixNano":"5","attributes":[' + attributes + '],"status":{"code":0}}'
    )
    body = ('{"resourceSpans":[{"scopeSpans":[{"spans":[' + span + "]}]}]}").encode()
    _same_rows_from_bytes(body, must_take=True)
    [row] = span_rows.rows_of_json(body, "project", 1234)
    assert '{"doubleValue":0.2}' in row.attributes and "0.20" not in row.attributes


#: Values whose text the builder copies as it is (sorted keys, 64-bit integers, no
#: floats) and values one detail away from that; whether the builder must take them
#: (it declines repeated and escaped keys and integers past 64 bits: Python's turn).
COPIED_OR_NOT = [
    ('{"a":1,"b":{"c":true,"d":[1,null,{"e":"f\\n"}]},"c":{}}', True),
    ('{"b":1,"a":2}', True),
    ('{"ab":1,"a":2}', True),
    ('{"a":1,"ab":2,"b":3}', True),
    ('{"a":{"b":0.5}}', True),
    ('{"a":[1,2.0]}', True),
    ('{"a":9223372036854775807,"b":-9223372036854775808}', True),
    ('{"kvlistValue":{"values":[{"key":"z","value":{"intValue":"1"}},'
     '{"key":"a","value":{}}]}}', True),
    ('{"arrayValue":{"values":[{"kvlistValue":{"values":[{"key":"z","value":{}},'
     '{"key":"a","value":{}}]}}]}}', True),
    ('{ "a" : 1 ,"b":[ 1, 2 ] }', True),  # spaced: written anew, not copied
    ('{"a":1,"a":2}', False),
    ('{"a":{"k":1,"k":[]}}', False),
    ('{"a\\n":1,"a":2}', False),
    ('{"a":1,"a\\n":2}', False),
    ('{"a":-0}', False),
    ('{"a":9223372036854775808}', False),
    ('{"a":-9223372036854775809}', False),
    ('{"a":18446744073709551615}', False),
]  # fmt: skip


#: Where a value can go in a request, as (resource, scope, span members) with V for it.
PLACES = [
    ('{"x":V}', "{}", ""),
    ("{}", "V", ""),
    ("{}", "{}", ',"x":V'),
    ("{}", "{}", ',"attributes":[{"key":"z","value":{}},{"key":"k","value":V}]'),
    ("{}", "{}", ',"events":[{"name":"e","attributes":[{"key":"k","value":V}],"x":V}]'),
    ("{}", "{}", ',"links":[V]'),
    ("{}", "{}", ',"status":{"z":V,"code":0}'),
]


@pytest.mark.parametrize("place", PLACES)
@pytest.mark.parametrize(("value", "taken"), COPIED_OR_NOT)
def test_values_copied_as_written_only_when_written_as_orjson_would(
    value: str, taken: bool, place: tuple[str, str, str]
) -> None:
    """Wherever a value goes, the texts copied and the content hash are Python's."""
    resource, scope, members = (part.replace("V", value) for part in place)
    if "status" not in members:
        members += ',"status":{"code":0}'
    span = (
        '{"traceId":"' + "1" * 32 + '","spanId":"' + "2" * 16 + '","name":"n","kind":1,'
        f'"startTimeUnixNano":"5"{members}}}'
    )
    body = (
        f'{{"resourceSpans":[{{"resource":{resource},'
        f'"scopeSpans":[{{"scope":{scope},"spans":[{span}]}}]}}]}}'
    ).encode()
    _same_rows_from_bytes(body, must_take=False)
    assert FAST is not None
    if taken:
        assert FAST.span_rows_json(body, "project", 1234, span_rows.SpanRow) is not None


@FUZZ
@given(JSON_VALUES, st.sampled_from(["attributes", "events", "status", "kind", "x", "name"]))
def test_rows_from_bytes_of_unexpected_shapes(junk: Any, member: str) -> None:
    span = {**_CANONICAL_SPAN, member: junk}
    request = {"resourceSpans": [{"scopeSpans": [{"spans": [span]}]}]}
    _same_rows_from_bytes(orjson.dumps(request), must_take=False)
    _same_rows_from_bytes(orjson.dumps(junk), must_take=False)


@pytest.mark.parametrize(
    "body",
    [
        b"",
        b"{",
        b"[]",
        b"null",
        b'{"resourceSpans": null}',
        b'{"resourceSpans":[]} x',
        b' {"resourceSpans" : [ ] } ',
        b'{"resourceSpans":[],"resourceSpans":[{}]}',
        b'{"resourceSpans":[{"scopeSpans":[{"spans":[{"traceId":"\\u0031"}]}]}]}',
        b'{"a":"\\/"}',
        b'{"a":"\\ud83d\\ude00"}',
        b'{"a":"\xff"}',
        b'{"a":"\xed\xa0\x80"}',
        b'{"a":1e400}',
        b'{"a":-0}',
        b'{"a":01}',
        b'{"a":[1,]}',
        b'{"a":"\x01"}',
        b"[" * 100 + b"]" * 100,
    ],
)
def test_rows_from_odd_bytes(body: bytes) -> None:
    _same_rows_from_bytes(body, must_take=False)


@FUZZ
@given(st.binary(max_size=300))
def test_rows_from_random_bytes(body: bytes) -> None:
    _same_rows_from_bytes(body, must_take=False)


def _body_of(spans: int, number: bytes) -> bytes:
    """A canonical request of `spans` spans whose every span has a double attribute
    written as `number` (which orjson may not write, or even read)."""
    span = {**_CANONICAL_SPAN, "attributes": [{"key": "x", "value": {"doubleValue": 0.5}}]}
    spans_ = [{**span, "spanId": f"{i + 1:016x}"} for i in range(spans)]
    body = orjson.dumps({"resourceSpans": [{"scopeSpans": [{"spans": spans_}]}]})
    return body.replace(b'"doubleValue":0.5', b'"doubleValue":' + number)


@pytest.mark.parametrize("spans", [1, 600])  # one scanned with the GIL held, one without
@pytest.mark.parametrize("number", FLOATS_NEAR_THE_LARGEST_DOUBLE)
def test_floats_near_the_largest_double(spans: int, number: bytes) -> None:
    """The scanner sees at once that most floats are finite; the others (orjson refuses
    those that overflow) are read once the scan is over, either way as orjson reads them."""
    body = _body_of(spans, number)
    assert (len(body) >= 64 * 1024) == (spans > 1)
    _same_rows_from_bytes(body, must_take=True)


def test_large_bodies_are_scanned_with_the_gil_let_go() -> None:
    """Another thread runs Python while a large body is scanned (the worker's writer
    binds and commits meanwhile): with a switch interval too long to force a switch,
    the other thread can only run when the GIL is let go."""
    assert FAST is not None
    spans = 600
    body = _body_of(spans, b"0.25")
    ran = 0
    stop = threading.Event()

    def other() -> None:
        nonlocal ran
        while not stop.is_set():
            ran += 1
            time.sleep(0)  # lets the GIL go: the caller below takes it back

    interval = sys.getswitchinterval()
    thread = threading.Thread(target=other)
    thread.start()
    sys.setswitchinterval(1000.0)
    try:
        counts = []
        # a scan that lets the GIL go may still find the thread asleep, or without a core
        # on a busy machine: scans until the thread ran during one, 200 at most
        while len(counts) < 200 and not any(counts):
            before = ran
            rows = FAST.span_rows_json(body, "project", 1234, span_rows.SpanRow)
            counts.append(ran - before)
            assert rows is not None and len(rows) == spans
    finally:
        sys.setswitchinterval(interval)
        stop.set()
        thread.join()
    assert max(counts) > 0


def test_values_as_deep_as_taken_are_built_in_c() -> None:
    """The canonical form of a span whose values are as deep as the converters take,
    in its attributes, an event's and its resource's, takes the C builder."""
    for convert, _, body in _deep_bodies(MAX_DEPTH):
        _same_rows_from_bytes(convert(body).payload, must_take=True)
