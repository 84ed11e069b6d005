"""A big trace for the waterfall's tools: a tree of `count` spans, ten children a span."""

from __future__ import annotations

from typing import Any

from tests.proto_json.spans import span

FANOUT = 10
NEEDLE = "haystack-needle"


def span_id(at: int) -> str:
    """The id of the span at `at` (0 is the root)."""
    return f"{at + 1:016x}"


def is_error(at: int) -> bool:
    """Every 97th span is an error (the root is not)."""
    return at > 0 and at % 97 == 0


def is_model_call(at: int) -> bool:
    """Every 5th span is a model call of 10 + 5 tokens, unless its parent is one: no
    call wraps another (genai/counting.py), each counts."""
    return at > 0 and at % 5 == 0 and not is_model_call((at - 1) // FANOUT)


def big_run(trace_id: str, count: int, needle_at: int) -> list[dict[str, Any]]:
    """`count` spans over 10 s, span i under span (i - 1) // FANOUT; the span at
    `needle_at` has an attribute that holds NEEDLE."""
    spans = []
    for at in range(count):
        start_ms = at * 10_000 // count
        fields: dict[str, Any] = {"attributes": {"n": at}}
        if is_model_call(at):
            fields = {"kind": "llm_call", "attributes": {
                "gen_ai.request.model": "gpt-4o", "gen_ai.usage.input_tokens": 10,
                "gen_ai.usage.output_tokens": 5}}  # fmt: skip
        if at == needle_at:
            fields["attributes"]["note"] = f"a {NEEDLE} here"
        spans.append(
            span(
                traceId=trace_id,
                spanId=span_id(at),
                parentSpanId=None if at == 0 else span_id((at - 1) // FANOUT),
                name="root" if at == 0 else f"task {at}",
                status="error" if is_error(at) else "ok",
                startTime=f"2026-11-22T10:00:{start_ms // 1000:02d}.{start_ms % 1000:03d}Z",
                endTime="2026-11-22T10:00:10Z" if at == 0 else
                f"2026-11-22T10:00:{start_ms // 1000:02d}.{start_ms % 1000:03d}5Z",
                **fields,
            )
        )  # fmt: skip
    return spans
