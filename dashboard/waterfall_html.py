"""The waterfall's rows as HTML, written in Python rather than by a template.

A trace page shows up to a thousand rows; through Jinja (even a plain, non-async
environment) they cost 20-25 ms a page, several times the page's database read, and
ruled the page's time (`benchmarks/bench_dashboard.py`). Written here in one pass over
the tree order, with every value that comes from a client escaped (html.escape, quotes
too), they cost a few milliseconds. The markup is the one the stylesheet and
dashboard.js expect; the page around it is a template. A span's name is isolated
(`<bdi>`): a right-to-left override in it cannot reverse the labels after it.
"""

from __future__ import annotations

from html import escape

from markupsafe import Markup

from dashboard.formats import count, millis, undated, usd
from dashboard.waterfall import ERROR, Subtree, Waterfall

MIN_BAR_PERCENT = 0.15  # a zero-length span still shows as a mark
INDENT_PX = 14
MAX_INDENT_DEPTH = 40  # deeper rows stay at this indent, so a deep chain stays readable
_ORPHAN = '<span class="muted" title="its parent span is not stored">orphan</span>'


def _text(value: str) -> str:
    """`value` escaped for HTML text and attributes (letters and digits need nothing:
    a span id, most often, so the common case costs one C call)."""
    return value if value.isalnum() else escape(value)


def _llm_facts(model: str | None, tokens_in: int | None, tokens_out: int | None) -> str:
    """A model call's model and tokens (in → out; one count alone, an embedding's
    input, without the arrow), as its row shows them: the model without its date,
    which its title, whole, gives (and the rest, where a narrow row cuts them)."""
    if model is None and tokens_in is None and tokens_out is None:
        return ""
    if tokens_in is not None and tokens_out is not None:
        tokens = f" {count(tokens_in)}→{count(tokens_out)} tok"
    elif tokens_in is not None:
        tokens = f" {count(tokens_in)} tok in"
    elif tokens_out is not None:
        tokens = f" {count(tokens_out)} tok out"
    else:
        tokens = ""
    text = f"{escape(model or '')}{tokens}"
    shown = f"{escape(undated(model or ''))}{tokens}"
    return f'<span class="llm-facts" title="{text.strip()}">{shown}</span> '


def _subtree(below: Subtree) -> str:
    """What is below a span with children: its span count, errors, tokens and cost."""
    parts = [f"{below.spans:,} below"]
    if below.errors:
        parts.append(f"{below.errors:,} error{'s' if below.errors > 1 else ''}")
    if below.tokens is not None:
        parts.append(f"{count(below.tokens)} tok")
    if below.cost_usd is not None:
        parts.append(usd(below.cost_usd))
    text = " · ".join(parts)
    return f'<span class="subtree" title="Spans below: {text}">{text}</span> '


def _kind(kind: str, llm_type: str | None) -> str:
    """A row's type label: the GenAI view's type (llm, agent, tool, ...) where it gives
    one, which an OTel span's SDK kind (`client`, `internal`) does not say; the SDK kind
    otherwise, and in the label's title."""
    shown = escape(llm_type or kind)
    return f'<span class="kind kind-{shown}" title="SDK kind: {escape(kind)}">{shown}</span> '


def rows_html(
    waterfall: Waterfall, first: int, stop: int, selected: int | None, path: str, page: int
) -> Markup:
    """The `<li>` rows from tree position `first` up to `stop`; their links select a
    span on `path` (`selected`: the position of the selected row, if any)."""
    link = escape(path) + (f"?page={page}&amp;" if page > 1 else "?")
    spans, t0 = waterfall.spans, waterfall.start_ns
    percent = 100 / waterfall.total_ns
    kinds: dict[tuple[str, str | None], str] = {}  # a trace has few: each made once
    subtrees = waterfall.subtrees()
    out = []
    for position in range(first, stop):
        at, depth, orphan, children = waterfall.order[position]
        span = spans[at]
        span_id, name = _text(span.span_id), escape(span.name)
        kind = kinds.get((span.kind, span.llm_type))
        if kind is None:
            kind = kinds[span.kind, span.llm_type] = _kind(span.kind, span.llm_type)
        error = span.status_code == ERROR
        start, end = span.start_ns, span.end_ns
        left = (start - t0) * percent
        width = max((0 if end is None else max(end - start, 0)) * percent, MIN_BAR_PERCENT)
        if left < 100:
            width = min(width, 100 - left)
        out.append(
            f'<li class="span-row{" error" if error else ""}'
            f'{" selected" if position == selected else ""}" data-depth="{depth}" '
            f'data-span-id="{span_id}" data-position="{position}"><span class="label" '
            f'style="padding-left: '
            f'{min(depth, MAX_INDENT_DEPTH) * INDENT_PX}px">'
            + (
                f'<button type="button" class="toggle" aria-expanded="true" '
                f'aria-label="Collapse {name}">▾</button> '
                if children
                else '<span class="toggle-space"></span> '
            )
            + f'<a href="{link}span={span_id}#detail"><bdi>{name}</bdi></a> '
            + kind
            + _llm_facts(span.model, span.input_tokens, span.output_tokens)
            + (_subtree(subtrees[position]) if children else "")
            + ('<span class="status-error">error</span>' if error else "")
            + (_ORPHAN if orphan else "")
            + '</span><span class="track" aria-hidden="true"><span class="bar'
            f'{" bar-error" if error else ""}" style="left: {left:.4f}%; width: {width:.4f}%">'
            "</span></span>"
            f'<span class="duration">{millis(None if end is None else (end - start) / 1e6)}'
            "</span></li>"
        )
    return Markup("\n".join(out))
