"""Span store rows made by hand for the storage tests: only what a test varies is given."""

from __future__ import annotations

from hypothesis import strategies as st

from storage.span_rows import SpanRow


def span_row(
    project: str = "p",
    trace: str = "a",
    span: str = "1",
    day: str = "2026-11-23",
    content: str = "x",
    received_ms: int = 0,
    root: bool = True,
    parent: str = "0",
    start: int = 10,
    end: int | None = 20,
    error: bool = False,
    session: str | None = None,
) -> SpanRow:
    """A row whose name, content hash and GenAI facts follow `content` (`x`: none)."""
    return SpanRow(
        project, trace, span, day, None if root else parent, f"name {content}", "internal",
        2 if error else 0, None, start, end, session, "[]", "[]", "[]", "{}", "{}", "{}",
        content, received_ms, *GENAI_FACTS.get(content, ()),
    )  # fmt: skip


#: The GenAI facts (SpanRow's fields after the first 20) of a row by its content: an
#: LLM call, an agent reporting usage of its own, an embedding, an LLM call reporting
#: no usage.
GENAI_FACTS: dict[str, tuple[object, ...]] = {
    "y": ("llm", None, "gpt-4o", "openai", "u1", 10, 5, 15, 2, None, None, 0.25, "client"),
    "z": ("agent", "planner", None, None, "u2", 3, None, 3, None, None, None, None, None),
    "w": ("embedding", None, "text-embedding-3-small", "openai", None, 7, None, 7, None,
          None, None, 0.5, "price-table"),
    "v": ("llm", None, "gpt-4o", "openai", None, None, None, None, None, None, None, None,
          None),
}  # fmt: skip


def sends(window_ms: int) -> st.SearchStrategy[SpanRow]:
    """Rows of a few spans sent again and again: projects, traces, start days, contents,
    receive times about the window's edges, roots, parents (model calls among them),
    ends, errors and sessions mixed."""
    return st.builds(
        span_row,
        project=st.sampled_from("pq"),
        trace=st.sampled_from("ab"),
        span=st.sampled_from("123"),
        day=st.sampled_from(["2026-11-23", "2026-11-24"]),
        content=st.sampled_from("xyzwv"),
        received_ms=st.sampled_from(
            [0, 1, window_ms - 1, window_ms, window_ms + 1, window_ms + 2, 5 * window_ms]
        ),
        root=st.booleans(),
        parent=st.sampled_from("0123"),
        start=st.integers(0, 50),
        end=st.one_of(st.none(), st.integers(50, 90)),
        error=st.booleans(),
        session=st.sampled_from([None, "s1", "s2"]),
    )
