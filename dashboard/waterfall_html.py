"""The waterfall's rows as HTML, written in Python rather than by a template.

A trace page shows up to a thousand rows; through Jinja (even a plain, non-async
environment) they cost 20-25 ms a page, ten times the page's database read, and ruled
the page's time (`benchmarks/bench_dashboard.py`). Written here, with markupsafe's
escaping (html.escape, quotes too) of every value that comes from a client, they cost
a few milliseconds. The markup is
the one the stylesheet and dashboard.js expect; the page around it is a template.
"""

from __future__ import annotations

from html import escape

from markupsafe import Markup

from dashboard.formats import millis
from dashboard.waterfall import Row

_ERROR = 2


def _row(row: Row, selected: bool, link: str) -> str:
    span = row.span
    span_id, name, kind = escape(span["spanId"]), escape(span["name"]), escape(span["kind"])
    error = span["status"]["code"] == _ERROR
    classes = "span-row" + (" error" if error else "") + (" selected" if selected else "")
    toggle = (
        f'<button type="button" class="toggle" aria-expanded="true" '
        f'aria-label="Collapse {name}">▾</button>'
        if row.children
        else '<span class="toggle-space"></span>'
    )
    marks = '<span class="status-error">error</span>' if error else ""
    if row.orphan:
        marks += '<span class="muted" title="its parent span is not stored">orphan</span>'
    return (
        f'<li class="{classes}" data-depth="{row.depth}" data-span-id="{span_id}">'
        f'<span class="label" style="padding-left: {row.indent_px}px">{toggle} '
        f'<a href="{link}span={span_id}#detail">{name}</a> '
        f'<span class="kind kind-{kind}">{kind}</span> {marks}</span>'
        f'<span class="track" aria-hidden="true"><span class="bar'
        f'{" bar-error" if error else ""}" style="left: {row.left_percent}%; '
        f'width: {row.width_percent}%"></span></span>'
        f'<span class="duration">{millis(row.duration_ms)}</span></li>'
    )


def rows_html(rows: list[Row], selected: Row | None, path: str, page: int) -> Markup:
    """The `<li>` rows of one waterfall page; their links select a span on `path`."""
    link = escape(path) + (f"?page={page}&amp;" if page > 1 else "?")
    chosen = -1 if selected is None else selected.position
    return Markup("\n".join(_row(row, row.position == chosen, link) for row in rows))
