"""Which model calls a trace's totals count, so that no provider call counts twice.

A framework's model call (LangChain's `ChatOpenAI`, LlamaIndex's `OpenAI.chat`, an
outer span of the Vercel AI SDK) wraps the provider call that an instrumentation of the
provider's client records as its child, and both report the same usage. A model call
whose child is a model call reporting usage is therefore a wrapper: it is not a provider
call, its own usage is not counted (its row shows the sum of the calls below it, as an
agent's does), and it is no call of the trace's `llmCalls`. Its usage counts again when
no child reports any (a stream without usage below a framework's span that has it).

The rule reads a span's children only, which every write path can check: the stores'
summaries (storage/summary_genai.py, in Python and in SQL) and the dashboard's sums
(dashboard/waterfall.py, dashboard/genai_json.py, dashboard/topology.py) all use it.
"""

from __future__ import annotations

from collections.abc import Iterable

from genai.view import MODEL_TYPES

#: (span id, parent span id, GenAI type, whether it reports usage: tokens or a cost)
Call = tuple[str, "str | None", "str | None", bool]


def wrappers(spans: Iterable[Call]) -> frozenset[str]:
    """The span ids of the model calls among `spans` (a trace's) that have a model call
    reporting usage as a child. A span named as its own parent (a client's mistake) is
    not its own child."""
    calls: set[str] = set()
    parents: set[str] = set()
    for span_id, parent, kind, reports in spans:
        if kind not in MODEL_TYPES:
            continue
        calls.add(span_id)
        if reports and parent is not None and parent != span_id:
            parents.add(parent)
    return frozenset(calls & parents) if parents else frozenset()


def reports(*usage: object) -> bool:
    """Whether a span reports usage: any of its token counts or its cost is known."""
    return any(value is not None for value in usage)
