"""Which model calls a trace's totals count, so that no provider call counts twice.

A framework's model call (a LangChain chat model's span as OpenTelemetry's LangChain
instrumentation records it, an outer span of the Vercel AI SDK) wraps the provider call
that an instrumentation of the provider's client records as its child, and both report
the same usage. A model call whose child is a model call is therefore a wrapper: it is
no provider call, no call of the trace's `llmCalls`. When a call below it, through
model calls, reports usage, the wrapper's own usage is not counted either (its row shows
the sum of the calls below it, as an agent's does); when none does (a stream whose
provider call reports no usage), the wrapper's own is the call's, and counts.

The rule reads model calls and their parents only: a call under a call through a span
of another kind (a chain) is a call of its own. The stores' summaries
(storage/summary_genai.py, in Python and in SQL) and the dashboard's sums
(dashboard/waterfall.py, dashboard/genai_json.py, dashboard/topology.py) all use it.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from typing import NamedTuple, Protocol

from genai.view import MODEL_TYPES

#: (span id, parent span id, GenAI type, whether it reports usage: tokens or a cost)
Call = tuple[str, "str | None", "str | None", bool]


class Wrappers(NamedTuple):
    """The span ids of a trace's wrappers."""

    #: model calls with a model call as a child: no provider calls
    calls: frozenset[str]
    #: those of them with a call below that reports usage (a child, or a child's child
    #: through model calls): their usage is the calls' below
    usage: frozenset[str]


NONE = Wrappers(frozenset(), frozenset())


def wrappers(spans: Iterable[Call]) -> Wrappers:
    """The wrappers among `spans` (a trace's). A span named as its own parent (a
    client's mistake) is not its own child."""
    calls: set[str] = set()
    above: dict[str, set[str]] = {}  # a call's parents (two, when stored on two days)
    reported: set[str] = set()
    for span_id, parent, kind, reports in spans:
        if kind not in MODEL_TYPES:
            continue
        calls.add(span_id)
        if parent is not None and parent != span_id:
            above.setdefault(span_id, set()).add(parent)
            if reports:
                reported.add(parent)
    if not above:
        return NONE
    parents = set().union(*above.values())
    rising = reported & calls  # calls a call below reports usage to: theirs rises too
    while rising:
        risen = set().union(*(above.get(span_id, ()) for span_id in rising)) - reported
        reported |= risen
        rising = risen & calls
    return Wrappers(frozenset(calls & parents), frozenset(calls & reported))


class Stored(Protocol):
    """A stored span's facts the rule reads (a span row, a span's outline)."""

    @property
    def span_id(self) -> str: ...
    @property
    def parent_span_id(self) -> str | None: ...
    @property
    def llm_type(self) -> str | None: ...
    @property
    def input_tokens(self) -> int | None: ...
    @property
    def output_tokens(self) -> int | None: ...
    @property
    def total_tokens(self) -> int | None: ...
    @property
    def cost_usd(self) -> float | None: ...


def wrappers_of(spans: Sequence[Stored]) -> Wrappers:
    """The wrappers among a trace's stored spans; first, cheaply, none where no span's
    parent is a model call (most traces)."""
    calls = {s.span_id for s in spans if s.llm_type in MODEL_TYPES}
    if not calls or not any(s.parent_span_id in calls for s in spans):
        return NONE
    return wrappers(
        (s.span_id, s.parent_span_id, s.llm_type,
         reports(s.input_tokens, s.output_tokens, s.total_tokens, s.cost_usd))
        for s in spans
    )  # fmt: skip


def reports(*usage: object) -> bool:
    """Whether a span reports usage: any of its token counts or its cost is known."""
    return any(value is not None for value in usage)
