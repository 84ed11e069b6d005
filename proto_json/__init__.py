"""Pure conversion of every accepted span body format to canonical OTLP/JSON.

No I/O here: bytes (or an already parsed document) in, a `Conversion` out. OTLP/JSON,
as plain dicts, is the one internal form: everything after this package sees only it.
"""

from proto_json.canonical import KIND_ATTRIBUTE, SESSION_ATTRIBUTE, load_object
from proto_json.content_hash import span_content_hash
from proto_json.detect import TracesFormat, traces_format
from proto_json.errors import EnvelopeError
from proto_json.native import convert_ndjson, convert_spans, convert_traces, convert_traces_document
from proto_json.native_span import AGENT_KINDS, OTEL_KINDS, SDK_KINDS
from proto_json.otlp import convert_otlp, convert_otlp_document
from proto_json.result import CanonicalRequest, Conversion, Limits, Refusal, SpanError, TraceErrors

__all__ = [
    "AGENT_KINDS",
    "KIND_ATTRIBUTE",
    "OTEL_KINDS",
    "SDK_KINDS",
    "SESSION_ATTRIBUTE",
    "CanonicalRequest",
    "Conversion",
    "EnvelopeError",
    "Limits",
    "Refusal",
    "SpanError",
    "TraceErrors",
    "TracesFormat",
    "convert_ndjson",
    "convert_otlp",
    "convert_otlp_document",
    "convert_spans",
    "convert_traces",
    "convert_traces_document",
    "load_object",
    "span_content_hash",
    "traces_format",
]
