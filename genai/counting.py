"""Which model calls a trace's totals count, so that no provider call counts twice.

A framework's model call (a LangChain chat model's span as OpenTelemetry's LangChain
instrumentation records it, an outer span of the Vercel AI SDK) wraps the provider call
that an instrumentation of the provider's client records as its child, and both report
the same usage. A model call whose child is a model call is therefore a wrapper: it is
no provider call, no call of the trace's `llmCalls`. When a child reports usage, the
wrapper's own usage is not counted either (its row shows the sum of the calls below it,
as an agent's does); when none does (a stream whose provider call reports no usage),
the wrapper's own is the call's, and counts.

The rule reads a span's children only, which every write path can check: the stores'
summaries (storage/summary_genai.py, in Python and in SQL) and the dashboard's sums
(dashboard/waterfall.py, dashboard/genai_json.py, dashboard/topology.py) all use it.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import NamedTuple

from genai.view import MODEL_TYPES

#: (span id, parent span id, GenAI type, whether it reports usage: tokens or a cost)
Call = tuple[str, "str | None", "str | None", bool]


class Wrappers(NamedTuple):
    """The span ids of a trace's wrappers."""

    #: model calls with a model call as a child: no provider calls
    calls: frozenset[str]
    #: those of them with a child that reports usage: their usage is their children's
    usage: frozenset[str]


NONE = Wrappers(frozenset(), frozenset())


def wrappers(spans: Iterable[Call]) -> Wrappers:
    """The wrappers among `spans` (a trace's). A span named as its own parent (a
    client's mistake) is not its own child."""
    calls: set[str] = set()
    parents: set[str] = set()
    reported: set[str] = set()
    for span_id, parent, kind, reports in spans:
        if kind not in MODEL_TYPES:
            continue
        calls.add(span_id)
        if parent is not None and parent != span_id:
            parents.add(parent)
            if reports:
                reported.add(parent)
    if not parents:
        return NONE
    return Wrappers(frozenset(calls & parents), frozenset(calls & reported))


def reports(*usage: object) -> bool:
    """Whether a span reports usage: any of its token counts or its cost is known."""
    return any(value is not None for value in usage)
