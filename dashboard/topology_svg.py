"""The topology drawn as SVG on the server: layered top to bottom.

Layers: an agent no agent calls (or, where every agent is called, the busiest) starts
layer 0; every other node sits one layer below the nearest node that calls it (a
breadth-first walk, so cycles end). Within a layer nodes are ordered by the mean
position of their callers, which keeps most edges from crossing. Every node is a box of
one width with its label cut to fit (the whole name in its tooltip), so no two labels
overlap. A layer wider than ROW_NODES wraps onto rows of that many (an agent calling 24
tools is four rows, not one row scaled down to unreadable labels), and an edge's count
sits just above the box it points to, clear of the rows it passes. The SVG has no size
of its own: it is scaled to fit its frame, and the page's script zooms and pans it by
its viewBox.
"""

from __future__ import annotations

from collections import deque
from html import escape
from urllib.parse import quote

from markupsafe import Markup

from dashboard.formats import cut
from dashboard.topology import AGENT, Edge, Node, Topology

BOX_W, BOX_H, GAP_X, GAP_Y, MARGIN = 170, 38, 28, 80, 16
LABEL_CHARS = 22
#: Nodes a row at most (a layer wraps), and the gap between the rows of one layer.
ROW_NODES, ROW_GAP = 6, 44
#: How far above the box it points to an edge's count sits, along the edge.
COUNT_ABOVE = 16
#: The other places along an edge its count may take, the nearest its middle first.
_ALONG = sorted((n / 20 for n in range(1, 20)), key=lambda share: abs(share - 0.5))


def layers(topology: Topology) -> list[list[Node]]:
    """The nodes, layer by layer, each layer ordered."""
    callers: dict[Node, list[Node]] = {node: [] for node in topology.nodes}
    callees: dict[Node, list[Node]] = {node: [] for node in topology.nodes}
    for (source, target), _ in sorted(topology.edges.items()):
        if source in callers and target in callers and source != target:
            callers[target].append(source)
            callees[source].append(target)
    depth: dict[Node, int] = {}
    for start in _starts(topology, callers):
        if start in depth:
            continue
        depth[start] = 0
        queue = deque([start])
        while queue:
            node = queue.popleft()
            for below in callees[node]:
                if below not in depth:
                    depth[below] = depth[node] + 1
                    queue.append(below)
    grouped: list[list[Node]] = [[] for _ in range(max(depth.values(), default=-1) + 1)]
    for node in sorted(depth):
        grouped[depth[node]].append(node)
    place: dict[Node, int] = {}
    for layer in grouped:  # order by the mean place of the callers above
        layer.sort(key=lambda n: (_mean([place[c] for c in callers[n] if c in place]), n))
        place.update((node, at) for at, node in enumerate(layer))
    return grouped


def _mean(values: list[int]) -> float:
    return sum(values) / len(values) if values else -1.0


def _starts(topology: Topology, callers: dict[Node, list[Node]]) -> list[Node]:
    """Uncalled agents first, then every node (the walk skips the placed ones), busiest
    first: every node gets a layer, cycles included."""
    busiest = sorted(topology.nodes, key=lambda n: (-len(topology.nodes[n]), n))
    uncalled = [n for n in busiest if n[0] == AGENT and not callers[n]]
    return uncalled + busiest


#: Nodes drawn at most: the busiest (by traces through them). A window may hold
#: thousands of differently named tools; a drawing of them all weighs megabytes and
#: shows nothing.
MAX_NODES = 150


def busiest(topology: Topology, most: int = MAX_NODES) -> Topology:
    """The topology of its `most` busiest nodes (by traces, then name) and the edges
    between them."""
    if len(topology.nodes) <= most:
        return topology
    kept = sorted(topology.nodes, key=lambda n: (-len(topology.nodes[n]), n))[:most]
    nodes = {node: topology.nodes[node] for node in kept}
    edges = {pair: e for pair, e in topology.edges.items() if pair[0] in nodes and pair[1] in nodes}
    return Topology(nodes, edges)


def render(topology: Topology, link: str) -> Markup:
    """The SVG of the topology's MAX_NODES busiest nodes; each node links to `link`
    (which may have a query string of its own) with its kind and name (`kind=&name=`)."""
    topology = busiest(topology)
    grouped = layers(topology)
    if not grouped:
        return Markup("")
    rows = [
        (number, layer[at : at + ROW_NODES])
        for number, layer in enumerate(grouped)
        for at in range(0, len(layer), ROW_NODES)
    ]
    widest = max(len(row) for _, row in rows)
    width = 2 * MARGIN + widest * BOX_W + (widest - 1) * GAP_X
    at: dict[Node, tuple[float, float]] = {}
    y = float(MARGIN)
    for index, (number, row) in enumerate(rows):
        if index:
            y += BOX_H + (ROW_GAP if rows[index - 1][0] == number else GAP_Y)
        span = len(row) * BOX_W + (len(row) - 1) * GAP_X
        left = (width - span) / 2
        for column, node in enumerate(row):
            at[node] = (left + column * (BOX_W + GAP_X), y)
    height = round(y + BOX_H + MARGIN)
    parts = [
        f'<svg xmlns="http://www.w3.org/2000/svg" class="topology" viewBox="0 0 {width} '
        f'{height}" preserveAspectRatio="xMidYMid meet" data-width="{width}" '
        f'data-height="{height}" role="img" '
        'aria-labelledby="topology-title"><title id="topology-title">Agent topology</title>'
        '<defs><marker id="arrow" viewBox="0 0 10 10" refX="10" refY="5" markerWidth="7" '
        'markerHeight="7" orient="auto-start-reverse"><path d="M0,0 L10,5 L0,10 z"/>'
        "</marker></defs>"
    ]
    labels = _Labels([(x, y, BOX_W, BOX_H) for x, y in at.values()])
    for (source, target), edge in sorted(topology.edges.items()):
        parts.append(_edge(at[source], at[target], source, target, edge, labels))
    for node, (x, y) in at.items():
        parts.append(_node(node, x, y, len(topology.nodes[node]), link))
    parts.append("</svg>")
    return Markup("".join(parts))


def _edge(
    start: tuple[float, float],
    end: tuple[float, float],
    source: Node,
    target: Node,
    edge: Edge,
    labels: _Labels,
) -> str:
    count = edge.count
    label = f"{count} ({edge.errors}✗)" if edge.errors else str(count)
    x1, y1 = start[0] + BOX_W / 2, start[1] + BOX_H
    x2, y2 = end[0] + BOX_W / 2, end[1]
    if y2 <= y1:  # a call back up (a cycle) or sideways: curve around the boxes
        y1, bend = start[1] + BOX_H, max(y1, y2 + BOX_H) + GAP_Y / 2
        path = (
            f"M{x1:.1f},{y1:.1f} C{x1:.1f},{bend:.1f} {x2:.1f},{bend:.1f} {x2:.1f},{y2 + BOX_H:.1f}"
        )
        label_x, label_y = labels.place(label, [((x1 + x2) / 2, bend)])
    else:
        path = f"M{x1:.1f},{y1:.1f} L{x2:.1f},{y2:.1f}"
        # halfway, else just above the box it points to, else elsewhere along the edge:
        # the first place clear of every box and of the counts placed before
        near = max(0.5, 1 - COUNT_ABOVE / (y2 - y1))
        shares = (0.5, near, *_ALONG)
        label_x, label_y = labels.place(
            label, [(x1 + share * (x2 - x1), y1 + share * (y2 - y1)) for share in shares]
        )
    kind = "delegation" if source[0] == AGENT and target[0] == AGENT else "call"
    errors = f", {edge.errors} with errors" if edge.errors else ""
    title = f"{escape(source[1])} → {escape(target[1])}: {count} calls{errors}"
    return (
        f'<g class="edge edge-{kind}{" has-error" if edge.errors else ""}" '
        f'data-source="{escape(source[1])}" data-target="{escape(target[1])}" '
        f'data-count="{count}" data-errors="{edge.errors}"><title>{title}</title>'
        f'<path d="{path}" marker-end="url(#arrow)"/>'
        f'<text x="{label_x:.1f}" y="{label_y:.1f}" class="count">{label}</text></g>'
    )


#: A count's box, about: 11 px text (the stylesheet's), a character 6.5 px wide.
CHAR_W, COUNT_H = 6.5, 13
Box = tuple[float, float, float, float]  # x, y, width, height
_CELL = 64  # the grid the placed boxes are found by


class _Labels:
    """Where the edges' counts go: each at the first of its candidate places (a text's
    centre and baseline) whose box is clear of the nodes' boxes and of the counts placed
    before it (else the first), found through a grid of the boxes placed."""

    def __init__(self, boxes: list[Box]) -> None:
        self.grid: dict[tuple[int, int], list[Box]] = {}
        for box in boxes:
            self._add(box)

    def place(self, label: str, candidates: list[tuple[float, float]]) -> tuple[float, float]:
        width = CHAR_W * len(label) + 6
        for x, y in candidates:
            box = (x - width / 2, y - COUNT_H + 2, width, COUNT_H + 2)
            if not any(_overlap(box, other) for other in self._near(box)):
                self._add(box)
                return x, y
        return candidates[0]

    def _cells(self, box: Box) -> list[tuple[int, int]]:
        x, y, w, h = box
        return [
            (cx, cy)
            for cx in range(int(x // _CELL), int((x + w) // _CELL) + 1)
            for cy in range(int(y // _CELL), int((y + h) // _CELL) + 1)
        ]

    def _add(self, box: Box) -> None:
        for cell in self._cells(box):
            self.grid.setdefault(cell, []).append(box)

    def _near(self, box: Box) -> list[Box]:
        return [other for cell in self._cells(box) for other in self.grid.get(cell, ())]


def _overlap(a: Box, b: Box) -> bool:
    return a[0] < b[0] + b[2] and b[0] < a[0] + a[2] and a[1] < b[1] + b[3] and b[1] < a[1] + a[3]


def _node(node: Node, x: float, y: float, traces: int, link: str) -> str:
    kind, name = node
    joined = escape(link) + ("&amp;" if "?" in link else "?")
    href = f"{joined}kind={escape(kind)}&amp;name={escape(_query(name))}"
    label = escape(cut(name, LABEL_CHARS))
    return (
        f'<a href="{href}"><g class="node node-{escape(kind)}" data-kind="{escape(kind)}" '
        f'data-name="{escape(name)}"><title>{escape(kind)} {escape(name)}: {traces} traces'
        f'</title><rect x="{x:.1f}" y="{y:.1f}" width="{BOX_W}" height="{BOX_H}" rx="6"/>'
        f'<text x="{x + BOX_W / 2:.1f}" y="{y + BOX_H / 2 + 4:.1f}">{label}'
        "</text></g></a>"
    )


def _query(text: str) -> str:
    return quote(text, safe="")
