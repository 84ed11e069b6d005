"""A trace's spans laid out as a waterfall: tree order, depth, and bars on one time axis.

Pure: stored spans in (as `SpanStore.trace` gives them), rows out. Spans whose parent
is not stored (yet) are shown as roots and marked, never dropped; several roots are
shown one after the other. The walk is iterative, so a chain of any depth lays out.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, NamedTuple

import orjson

MIN_BAR_PERCENT = 0.15  # a zero-length span still shows as a mark
INDENT_PX = 14
MAX_INDENT_DEPTH = 40  # deeper rows stay at this indent, so a deep chain stays readable


class Row(NamedTuple):
    """One span of the waterfall (a NamedTuple: a trace page builds a thousand of them,
    where a frozen dataclass's construction cost as much as the rest of the layout)."""

    position: int  # in tree order, from 0
    span: dict[str, Any]
    depth: int
    children: int
    orphan: bool  # its parent is named but not stored
    offset_ms: float
    duration_ms: float | None
    left_percent: float
    width_percent: float

    @property
    def indent_px(self) -> int:
        """The row's indent under its parent."""
        return min(self.depth, MAX_INDENT_DEPTH) * INDENT_PX


@dataclass(frozen=True, slots=True)
class Waterfall:
    """The rows, and the trace's time axis."""

    rows: list[Row]
    start_ns: int
    duration_ms: float


def _ns(value: str | None) -> int | None:
    return None if value is None else int(value)


def _tree_order(spans: list[dict[str, Any]]) -> list[tuple[int, int, bool, int]]:
    """(position in `spans`, depth, orphan, children) in depth-first order, children
    by start."""
    first: dict[str, int] = {}
    for at, span in enumerate(spans):
        first.setdefault(span["spanId"], at)
    children: dict[int, list[int]] = {}
    roots: list[tuple[int, bool]] = []
    for at, span in enumerate(spans):
        parent = span.get("parentSpanId")
        owner = first.get(parent) if parent else None
        if owner is None or owner == at:
            roots.append((at, bool(parent) and owner is None))
        else:
            children.setdefault(owner, []).append(at)
    order: list[tuple[int, int, bool, int]] = []
    seen: set[int] = set()
    stack = [(at, 0, orphan) for at, orphan in reversed(roots)]
    while stack:
        at, depth, orphan = stack.pop()
        if at in seen:  # a cycle of parents (a client's mistake) is shown once
            continue
        seen.add(at)
        mine = children.get(at, ())
        order.append((at, depth, orphan, len(mine)))
        stack.extend((child, depth + 1, False) for child in reversed(mine))
    # spans only reachable through a cycle: shown at the end, as roots
    order.extend((at, 0, True, 0) for at in range(len(spans)) if at not in seen)
    return order


def lay_out(spans: list[dict[str, Any]]) -> Waterfall:
    """The waterfall of a trace's stored spans (ordered by start, as stored)."""
    if not spans:
        return Waterfall([], 0, 0.0)
    starts = [int(span["startTimeUnixNano"]) for span in spans]
    ends = [_ns(span.get("endTimeUnixNano")) for span in spans]
    t0 = min(starts)
    t1 = max([end for end in ends if end is not None] + starts)
    total = max(t1 - t0, 1)
    rows = []
    for position, (at, depth, orphan, children) in enumerate(_tree_order(spans)):
        start, end = starts[at], ends[at]
        length = None if end is None else max(end - start, 0)
        left = (start - t0) / total * 100
        width = max((length or 0) / total * 100, MIN_BAR_PERCENT)
        rows.append(
            Row(
                position,
                spans[at],
                depth,
                children,
                orphan,
                (start - t0) / 1e6,
                None if length is None else length / 1e6,
                round(left, 4),
                round(min(width, 100 - left) if left < 100 else width, 4),
            )
        )
    return Waterfall(rows, t0, total / 1e6)


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


def attribute_lines(pairs: list[dict[str, Any]]) -> list[tuple[str, str, bool]]:
    """(key, shown value, nested) for a list of OTLP attributes: strings as they are,
    other values as JSON (nested ones indented)."""
    lines = []
    for pair in pairs:
        value = plain(pair.get("value", {}))
        nested = isinstance(value, list | dict)
        if isinstance(value, str):
            text = value
        else:
            option = orjson.OPT_INDENT_2 if nested else 0
            text = orjson.dumps(value, option=option).decode()
        lines.append((str(pair.get("key", "")), text, nested))
    return lines
