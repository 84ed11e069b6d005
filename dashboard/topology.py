"""Agents and their topology, from the spans of a project's recent traces (pure).

A span's node comes from its GenAI type (genai/, stored with the span; a span stored
without one by its native SDK kind): an agent, named by the agent's name; a tool, by
the tool's name; an LLM or embedding call, by its model; a retrieval, by its span name.
An edge runs from the nearest agent above a span (through any spans between, such as a
chain or a delegation) to that span's node; it counts the spans it stands for and those
of them that ended in error. An agent under an agent is a delegation. An agent's tokens
and cost are those of the LLM and embedding calls it is the nearest agent of. A model
call that wraps a provider call (genai/counting.py) is neither a node nor counted: the
call below it is.
"""

from __future__ import annotations

import statistics
from dataclasses import dataclass

from dashboard.waterfall import ERROR
from genai.conventions import NATIVE_TYPES
from genai.counting import wrappers_of
from storage.spans import SpanOutline

AGENT = "agent"
NODE_KINDS = (AGENT, "tool", "retrieval", "llm", "embedding")
_MODEL_CALLS = frozenset(("llm", "embedding"))

Node = tuple[str, str]  # (type, name)


@dataclass(frozen=True, slots=True)
class AgentStats:
    """One agent's runs in the window, and its model calls' usage."""

    name: str
    runs: int
    errors: int
    p50_ms: float | None
    p95_ms: float | None
    max_ms: float | None
    input_tokens: int | None = None
    output_tokens: int | None = None
    cost_usd: float | None = None

    @property
    def error_rate(self) -> float:
        """Errors over runs."""
        return self.errors / self.runs if self.runs else 0.0


@dataclass(frozen=True, slots=True)
class Edge:
    """The calls an edge stands for, and how many of them ended in error."""

    count: int
    errors: int


@dataclass(frozen=True, slots=True)
class Topology:
    """The graph: nodes with the traces through each, edges."""

    nodes: dict[Node, set[str]]  # node -> ids of the traces through it
    edges: dict[tuple[Node, Node], Edge]


def span_type(span: SpanOutline) -> str | None:
    """The span's GenAI type, or its native kind's."""
    return span.llm_type or NATIVE_TYPES.get(span.kind)


def node_of(span: SpanOutline) -> Node | None:
    """The node a span stands for, or None (a chain, a plain span)."""
    kind = span_type(span)
    if kind in (AGENT, "tool"):
        return (kind, span.llm_name or span.name)
    if kind in _MODEL_CALLS:
        return (kind, span.model or span.name)
    if kind == "retrieval":
        return (kind, span.name)
    return None


def _nearest_agents(spans: list[SpanOutline]) -> list[SpanOutline | None]:
    """For each span, the nearest agent span above it in its trace (or None)."""
    by_id = {span.span_id: span for span in spans}
    found: dict[str, SpanOutline | None] = {}
    result = []
    for span in spans:
        chain, parent = [], span.parent_span_id
        agent: SpanOutline | None = None
        while parent is not None and parent in by_id and parent not in chain:
            if parent in found:
                agent = found[parent]
                break
            above = by_id[parent]
            if span_type(above) == AGENT:
                agent = above
                break
            chain.append(parent)
            parent = above.parent_span_id
        for walked in chain:  # the spans between share the answer
            found[walked] = agent
        result.append(agent)
    return result


def topology(traces: dict[str, list[SpanOutline]]) -> Topology:
    """The graph of the traces' agent, tool, retrieval and model-call spans."""
    nodes: dict[Node, set[str]] = {}
    edges: dict[tuple[Node, Node], Edge] = {}
    for trace_id, spans in traces.items():
        wrapping = wrappers_of(spans)  # no provider calls: their calls below are
        for span, agent in zip(spans, _nearest_agents(spans), strict=True):
            node = node_of(span)
            if node is None or node[0] in _MODEL_CALLS and span.span_id in wrapping.calls:
                continue
            nodes.setdefault(node, set()).add(trace_id)
            caller = None if agent is None else node_of(agent)
            if caller is not None:
                had = edges.get((caller, node), Edge(0, 0))
                error = int(span.status_code == ERROR)
                edges[(caller, node)] = Edge(had.count + 1, had.errors + error)
    return Topology(nodes, edges)


def _percentile(values: list[float], fraction: float) -> float | None:
    if not values:
        return None
    if len(values) == 1:
        return values[0]
    return statistics.quantiles(values, n=100, method="inclusive")[round(fraction * 100) - 1]


def _plus(total: float | None, value: float | None) -> float | None:
    return total if value is None else value if total is None else total + value


def _usage(traces: dict[str, list[SpanOutline]]) -> dict[str, list[float | None]]:
    """Each agent's model calls' input and output tokens and cost."""
    usage: dict[str, list[float | None]] = {}
    for spans in traces.values():
        wrapping = wrappers_of(spans)
        for span, agent in zip(spans, _nearest_agents(spans), strict=True):
            if agent is None or span_type(span) not in _MODEL_CALLS:
                continue
            if span.span_id in wrapping.usage:
                continue
            name = (node_of(agent) or (AGENT, agent.name))[1]
            sums = usage.setdefault(name, [None, None, None])
            for at, value in enumerate((span.input_tokens, span.output_tokens, span.cost_usd)):
                sums[at] = _plus(sums[at], value)
    return usage


def agent_stats(traces: dict[str, list[SpanOutline]]) -> list[AgentStats]:
    """Runs, errors, latency and usage of each agent, busiest first."""
    runs: dict[str, list[SpanOutline]] = {}
    for spans in traces.values():
        for span in spans:
            node = node_of(span)
            if node is not None and node[0] == AGENT:
                runs.setdefault(node[1], []).append(span)
    usage = _usage(traces)
    stats = []
    for name, spans in runs.items():
        durations = sorted((s.end_ns - s.start_ns) / 1e6 for s in spans if s.end_ns is not None)
        tokens_in, tokens_out, cost = usage.get(name, [None, None, None])
        stats.append(
            AgentStats(
                name,
                len(spans),
                sum(1 for s in spans if s.status_code == ERROR),
                _percentile(durations, 0.5),
                _percentile(durations, 0.95),
                durations[-1] if durations else None,
                None if tokens_in is None else int(tokens_in),
                None if tokens_out is None else int(tokens_out),
                cost,
            )
        )
    return sorted(stats, key=lambda s: (-s.runs, s.name))
