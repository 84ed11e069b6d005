"""Agents and their topology: stats by agent, edges from the nearest agent, a layered
SVG whose boxes never overlap, and the traces through a node."""

from __future__ import annotations

import re
from typing import Any

import orjson
import pytest

from dashboard import agents
from dashboard.topology import Edge, Topology, topology
from dashboard.topology_svg import (
    BOX_W,
    GAP_X,
    MARGIN,
    MAX_NODES,
    ROW_NODES,
    busiest,
    layers,
    render,
)
from storage.spans import SpanOutline
from tests.dashboard.conftest import Site, sign_in, store
from tests.proto_json.spans import span

RUN, OTHER = "a1" * 16, "b2" * 16


def agent_run(trace: str) -> list[dict[str, Any]]:
    """planner -> (delegation) -> researcher -> search, docs, gpt; planner -> gpt."""

    def at(second: int, **fields: Any) -> dict[str, Any]:
        times = {
            "startTime": f"2026-11-22T10:00:0{second}Z",
            "endTime": f"2026-11-22T10:00:0{second}.5Z",
        }
        return span(traceId=trace, **{**times, **fields})

    return [
        at(0, spanId="1" * 16, name="planner", kind="agent", endTime="2026-11-22T10:00:09Z"),
        at(1, spanId="2" * 16, parentSpanId="1" * 16, name="gpt", kind="llm_call"),
        at(2, spanId="3" * 16, parentSpanId="1" * 16, name="hand over", kind="delegation"),
        at(3, spanId="4" * 16, parentSpanId="3" * 16, name="researcher", kind="agent"),
        at(4, spanId="5" * 16, parentSpanId="4" * 16, name="search", kind="tool_call"),
        at(5, spanId="6" * 16, parentSpanId="4" * 16, name="docs", kind="retrieval"),
        at(6, spanId="7" * 16, parentSpanId="4" * 16, name="gpt", kind="llm_call"),
    ]


async def test_agents_page_stats_and_topology(site: Site) -> None:
    """Runs, errors and latency by agent; an SVG node per agent, tool, retrieval and LLM;
    an edge per call, the delegation among them, with counts."""
    store(site.db, site.demo, agent_run(RUN))
    store(
        site.db,
        site.demo,
        [
            span(traceId=OTHER, spanId="1" * 16, name="planner", kind="agent", status="error",
                 startTime="2026-11-22T11:00:00Z", endTime="2026-11-22T11:00:02Z"),
            span(traceId=OTHER, spanId="2" * 16, parentSpanId="1" * 16, name="calc",
                 kind="tool_call", startTime="2026-11-22T11:00:01Z"),
        ],
    )  # fmt: skip
    client = site.client()
    await sign_in(client, "viewer@acme.test")
    page = (await (await client.get("/projects/demo/agents")).get_data()).decode()
    rows = re.findall(r'kind=agent&amp;name=(\w+)">\w+</a></td>\s*<td class="num">(\d+)</td>'
                      r'<td class="num">(\d+)</td>', page)  # fmt: skip
    assert rows == [("planner", "2", "1"), ("researcher", "1", "0")]
    # its tokens are not the waterfall's sums below an agent: the table says whose they are
    assert "model calls each agent makes itself" in page.split("</caption>", 1)[0]
    nodes = set(re.findall(r'data-kind="(\w+)" data-name="([\w ]+)"', page))
    assert nodes == {
        ("agent", "planner"), ("agent", "researcher"), ("llm", "gpt"),
        ("tool", "search"), ("retrieval", "docs"), ("tool", "calc"),
    }  # fmt: skip
    edges = re.findall(r'class="edge edge-(\w+)" data-source="(\w+)" data-target="(\w+)" '
                       r'data-count="(\d+)"', page)  # fmt: skip
    assert sorted(edges) == sorted([
        ("delegation", "planner", "researcher", "1"), ("call", "planner", "gpt", "1"),
        ("call", "planner", "calc", "1"), ("call", "researcher", "search", "1"),
        ("call", "researcher", "docs", "1"), ("call", "researcher", "gpt", "1"),
    ])  # fmt: skip
    listed = (
        await (await client.get("/projects/demo/agents/traces?kind=tool&name=calc")).get_data()
    ).decode()
    assert OTHER in listed and RUN not in listed
    for bad in (
        "kind=thing&name=x",
        "kind=tool&name=calc&name=bad",
        "kind=tool&kind=llm&name=calc",
    ):
        response = await client.get(f"/projects/demo/agents/traces?{bad}")
        assert response.status_code == 400, bad


async def test_a_time_range_gives_the_agents_of_its_traces(site: Site) -> None:
    """`from` / `to` make the window the most recent traces of that range, on the page
    (whose node and agent links keep the range) and in the JSON."""
    store(site.db, site.demo, agent_run(RUN))  # 10:00
    store(site.db, site.demo, [span(traceId=OTHER, spanId="1" * 16, name="planner",
                                    kind="agent", startTime="2026-11-22T11:00:00Z",
                                    endTime="2026-11-22T11:00:02Z")])  # fmt: skip
    client = site.client()
    await sign_in(client, "viewer@acme.test")
    api = "/api/v1/projects/demo/agents"
    runs = {
        a["name"]: a["runs"]
        for a in orjson.loads(await (await client.get(api)).get_data())["agents"]
    }
    assert runs == {"planner": 2, "researcher": 1}
    early = f"{api}?from=2026-11-22T09:00:00Z&to=2026-11-22T10:30:00Z"
    runs = {
        a["name"]: a["runs"]
        for a in orjson.loads(await (await client.get(early)).get_data())["agents"]
    }
    assert runs == {"planner": 1, "researcher": 1}
    late = (
        await (await client.get("/projects/demo/agents?from=2026-11-22T10:30:00Z")).get_data()
    ).decode()
    links = re.findall(r'href="(/projects/demo/agents/traces\?[^"]*)"', late)
    assert len(links) == 2 and all("from=2026-11-22T10:30:00Z" in link for link in links)
    assert "researcher" not in late
    bad = await client.get(f"{api}?from=yesterday")
    assert bad.status_code == 400


async def test_newer_traces_without_agents_do_not_crowd_the_agents_out(
    site: Site, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The window is the most recent traces with an agent span, in any convention: more
    newer traces without one than it holds leave the agents page as it was."""
    monkeypatch.setattr(agents, "WINDOW_TRACES", 3)
    store(site.db, site.demo, agent_run(RUN))  # 10:00, the SDK's kinds
    marked = {  # an agent span of each other convention, 10:01-10:03
        "otel": {"gen_ai.operation.name": "Invoke_Agent", "gen_ai.agent.name": "otel"},
        "oi": {"openinference.span.kind": "Agent", "agent.name": "oi"},
    }
    for n, (name, attributes) in enumerate(marked.items(), start=1):
        store(site.db, site.demo, [span(traceId=f"{n:032x}", spanId="1" * 16, name=name,
                                        attributes=attributes,
                                        startTime=f"2026-11-22T10:0{n}:00Z",
                                        endTime=f"2026-11-22T10:0{n}:01Z")])  # fmt: skip
    for n in range(5):  # newer, without agents: more than the window holds
        store(site.db, site.demo, [span(traceId=f"{n + 100:032x}", spanId="1" * 16,
                                        name="classify", kind="llm_call",
                                        startTime=f"2026-11-22T11:0{n}:00Z",
                                        endTime=f"2026-11-22T11:0{n}:01Z")])  # fmt: skip
    client = site.client()
    await sign_in(client, "viewer@acme.test")
    found = orjson.loads(await (await client.get("/api/v1/projects/demo/agents")).get_data())
    assert {a["name"]: a["runs"] for a in found["agents"]} == {
        "planner": 1, "researcher": 1, "otel": 1, "oi": 1
    }  # fmt: skip
    page = (await (await client.get("/projects/demo/agents")).get_data()).decode()
    assert "From 6 traces: the 3 most recent with an agent span, and the 3 most" in page
    monkeypatch.setattr(agents, "WINDOW_TRACES", 2)  # the newest two agent traces
    found = orjson.loads(await (await client.get("/api/v1/projects/demo/agents")).get_data())
    assert {a["name"] for a in found["agents"]} == {"otel", "oi"}
    # an agent span in a mixture of cases no mark spells, among the most recent traces
    store(site.db, site.demo, [span(traceId=f"{200:032x}", spanId="1" * 16, name="odd",
                                    attributes={"openinference.span.kind": "aGeNt",
                                                "agent.name": "odd"},
                                    startTime="2026-11-22T12:00:00Z",
                                    endTime="2026-11-22T12:00:01Z")])  # fmt: skip
    found = orjson.loads(await (await client.get("/api/v1/projects/demo/agents")).get_data())
    assert {a["name"] for a in found["agents"]} == {"otel", "oi", "odd"}


def _graph(nodes: int) -> Topology:
    """An agent calling agents that call tools: `nodes` nodes in all."""
    names = [("agent", "root")] + [
        ("agent" if n % 3 == 0 else "tool", f"a fairly long node name number {n}")
        for n in range(1, nodes)
    ]
    edges = {}
    for n, node in enumerate(names[1:], start=1):
        caller = names[max(0, (n - 1) // 3 * 3)] if n % 3 else names[0]
        edges[(caller, node)] = Edge(n, 0)
    return Topology({node: {"t"} for node in names}, edges)


def test_thirty_nodes_never_overlap() -> None:
    """Laid out, the boxes of a 30-node graph are pairwise apart, and long names are cut
    to fit their box (the whole name in the tooltip)."""
    svg = str(render(_graph(30), "/x"))
    rect = r'<rect x="([\d.]+)" y="([\d.]+)" width="(\d+)" height="(\d+)"'
    boxes = [tuple(float(v) for v in found) for found in re.findall(rect, svg)]
    assert len(boxes) == 30
    for i, (x1, y1, w, h) in enumerate(boxes):
        for x2, y2, _, _ in boxes[i + 1 :]:
            assert x1 + w <= x2 or x2 + w <= x1 or y1 + h <= y2 or y2 + h <= y1
    assert ">a fairly long node na…<" in svg and "a fairly long node name number 12" in svg


def test_cycles_and_orphans_are_placed() -> None:
    """Agents calling each other in a cycle, and a node nobody calls, all get a layer."""
    a, b, tool = ("agent", "a"), ("agent", "b"), ("tool", "t")
    graph = Topology({a: {"x"}, b: {"x"}, tool: {"y"}}, {(a, b): Edge(1, 0), (b, a): Edge(1, 0)})
    placed = [node for layer in layers(graph) for node in layer]
    assert sorted(placed) == sorted([a, b, tool])
    assert "<path" in str(render(graph, "/x"))


def test_nearest_agent_skips_the_spans_between() -> None:
    """An LLM call under think and delegation spans belongs to the agent above them."""
    spans = [
        SpanOutline("1", None, "boss", "agent", 0, 0, 9),
        SpanOutline("2", "1", "ponder", "think", 0, 1, 2),
        SpanOutline("3", "2", "pass", "delegation", 0, 1, 2),
        SpanOutline("4", "3", "model", "llm_call", 0, 1, 2),
        SpanOutline("5", "9", "lost", "llm_call", 0, 1, 2),  # its parent is not stored
    ]
    graph = topology({"t": spans})
    assert graph.edges == {(("agent", "boss"), ("llm", "model")): Edge(1, 0)}
    assert ("llm", "lost") in graph.nodes


def test_only_the_busiest_nodes_are_drawn() -> None:
    """A window of 400 differently named tools draws the MAX_NODES busiest nodes (by
    traces through them) and the edges between them, not a drawing of megabytes."""
    agent = ("agent", "root")
    nodes = {agent: {f"t{n}" for n in range(400)}}
    nodes |= {("tool", f"tool {n:03}"): {f"t{k}" for k in range(400 - n)} for n in range(400)}
    edges = {(agent, ("tool", f"tool {n:03}")): Edge(400 - n, 0) for n in range(400)}
    kept = busiest(Topology(nodes, edges))
    assert len(kept.nodes) == MAX_NODES and agent in kept.nodes
    assert ("tool", f"tool {MAX_NODES - 2:03}") in kept.nodes
    assert ("tool", f"tool {MAX_NODES - 1:03}") not in kept.nodes
    assert len(kept.edges) == MAX_NODES - 1
    svg = str(render(Topology(nodes, edges), "/t"))
    assert svg.count('<g class="node ') == MAX_NODES and len(svg) < 200_000


def test_a_wide_layer_wraps_onto_rows_and_counts_sit_clear_of_the_boxes() -> None:
    """An agent calling 24 tools draws them ROW_NODES a row, not one row scaled down to
    unreadable labels; no edge's count lies on a box."""
    agent = ("agent", "root")
    tools = [("tool", f"tool {n:02}") for n in range(24)]
    graph = Topology(
        {agent: {"t"}, **{tool: {"t"} for tool in tools}},
        {(agent, tool): Edge(n + 1, n % 2) for n, tool in enumerate(tools)},
    )
    svg = str(render(graph, "/x"))
    width, height = (float(v) for v in re.search(r'viewBox="0 0 ([\d.]+) ([\d.]+)"', svg).groups())  # type: ignore[union-attr]
    assert width == 2 * MARGIN + ROW_NODES * BOX_W + (ROW_NODES - 1) * GAP_X
    assert width / height < 3  # a frame of any usual shape shows it near its own size
    rect = r'<rect x="([\d.]+)" y="([\d.]+)" width="(\d+)" height="(\d+)"'
    boxes = [tuple(float(v) for v in found) for found in re.findall(rect, svg)]
    assert len({y for _, y, _, _ in boxes}) == 1 + 24 // ROW_NODES
    counts = [
        (float(x), float(y))
        for x, y in re.findall(r'<text x="([\d.]+)" y="([\d.]+)" class="count">', svg)
    ]
    assert len(counts) == 24
    for x, y in counts:
        for left, top, w, h in boxes:
            assert not (left - 20 <= x <= left + w + 20 and top - 4 <= y <= top + h + 4)


def test_counts_of_edges_into_one_node_do_not_overlap() -> None:
    """Twelve agents (two rows of them) each calling one tool: their counts, five digits
    each, are each clear of the others and of every box."""
    root, tool = ("agent", "root"), ("tool", "search")
    agents = [("agent", f"agent {n:02}") for n in range(12)]
    edges = {(root, agent): Edge(10_000 + n, 0) for n, agent in enumerate(agents)}
    edges |= {(agent, tool): Edge(20_000 + n, n % 3) for n, agent in enumerate(agents)}
    graph = Topology({node: {"t"} for node in [root, tool, *agents]}, edges)
    svg = str(render(graph, "/x"))
    rect = r'<rect x="([\d.]+)" y="([\d.]+)" width="(\d+)" height="(\d+)"'
    boxes = [tuple(float(v) for v in found) for found in re.findall(rect, svg)]
    texts = re.findall(r'<text x="([\d.]+)" y="([\d.]+)" class="count">([^<]+)</text>', svg)
    assert len(texts) == 24
    counts = [
        (float(x) - (6.5 * len(label) + 6) / 2, float(y) - 11, 6.5 * len(label) + 6, 15)
        for x, y, label in texts
    ]

    def apart(a: tuple[float, ...], b: tuple[float, ...]) -> bool:
        return (
            a[0] + a[2] <= b[0] or b[0] + b[2] <= a[0] or a[1] + a[3] <= b[1] or b[1] + b[3] <= a[1]
        )

    for i, count in enumerate(counts):
        assert all(apart(count, other) for other in counts[i + 1 :]), texts[i]
        assert all(apart(count, box) for box in boxes), texts[i]


def _on_path(path: str, x: float, y: float) -> float:
    """How far (x, y) lies from a path of the drawing (a line, or one cubic curve)."""
    numbers = [float(n) for n in re.findall(r"-?[\d.]+", path)]
    if "C" not in path:
        x1, y1, x2, y2 = numbers
        points = [(x1 + t / 100 * (x2 - x1), y1 + t / 100 * (y2 - y1)) for t in range(101)]
    else:
        p = list(zip(numbers[::2], numbers[1::2], strict=True))
        points = [
            tuple(
                (1 - t) ** 3 * p[0][k]
                + 3 * (1 - t) ** 2 * t * p[1][k]
                + 3 * (1 - t) * t**2 * p[2][k]
                + t**3 * p[3][k]
                for k in (0, 1)
            )
            for t in (n / 100 for n in range(101))
        ]
    return min(((px - x) ** 2 + (py - y) ** 2) ** 0.5 for px, py in points)


def test_each_count_sits_on_its_edge() -> None:
    """A count is drawn where its edge passes (its baseline on the edge), a call back up
    a cycle's curve too: not where the curve's control points are."""
    a, b, c = ("agent", "a"), ("agent", "b"), ("tool", "c")
    graph = Topology(
        {a: {"x"}, b: {"x"}, c: {"x"}},
        {(a, b): Edge(3, 0), (b, a): Edge(2, 1), (b, c): Edge(5, 0), (c, c): Edge(1, 0)},
    )
    svg = str(render(graph, "/x"))
    edges = re.findall(
        r'<path d="([^"]+)" marker-end="url\(#arrow\)"/><text x="([\d.]+)" y="([\d.]+)"', svg
    )
    assert len(edges) == 4 and any("C" in path for path, _, _ in edges)
    for path, x, y in edges:
        assert _on_path(path, float(x), float(y)) <= 1, path
