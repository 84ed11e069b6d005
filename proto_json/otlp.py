"""OTLP/JSON request bodies (`resourceSpans`) for /v1/traces and /v1/otlp/v1/traces.

A malformed resource or scope makes the whole request a VALIDATION_ERROR, as it would
for a protobuf decoder; a malformed span rejects only that span (OTLP partial success).
Span error indexes count spans across the whole request in document order.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from proto_json import fastpath, otlp_span
from proto_json.canonical import load_object
from proto_json.errors import EnvelopeError, SpanRejected
from proto_json.result import DEFAULT_LIMITS, Conversion, Limits, SpanError, refused
from proto_json.values import otlp_key_values


def _array(raw: object, where: str) -> list[Any]:
    if raw is None:
        return []
    if type(raw) is not list:
        raise EnvelopeError("VALIDATION_ERROR", f"{where} must be an array")
    return raw


def _object(raw: object, where: str) -> dict[str, Any]:
    if raw is None:
        return {}
    if type(raw) is not dict:
        raise EnvelopeError("VALIDATION_ERROR", f"{where} must be an object")
    return raw


def _described(raw: dict[str, Any], where: str, strings: tuple[str, ...]) -> dict[str, Any]:
    """Canonical Resource or InstrumentationScope: its strings, attributes, dropped count."""
    out: dict[str, Any] = {}
    try:
        for field in strings:
            value = raw.get(field)
            if value is not None and type(value) is not str:
                raise SpanRejected("VALIDATION_ERROR", f"{field} must be a string")
            if value:
                out[field] = value
        attributes = otlp_key_values(raw.get("attributes"), "attributes")
        if attributes:
            out["attributes"] = attributes
        dropped = otlp_span.unsigned(
            raw.get("droppedAttributesCount"), "droppedAttributesCount", 2**32 - 1
        )
    except SpanRejected as e:
        raise EnvelopeError("VALIDATION_ERROR", f"{where}: {e.message}") from None
    if dropped:
        out["droppedAttributesCount"] = dropped
    return out


@dataclass(frozen=True, slots=True)
class _Scope:
    """A checked scopeSpans: its canonical members other than spans, and its raw spans."""

    head: dict[str, Any]
    spans: list[Any]


@dataclass(frozen=True, slots=True)
class _Resource:
    """A checked resourceSpans: its canonical members other than scopeSpans."""

    head: dict[str, Any]
    scopes: list[_Scope]


def _head(raw: dict[str, Any], at: str, member: str, strings: tuple[str, ...]) -> dict[str, Any]:
    """`{member: canonical resource or scope}` plus the schemaUrl, if any."""
    where = f"{at}.{member}"
    head: dict[str, Any] = {member: _described(_object(raw.get(member), where), where, strings)}
    schema_url = raw.get("schemaUrl")
    if schema_url is not None and type(schema_url) is not str:
        raise EnvelopeError("VALIDATION_ERROR", f"{at}.schemaUrl must be a string")
    if schema_url:
        head["schemaUrl"] = schema_url
    return head


def _structure(document: dict[str, Any]) -> list[_Resource]:
    """Check and canonicalise the envelope down to the span arrays."""
    out = []
    for i, raw_resource in enumerate(_array(document.get("resourceSpans"), "resourceSpans")):
        at = f"resourceSpans[{i}]"
        resource = _object(raw_resource, at)
        scopes = []
        for j, raw_scope in enumerate(_array(resource.get("scopeSpans"), f"{at}.scopeSpans")):
            scope_at = f"{at}.scopeSpans[{j}]"
            scope = _object(raw_scope, scope_at)
            spans = _array(scope.get("spans"), f"{scope_at}.spans")
            scopes.append(_Scope(_head(scope, scope_at, "scope", ("name", "version")), spans))
        out.append(_Resource(_head(resource, at, "resource", ()), scopes))
    return out


def convert_otlp_document(document: dict[str, Any], limits: Limits = DEFAULT_LIMITS) -> Conversion:
    """Convert a parsed OTLP/JSON ExportTraceServiceRequest; `{}` is a valid empty request."""
    resources = _structure(document)
    span_count = sum(len(scope.spans) for resource in resources for scope in resource.scopes)
    if span_count > limits.max_spans:
        return refused("TOO_MANY_SPANS", span_count, 0)
    errors: list[SpanError] = []
    out_resources: list[dict[str, Any]] = []
    pairs = accepted = index = 0
    for resource in resources:
        out_scopes: list[dict[str, Any]] = []
        for scope in resource.scopes:
            out_spans: list[dict[str, Any]] = []
            for raw in scope.spans:
                pairs += otlp_span.attribute_pairs(raw)
                if pairs > limits.max_attributes:
                    return refused("TOO_MANY_ATTRIBUTES", span_count, pairs)
                try:
                    out_spans.append(otlp_span.convert_span(raw))
                except SpanRejected as e:
                    errors.append(SpanError(index, e.reason))
                index += 1
            if out_spans:
                accepted += len(out_spans)
                out_scopes.append({**scope.head, "spans": out_spans})
        if out_scopes:
            out_resources.append({**resource.head, "scopeSpans": out_scopes})
    return Conversion(
        canonical={"resourceSpans": out_resources},
        accepted=accepted,
        errors=tuple(errors),
        # a body with spans elsewhere than resourceSpans (a native body sent here): its
        # members, which OTLP ignores, for the answer to name
        ignored=() if "resourceSpans" in document else tuple(map(str, document))[:10],
        span_count=span_count,
        attribute_count=pairs,
    )


def convert_otlp(data: bytes, limits: Limits = DEFAULT_LIMITS) -> Conversion:
    """Convert an OTLP/JSON body from its bytes."""
    converted = fastpath.otlp_body(data, limits)  # straight from the bytes, when it can
    if converted is not None:
        return converted
    return convert_otlp_document(load_object(data), limits)
