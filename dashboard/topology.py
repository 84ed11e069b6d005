"""Agents and their topology, from the spans of a project's recent traces (pure).

An agent is a span whose SDK kind is `agent`, named by its span name. The topology's
nodes are agents, tools (`tool_call`), retrievals (`retrieval`) and LLM calls
(`llm_call`), each by kind and name; an edge runs from the nearest agent above a span
(through any spans between, such as `delegation` or `think`) to that span's node, and
its weight counts the spans it stands for. An agent under an agent is a delegation.
"""

from __future__ import annotations

import statistics
from dataclasses import dataclass

from storage.spans import SpanOutline

AGENT = "agent"
NODE_KINDS = (AGENT, "tool_call", "retrieval", "llm_call")
_ERROR = 2

Node = tuple[str, str]  # (kind, name)


@dataclass(frozen=True, slots=True)
class AgentStats:
    """One agent's runs in the window."""

    name: str
    runs: int
    errors: int
    p50_ms: float | None
    p95_ms: float | None
    max_ms: float | None

    @property
    def error_rate(self) -> float:
        """Errors over runs."""
        return self.errors / self.runs if self.runs else 0.0


@dataclass(frozen=True, slots=True)
class Topology:
    """The graph: nodes with the traces through each, weighted edges."""

    nodes: dict[Node, set[str]]  # node -> ids of the traces through it
    edges: dict[tuple[Node, Node], int]


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
            if above.kind == AGENT:
                agent = above
                break
            chain.append(parent)
            parent = above.parent_span_id
        for walked in chain:  # the spans between share the answer
            found[walked] = agent
        result.append(agent)
    return result


def topology(traces: dict[str, list[SpanOutline]]) -> Topology:
    """The graph of the traces' agent, tool, retrieval and LLM spans."""
    nodes: dict[Node, set[str]] = {}
    edges: dict[tuple[Node, Node], int] = {}
    for trace_id, spans in traces.items():
        for span, agent in zip(spans, _nearest_agents(spans), strict=True):
            if span.kind not in NODE_KINDS:
                continue
            node = (span.kind, span.name)
            nodes.setdefault(node, set()).add(trace_id)
            if agent is not None:
                edge = ((AGENT, agent.name), node)
                edges[edge] = edges.get(edge, 0) + 1
    return Topology(nodes, edges)


def _percentile(values: list[float], fraction: float) -> float | None:
    if not values:
        return None
    if len(values) == 1:
        return values[0]
    return statistics.quantiles(values, n=100, method="inclusive")[round(fraction * 100) - 1]


def agent_stats(traces: dict[str, list[SpanOutline]]) -> list[AgentStats]:
    """Runs, errors and latency of each agent, busiest first."""
    runs: dict[str, list[SpanOutline]] = {}
    for spans in traces.values():
        for span in spans:
            if span.kind == AGENT:
                runs.setdefault(span.name, []).append(span)
    stats = []
    for name, spans in runs.items():
        durations = sorted((s.end_ns - s.start_ns) / 1e6 for s in spans if s.end_ns is not None)
        stats.append(
            AgentStats(
                name,
                len(spans),
                sum(1 for s in spans if s.status_code == _ERROR),
                _percentile(durations, 0.5),
                _percentile(durations, 0.95),
                durations[-1] if durations else None,
            )
        )
    return sorted(stats, key=lambda s: (-s.runs, s.name))
