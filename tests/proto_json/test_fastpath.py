"""The C fast path against the pure-Python reference: the same conversion, whatever the body.

Every other proto_json test runs with the fast path on and off (see conftest.py); these
tests feed both paths the same generated bodies, valid and broken, in one process.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sysconfig
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import orjson
import pytest
from hypothesis import given
from hypothesis import strategies as st

import proto_json
from proto_json import Conversion, EnvelopeError, Limits, fastpath
from proto_json.values import MAX_DEPTH
from tests.fuzz import FUZZ
from tests.proto_json.spans import span as valid_span
from tests.proto_json.test_properties import JSON_VALUES, hex_id, native_span

BUILT = fastpath._module


@pytest.fixture(autouse=True, scope="module")
def conversion_path() -> str:
    """Overrides conftest's: these tests switch between the two paths themselves."""
    return "both"


@contextmanager
def _pure() -> Iterator[None]:
    saved = fastpath._module
    fastpath._module = None
    try:
        yield
    finally:
        fastpath._module = saved


def _outcome(result: Conversion) -> tuple[Any, ...]:
    return (
        result.request,
        orjson.loads(result.payload),
        result.accepted,
        result.errors,
        result.ignored,
        result.span_count,
        result.attribute_count,
        result.refusal,
        result.traces_accepted,
        result.trace_errors,
    )


def _same(convert: Callable[[bytes], Conversion], body: bytes) -> Conversion | None:
    """Convert with both paths; assert they agree (results, or envelope errors); the fast
    path's result."""
    with _pure():
        try:
            reference = convert(body)
        except EnvelopeError as e:
            with pytest.raises(EnvelopeError) as fast_error:
                convert(body)
            assert (fast_error.value.code, fast_error.value.message) == (e.code, e.message)
            return None
    fast = convert(body)
    assert _outcome(fast) == _outcome(reference)
    return fast


def _compiler() -> str | None:
    """The C compiler `pip install` would use (CC first, as setuptools reads it), if it
    answers `--version` (CC=false, for an install without one, does not)."""
    cc = (os.environ.get("CC") or sysconfig.get_config_var("CC") or "cc").split()[0]
    found = shutil.which(cc)
    if found is None:
        return None
    answer = subprocess.run([found, "--version"], capture_output=True, check=False)
    return found if answer.returncode == 0 else None


def test_fast_path_is_built_wherever_a_compiler_is() -> None:
    """`pip install` builds it when it can: a missing build must not pass unnoticed."""
    if os.environ.get("SPANGATE_PURE_PYTHON", "") not in ("", "0"):
        assert not fastpath.available()
    elif _compiler() is not None:
        assert BUILT is not None, "a C compiler is here but proto_json._fastpath is not built"


needs_fast_path = pytest.mark.skipif(BUILT is None, reason="the C fast path is not built")

# -- generated bodies -----------------------------------------------------------------

TIME_TEXT = st.from_regex(
    r"[0-9]{4}-[0-1][0-9]-[0-3][0-9][Tt ][0-2][0-9]:[0-5][0-9]:[0-6][0-9]"
    r"([.,][0-9]{0,10})?([Zz]|[+-][0-2][0-9]:?[0-5][0-9])?",
    fullmatch=True,
) | st.sampled_from(
    [
        "2024-02-29T00:00:00Z",
        "2023-02-29T00:00:00Z",
        "2026-11-22T24:00:00Z",
        "2262-04-11T23:47:16.854775807Z",
        "2262-04-11T23:47:16.854775808Z",
        "1970-01-01T00:00:00Z",
        "1970-01-01T00:00:00+00:01",
        "1969-12-31T23:59:59.999999999Z",
        "0000-01-01T00:00:00Z",
        "2026-11-22T10:00:00.Z",
        "2026-11-22T10:00:00+2400",
        "2026-11-22T10:00:00+05",
        "２０２６-11-22T10:00:00Z",
    ]
)
ID_TEXT = st.sampled_from(["", "0" * 16, "0" * 32, "g" * 16, "é" * 16, "1" * 31, "A" * 32])
JUNK = st.one_of(JSON_VALUES, TIME_TEXT, ID_TEXT, hex_id(16), hex_id(32))
NATIVE_FIELDS = [
    "traceId",
    "spanId",
    "parentSpanId",
    "name",
    "kind",
    "startTime",
    "endTime",
    "status",
    "attributes",
    "events",
    "spangate",
]


@st.composite
def native_spans(draw: st.DrawFn) -> list[Any]:
    """Valid native spans, some with a field replaced by junk or an unknown member."""
    spans: list[Any] = draw(st.lists(native_span(), max_size=4))
    for span in spans:
        if draw(st.integers(0, 3)) == 0:
            span[draw(st.sampled_from(NATIVE_FIELDS))] = draw(JUNK)
        if draw(st.integers(0, 5)) == 0 and type(span.get("attributes", {})) is dict:
            span.setdefault("attributes", {})["spangate.span.kind"] = "agent"
        if draw(st.integers(0, 5)) == 0:
            span["startTime"] = draw(TIME_TEXT)
    if draw(st.integers(0, 9)) == 0:
        spans.append(draw(JUNK))
    return spans


@needs_fast_path
@FUZZ
@given(native_spans())
def test_native_spans_bodies(spans: list[Any]) -> None:
    _same(proto_json.convert_spans, orjson.dumps({"spans": spans}))


@needs_fast_path
@FUZZ
@given(st.lists(native_span(), max_size=4))
def test_valid_native_spans_take_the_fast_path(spans: list[Any]) -> None:
    body = orjson.dumps({"spans": spans})
    fast = _same(proto_json.convert_spans, body)
    assert fast is not None
    assert isinstance(fast.canonical, bytes)
    assert fastpath.native_body(body, Limits()) is not None, "straight from the bytes"


@needs_fast_path
@FUZZ
@given(
    native_spans(),
    st.sampled_from(
        [{}, {"indent": 1}, {"ensure_ascii": False}, {"separators": (",", ":")}, {"indent": "\t"}]
    ),
)
def test_native_bodies_written_otherwise(spans: list[Any], options: dict[str, Any]) -> None:
    """Bodies as other JSON writers write them (escaped non-ASCII, whitespace)."""
    _same(proto_json.convert_spans, json.dumps({"spans": spans}, **options).encode())


@needs_fast_path
@FUZZ
@given(native_spans(), st.booleans())
def test_ndjson_bodies(spans: list[Any], broken_line: bool) -> None:
    lines = [orjson.dumps(span) for span in spans]
    if broken_line:
        lines.append(b"{not json")
    _same(proto_json.convert_ndjson, b"\n".join(lines))


#: What may stand between and around NDJSON lines: blank lines of what bytes.strip()
#: removes (\x0b and \x0c are no JSON whitespace), CRLF, and lines split or joined
#: (a line holding two spans, a span over two lines: neither parses as one span).
LINE_JOINS = st.sampled_from([b"\n", b"\r\n", b"\n\n", b"\n \t\n", b"\n\x0b\x0c\n", b",", b""])


@needs_fast_path
@FUZZ
@given(native_spans(), st.data())
def test_ndjson_bodies_of_any_line_breaks(spans: list[Any], data: st.DataObject) -> None:
    """The C converter of NDJSON bytes (a line at a time) agrees with the general path
    whatever separates the lines."""
    texts = [orjson.dumps(span) for span in spans]
    joins = [data.draw(LINE_JOINS) for _ in texts]
    body = data.draw(st.sampled_from([b"", b"\n", b" "])) + b"".join(
        text + join for text, join in zip(texts, joins, strict=True)
    )
    _same(proto_json.convert_ndjson, body)


@needs_fast_path
def test_ndjson_lines_that_are_not_one_span_each_take_the_general_path() -> None:
    """Two lines that join into two objects, a line of two spans, a line with a form
    feed: each line is judged on its own, as the general path judges it."""
    a, b = (orjson.dumps(valid_span(spanId=f"{n:016x}")) for n in (1, 2))
    converted = fastpath.ndjson_body(b"\n" + a + b"\r\n \x0b\n" + b, Limits())
    assert converted is not None and converted.accepted == 2, "one span a line: from the bytes"
    for body in (a[:-1] + b"\n," + a[-1:] + b"\n" + b, a + b"," + b, a + b"\x0c\n" + b):
        assert fastpath.ndjson_body(body, Limits()) is None
        _same(proto_json.convert_ndjson, body)


@needs_fast_path
@FUZZ
@given(
    st.lists(
        st.tuples(
            st.one_of(hex_id(32), ID_TEXT),
            st.one_of(st.none(), st.text(max_size=8), st.integers(0, 9)),
            native_spans(),
            st.booleans(),
        ),
        max_size=3,
    )
)
def test_native_traces_bodies(traces: list[tuple[Any, Any, list[Any], bool]]) -> None:
    document: list[dict[str, Any]] = []
    for trace_id, session_id, spans, own_ids in traces:
        for span in spans:
            if type(span) is dict and not own_ids:
                span.pop("traceId", None)
        trace: dict[str, Any] = {"traceId": trace_id, "spans": spans}
        if session_id is not None:
            trace["sessionId"] = session_id
        document.append(trace)
    _same(proto_json.convert_traces, orjson.dumps({"traces": document}))


TRACE = "AB" * 16


@needs_fast_path
@pytest.mark.parametrize(
    ("traces", "from_bytes"),
    [
        ([{"traceId": TRACE, "spans": [valid_span(traceId=None)]}], True),
        (
            [{"traceId": TRACE, "sessionId": "s-1", "spans": [valid_span(traceId=TRACE.lower())]}],
            True,
        ),
        ([{"traceId": TRACE, "sessionId": "", "spans": [valid_span(traceId=None)]}], True),
        ([{"traceId": TRACE, "sessionId": None, "spans": [valid_span(traceId=None)]}], True),
        (
            [
                {
                    "traceId": TRACE,
                    "sessionId": "trace's",
                    "spans": [valid_span(traceId=None, attributes={"session.id": "own", "n": 1})],
                }
            ],
            True,
        ),
        (
            [
                {"traceId": TRACE, "spans": []},
                {"traceId": "cd" * 16, "spans": [valid_span(traceId=None)]},
            ],
            True,
        ),
        ([{"traceId": TRACE, "spans": [valid_span()]}], False),  # another trace's span
        ([{"traceId": TRACE, "spans": [valid_span(traceId=None)], "x": 1}], False),
        ([{"traceId": TRACE, "sessionId": 7, "spans": [valid_span(traceId=None)]}], False),
        ([{"traceId": "0" * 32, "spans": [valid_span(traceId=None)]}], False),
        ([{"spans": [valid_span()]}], False),
    ],
)
def test_native_traces_from_their_bytes(traces: list[dict[str, Any]], from_bytes: bool) -> None:
    """A traces body whose spans are all valid is converted from its bytes, each span
    given its trace's id and session (its own session.id wins); anything else (a span
    of another trace, an unknown member, a bad id or session) takes the general path.
    Both paths answer alike."""
    body = orjson.dumps({"traces": traces})
    assert (fastpath.traces_body(body, Limits()) is not None) == from_bytes
    _same(proto_json.convert_traces, body)


UNSIGNED = st.one_of(
    st.integers(min_value=-1, max_value=2**64 - 1),
    st.integers(min_value=0, max_value=2**63).map(str),
    st.sampled_from(["", "-0", "-1", "007", "1e3", "12a", " 1", "18446744073709551616"]),
    st.floats(allow_nan=False, allow_infinity=False),
    st.none(),
    st.booleans(),
)
ANY_VALUE = st.recursive(
    st.fixed_dictionaries(
        {},
        optional={
            "stringValue": st.one_of(
                st.text(max_size=10), st.integers(-(2**63), 2**63 - 1), st.none()
            ),
            "boolValue": st.one_of(st.booleans(), st.integers(0, 1)),
            "intValue": st.one_of(
                st.integers(min_value=-(2**63), max_value=2**64 - 1),
                st.integers(min_value=-(2**63), max_value=2**63).map(str),
                st.sampled_from(["-", "--1", "+1", "1.0", "0x10", "-0", "0009"]),
                st.floats(allow_nan=False),
            ),
            "doubleValue": st.one_of(
                st.floats(allow_nan=False, allow_infinity=False),
                st.integers(min_value=-(2**63), max_value=2**64 - 1),
                st.sampled_from(["NaN", "Infinity", "-Infinity", "1.5", "x"]),
            ),
            "bytesValue": st.sampled_from(["aGVsbG8=", "aGVsbG8", "***"]),
            "unknown": st.integers(-(2**63), 2**63 - 1),
        },
    ),
    lambda inner: st.one_of(
        st.fixed_dictionaries(
            {"arrayValue": st.one_of(st.fixed_dictionaries({"values": st.lists(inner)}), st.none())}
        ),
        st.fixed_dictionaries(
            {
                "kvlistValue": st.fixed_dictionaries(
                    {},
                    optional={
                        "values": st.lists(
                            st.builds(
                                lambda k, v: {"key": k, "value": v}, st.text(max_size=5), inner
                            ),
                            max_size=3,
                        )
                    },
                )
            }
        ),
    ),
    max_leaves=8,
)
OTLP_ATTRIBUTES = st.one_of(
    st.lists(
        st.fixed_dictionaries(
            {"key": st.one_of(st.text(max_size=8), st.just(None))},
            optional={"value": st.one_of(ANY_VALUE, st.none())},
        ),
        max_size=4,
    ),
    st.none(),
    JUNK,
)


VALID_UNSIGNED = st.one_of(st.integers(0, 2**32 - 1), st.integers(0, 2**32 - 1).map(str))
VALID_TIME = st.one_of(st.integers(1, 2**63 - 1), st.integers(1, 2**63 - 1).map(str))
VALID_ANY_VALUE = st.recursive(
    st.one_of(
        st.builds(lambda v: {"stringValue": v}, st.text(max_size=10)),
        st.builds(lambda v: {"boolValue": v}, st.booleans()),
        st.builds(lambda v: {"intValue": v}, st.integers(-(2**63), 2**63 - 1)),
        st.builds(lambda v: {"intValue": str(v)}, st.integers(-(2**59), 2**59)),
        st.builds(lambda v: {"doubleValue": v}, st.floats(allow_nan=False, allow_infinity=False)),
        st.builds(lambda v: {"doubleValue": v}, st.integers(-(2**63), 2**63 - 1)),
        st.just({}),
        st.just({"stringValue": None, "intValue": "5"}),
    ),
    lambda inner: st.one_of(
        st.builds(lambda v: {"arrayValue": {"values": v}}, st.lists(inner, max_size=3)),
        st.builds(
            lambda v: {"kvlistValue": {"values": v}},
            st.lists(st.builds(lambda k, v: {"key": k, "value": v}, st.text(max_size=5), inner)),
        ),
        st.just({"arrayValue": {}}),
    ),
    max_leaves=8,
)
VALID_ATTRIBUTES = st.lists(
    st.builds(lambda k, v: {"key": k, "value": v}, st.text(max_size=8), VALID_ANY_VALUE),
    max_size=4,
)
VALID_MEMBERS: dict[str, st.SearchStrategy[Any]] = {
    "attributes": VALID_ATTRIBUTES,
    "events": st.lists(
        st.fixed_dictionaries(
            {},
            optional={
                "name": st.text(max_size=5),
                "timeUnixNano": VALID_TIME,
                "attributes": VALID_ATTRIBUTES,
                "droppedAttributesCount": VALID_UNSIGNED,
            },
        ),
        max_size=2,
    ),
    "links": st.lists(
        st.fixed_dictionaries(
            {"traceId": hex_id(32), "spanId": hex_id(16)},
            optional={
                "traceState": st.text(max_size=5),
                "attributes": VALID_ATTRIBUTES,
                "flags": VALID_UNSIGNED,
            },
        ),
        max_size=2,
    ),
    "kind": st.one_of(st.integers(0, 5), st.sampled_from(["SPAN_KIND_SERVER", None])),
    "status": st.fixed_dictionaries(
        {},
        optional={
            "code": st.one_of(st.integers(0, 2), st.just("STATUS_CODE_ERROR")),
            "message": st.text(max_size=5),
        },
    ),
    "flags": VALID_UNSIGNED,
    "traceState": st.text(max_size=5),
    "startTimeUnixNano": VALID_TIME,
    "endTimeUnixNano": VALID_TIME,
    "droppedAttributesCount": VALID_UNSIGNED,
    "droppedEventsCount": VALID_UNSIGNED,
    "droppedLinksCount": VALID_UNSIGNED,
    "parentSpanId": st.one_of(hex_id(16), st.sampled_from(["", "0" * 16, None])),
    "unknownMember": JSON_VALUES,
}


@st.composite
def otlp_span(draw: st.DrawFn, broken: bool = True) -> Any:
    """An OTLP/JSON span: a native one's canonical form, then members varied (and broken)."""
    native = draw(native_span())
    native.pop("attributes", None)
    native.pop("events", None)
    with _pure():
        canonical = proto_json.convert_spans(orjson.dumps({"spans": [native]}))
    span: dict[str, Any] = canonical.request["resourceSpans"][0]["scopeSpans"][0]["spans"][0]
    optional: dict[str, st.SearchStrategy[Any]] = (
        VALID_MEMBERS
        if not broken
        else {
            "attributes": OTLP_ATTRIBUTES,
            "events": st.lists(
                st.fixed_dictionaries(
                    {},
                    optional={
                        "name": st.one_of(
                            st.text(max_size=5), st.none(), st.integers(-(2**63), 2**63 - 1)
                        ),
                        "timeUnixNano": UNSIGNED,
                        "attributes": OTLP_ATTRIBUTES,
                        "droppedAttributesCount": UNSIGNED,
                    },
                ),
                max_size=2,
            ),
            "links": st.lists(
                st.fixed_dictionaries(
                    {"traceId": st.one_of(hex_id(32), ID_TEXT), "spanId": hex_id(16)},
                    optional={
                        "traceState": st.one_of(
                            st.text(max_size=5), st.integers(-(2**63), 2**63 - 1)
                        ),
                        "attributes": OTLP_ATTRIBUTES,
                        "flags": UNSIGNED,
                    },
                ),
                max_size=2,
            ),
            "kind": st.one_of(st.integers(-1, 7), st.sampled_from(["SPAN_KIND_SERVER", "server"])),
            "status": st.one_of(
                st.none(),
                st.fixed_dictionaries(
                    {},
                    optional={
                        "code": st.one_of(st.integers(-1, 3), st.just("STATUS_CODE_ERROR")),
                        "message": st.one_of(st.text(max_size=5), st.integers(-(2**63), 2**63 - 1)),
                    },
                ),
                st.integers(-(2**63), 2**63 - 1),
            ),
            "flags": UNSIGNED,
            "traceState": st.one_of(
                st.text(max_size=5), st.none(), st.integers(-(2**63), 2**63 - 1)
            ),
            "startTimeUnixNano": UNSIGNED,
            "endTimeUnixNano": UNSIGNED,
            "droppedAttributesCount": UNSIGNED,
            "droppedEventsCount": UNSIGNED,
            "droppedLinksCount": UNSIGNED,
            "traceId": st.one_of(hex_id(32), ID_TEXT),
            "parentSpanId": st.one_of(hex_id(16), ID_TEXT, st.none()),
            "unknownMember": JUNK,
        }
    )
    for member, strategy in optional.items():
        if draw(st.integers(0, 3 if broken else 1)) == 0:
            span[member] = draw(strategy)
    return span if not broken or draw(st.integers(0, 19)) else draw(JUNK)


@needs_fast_path
@FUZZ
@given(
    st.booleans().flatmap(
        lambda broken: st.lists(
            st.lists(st.lists(otlp_span(broken), max_size=3), max_size=2), max_size=2
        )
    )
)
def test_otlp_bodies(resources: list[list[list[Any]]]) -> None:
    document = {
        "resourceSpans": [
            {
                "resource": {
                    "attributes": [{"key": "service.name", "value": {"stringValue": "a"}}]
                },
                "scopeSpans": [
                    {"scope": {"name": f"scope{j}"}, "spans": spans, "schemaUrl": "s"}
                    for j, spans in enumerate(scopes)
                ],
            }
            for scopes in resources
        ]
    }
    _same(proto_json.convert_otlp, orjson.dumps(document))


@needs_fast_path
@FUZZ
@given(st.lists(otlp_span(broken=False), max_size=4))
def test_valid_otlp_spans_take_the_fast_path(spans: list[Any]) -> None:
    body = orjson.dumps({"resourceSpans": [{"scopeSpans": [{"spans": spans}]}]})
    fast = _same(proto_json.convert_otlp, body)
    assert fast is not None
    assert isinstance(fast.canonical, bytes)
    assert fastpath.otlp_body(body, Limits()) is not None, "straight from the bytes"


@needs_fast_path
@FUZZ
@given(
    st.lists(otlp_span(), max_size=3),
    st.sampled_from([{}, {"indent": 1}, {"ensure_ascii": False}, {"separators": (",", ":")}]),
)
def test_otlp_bodies_written_otherwise(spans: list[Any], options: dict[str, Any]) -> None:
    """OTLP bodies as other JSON writers write them (escaped non-ASCII, whitespace)."""
    document = {"resourceSpans": [{"resource": None, "scopeSpans": [None, {"spans": spans}]}]}
    _same(proto_json.convert_otlp, json.dumps(document, **options).encode())


# -- chosen cases ---------------------------------------------------------------------

SPAN = {
    "traceId": "4bf92f3577b34da6a3ce929d0e0e4736",
    "spanId": "00f067aa0ba902b7",
    "name": "step",
    "startTime": "2026-11-22T10:00:00.123456789Z",
}


@needs_fast_path
@pytest.mark.parametrize(
    "value",
    [
        "plain",
        'quote " backslash \\ slash /',
        "controls \x00\x01\x08\t\n\r\x1f\x7f",
        "unicode é 漢字 😀",
        "\u2028\u2029",
        "",
        1e16,
        1e-7,
        -0.0,
        5e-324,
        1.7976931348623157e308,
        0.1,
        2**63 - 1,
        -(2**63),
        2**63,
        True,
        None,
        [],
        {},
        [1, "a", [2.5, {"k": None}]],
        {"nested": {"deeper": [True, False]}},
    ],
)
def test_attribute_values(value: Any) -> None:
    span = {**SPAN, "attributes": {"v": value, "after": "x"}}
    fast = _same(proto_json.convert_spans, orjson.dumps({"spans": [span]}))
    assert fast is not None
    assert isinstance(fast.canonical, bytes) == (value != 2**63)


@needs_fast_path
@pytest.mark.parametrize(
    "special",
    [b'\\"', b"\\\\", b"\\n", b"\\u001f", b"\\u0041", b"\\/", b"\xc3\xa9",
     b"\xf0\x9f\x98\x80", b"\x1f", b"\x7f", b"\xff", b"\xc3", b"\xed\xa0\x80"],
)  # fmt: skip
def test_string_bytes_at_every_offset(special: bytes) -> None:
    """The scanner passes over strings 8 bytes at a time: an escape, a control, a
    non-ASCII or an invalid byte at every offset of that window, across its edge and at
    the body's very end (the last member) is read as the reference reads it, and
    strings as orjson writes them stay on the byte path."""
    span = {k: v for k, v in SPAN.items() if k != "name"} | {"name": "@@"}
    template = orjson.dumps({"spans": [span]})
    try:
        as_orjson_writes = orjson.dumps(orjson.loads(b'"%s"' % special)) == b'"%s"' % special
    except orjson.JSONDecodeError:  # a raw control or broken UTF-8: not JSON
        as_orjson_writes = False
    for before in range(17):
        for after in range(10):
            name = b"n" * before + special + b"a" * after
            body = template.replace(b'"@@"', b'"' + name + b'"')
            _same(proto_json.convert_spans, body)
            assert (BUILT.native_body(body, 1000, 1000) is not None) == as_orjson_writes


#: Number texts about where doubles overflow (orjson refuses those that do).
FLOATS_NEAR_THE_LARGEST_DOUBLE = [
    b"1e300", b"9.99e300", b"1e301", b"123.5e306", b"1.7976931348623157e308", b"1.8e308",
    b"0.5e309", b"-1e309", b"1e400", b"1e-400", b"1e0000001", b"1E+0000400", b"1e-0000400",
]  # fmt: skip


@needs_fast_path
@pytest.mark.parametrize("number", FLOATS_NEAR_THE_LARGEST_DOUBLE)
def test_floats_near_the_largest_double(number: bytes) -> None:
    """The scanner sees at once that most floats are finite, and reads the others as
    orjson does: a body with a float that overflows leaves the byte path."""
    try:
        finite = orjson.loads(number) is not None
    except orjson.JSONDecodeError:
        finite = False
    for attributes in (b'{"v":@@}', b'{"v":[1,@@]}'):
        span = {**SPAN, "attributes": {"@": "@"}}
        body = orjson.dumps({"spans": [span]}).replace(b'{"@":"@"}', attributes)
        body = body.replace(b"@@", number)
        _same(proto_json.convert_spans, body)
        assert (BUILT.native_body(body, 1000, 1000) is not None) == finite


def _nested(levels: int, otlp: bool = False) -> Any:
    """A value of `levels` arrays and maps, one inside the other (OTLP/JSON's AnyValues
    when `otlp`), a number at the bottom."""
    value: Any = {"intValue": "7"} if otlp else 7
    for level in range(levels):
        if otlp:
            kind = "arrayValue" if level % 2 else "kvlistValue"
            inner = [{"key": "k", "value": value}] if kind == "kvlistValue" else [value]
            value = {kind: {"values": inner}}
        else:
            value = [value] if level % 2 else {"k": value}
    return value


def _deep_bodies(levels: int) -> list[tuple[Callable[[bytes], Conversion], Any, bytes]]:
    """A native and an OTLP/JSON body of a span with a value `levels` deep (`_nested`)
    in an attribute and in an event's (and in the OTLP resource's); each with its
    converter and the byte path that converts it."""
    native = _nested(levels)
    span = {
        **SPAN,
        "attributes": {"v": native},
        "events": [{"name": "e", "attributes": {"v": native}}],
    }
    pairs = [{"key": "v", "value": _nested(levels, otlp=True)}]
    otlp_span = {
        "traceId": "ab" * 16,
        "spanId": "cd" * 8,
        "name": "n",
        "startTimeUnixNano": "1",
        "endTimeUnixNano": "2",
        "attributes": pairs,
        "events": [{"name": "e", "timeUnixNano": "1", "attributes": pairs}],
    }
    otlp = {"resourceSpans": [{"resource": {"attributes": pairs},
                               "scopeSpans": [{"spans": [otlp_span]}]}]}  # fmt: skip
    return [
        (proto_json.convert_spans, fastpath.native_body, orjson.dumps({"spans": [span]})),
        (proto_json.convert_otlp, fastpath.otlp_body, orjson.dumps(otlp)),
    ]


@needs_fast_path
def test_values_as_deep_as_taken_take_the_fast_path() -> None:
    """A value of MAX_DEPTH arrays and maps, the most a span may have, in an attribute
    and in an event's, is converted from the bytes (the general path holds a dict a
    value: 1 MB of arrays nested 18 deep took it 3.2 s and 226 MB); one deeper is
    refused, by the general path (the span; the OTLP body whole, for its resource)."""
    for convert, read, body in _deep_bodies(MAX_DEPTH):
        fast = _same(convert, body)
        assert fast is not None and fast.accepted == 1 and not fast.errors
        assert read(body, Limits()) is not None, "straight from the bytes"
    too_deep = f"nested deeper than {MAX_DEPTH} levels"
    (convert_native, read_native, native), (_, read_otlp, otlp) = _deep_bodies(MAX_DEPTH + 1)
    assert read_native(native, Limits()) is None and read_otlp(otlp, Limits()) is None
    refused = _same(convert_native, native)
    assert refused is not None and refused.accepted == 0
    assert refused.errors[0].reason.endswith(too_deep)
    with pytest.raises(EnvelopeError, match=too_deep):
        proto_json.convert_otlp(otlp)


@needs_fast_path
def test_deep_nesting_takes_the_general_path() -> None:
    value: Any = "leaf"
    for _ in range(40):
        value = {"k": [value]}
    fast = _same(
        proto_json.convert_spans, orjson.dumps({"spans": [{**SPAN, "attributes": {"v": value}}]})
    )
    assert fast is not None
    assert fast.errors and fast.errors[0].reason.startswith("INVALID_ATTRIBUTES")


_EXAMPLES = {
    "spans.json": proto_json.convert_spans,
    "batch.ndjson": proto_json.convert_ndjson,
    "traces.json": proto_json.convert_traces,
    "otlp_agent.json": proto_json.convert_otlp,
    "otlp_trace_example.json": proto_json.convert_otlp,
}


@needs_fast_path
@pytest.mark.parametrize("name", sorted(_EXAMPLES))
def test_examples(name: str) -> None:
    body = (Path(__file__).parents[2] / "examples" / name).read_bytes()
    fast = _same(_EXAMPLES[name], body)
    assert fast is not None
    assert isinstance(fast.canonical, bytes), "the examples are valid: the fast path takes them"


def test_an_extension_that_refuses_to_load_is_off_and_says_why(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """An extension whose import raises ImportError (as storage/_sqlite_bulk.c does on a
    CPython it was not tested on) is off, and REFUSED keeps its reason; one that was not
    built is off without a reason."""
    (tmp_path / "refusing_extension.py").write_text('raise ImportError("tested on 3.11 only")\n')
    monkeypatch.syspath_prepend(str(tmp_path))
    monkeypatch.setattr(fastpath, "REFUSED", {})
    monkeypatch.delenv("SPANGATE_PURE_PYTHON", raising=False)
    assert fastpath.extension("refusing_extension") is None
    assert fastpath.extension("no_such_extension_here") is None
    assert fastpath.REFUSED == {"refusing_extension": "tested on 3.11 only"}


@pytest.mark.parametrize(
    ("value", "off"),
    [
        ("", set()),
        ("0", set()),
        ("1", {"proto_json._fastpath", "storage._rows", "storage._sqlite_bulk"}),
        ("storage._rows", {"storage._rows"}),
        ("storage._rows,storage._sqlite_bulk", {"storage._rows", "storage._sqlite_bulk"}),
    ],
)
def test_pure_python_turns_off_all_extensions_or_those_it_names(
    monkeypatch: pytest.MonkeyPatch, value: str, off: set[str]
) -> None:
    monkeypatch.setenv("SPANGATE_PURE_PYTHON", value)
    names = {"proto_json._fastpath", "storage._rows", "storage._sqlite_bulk"}
    assert {name for name in names if fastpath.turned_off(name)} == off


def test_pure_python_names_every_extension_and_part() -> None:
    """SPANGATE_PURE_PYTHON accepts exactly the extensions setup.py builds and the
    parts the code asks `turned_off` about."""
    root = Path(__file__).resolve().parents[2]
    built = set(re.findall(r'Extension\(\s*"([\w.]+)"', (root / "setup.py").read_text()))
    asked = {
        name
        for path in root.glob("[a-z]*/*.py")
        for name in re.findall(r'(?:extension|turned_off)\("([\w.]+)"\)', path.read_text())
    }
    assert set(fastpath.PARTS) == built | asked
