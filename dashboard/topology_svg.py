"""The topology drawn as SVG on the server: layered top to bottom.

Layers: an agent no agent calls (or, where every agent is called, the busiest) starts
layer 0; every other node sits one layer below the nearest node that calls it (a
breadth-first walk, so cycles end). Within a layer nodes are ordered by the mean
position of their callers, which keeps most edges from crossing. Every node is a box of
one width with its label cut to fit (the whole name in its tooltip), so no two labels
overlap. A layer wider than ROW_NODES wraps onto rows of that many (an agent calling 24
tools is four rows, not one row scaled down to unreadable labels). A call down is a
line; a call back up a curve from the top of its box, beside the line of a call down
between the two; a call within a row bends below it. An edge's count sits on the edge,
at its middle or the nearest place along it clear of the boxes and of the other counts.
The SVG has no size of its own: it is scaled to fit its frame, and the page's script
zooms and pans it by its viewBox.
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
    if y2 <= y1:  # a call back up (a cycle), sideways or to itself: a curve round the boxes
        ends = _around(start, end)
        path = "M{:.1f},{:.1f} C{:.1f},{:.1f} {:.1f},{:.1f} {:.1f},{:.1f}".format(*ends)
        # on the curve: its middle first, then elsewhere along it
        candidates = [_cubic(ends, share) for share in (0.5, *_ALONG)]
        label_x, label_y = labels.place(label, candidates)
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


#: A call back up leaves the top of its box and reaches the bottom of the other this far
#: right of their middles (clear of a call down between them, which joins the middles),
#: bowed this far to its right; a call to its own box loops this far out of its side.
BACK_SHIFT, BACK_BOW, LOOP_OUT = 14, 20, 32


def _around(start: tuple[float, float], end: tuple[float, float]) -> tuple[float, ...]:
    """A curve's ends and control points (x, y of each, in order) for an edge that cannot
    go down: in one row, from the bottom of one box to the bottom of the other, bent
    below them; up, from the top of one box to the bottom of the other, bowed; to its
    own box, a loop out of its right side."""
    if start == end:
        x, top = start[0] + BOX_W, start[1]
        return (
            x,
            top + BOX_H * 2 / 3,
            x + LOOP_OUT,
            top + BOX_H,
            x + LOOP_OUT,
            top,
            x,
            top + BOX_H / 3,
        )
    if start[1] == end[1]:
        x1, x2, y = start[0] + BOX_W / 2, end[0] + BOX_W / 2, start[1] + BOX_H
        bend = y + GAP_Y / 2
        return (x1, y, x1, bend, x2, bend, x2, y)
    x1, y1 = start[0] + BOX_W / 2 + BACK_SHIFT, start[1]
    x2, y2 = end[0] + BOX_W / 2 + BACK_SHIFT, end[1] + BOX_H
    dx, dy = x2 - x1, y2 - y1
    length = (dx * dx + dy * dy) ** 0.5
    bow_x, bow_y = -dy / length * BACK_BOW, dx / length * BACK_BOW  # to the right of its way
    return (
        x1, y1,
        x1 + dx / 3 + bow_x, y1 + dy / 3 + bow_y,
        x1 + dx * 2 / 3 + bow_x, y1 + dy * 2 / 3 + bow_y,
        x2, y2,
    )  # fmt: skip


def _cubic(points: tuple[float, ...], t: float) -> tuple[float, float]:
    """The point at `t` (0 to 1) of a cubic curve (`_around`'s ends and control points)."""
    x0, y0, x1, y1, x2, y2, x3, y3 = points
    a, b, c, d = (1 - t) ** 3, 3 * (1 - t) ** 2 * t, 3 * (1 - t) * t**2, t**3
    return a * x0 + b * x1 + c * x2 + d * x3, a * y0 + b * y1 + c * y2 + d * y3


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
