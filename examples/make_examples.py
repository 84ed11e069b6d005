"""Writes the example payloads of this folder (run from the repository root).

One small agent run, the same spans in every form the gateway takes:

    python examples/make_examples.py
"""

from __future__ import annotations

import gzip
from pathlib import Path
from typing import Any

import orjson

HERE = Path(__file__).parent
TRACE = "4bf92f3577b34da6a3ce929d0e0e4736"
SESSION = "session-7f3a"


def spans() -> list[dict[str, Any]]:
    """An agent plans, calls an LLM, uses a tool, and answers."""
    base = "2026-11-22T10:15:0"
    return [
        {
            "traceId": TRACE,
            "spanId": "00f067aa0ba902b7",
            "name": "support-agent",
            "kind": "agent",
            "startTime": f"{base}0.000000000Z",
            "endTime": f"{base}4.250000000Z",
            "status": "ok",
            "attributes": {"agent.name": "support", "user.tier": "pro"},
        },
        {
            "traceId": TRACE,
            "spanId": "53995c3f42cd8ad8",
            "parentSpanId": "00f067aa0ba902b7",
            "name": "plan",
            "kind": "llm_call",
            "startTime": f"{base}0.120000000Z",
            "endTime": f"{base}1.870314159Z",
            "status": "ok",
            "attributes": {
                "llm.model": "gpt-4o-mini",
                "llm.provider": "openai",
                "llm.tokens.prompt": 812,
                "llm.tokens.completion": 96,
                "llm.temperature": 0.2,
                "llm.stop": ["\n\n"],
            },
            "events": [{"name": "first_token", "attributes": {"latency_ms": 412}}],
        },
        {
            "traceId": TRACE,
            "spanId": "a2fb4a1d1a96d312",
            "parentSpanId": "00f067aa0ba902b7",
            "name": "search_orders",
            "kind": "tool_call",
            "startTime": f"{base}1.900000000Z",
            "endTime": f"{base}2.400000000Z",
            "status": "error",
            "attributes": {
                "tool.name": "search_orders",
                "tool.args": {"customer": "c-42"},
                "error.type": "timeout",
            },
            "events": [{"name": "retry", "attributes": {"attempt": 2}}],
        },
        {
            "traceId": TRACE,
            "spanId": "c8e25df7a4d9b1f0",
            "parentSpanId": "00f067aa0ba902b7",
            "name": "answer",
            "kind": "llm_call",
            "startTime": f"{base}2.500000000Z",
            "endTime": f"{base}4.200000000Z",
            "status": "ok",
            "attributes": {
                "llm.model": "gpt-4o-mini",
                "llm.tokens.prompt": 1024,
                "llm.tokens.completion": 210,
            },
        },
    ]


def otlp() -> dict[str, Any]:
    """The same run as an OpenTelemetry exporter sends it (OTLP/JSON)."""
    import sys

    sys.path.insert(0, str(HERE.parent))
    import proto_json

    request = proto_json.convert_spans(orjson.dumps({"spans": spans()})).request
    resource = request["resourceSpans"][0]
    resource["resource"] = {
        "attributes": [
            {"key": "service.name", "value": {"stringValue": "support-agent"}},
            {"key": "deployment.environment", "value": {"stringValue": "staging"}},
        ]
    }
    resource["scopeSpans"][0]["scope"] = {"name": "agent.sdk", "version": "0.6.0"}
    return request


def write(name: str, data: bytes, gzipped: bool = True) -> None:
    (HERE / name).write_bytes(data)
    if gzipped:
        (HERE / f"{name}.gz").write_bytes(gzip.compress(data, mtime=0))


def main() -> None:
    pretty = orjson.OPT_INDENT_2
    write("spans.json", orjson.dumps({"spans": spans()}, option=pretty) + b"\n")
    write("batch.ndjson", b"".join(orjson.dumps(s) + b"\n" for s in spans()))
    traces = {"traces": [{"traceId": TRACE, "sessionId": SESSION, "spans": spans()}]}
    write("traces.json", orjson.dumps(traces, option=pretty) + b"\n")
    write("otlp_agent.json", orjson.dumps(otlp(), option=pretty) + b"\n")
    score = {
        "trace_id": TRACE,
        "span_id": "c8e25df7a4d9b1f0",
        "name": "helpfulness",
        "score": 0.85,
        "comment": "resolved on first answer",
        "source": "eval",
    }
    write("score.json", orjson.dumps(score, option=pretty) + b"\n", gzipped=False)


if __name__ == "__main__":
    main()
