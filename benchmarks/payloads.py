"""Realistic span bodies for the benchmarks: agent and LLM spans as the SDKs send them."""

from __future__ import annotations

import random
from typing import Any

import orjson

_KINDS = ("agent", "llm_call", "tool_call", "retrieval", "internal", "client")


def native_span(rng: random.Random, trace_id: str, index: int) -> dict[str, Any]:
    """One native span with the attribute mix of an LLM call."""
    second = index % 60
    span: dict[str, Any] = {
        "traceId": trace_id,
        "spanId": f"{rng.getrandbits(64):016x}",
        "parentSpanId": f"{rng.getrandbits(64):016x}",
        "name": f"step-{index % 17}",
        "kind": _KINDS[index % len(_KINDS)],
        "startTime": f"2026-11-22T10:{index % 60:02d}:{second:02d}.123456789Z",
        "endTime": f"2026-11-22T10:{index % 60:02d}:{second:02d}.987654321Z",
        "status": "ok",
        "attributes": {
            "llm.model": "gpt-4o-mini",
            "llm.provider": "openai",
            "llm.tokens.prompt": rng.randint(10, 4000),
            "llm.tokens.completion": rng.randint(10, 1000),
            "llm.temperature": 0.2,
            "llm.streaming": False,
            "agent.name": "planner",
            "tool.args": ["query", "limit"],
        },
    }
    if index % 4 == 0:
        span["events"] = [{"name": "retry", "attributes": {"attempt": 1, "reason": "timeout"}}]
    return span


#: Spans of a trace, in all.
TRACE_SPANS = 20


def _vocabulary(size: int) -> tuple[list[str], list[float]]:
    """`size` made-up words, the shorter mostly first, and the cumulative weights of Zipf's law
    over them (the r-th most frequent word 1/r as frequent as the first): the words of
    natural text, whose distinct words in a message of a few hundred are about half of
    them (a vocabulary of a few dozen words made every message's distinct words the
    same few)."""
    rng = random.Random("vocabulary")
    syllables = [
        c + v + e for c in "bcdfghklmnprstvwz" for v in "aeiou" for e in ("", "", "n", "r", "st")
    ]
    found: set[str] = set()
    while len(found) < size:
        found.add("".join(rng.choice(syllables) for _ in range(rng.choice((1, 2, 2, 3, 3, 4)))))
    words = sorted(found, key=lambda word: (len(word) + rng.uniform(0, 8), word))
    weights, total = [], 0.0
    for rank in range(1, size + 1):
        total += 1 / rank
        weights.append(total)
    return words, weights


_VOCABULARY, _WEIGHTS = _vocabulary(5000)


def _words(rng: random.Random, count: int) -> str:
    return " ".join(rng.choices(_VOCABULARY, cum_weights=_WEIGHTS, k=count))


#: A system prompt of 1 KB, the same in every call.
_SYSTEM = _words(random.Random("system"), 200)


def genai_span(rng: random.Random, trace_id: str, index: int, prefix: str) -> dict[str, Any]:
    """One OTel GenAI chat call with messages of a few KB (a 1 KB system prompt, a 1 KB
    question, a 1 KB answer) and token counts; with `prefix` other than `gen_ai`, the very
    same attributes under names no LLM convention has (its twin without GenAI)."""
    span = native_span(rng, trace_id, index)
    span["kind"] = "client"
    messages = [
        {"role": "system", "parts": [{"type": "text", "content": _SYSTEM}]},
        {"role": "user", "parts": [{"type": "text", "content": _words(rng, 200)}]},
    ]
    answer = [{"role": "assistant", "parts": [{"type": "text", "content": _words(rng, 200)}],
               "finish_reason": "stop"}]  # fmt: skip
    span["attributes"] = {
        f"{prefix}.operation.name": "chat",
        f"{prefix}.provider.name": "openai",
        f"{prefix}.request.model": "gpt-4o-mini",
        f"{prefix}.response.model": "gpt-4o-mini-2024-07-18",
        f"{prefix}.usage.input_tokens": rng.randint(500, 4000),
        f"{prefix}.usage.output_tokens": rng.randint(10, 1000),
        f"{prefix}.usage.cache_read.input_tokens": rng.randint(0, 400),
        f"{prefix}.input.messages": orjson.dumps(messages).decode(),
        f"{prefix}.output.messages": orjson.dumps(answer).decode(),
        "server.address": "api.openai.com",
    }
    return span


def native_spans_body(
    count: int, seed: int = 1, across: int = 1, genai: str | None = None
) -> bytes:
    """A /v1/spans body with `count` spans over traces of TRACE_SPANS spans each, whose
    ids are random, as exporters make them (and so spread over the store's primary key).

    `across` (a divisor of TRACE_SPANS): each trace's spans come in that many bodies of
    consecutive seeds, as a long trace comes from an agent exporting while it runs;
    body `seed` then ends the traces begun `across - 1` bodies before it and holds a
    part of every trace begun since.

    `genai`: the spans are `genai_span`s with that attribute prefix (`gen_ai`, or another
    for their twins without GenAI attributes)."""
    rng = random.Random(seed)
    if across == 1:
        traces = [f"{rng.getrandbits(128):032x}" for _ in range((count + 19) // TRACE_SPANS)]
    else:
        traces = [
            f"{random.Random(f'{begun}/{k}').getrandbits(128):032x}"
            for k in range(count // TRACE_SPANS)
            for begun in range(seed - across + 1, seed + 1)
        ]
    in_body = TRACE_SPANS // across
    spans = [
        native_span(rng, traces[i // in_body], i)
        if genai is None
        else genai_span(rng, traces[i // in_body], i, genai)
        for i in range(count)
    ]
    return orjson.dumps({"spans": spans})


def ndjson_body(count: int, seed: int = 1) -> bytes:
    """A /v1/spans/batch body: the spans of `native_spans_body`, one a line."""
    spans = orjson.loads(native_spans_body(count, seed))["spans"]
    return b"\n".join(orjson.dumps(span) for span in spans) + b"\n"


def native_traces_body(count: int, seed: int = 1) -> bytes:
    """A native /v1/traces body: the spans of `native_spans_body` in their traces."""
    traces: dict[str, list[Any]] = {}
    for span in orjson.loads(native_spans_body(count, seed))["spans"]:
        traces.setdefault(span["traceId"], []).append(span)
    return orjson.dumps({"traces": [{"traceId": t, "spans": s} for t, s in traces.items()]})


#: The resource and scope an OpenTelemetry SDK exports with every request: service, SDK,
#: host, process and cloud attributes (15, about 1 KB of JSON), an instrumentation's scope.
SDK_RESOURCE: dict[str, Any] = {
    "attributes": [
        {"key": key, "value": {"intValue" if key == "process.pid" else "stringValue": value}}
        for key, value in (
            ("service.name", "agent-app"), ("service.version", "1.4.2"),
            ("deployment.environment.name", "production"), ("telemetry.sdk.language", "python"),
            ("telemetry.sdk.name", "opentelemetry"), ("telemetry.sdk.version", "1.38.0"),
            ("host.name", "ip-10-0-3-17.eu-west-1.compute.internal"), ("host.arch", "amd64"),
            ("os.type", "linux"), ("process.pid", "41722"), ("process.runtime.name", "cpython"),
            ("process.runtime.version", "3.12.7"),
            ("process.executable.path", "/usr/local/bin/python3.12"),
            ("cloud.provider", "aws"), ("cloud.region", "eu-west-1"),
        )
    ]
}  # fmt: skip
SDK_SCOPE = {"name": "opentelemetry.instrumentation.openai_v2", "version": "2.1b0"}


def under_sdk_resource(payload: bytes) -> bytes:
    """A canonical body with SDK_RESOURCE and SDK_SCOPE on its spans, as an exporter's."""
    request = orjson.loads(payload)
    for resource_spans in request["resourceSpans"]:
        resource_spans["resource"] = SDK_RESOURCE
        for scope_spans in resource_spans["scopeSpans"]:
            scope_spans["scope"] = SDK_SCOPE
    return orjson.dumps(request)


def otlp_body(count: int, seed: int = 1) -> bytes:
    """An OTLP/JSON body carrying the same spans as `native_spans_body`, as an exporter would."""
    import proto_json  # the canonical form is valid OTLP/JSON; exporters add a resource

    request = proto_json.convert_spans(native_spans_body(count, seed)).request
    resource = request["resourceSpans"][0]
    resource["resource"] = {
        "attributes": [{"key": "service.name", "value": {"stringValue": "agent-app"}}]
    }
    resource["scopeSpans"][0]["scope"] = {"name": "agent.sdk", "version": "0.6.0"}
    for span in resource["scopeSpans"][0]["spans"]:
        span["traceId"] = span["traceId"].upper()  # exporters may; the gateway lowercases
        span["startTimeUnixNano"] = int(span["startTimeUnixNano"])  # numbers are allowed too
    return orjson.dumps(request)
