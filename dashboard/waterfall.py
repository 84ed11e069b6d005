"""A trace's spans laid out as a waterfall: tree order, depth, and bars on one time axis.

Pure: a trace's span outlines in (as `SpanStore.outline` gives them), the tree order
out, rows made on demand (a page shows a thousand of a trace's rows at most). Spans whose
parent is not stored (yet) are shown as roots and marked, never dropped; several roots
are shown one after the other. The walk is iterative, so a chain of any depth lays out.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, NamedTuple

from genai import MODEL_TYPES
from genai.counting import NONE, Wrappers, wrappers_of
from storage.spans import SpanOutline


class Row(NamedTuple):
    """One span of the waterfall, as its details show it (the rows themselves are
    drawn by dashboard/waterfall_html.py from the tree order)."""

    position: int  # in tree order, from 0
    span: SpanOutline
    depth: int
    orphan: bool  # its parent is named but not stored
    offset_ms: float  # from the trace's start
    duration_ms: float | None


PAGE_ROWS = 1000  # rows of a waterfall a page shows


class Subtree(NamedTuple):
    """What is below a span: how many spans, errors, and the model calls' usage."""

    spans: int
    errors: int
    tokens: int | None
    cost_usd: float | None


#: OTLP's status code of an error.
ERROR = 2


def _plus(total: Any, value: Any) -> Any:
    return total if value is None else value if total is None else total + value


def _usage(span: SpanOutline) -> tuple[int | None, float | None]:
    """A model call's tokens (in + out) and cost; nothing for other spans."""
    if span.llm_type not in MODEL_TYPES:
        return None, None
    return _plus(span.input_tokens, span.output_tokens), span.cost_usd


class Placed(NamedTuple):
    """A span's place in the tree: what `Waterfall.row` makes a Row of."""

    at: int  # position in the spans given
    depth: int
    orphan: bool
    children: int


@dataclass(frozen=True, slots=True)
class Waterfall:
    """A trace's spans in tree order, on the trace's time axis."""

    spans: list[SpanOutline]
    order: list[Placed]
    start_ns: int
    total_ns: int
    #: its model calls that wrap provider calls (genai/counting.py)
    wrapping: Wrappers = NONE

    @property
    def duration_ms(self) -> float:
        """The time axis's length: from the earliest start to the latest end."""
        return self.total_ns / 1e6 if self.spans else 0.0

    def __len__(self) -> int:
        return len(self.order)

    def row(self, position: int) -> Row:
        """The row at `position` in tree order."""
        at, depth, orphan, _ = self.order[position]
        span = self.spans[at]
        start, end = span.start_ns, span.end_ns
        return Row(
            position,
            span,
            depth,
            orphan,
            (start - self.start_ns) / 1e6,
            None if end is None else max(end - start, 0) / 1e6,
        )

    def rows(self, first: int = 0, stop: int | None = None) -> list[Row]:
        """The rows from position `first` up to `stop` (all by default)."""
        return [self.row(at) for at in range(first, len(self.order) if stop is None else stop)]

    def subtrees(self) -> list[Subtree]:
        """For each position in tree order, the totals of the spans below it (the model
        calls' tokens and cost only, as the trace's totals count them: a wrapper's own
        not on top of its provider call's)."""
        order, spans, wrapping = self.order, self.spans, self.wrapping
        parents: list[int] = []
        ancestors: list[int] = []
        for position, placed in enumerate(order):
            while ancestors and order[ancestors[-1]].depth >= placed.depth:
                ancestors.pop()
            parents.append(ancestors[-1] if ancestors else -1)
            ancestors.append(position)
        count, errors = [0] * len(order), [0] * len(order)
        tokens: list[int | None] = [None] * len(order)
        cost: list[float | None] = [None] * len(order)
        for position in range(len(order) - 1, -1, -1):
            parent = parents[position]
            if parent < 0:
                continue
            span = spans[order[position].at]
            count[parent] += count[position] + 1
            errors[parent] += errors[position] + (span.status_code == ERROR)
            counted = span.span_id not in wrapping.usage
            own_tokens, own_cost = _usage(span) if counted else (None, None)
            tokens[parent] = _plus(_plus(tokens[parent], tokens[position]), own_tokens)
            cost[parent] = _plus(_plus(cost[parent], cost[position]), own_cost)
        return [Subtree(*totals) for totals in zip(count, errors, tokens, cost, strict=True)]

    def errors(self) -> list[tuple[int, str]]:
        """(position, span id) of every error span, in tree order."""
        spans = self.spans
        return [
            (position, spans[placed.at].span_id)
            for position, placed in enumerate(self.order)
            if spans[placed.at].status_code == ERROR
        ]

    def find(self, span_id: str | None) -> Row | None:
        """The row of a span id, or None."""
        spans = self.spans
        for position, placed in enumerate(self.order):
            if spans[placed.at].span_id == span_id:
                return self.row(position)
        return None


def _tree_order(spans: list[SpanOutline]) -> list[Placed]:
    """(position in `spans`, depth, orphan, children) in depth-first order, children
    by start."""
    count = len(spans)
    ids = [span.span_id for span in spans]
    first = dict(zip(reversed(ids), range(count - 1, -1, -1), strict=True))  # first wins
    children: dict[int, list[int]] = {}
    roots: list[tuple[int, bool]] = []
    for at, span in enumerate(spans):
        parent = span.parent_span_id
        owner = first.get(parent) if parent else None
        if owner is None or owner == at:
            roots.append((at, bool(parent) and owner is None))
        else:
            children.setdefault(owner, []).append(at)
    order: list[Placed] = []
    seen = bytearray(count)
    stack = [(at, 0, orphan) for at, orphan in reversed(roots)]
    while stack:
        at, depth, orphan = stack.pop()
        if seen[at]:  # a cycle of parents (a client's mistake) is shown once
            continue
        seen[at] = 1
        mine = children.get(at)
        if mine is None:
            order.append(Placed(at, depth, orphan, 0))
            continue
        order.append(Placed(at, depth, orphan, len(mine)))
        below = depth + 1
        stack.extend([(child, below, False) for child in reversed(mine)])
    if len(order) < count:  # spans only reachable through a cycle: shown as roots
        order.extend(Placed(at, 0, True, 0) for at in range(count) if not seen[at])
    return order


def lay_out(spans: list[SpanOutline]) -> Waterfall:
    """The waterfall of a trace's stored spans (ordered by start, as stored)."""
    if not spans:
        return Waterfall([], [], 0, 1)
    t0 = min(span.start_ns for span in spans)
    t1 = max(
        span.start_ns if span.end_ns is None else max(span.start_ns, span.end_ns) for span in spans
    )
    return Waterfall(spans, _tree_order(spans), t0, max(t1 - t0, 1), wrappers_of(spans))


def plain(value: dict[str, Any]) -> Any:
    """An OTLP AnyValue as a plain value (lists, dicts) for showing."""
    for member, shown in value.items():
        if member == "arrayValue":
            return [plain(item) for item in shown.get("values", [])]
        if member == "kvlistValue":
            return {pair["key"]: plain(pair.get("value", {})) for pair in shown.get("values", [])}
        if member == "intValue":
            return int(shown)
        if member == "bytesValue":
            return f"base64:{shown}"
        return shown
    return None
