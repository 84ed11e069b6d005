"""Which model calls a trace counts: a wrapper's usage is its provider call's."""

from __future__ import annotations

from genai.counting import reports, wrappers


def test_a_model_call_with_a_model_call_below_it_is_a_wrapper() -> None:
    """The LLM span over the provider call is a wrapper, of its usage too; one over a
    call that reports nothing is a wrapper whose own usage counts; the agent above, the
    provider calls, and a call over a tool are none."""
    spans = [
        ("agent", None, "agent", True),
        ("wrapper", "agent", "llm", True),
        ("call", "wrapper", "llm", True),
        ("outer", "agent", "llm", True),
        ("silent", "outer", "embedding", False),
        ("tool-caller", "agent", "llm", True),
        ("tool", "tool-caller", "tool", True),
    ]
    found = wrappers(spans)
    assert (found.calls, found.usage) == ({"wrapper", "outer"}, {"wrapper"})


def test_usage_reported_below_a_silent_call_rises_through_it() -> None:
    """A framework's call (usage) over a call reporting none over the provider call
    (usage): both above it are wrappers of usage, counted through the one below; a
    chain between two calls stops it, as a parent of another kind does."""
    spans = [
        ("top", None, "llm", True),
        ("middle", "top", "llm", False),
        ("call", "middle", "llm", True),
        ("outer", None, "llm", True),
        ("chain", "outer", "chain", False),
        ("inner", "chain", "llm", True),
    ]
    found = wrappers(spans)
    assert (found.calls, found.usage) == ({"top", "middle"}, {"top", "middle"})


def test_a_span_named_as_its_own_parent_does_not_wrap_itself() -> None:
    """A client's mistake (a span its own parent) leaves the call counted."""
    assert wrappers([("loop", "loop", "llm", True)]) == (frozenset(), frozenset())


def test_usage_is_reported_by_any_count_or_a_cost() -> None:
    """A zero is a count reported; nothing known is none."""
    assert reports(None, 0, None) and reports(None, None, 0.5)
    assert not reports(None, None, None, None)
