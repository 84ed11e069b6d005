"""The GenAI facts the C row builder fills (storage/_rows_genai.h) against those of
genai/view.py's reader (storage/span_genai.with_views): the very same rows."""

from __future__ import annotations

from typing import Any

import orjson
import pytest
from hypothesis import given
from hypothesis import strategies as st

import proto_json
from genai import conventions
from genai.prices import Pricer
from genai.view import reading_plan
from storage import attribute_hashes, span_genai, span_rows, trace_index
from storage.span_genai import MARKED_NAMES, MARKED_PREFIXES, rows_with_views, with_views
from storage.trace_facets import key_token, unpacked
from tests.fuzz import FUZZ

FAST = span_rows.FAST_ROWS
pytestmark = pytest.mark.skipif(FAST is None, reason="the C row builder is not built")

PLAN_KEYS = [key for key, _, _ in reading_plan()[1]]
NAMES = st.one_of(
    st.sampled_from(PLAN_KEYS),
    st.sampled_from(MARKED_PREFIXES).map(lambda prefix: prefix + "x"),
    st.sampled_from(MARKED_NAMES),
    st.sampled_from(["user.id", "session.id", "http.method", 'gen_ai."q', "llm.\n"]),
)
TEXTS = st.one_of(
    st.sampled_from(["", " ", "   ", "\u3000", " \xa0", "gpt-4o", " x ", "a\nb", 'q"', "LLM"]),
    st.sampled_from([*conventions.NATIVE_TYPES, "chat", "CHAT", "Agent", "TOOL", "embeddings"]),
    st.sampled_from(['{"model": "gpt-4o"}', '{"model": " "}', '{"model": 1}', "[]", "{"]),
    st.text(max_size=12),
    st.text(min_size=1020, max_size=1030, alphabet="ab\u00e9"),
    # past the texts whose hashes are kept, with every escape the body may hold
    st.text(min_size=250, max_size=300, alphabet='a"\\\n\t\x01\x1f\u00e9\u898b/'),
)
DIGITS = st.one_of(
    st.integers(min_value=0, max_value=10**20).map(str),
    st.sampled_from(["", "-3", "007", "1e3", " 5", "\u0661\u0662", "9" * 18, "9" * 19]),
)
SCALARS = st.one_of(
    TEXTS.map(lambda text: {"stringValue": text}),
    DIGITS.map(lambda digits: {"stringValue": digits}),
    st.sampled_from(["0", "-3", "007", "9" * 18]).map(lambda n: {"intValue": n}),
    st.integers(min_value=-(2**63), max_value=2**63 - 1).map(lambda n: {"intValue": str(n)}),
    st.floats(allow_nan=False, allow_infinity=False).map(lambda x: {"doubleValue": x}),
    st.booleans().map(lambda b: {"boolValue": b}),
    st.just({}),
)
VALUES = st.one_of(
    SCALARS,
    st.lists(SCALARS, max_size=2).map(lambda items: {"arrayValue": {"values": items}}),
    st.lists(st.tuples(NAMES, SCALARS), max_size=2).map(
        lambda pairs: {"kvlistValue": {"values": [{"key": k, "value": v} for k, v in pairs]}}
    ),
)
ATTRIBUTES = st.lists(st.tuples(NAMES, VALUES), max_size=8).map(
    lambda pairs: [{"key": key, "value": value} for key, value in pairs]
)
EVENTS = st.lists(
    st.sampled_from(["gen_ai.user.message", "gen_ai.choice", "exception", "gen_ai.x"]).map(
        lambda name: {"name": name, "timeUnixNano": "1"}
    ),
    max_size=2,
)


@st.composite
def otlp_span(draw: st.DrawFn) -> dict[str, Any]:
    attributes = draw(ATTRIBUTES)
    if draw(st.booleans()):  # a native kind, as the SDK sends it
        kind = draw(st.sampled_from([*conventions.NATIVE_TYPES, "plain"]))
        attributes.append({"key": "spangate.span.kind", "value": {"stringValue": kind}})
    return {
        "traceId": "1" * 32,
        "spanId": f"{draw(st.integers(min_value=1, max_value=2**64 - 1)):016x}",
        "name": draw(st.sampled_from(["p", "planner", "x" * 1100])),
        "kind": draw(st.integers(min_value=0, max_value=5)),
        "startTimeUnixNano": "5",
        "attributes": attributes,
        "events": draw(EVENTS),
    }


def _body(spans: list[dict[str, Any]], resource: list[dict[str, Any]] | None = None) -> bytes:
    request = {"resourceSpans": [{"scopeSpans": [{"spans": spans}]}]}
    if resource is not None:  # its attributes give its spans' traces tokens
        request["resourceSpans"][0]["resource"] = {"attributes": resource}
    conversion = proto_json.convert_otlp(orjson.dumps(request))
    assert conversion.accepted == len(spans), conversion.errors
    return conversion.payload


def same_rows(body: bytes) -> tuple[list[int], list[int]] | None:
    """Both readings of a body give the same rows, and the attribute index the same
    documents of them (the C builder's, and Python's from the rows); the
    positions of the rows the C builder left to be priced, and to Python (None: it
    declined the body, as it does bodies it does not build rows of, such as a name with
    an escape in a list it sorts)."""
    assert FAST is not None
    pricer = Pricer()
    reference = with_views(span_rows.rows_of(orjson.loads(body), "p", 7), pricer)
    rows, facets = rows_with_views(body, "p", 7, pricer)
    assert rows == reference
    if facets is not None:
        made = {(p, t): sorted(unpacked(k)) for p, t, k in facets}
        assert len(made) == len(facets)  # a trace's document once
        from_rows = trace_index.documents(rows)
        assert made == {(p, t): sorted(unpacked(k)) for p, t, k in from_rows}
    built = FAST.span_rows_json(body, "p", 7, span_rows.SpanRow, span_genai._PLAN)
    return None if built is None else (built[1], built[2])


@FUZZ
@given(st.lists(otlp_span(), min_size=1, max_size=4), st.one_of(st.none(), ATTRIBUTES))
def test_any_attributes_give_the_same_facts(
    spans: list[dict[str, Any]], resource: list[dict[str, Any]] | None
) -> None:
    """Whatever names and values a span's attributes hold (every name the reader
    looks at, marked ones, texts blank or not, counts in any form, repeated names,
    nested pairs, native kinds, message events), the rows are those of Python's view;
    and their resource's attributes the same tokens."""
    same_rows(_body(spans, resource))


def test_the_ordinary_are_read_in_c() -> None:
    """A span of each convention with ordinary values is read in C (none left to
    Python), and a model call with tokens is left to be priced."""
    spans = [
        {"gen_ai.operation.name": "chat", "gen_ai.request.model": "gpt-4o",
         "gen_ai.usage.input_tokens": 10, "gen_ai.usage.output_tokens": 2},
        {"openinference.span.kind": "LLM", "llm.model_name": "gpt-4o",
         "llm.token_count.prompt": 10, "input.value": "hi"},
        {"traceloop.span.kind": "tool", "traceloop.entity.name": "lookup"},
        {"ai.operationId": "ai.generateText.doGenerate", "ai.model.id": "gpt-4o",
         "ai.usage.promptTokens": 3},
        {"http.method": "GET", "user.id": "u1"},
    ]  # fmt: skip
    body = proto_json.convert_spans(
        orjson.dumps(
            {
                "spans": [
                    {
                        "traceId": "1" * 32,
                        "spanId": f"{n + 1:016x}",
                        "name": "call",
                        "startTime": "2026-11-22T10:00:00Z",
                        "attributes": attributes,
                    }
                    for n, attributes in enumerate(spans)
                ]
            }
        )  # fmt: skip
    ).payload
    assert same_rows(body) == ([0, 1, 3], [])


def test_a_count_of_a_trillion_or_more_is_none_in_c_as_in_python() -> None:
    """The C reader's bound on a count is the view's (genai/view.py's MAX_TOKENS)."""
    for count in (10**12 - 1, 10**12, 10**18 - 1):
        body = proto_json.convert_spans(
            orjson.dumps(
                {
                    "spans": [
                        {
                            "traceId": "1" * 32,
                            "spanId": "1" * 16,
                            "name": "call",
                            "startTime": "2026-11-22T10:00:00Z",
                            "attributes": {
                                "gen_ai.operation.name": "chat",
                                "gen_ai.request.model": "m",
                                "gen_ai.usage.input_tokens": count,
                            },
                        }
                    ]
                }
            )  # fmt: skip
        ).payload
        same_rows(body)
        [row], _ = rows_with_views(body, "p", 7, Pricer())
        assert row.input_tokens == (count if count < 10**12 else None), count


def test_a_plain_spans_conversation_id_is_its_session_in_c() -> None:
    """A span of no convention with `gen_ai.conversation.id` and no session is read in
    C, which gives it that session, as Python's reading does; a `session.id` wins."""
    body = _native_body([
        ("1" * 32, "handle", {"http.method": "GET", "gen_ai.conversation.id": "conv-1"}),
        ("1" * 32, "other", {"gen_ai.conversation.id": "conv-2", "session.id": "s-2"}),
    ])  # fmt: skip
    assert same_rows(body) == ([], [])
    rows, _ = rows_with_views(body, "p", 7, Pricer())
    assert [row.session_id for row in rows] == ["conv-1", "s-2"]


def _native_body(spans: list[tuple[str, str, dict[str, Any]]]) -> bytes:
    """The canonical body of native spans (trace id, name, attributes)."""
    return proto_json.convert_spans(
        orjson.dumps(
            {
                "spans": [
                    {
                        "traceId": trace,
                        "spanId": f"{n + 1:016x}",
                        "name": name,
                        "startTime": "2026-11-22T10:00:00Z",
                        "attributes": attributes,
                    }
                    for n, (trace, name, attributes) in enumerate(spans)
                ]
            }
        )  # fmt: skip
    ).payload


def test_each_traces_tokens_are_made_once_whatever_order_its_spans_come_in() -> None:
    """Traces whose spans come interleaved, with hundreds of distinct tokens (a trace's
    set grows), names with escapes, and a token of 0 (made with makers of the caller's):
    each trace's document holds each token of its spans once, in the order the traces
    were met, as Python makes them."""
    assert FAST is not None
    spans = [
        (f"{n % 3 + 1:032x}", f"step\t{n % 4}", {f"k{n % 7}": n, "same": "v", "k0": n % 5})
        for n in range(300)
    ]
    body = _native_body(spans)
    rows, facets = rows_with_views(body, "p", 7, Pricer())
    assert facets is not None and [t for _, t, _ in facets] == [f"{n:032x}" for n in (1, 2, 3)]
    from_rows = trace_index.documents(rows)
    assert {t: sorted(unpacked(k)) for _, t, k in facets} == {
        t: sorted(unpacked(k)) for _, t, k in from_rows
    }
    assert all(len(set(unpacked(k))) == len(k) // 8 > 100 for _, _, k in facets)
    # the C composes the makers' answers: a name's token, a key's, and it XOR the value's
    makers = (lambda text: 5, lambda project, key: 5 if key == "same" else len(key),
              lambda project, name: -1)  # fmt: skip
    built = FAST.span_rows_json(body, "p", 7, span_rows.SpanRow, span_genai._PLAN, makers)
    assert built is not None and built[3] is not None
    for _, tokens in built[3]:
        assert sorted(unpacked(tokens)) == sorted({-1, 5, 5 ^ 5, 2, 2 ^ 5})


def test_a_span_sent_twice_in_a_batch_is_indexed_by_its_last_send() -> None:
    """A batch of two bodies that send a span twice, with other attributes the second
    time: its trace's document is made anew of the last send (Python's), the other
    traces' are the builder's, as Python would make them all."""
    first = _native_body([("1" * 32, "a", {"k": "old"}), ("2" * 32, "b", {"k": "v"})])
    second = _native_body([("1" * 32, "a", {"k": "new"}), ("3" * 32, "c", {"k": "w"})])
    rows: list[Any] = []
    facets: list[Any] = []
    for body in (first, second):
        built, made = rows_with_views(body, "p", 7, Pricer())
        assert made is not None
        rows += built
        facets += made
    assert rows[0][:4] == rows[2][:4]  # the same span, sent twice
    given = trace_index.index_rows(rows, facets)
    alone = trace_index.index_rows(rows)
    assert {(p, t): set(unpacked(k)) for p, t, k in given.facets} == {
        (p, t): set(unpacked(k)) for p, t, k in alone.facets
    }
    old = key_token("p", "k") ^ attribute_hashes.value_hash("old")
    assert all(old not in unpacked(k) for _, _, k in given.facets)
    assert len(given.facets) == 3


def test_the_value_hashes_kept_are_those_of_the_makers_given() -> None:
    """The value hashes the C row builder keeps from call to call are forgotten when it
    is given another hash_text: the same body then gives that one's tokens."""
    assert FAST is not None
    body = _native_body([("1" * 32, "a", {"k": "v"})])
    for answer in (1, 2, 1):
        makers = (lambda text, a=answer: a, lambda project, key: 8, lambda project, name: 16)
        built = FAST.span_rows_json(body, "p", 7, span_rows.SpanRow, span_genai._PLAN, makers)
        assert built is not None and built[3] is not None
        assert sorted(unpacked(built[3][0][1])) == sorted({16, 8, 8 ^ answer})


def test_a_hash_kept_is_the_one_of_the_makers_it_was_made_by() -> None:
    """A value hash made while another call with another hash_text took the kept
    hashes over (another thread's; here one the maker makes) is not kept for that one."""
    assert FAST is not None
    body = _native_body([("1" * 32, "a", {"k": "v"})])
    plan, row = span_genai._PLAN, span_rows.SpanRow
    other = (lambda text: 2, lambda project, key: 8, lambda project, name: 16)
    calls = [1]

    def first(text: str) -> int:
        if calls:
            calls.pop()
            FAST.span_rows_json(body, "p", 7, row, plan, other)
        return 1

    built = FAST.span_rows_json(body, "p", 7, row, plan, (first, other[1], other[2]))
    assert built is not None and sorted(unpacked(built[3][0][1])) == [8, 8 ^ 1, 16]
    again = FAST.span_rows_json(body, "p", 7, row, plan, other)
    assert again is not None and sorted(unpacked(again[3][0][1])) == [8, 8 ^ 2, 16]


def test_makers_of_another_shape_are_refused() -> None:
    assert FAST is not None
    body = _native_body([("1" * 32, "a", {"k": "v"})])
    for makers in ([lambda t: 1, lambda p, k: 1, lambda p, n: 1], (lambda t: 1,), "abc"):
        with pytest.raises(TypeError):
            FAST.span_rows_json(body, "p", 7, span_rows.SpanRow, span_genai._PLAN, makers)


def test_a_token_maker_that_fails_fails_the_call() -> None:
    """A maker's exception, or an answer that is no int of 64 bits, is raised (never a
    document of wrong tokens)."""
    assert FAST is not None
    body = _native_body([("1" * 32, "a", {"k": "v"})])

    def fails(text: str) -> int:
        raise RuntimeError("no hash")

    for makers, error in (
        ((fails, lambda p, k: 1, lambda p, n: 1), RuntimeError),
        ((lambda t: "x", lambda p, k: 1, lambda p, n: 1), TypeError),
        ((lambda t: 1, lambda p, k: 2**64, lambda p, n: 1), OverflowError),
    ):
        with pytest.raises(error):
            FAST.span_rows_json(body, "p", 7, span_rows.SpanRow, span_genai._PLAN, makers)
