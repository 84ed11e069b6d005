"""The GenAI JSON of the dashboard: a trace's `totals` and `genai`, a listed trace's
LLM fields, the agents' JSON (names as the dashboard's contract fixes them).

A span's `genai` object is its view (genai/) read again from its stored attributes
and events, for the messages and the sources; its cost is the one the worker gave it as
it stored it. A span with model calls below it (an agent, a chain, a model call that
wraps a provider call: genai/counting.py) shows their sums, never its own usage on top;
its own counts only when nothing below reports any.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from dashboard.topology import Topology, agent_stats
from genai import MODEL_TYPES, GenAIView, view_of
from genai.counting import reports, wrappers
from genai.prices import settled
from storage.spans import SpanOutline
from storage.trace_list import TraceSummary

_USAGE = ("inputTokens", "outputTokens", "cacheReadTokens", "cacheWriteTokens",
          "reasoningTokens", "costUsd")  # fmt: skip
BELOW = "spans below"


def summary_genai_json(trace: TraceSummary) -> dict[str, Any]:
    """The LLM fields of a listed trace."""
    tokens_in, tokens_out, total, cost = trace.usage
    return {
        "inputTokens": tokens_in,
        "outputTokens": tokens_out,
        "totalTokens": total,
        "costUsd": settled(cost),
        "models": trace.models,
        "llmCalls": trace.llm_calls,
        "userId": trace.user_id,
        "input": trace.input,
        "output": trace.output,
    }


def totals_json(trace: TraceSummary | None) -> dict[str, Any]:
    """A trace's `totals`."""
    if trace is None:
        return {
            "inputTokens": None,
            "outputTokens": None,
            "totalTokens": None,
            "costUsd": None,
            "models": [],
            "llmCalls": 0,
        }
    found = summary_genai_json(trace)
    return {key: found[key] for key in ("inputTokens", "outputTokens", "totalTokens", "costUsd",
                                        "models", "llmCalls")}  # fmt: skip


def _view_json(
    span_id: str, view: GenAIView, cost: tuple[float | None, str | None]
) -> dict[str, Any]:
    return {
        "spanId": span_id,
        "type": view.type,
        "name": view.name,
        "model": view.model,
        "provider": view.provider,
        "inputTokens": view.input_tokens,
        "outputTokens": view.output_tokens,
        "cacheReadTokens": view.cache_read_tokens,
        "cacheWriteTokens": view.cache_write_tokens,
        "reasoningTokens": view.reasoning_tokens,
        "costUsd": settled(cost[0]),
        "costSource": cost[1],
        "inputMessages": [message.as_json() for message in view.input_messages],
        "outputMessages": [message.as_json() for message in view.output_messages],
        "sources": {field: given for field, given in view.sources.items() if field in _SOURCED},
    }


#: The fields of a span's `genai` object that `sources` names (the view's others, its
#: user, session and total tokens, are not in the object).
_SOURCED = frozenset(("type", "name", "model", "provider", *_USAGE, "costSource",
                      "inputMessages", "outputMessages"))  # fmt: skip


def _plus(total: Any, value: Any) -> Any:
    return total if value is None else value if total is None else total + value


def _sum_below(
    objects: list[dict[str, Any]],
    parents: Mapping[str, str | None],
    totals: Mapping[str, int | None],
) -> None:
    """Give each span that is no model call, and each wrapper (genai/counting.py) of a
    call that reports usage, the sums of the model calls below it, where any reports
    usage (in place); `totals`: each span's total tokens, which no object shows."""
    by_span: dict[str, list[dict[str, Any]]] = {}  # a span stored on two days: two
    for item in objects:
        by_span.setdefault(item["spanId"], []).append(item)
    wrapping = wrappers(
        (item["spanId"], parents.get(item["spanId"]), item["type"],
         reports(item["inputTokens"], item["outputTokens"], item["costUsd"],
                 totals.get(item["spanId"])))
        for item in objects
    )  # fmt: skip
    sums: dict[str, dict[str, Any]] = {}
    for item in objects:
        if item["type"] not in MODEL_TYPES or not any(item[k] is not None for k in _USAGE):
            continue
        if item["spanId"] in wrapping.usage:
            continue
        seen, parent = set(), parents.get(item["spanId"])
        while parent is not None and parent not in seen:
            seen.add(parent)
            sum_of = sums.setdefault(parent, dict.fromkeys(_USAGE))
            for key in _USAGE:
                sum_of[key] = _plus(sum_of[key], item[key])
            parent = parents.get(parent)
    for span_id, usage in sums.items():
        for above in by_span.get(span_id, ()):
            if above["type"] not in MODEL_TYPES or span_id in wrapping.usage:
                _show_below(above, usage)


def _show_below(item: dict[str, Any], usage: dict[str, Any]) -> None:
    """A span's object shows `usage`, the sums of the model calls below it."""
    item.update(usage, costUsd=settled(usage["costUsd"]), costSource=None)
    for key in _USAGE:
        item["sources"].pop(key, None)
        if usage[key] is not None:
            item["sources"][key] = BELOW


def genai_json(
    spans: list[dict[str, Any]], costs: Mapping[str, tuple[float | None, str | None]]
) -> list[dict[str, Any]]:
    """One object for each span of a trace that a convention describes, by start."""
    objects, parents, totals = [], {}, {}
    for span in spans:
        parents[span["spanId"]] = span.get("parentSpanId")
        view = view_of(span.get("attributes"), span.get("events"), span["name"], span["kind"])
        if view is None:
            continue
        totals[span["spanId"]] = view.total_tokens
        cost = costs.get(span["spanId"], (None, None))
        if cost == (None, None) and view.client_cost is not None:
            cost = (view.client_cost, "client")
        objects.append(_view_json(span["spanId"], view, cost))
    _sum_below(objects, parents, totals)
    return objects


def span_view(span: dict[str, Any]) -> dict[str, Any] | None:
    """One stored span's genai object (without its stored cost), or None."""
    found = genai_json([span], {})
    return found[0] if found else None


def agents_json(traces: dict[str, list[SpanOutline]], graph: Topology) -> dict[str, Any]:
    """`GET …/agents`: the agents, and the topology's nodes and edges."""
    return {
        "agents": [
            {
                "name": a.name,
                "runs": a.runs,
                "errors": a.errors,
                "p50Ms": a.p50_ms,
                "p95Ms": a.p95_ms,
                "inputTokens": a.input_tokens,
                "outputTokens": a.output_tokens,
                "costUsd": settled(a.cost_usd),
            }
            for a in agent_stats(traces)
        ],
        "topology": {
            "nodes": [
                {"id": f"{kind}:{name}", "type": kind, "name": name}
                for kind, name in sorted(graph.nodes)
            ],
            "edges": [
                {
                    "from": f"{source[0]}:{source[1]}",
                    "to": f"{target[0]}:{target[1]}",
                    "count": edge.count,
                    "errors": edge.errors,
                }
                for (source, target), edge in sorted(graph.edges.items())
            ],
        },
    }
