"""Span store rows made by hand for the storage tests: only what a test varies is given."""

from __future__ import annotations

from storage.span_rows import SpanRow


def span_row(
    project: str = "p",
    trace: str = "a",
    span: str = "1",
    day: str = "2026-11-23",
    content: str = "x",
    received_ms: int = 0,
    root: bool = True,
    start: int = 10,
    end: int | None = 20,
    error: bool = False,
    session: str | None = None,
) -> SpanRow:
    """A row whose name and content hash follow `content`."""
    return SpanRow(
        project, trace, span, day, None if root else "0", f"name {content}", "internal",
        2 if error else 0, None, start, end, session, "[]", "[]", "[]", "{}", "{}", "{}",
        content, received_ms,
    )  # fmt: skip
