"""What a conversion returns: canonical OTLP/JSON for the accepted spans plus the bookkeeping."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Literal

import orjson

Refusal = Literal["TOO_MANY_SPANS", "TOO_MANY_ATTRIBUTES"]

#: A canonical ExportTraceServiceRequest in its OTLP/JSON mapping (plain dicts and lists).
CanonicalRequest = dict[str, Any]

#: The service's documented limits (README, "Caps").
DEFAULT_MAX_SPANS = 10_000
DEFAULT_MAX_ATTRIBUTES = 24_000


@dataclass(frozen=True, slots=True)
class Limits:
    """Per-request caps; over either one the whole request is refused."""

    max_spans: int = DEFAULT_MAX_SPANS
    max_attributes: int = DEFAULT_MAX_ATTRIBUTES


@dataclass(frozen=True, slots=True)
class SpanError:
    """A rejected span: its position and a reason that starts with a code word."""

    index: int
    reason: str


@dataclass(frozen=True, slots=True)
class TraceErrors:
    """The rejected spans of one trace of a native /v1/traces body."""

    trace_id: str | None
    span_errors: tuple[SpanError, ...]


@dataclass(frozen=True, slots=True)
class Conversion:
    """The outcome of converting one request body.

    `canonical` holds only the accepted spans, as plain dicts or, from the C fast path, as
    their OTLP/JSON bytes; `request` and `payload` give either form. It is
    `{"resourceSpans": []}` when none were accepted or when the request was refused
    (`refusal` set: nothing is accepted then).
    `errors` is per span (position in its array, or among the non-blank NDJSON lines);
    for native traces bodies the same errors are also grouped per trace in `trace_errors`.
    `ignored` lists the distinct field paths that were dropped, in first-seen order.
    """

    canonical: CanonicalRequest | bytes
    accepted: int
    errors: tuple[SpanError, ...]
    ignored: tuple[str, ...]
    span_count: int
    attribute_count: int
    refusal: Refusal | None = None
    traces_accepted: int = 0
    trace_errors: tuple[TraceErrors, ...] = ()

    @property
    def request(self) -> CanonicalRequest:
        """The canonical request as plain dicts (parsed anew on each call from bytes)."""
        canonical = self.canonical
        if isinstance(canonical, bytes):
            parsed: CanonicalRequest = orjson.loads(canonical)
            return parsed
        return canonical

    @property
    def payload(self) -> bytes:
        """The canonical request as OTLP/JSON bytes: what the gateway queues."""
        canonical = self.canonical
        return canonical if isinstance(canonical, bytes) else orjson.dumps(canonical)

    @property
    def rejected(self) -> int:
        """Number of spans that were seen and not accepted."""
        return len(self.errors)


DEFAULT_LIMITS = Limits()


def refused(refusal: Refusal, span_count: int, attribute_count: int) -> Conversion:
    """A conversion that accepts nothing because the request is over a cap."""
    return Conversion(
        canonical={"resourceSpans": []},
        accepted=0,
        errors=(),
        ignored=(),
        span_count=span_count,
        attribute_count=attribute_count,
        refusal=refusal,
    )
