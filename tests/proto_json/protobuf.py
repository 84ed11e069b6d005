"""Read canonical OTLP/JSON with protobuf's own parser, the strictest check we have."""

from __future__ import annotations

import base64
import copy
from typing import Any

from google.protobuf.json_format import ParseDict
from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import ExportTraceServiceRequest

_ID_FIELDS = ("traceId", "spanId", "parentSpanId")


def _hex_ids_to_base64(item: dict[str, Any]) -> None:
    for field in _ID_FIELDS:
        if field in item:
            item[field] = base64.b64encode(bytes.fromhex(item[field])).decode()


def parse(request: dict[str, Any]) -> ExportTraceServiceRequest:
    """ParseDict with unknown fields refused, after the one rewrite the OTLP spec defines.

    OTLP/JSON writes trace and span ids as hex where protobuf's JSON mapping expects
    base64, so ids are converted first; everything else must parse as it is.
    """
    request = copy.deepcopy(request)
    for resource_spans in request.get("resourceSpans", []):
        for scope_spans in resource_spans.get("scopeSpans", []):
            for span in scope_spans.get("spans", []):
                _hex_ids_to_base64(span)
                for link in span.get("links", []):
                    _hex_ids_to_base64(link)
    return ParseDict(request, ExportTraceServiceRequest(), ignore_unknown_fields=False)
