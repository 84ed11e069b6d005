"""The GenAI part of a trace's summary (storage/trace_summaries.py): LLM calls, models,
user, tokens and cost, and which spans give its input and output.

Counting, so that nothing is counted twice: a trace's tokens and cost are those of its
model calls (spans of GenAI type `llm` or `embedding`, one per provider call): a
wrapper (genai/counting.py: a framework's model call over the provider call) is no call
of `llm_calls`, and its usage counts only when no call below it reports any; the usage other
spans report of their own (an agent's, a chain's) is kept apart and shown only when no
model call of the trace reports any. A sum is None while nothing is known.

Input and output: a trace's input is the first user message of its first LLM call, or
its earliest root's input when it has no LLM call; its output the last LLM call's. The
summary keeps which spans those are, each as one text, its `key`: the span's order
(start, span id, start day) written so that text order is that order, so the earliest
is the least text in SQL (MIN, LEAST) as in Python, and two summaries merge by
comparison. The list shows those spans' previews, which the worker keeps for them
(storage/trace_texts.py, storage/trace_list.py).
"""

from __future__ import annotations

from typing import Any

import orjson

from genai.counting import wrappers_of
from storage.span_rows import SpanRow

#: The columns, after trace_summaries' own, with their PostgreSQL types.
COLUMNS = (
    ("llm_calls", "bigint"),
    ("models", "text"),
    ("user_id", "text"),
    ("input_tokens", "bigint"),
    ("output_tokens", "bigint"),
    ("total_tokens", "bigint"),
    ("cost_usd", "double precision"),
    ("other_input_tokens", "bigint"),
    ("other_output_tokens", "bigint"),
    ("other_total_tokens", "bigint"),
    ("other_cost_usd", "double precision"),
    ("first_llm", "text"),
    ("last_llm", "text"),
    ("first_root", "text"),
)
NAMES = tuple(name for name, _ in COLUMNS)
USAGE = ("input_tokens", "output_tokens", "total_tokens", "cost_usd")
#: A sum of token counts stops here, inside a BIGINT: a trace's or session's spans may
#: count more than 64 bits hold (each under genai/view.py's MAX_TOKENS, millions of
#: them), and a sum that overflowed would refuse the rows that made it.
MAX_SUM = 9 * 10**18


def capped_sum(expr: str, postgres: bool) -> str:
    """SQL: the sum of the integer `expr` (NULL when none is known), at most MAX_SUM.
    SQLite's SUM fails past 64 bits, whatever follows: its TOTAL (a float) is what it
    caps, exact up to 2**53 (9×10^15 tokens in a trace or session) and within a float's
    precision beyond, where `summary_of` and PostgreSQL's SUM of a BIGINT (numeric) are
    exact."""
    if postgres:
        return f"(CASE WHEN SUM({expr}) > {MAX_SUM} THEN {MAX_SUM} ELSE SUM({expr}) END)::bigint"
    return (
        f"(CASE WHEN COUNT({expr}) = 0 THEN NULL WHEN TOTAL({expr}) >= {MAX_SUM} "
        f"THEN {MAX_SUM} ELSE CAST(TOTAL({expr}) AS INTEGER) END)"
    )


_MODEL_CALLS = ("llm", "embedding")
_IN = "('llm', 'embedding')"
KEY_LENGTH = 20 + 16 + 10  # start (decimal, zero-padded), span id, start day


#: Of span rows `{c}`, those that make their parent a wrapper when it is a model call.
WRAPPING = (
    f"{{c}}llm_type IN {_IN} AND {{c}}parent_span_id IS NOT NULL "
    "AND {c}parent_span_id <> {c}span_id"
)
#: Whether a span row `{c}` reports usage.
REPORTS = (
    "({c}input_tokens IS NOT NULL OR {c}output_tokens IS NOT NULL "
    "OR {c}total_tokens IS NOT NULL OR {c}cost_usd IS NOT NULL)"
)


def aggregates(s: str, postgres: bool, calls: str = "", usage: str = "") -> list[str]:
    """SQL aggregates of span rows (`s`: the prefix of their columns, `s.` or empty)
    giving NAMES, in order; `calls`, a condition true of a model call that is a provider
    call, `usage` of one whose usage counts (genai/counting.py; none: every one)."""
    start = f"lpad({s}start_ns::text, 20, '0')" if postgres else f"printf('%020d', {s}start_ns)"
    exact = ' COLLATE "C"' if postgres else ""
    key = f"({start} || {s}span_id || {s}start_day){exact}"

    if postgres:
        models = (
            f"to_json(array_agg(DISTINCT {s}model ORDER BY {s}model) "
            f"FILTER (WHERE {s}model IS NOT NULL))::text"
        )
    else:  # SQLite 3.40 orders no aggregate's input: a sorted subquery, for traces with any
        models = (
            f"CASE WHEN COUNT({s}model) > 0 THEN (SELECT json_group_array(m) FROM "
            "(SELECT DISTINCT model AS m FROM spans AS x WHERE x.project_id = s.project_id "
            "AND x.trace_id = s.trace_id AND x.model IS NOT NULL ORDER BY m)) END"
        )
    llm, root = f"{s}llm_type = 'llm'", f"{s}parent_span_id IS NULL"
    call = f" AND {calls}" if calls else ""
    counted = f" AND {usage}" if usage else ""
    return [
        f"SUM(CASE WHEN {llm}{call} THEN 1 ELSE 0 END)",
        models,
        f"MIN({s}user_id)",
        *(
            _sum(f"CASE WHEN {s}llm_type IN {_IN}{counted} THEN {s}{c} END", c, postgres)
            for c in USAGE
        ),
        *(_sum(f"CASE WHEN {s}llm_type NOT IN {_IN} THEN {s}{c} END", c, postgres) for c in USAGE),
        f"MIN(CASE WHEN {llm} THEN {key} END)",
        f"MAX(CASE WHEN {llm} THEN {key} END)",
        f"MIN(CASE WHEN {root} THEN {key} END)",
    ]


def _sum(expr: str, column: str, postgres: bool) -> str:
    return f"SUM({expr})" if column == "cost_usd" else capped_sum(expr, postgres)


def _plus(column: str) -> str:
    both = (
        f"summary.{column} + added.{column}"
        if column.endswith("cost_usd")
        else f"LEAST(summary.{column}::numeric + added.{column}, {MAX_SUM})::bigint"
    )
    return (
        f"CASE WHEN added.{column} IS NULL THEN summary.{column} "
        f"WHEN summary.{column} IS NULL THEN added.{column} ELSE {both} END"
    )


def merge_sets() -> list[str]:
    """PostgreSQL: the SET clauses that merge `added` (rows' aggregates, named as NAMES)
    into `summary`, as the aggregate of both rows' sets would give."""
    models = (
        "CASE WHEN added.models IS NULL THEN summary.models "
        "WHEN summary.models IS NULL THEN added.models "
        "ELSE (SELECT to_json(array_agg(DISTINCT m ORDER BY m))::text FROM "
        "(SELECT json_array_elements_text(summary.models::json) UNION ALL "
        "SELECT json_array_elements_text(added.models::json)) AS merged (m)) END"
    )
    return [
        "llm_calls = summary.llm_calls + added.llm_calls",
        f"models = {models}",
        "user_id = LEAST(summary.user_id, added.user_id)",
        *(f"{c} = {_plus(c)}" for c in USAGE),
        *(f"other_{c} = {_plus('other_' + c)}" for c in USAGE),
        'first_llm = LEAST(summary.first_llm COLLATE "C", added.first_llm)',
        'last_llm = GREATEST(summary.last_llm COLLATE "C", added.last_llm)',
        'first_root = LEAST(summary.first_root COLLATE "C", added.first_root)',
    ]


def key(row: SpanRow) -> str:
    """A span row's order as one text (its start, span id and start day)."""
    return _key(row.start_ns, row.span_id, row.start_day)


def _key(start_ns: int, span_id: str, start_day: str) -> str:
    return f"{start_ns:020d}{span_id}{start_day}"


def span_of(trace_id: str, text: str) -> tuple[str, str, str]:
    """The span (trace, span id, start day) a `key` of the trace `trace_id` names."""
    return trace_id, text[20:36], text[36:KEY_LENGTH]


def summary_of(spans: list[SpanRow]) -> tuple[object, ...]:
    """NAMES's values for a trace's stored rows, as the SQL aggregates give them. One
    pass (the worker's writer summarises every trace it writes); the spans' orders are
    compared as (start, span id, start day), which is the order of their `key`s."""
    calls: list[Any] = [None] * 4
    others: list[Any] = [None] * 4
    llm_calls = 0
    models: set[str] = set()
    user: str | None = None
    first = last = root = None
    wrapping = wrappers_of(spans)
    for row in spans:
        kind = row.llm_type
        if row.model is not None:
            models.add(row.model)
        if row.user_id is not None and (user is None or row.user_id < user):
            user = row.user_id
        if row.parent_span_id is None:
            order = (row.start_ns, row.span_id, row.start_day)
            root = order if root is None or order < root else root
        if kind is None:
            continue
        call = kind in _MODEL_CALLS
        if not (call and row.span_id in wrapping.usage):
            sums = calls if call else others
            for at, value in enumerate(_usage(row)):
                if value is not None:
                    sums[at] = value if sums[at] is None else sums[at] + value
        if kind == "llm":
            llm_calls += row.span_id not in wrapping.calls
            order = (row.start_ns, row.span_id, row.start_day)
            first = order if first is None or order < first else first
            last = order if last is None or order > last else last
    return (
        llm_calls,
        orjson.dumps(sorted(models)).decode() if models else None,
        user,
        *_capped(calls),
        *_capped(others),
        *(None if order is None else _key(*order) for order in (first, last, root)),
    )


def _capped(sums: list[Any]) -> list[Any]:
    """USAGE's sums with the token counts' (not the cost's) at most MAX_SUM, as
    capped_sum gives them."""
    return [
        v if v is None or c == "cost_usd" else min(v, MAX_SUM)
        for c, v in zip(USAGE, sums, strict=True)
    ]


def _usage(row: SpanRow) -> tuple[int | None, int | None, int | None, float | None]:
    return row.input_tokens, row.output_tokens, row.total_tokens, row.cost_usd


def plain_summary(spans: list[SpanRow]) -> tuple[object, ...]:
    """summary_of for rows of which none has a GenAI view or a user (most traces):
    cheaper."""
    roots = [row for row in spans if row.parent_span_id is None]
    root = min(map(key, roots), default=None)
    return (0, None, None, None, None, None, None, None, None, None, None, None, None, root)


def models_of(text: str | None) -> list[str]:
    """The distinct models a summary's `models` holds, sorted."""
    if not text:
        return []
    found = orjson.loads(text)
    return sorted({model for model in found if isinstance(model, str)})
