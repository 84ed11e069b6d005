"""The native body formats: /v1/spans JSON, /v1/spans/batch NDJSON and /v1/traces JSON."""

from __future__ import annotations

from typing import Any

import orjson

from proto_json import fastpath, ids
from proto_json.canonical import load_object, request_of
from proto_json.errors import EnvelopeError, SpanRejected
from proto_json.native_span import Ignored, RequestScope, attribute_pairs, convert_span
from proto_json.result import DEFAULT_LIMITS, Conversion, Limits, SpanError, TraceErrors, refused

_TRACE_FIELDS = frozenset(("traceId", "spans", "sessionId"))


class _OverAttributes(Exception):
    """The request's attribute pairs went over the cap; conversion stops."""


class _Batch:
    """Accumulates the outcome of one request while its spans are converted in order."""

    __slots__ = ("accepted", "errors", "limits", "pairs", "scope", "seen")

    def __init__(self, limits: Limits) -> None:
        self.limits = limits
        self.accepted: list[dict[str, Any]] = []
        self.errors: list[SpanError] = []
        self.scope = RequestScope()
        self.pairs = 0
        self.seen = 0

    def reject(self, index: int, reason: str) -> SpanError:
        self.seen += 1
        error = SpanError(index, reason)
        self.errors.append(error)
        return error

    def add(
        self,
        index: int,
        raw: object,
        at: str,
        trace_id: str | None = None,
        session_id: str | None = None,
    ) -> SpanError | None:
        """Convert one span; the SpanError when it is rejected, None when accepted."""
        self.pairs += attribute_pairs(raw)
        if self.pairs > self.limits.max_attributes:
            raise _OverAttributes
        try:
            span = convert_span(raw, self.scope, at, trace_id, session_id)
        except SpanRejected as e:
            return self.reject(index, e.reason)
        self.seen += 1
        self.accepted.append(span)
        return None

    def result(self, span_count: int, **extra: Any) -> Conversion:
        return Conversion(
            canonical=request_of(self.accepted),
            accepted=len(self.accepted),
            errors=tuple(self.errors),
            ignored=tuple(self.scope.ignored),
            span_count=span_count,
            attribute_count=self.pairs,
            **extra,
        )


def _note_top_level(document: dict[str, Any], known: str, ignored: Ignored) -> None:
    for key in document:
        if key != known:
            ignored[key] = None


def convert_spans(data: bytes, limits: Limits = DEFAULT_LIMITS) -> Conversion:
    """Convert a /v1/spans body: `{"spans": [Span, ...]}`."""
    converted = fastpath.native_body(data, limits)  # from the bytes, when it can
    if converted is not None:
        return converted
    document = load_object(data)
    spans = document.get("spans")
    if type(spans) is not list:
        raise EnvelopeError("VALIDATION_ERROR", "body must be an object with a `spans` array")
    if len(spans) > limits.max_spans:
        return refused("TOO_MANY_SPANS", len(spans), 0)
    if len(document) == 1:
        fast = fastpath.native_spans(spans, limits)
        if fast is not None:
            return fastpath.all_accepted(fastpath.native_request(fast[0]), len(spans), fast[1])
    batch = _Batch(limits)
    _note_top_level(document, "spans", batch.scope.ignored)
    try:
        for index, raw in enumerate(spans):
            batch.add(index, raw, "spans[].")
    except _OverAttributes:
        return refused("TOO_MANY_ATTRIBUTES", len(spans), batch.pairs)
    return batch.result(len(spans))


def convert_ndjson(data: bytes, limits: Limits = DEFAULT_LIMITS) -> Conversion:
    """Convert a /v1/spans/batch body: one Span per line, blank lines skipped.

    A line that does not parse is one rejected entry. Error indexes count the non-blank
    lines from 0; a reason about a line names its 1-based line number. Field paths in
    `ignored` read `spans[].x`, as for /v1/spans, whose response this route shares.
    """
    converted = fastpath.ndjson_body(data, limits)  # from the bytes, when it can
    if converted is not None:
        return converted
    lines = [(n, line) for n, line in enumerate(data.split(b"\n"), 1) if line.strip()]
    if len(lines) > limits.max_spans:
        return refused("TOO_MANY_SPANS", len(lines), 0)
    parsed = [(number, _parse_line(line)) for number, line in lines]
    if all(raw is not _NOT_JSON for _, raw in parsed):
        fast = fastpath.native_spans([raw for _, raw in parsed], limits)
        if fast is not None:
            return fastpath.all_accepted(fastpath.native_request(fast[0]), len(lines), fast[1])
    batch = _Batch(limits)
    try:
        for index, (number, raw) in enumerate(parsed):
            if raw is _NOT_JSON:
                batch.reject(index, f"SERIALIZATION_ERROR: line {number} is not valid JSON")
            else:
                batch.add(index, raw, "spans[].")
    except _OverAttributes:
        return refused("TOO_MANY_ATTRIBUTES", len(lines), batch.pairs)
    return batch.result(len(lines))


_NOT_JSON = object()


def _parse_line(line: bytes) -> Any:
    try:
        return orjson.loads(line)
    except orjson.JSONDecodeError:
        return _NOT_JSON


def _check_traces(document: dict[str, Any]) -> list[dict[str, Any]]:
    traces = document.get("traces")
    if type(traces) is not list:
        raise EnvelopeError("VALIDATION_ERROR", "body must be an object with a `traces` array")
    for i, trace in enumerate(traces):
        if type(trace) is not dict or type(trace.get("spans")) is not list:
            raise EnvelopeError(
                "VALIDATION_ERROR", f"traces[{i}] must be an object with a `spans` array"
            )
    return traces


def _trace_header(trace: dict[str, Any]) -> tuple[str, str | None]:
    """The trace's lowercase id and session id; SpanRejected applies to all its spans."""
    trace_id = ids.trace_id(trace.get("traceId"))
    session_id = trace.get("sessionId")
    if session_id is not None and type(session_id) is not str:
        raise SpanRejected("INVALID_SESSION_ID", "sessionId must be a string")
    return trace_id, session_id


def _add_trace(batch: _Batch, trace: dict[str, Any]) -> TraceErrors | None:
    """Convert the spans of one trace; its errors (indexes within the trace), if any."""
    for key in trace:
        if key not in _TRACE_FIELDS:
            batch.scope.ignored["traces[]." + key] = None
    span_errors: list[SpanError] = []
    try:
        trace_id, session_id = _trace_header(trace)
    except SpanRejected as e:
        for index, raw in enumerate(trace["spans"]):
            batch.pairs += attribute_pairs(raw)
            batch.reject(batch.seen, e.reason)
            span_errors.append(SpanError(index, e.reason))
        if batch.pairs > batch.limits.max_attributes:
            raise _OverAttributes from None
        given = trace.get("traceId")
        return TraceErrors(given if type(given) is str else None, tuple(span_errors))
    for index, raw in enumerate(trace["spans"]):
        error = batch.add(batch.seen, raw, "traces[].spans[].", trace_id, session_id)
        if error is not None:
            span_errors.append(SpanError(index, error.reason))
    return TraceErrors(trace_id, tuple(span_errors)) if span_errors else None


def _fast_traces(
    traces: list[dict[str, Any]], span_count: int, limits: Limits
) -> Conversion | None:
    """The C fast path for a traces body; None when the general path must convert it."""
    if not fastpath.available():
        return None
    parts: list[bytes] = []
    pairs = 0
    for trace in traces:
        if not _TRACE_FIELDS.issuperset(trace):
            return None
        try:
            trace_id, session_id = _trace_header(trace)
        except SpanRejected:
            return None
        fast = fastpath.native_spans(trace["spans"], limits, trace_id, session_id, pairs)
        if fast is None:
            return None
        if fast[0]:
            parts.append(fast[0])
        pairs = fast[1]
    request = fastpath.native_request(b",".join(parts))
    return fastpath.all_accepted(request, span_count, pairs, traces_accepted=len(parts))


def convert_traces_document(
    document: dict[str, Any], limits: Limits = DEFAULT_LIMITS
) -> Conversion:
    """Convert a parsed native /v1/traces body: `{"traces": [{traceId, spans, sessionId?}]}`.

    A trace counts as accepted when at least one of its spans is. The flat `errors`
    index spans across the whole request; `trace_errors` index within each trace.
    """
    traces = _check_traces(document)
    span_count = sum(len(trace["spans"]) for trace in traces)
    if span_count > limits.max_spans:
        return refused("TOO_MANY_SPANS", span_count, 0)
    if len(document) == 1:
        fast = _fast_traces(traces, span_count, limits)
        if fast is not None:
            return fast
    batch = _Batch(limits)
    _note_top_level(document, "traces", batch.scope.ignored)
    per_trace: list[TraceErrors] = []
    traces_accepted = 0
    try:
        for trace in traces:
            before = len(batch.accepted)
            errors = _add_trace(batch, trace)
            traces_accepted += len(batch.accepted) > before
            if errors is not None:
                per_trace.append(errors)
    except _OverAttributes:
        return refused("TOO_MANY_ATTRIBUTES", span_count, batch.pairs)
    return batch.result(span_count, traces_accepted=traces_accepted, trace_errors=tuple(per_trace))


def convert_traces(data: bytes, limits: Limits = DEFAULT_LIMITS) -> Conversion:
    """Convert a native /v1/traces body from its bytes."""
    converted = fastpath.traces_body(data, limits)  # from the bytes, when it can
    if converted is not None:
        return converted
    return convert_traces_document(load_object(data), limits)
