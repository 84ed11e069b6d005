"""PostgreSQL: a batch of span rows written by the re-sending rules (storage/resend.py)
in a few set-based statements and COPYs, instead of one statement a row.

In the batch's transaction:

1. The summaries of the batch's traces that have one, the traces with a stored span
   (the store keeps one for each), are locked in key order until the commit. A writer
   of one of those traces waits for the other's commit, then applies the rules to what
   it committed.
2. The other traces get their summary first, inserted in key order: the summary table's
   key is their lock. A second writer inserting a summary of the same trace waits for
   the first one's commit, and then leaves it as the first one stored it (ON CONFLICT
   DO NOTHING): the trace now has a stored span, so its summary is locked as in 1, and
   its rows go the way of the stored traces' (4), in the same transaction. Row locks
   and keys cost no shared memory, unlike advisory locks, whose table a batch of 20,000
   one-span traces filled. Writers therefore decide exactly as one writer would, on the
   same start day or on different ones.
3. The rows of the traces whose summary the batch inserted and whose spans come once
   each in it, most rows, cannot be refused nor meet a stored row: they are COPYed into
   the span table, and those summaries were computed from them.
4. The rest go by COPY into a temporary staging table (one per connection, emptied at
   each commit). One statement a round finds the rows the window refuses and writes the
   others (insert; replace when the content differs; nothing when it is the same).
   Round k holds the k-th send of each span in the batch, so a span sent twice in one
   batch is judged against its first send, as the rules want. The rows a round inserts
   are added to their stored traces' summaries by the same statement; the summaries of
   the new traces among them, of the traces where a stored row was replaced, and of
   those that gained a model call (whose count depends on its trace's other calls:
   genai/counting.py), are then recomputed from what is stored
   (storage/trace_summaries.py).
"""

from __future__ import annotations

from operator import itemgetter
from typing import NamedTuple

from genai import MODEL_TYPES
from storage import trace_summaries
from storage.database import Transaction, arrays
from storage.errors import WriteConflict
from storage.resend import COLUMN_TYPES, FIELDS, KEY, Written, refusal, replaces, spans_repeat
from storage.span_rows import SpanRow

STAGE = "staged_spans"
_COLUMNS = ", ".join(FIELDS)
_TYPES = COLUMN_TYPES
CREATE_STAGE = (
    f"CREATE TEMP TABLE IF NOT EXISTS {STAGE} ("
    + ", ".join(f"{field} {kind}" for field, kind in zip(FIELDS, _TYPES, strict=True))
    + ", occurrence bigint NOT NULL DEFAULT 1, known boolean NOT NULL DEFAULT FALSE) "
    "ON COMMIT DELETE ROWS"
)
_TRACES = "unnest(?::text[], ?::text[]) AS traces (project_id, trace_id)"
#: Of the traces (parameters: the projects, and their traces), those with a summary:
#: those with a stored span. Their summaries are locked, in key order, until the commit.
LOCK_KNOWN_TRACES = (
    f"SELECT summary.project_id, summary.trace_id FROM {_TRACES} JOIN trace_summaries AS "
    "summary ON summary.project_id = traces.project_id AND summary.trace_id = traces.trace_id "
    "ORDER BY summary.project_id, summary.trace_id FOR UPDATE OF summary"
)
#: The summaries of new traces (parameters: an array a column), in key order; the traces
#: whose summary it inserted. Another writer's, inserted meanwhile, is left as it is:
#: that trace was stored by the time this statement saw the key (it waited for the
#: other's commit).
INSERT_NEW_SUMMARIES = (
    f"INSERT INTO trace_summaries ({trace_summaries.COLUMNS}) SELECT * FROM unnest("
    + ", ".join(f"?::{kind}[]" for kind in trace_summaries.COLUMN_TYPES)
    + ") ON CONFLICT (project_id, trace_id) DO NOTHING RETURNING project_id, trace_id"
)
_SPAN_KEY = itemgetter(0, 1, 2)  # project, trace, span
_TRACE_KEY = itemgetter(0, 1)  # project, trace


_SAME_SPAN = (
    "{a}.project_id = {b}.project_id AND {a}.trace_id = {b}.trace_id AND {a}.span_id = {b}.span_id"
)
_SAME_KEY = _SAME_SPAN + " AND {a}.start_day = {b}.start_day"


def write_round(window_ms: int) -> str:
    """The statement of a round (parameter: its number): writes the round's rows that
    the window does not refuse, adds those it inserts to their stored traces' summaries,
    and answers the spans (project, trace, span, refused, same) it refused or that met a
    stored row of their key (same: which wrote nothing; else they replaced it: other
    content, or the same sent earlier, storage/resend.py). Its parts see the table as
    it was before the statement, which is exact: a round holds each span once. A row
    that may meet something stored (`known`: its trace has a stored span; or its span
    was sent earlier in the batch) is judged by the stored rows of its span, read once
    (`judged`): whether one refuses it, whether its own key is stored, and whether it
    replaces it. The others are inserted as they are.

    The judged rows carry every column, so nothing joins them back to the stage: the
    planner, which guesses a few rows of a round where there are thousands, ran that
    join as a loop over the stage for each row (80 s for 300,000 spans)."""
    same_key = "stored.start_day = new.start_day"
    judged = (
        "SELECT new.*, COALESCE(met.refuses, FALSE) AS refuses, "
        "COALESCE(met.present, FALSE) AS present, COALESCE(met.changed, FALSE) AS changed "
        f"FROM {STAGE} AS new LEFT JOIN LATERAL (SELECT "
        f"bool_or({refusal(lambda field: f'new.{field}', window_ms)}) AS refuses, "
        f"bool_or({same_key}) AS present, "
        f"bool_or({same_key} AND {replaces('stored', 'new', window_ms)}) AS changed "
        f"FROM spans AS stored WHERE {_SAME_SPAN.format(a='stored', b='new')}) AS met "
        "ON new.known OR new.occurrence > 1 WHERE new.occurrence = ?"
    )
    changed = ", ".join(f"{f} = new.{f}" for f in FIELDS if f not in KEY)
    return (
        f"WITH judged AS MATERIALIZED ({judged}), "
        f"replaced AS (UPDATE spans SET {changed} FROM judged AS new WHERE NOT new.refuses "
        f"AND new.changed AND {_SAME_KEY.format(a='spans', b='new')}), "
        f"inserted AS (INSERT INTO spans ({_COLUMNS}) SELECT {_COLUMNS} FROM judged "
        "WHERE NOT refuses AND NOT present), "
        "inserted_of_stored AS (SELECT * FROM judged WHERE known AND NOT refuses "
        "AND NOT present), "
        f"merged AS ({trace_summaries.merged('inserted_of_stored')}) "
        "SELECT project_id, trace_id, span_id, refuses, present AND NOT changed AS same "
        "FROM judged WHERE refuses OR present"
    )


def _occurrences(rows: list[SpanRow]) -> list[int]:
    """Which send of its span each row is in the batch (1 for the first)."""
    seen: dict[tuple[str, str, str], int] = {}
    occurrences = []
    for span in map(_SPAN_KEY, rows):
        seen[span] = seen.get(span, 0) + 1
        occurrences.append(seen[span])
    return occurrences


class Batch(NamedTuple):
    """Rows to write, with what writing them needs that reads nothing stored: computed
    before their transaction, on another thread than the writer's (the worker's decoding
    thread), so that the transaction holds statements only and its server process
    never waits on the writer between them."""

    rows: list[SpanRow]
    #: the rows' traces (project, trace), in order of first appearance
    traces: list[tuple[str, str]]
    #: which send of its span each row is, when a span comes twice; else empty
    occurrences: list[int]
    #: every trace's summary as a new trace's (by the rows), in key order
    summaries: list[tuple[object, ...]]

    @classmethod
    def of(cls, rows: list[SpanRow]) -> Batch:
        occurrences = _occurrences(rows) if spans_repeat(rows) else []
        # a trace with a span sent twice has its summary made anew from what is stored
        # (`_write_checked`), whatever the window: this one is its placeholder
        summaries = trace_summaries.summaries_of_written(rows, set(), [], 0, bool(occurrences))
        summaries.sort(key=_TRACE_KEY)
        return cls(rows, list(dict.fromkeys(map(_TRACE_KEY, rows))), occurrences, summaries)


def write(tx: Transaction, batch: Batch, window_ms: int) -> Written:
    """Write a batch's rows in `tx` by the rules, and their traces' summaries; the
    positions of the rows the window refused, and of those that met a stored row of the
    same content (and wrote nothing). WriteConflict: the server broke a deadlock
    with another writer by ending this transaction, or a trace was erased while it was
    being locked (write the batch again, in a new transaction)."""
    rows, occurrences = batch.rows, batch.occurrences
    if not rows:
        return Written([], [])
    known = locked(tx, batch.traces)
    if len(known) < len(batch.traces):  # first, the new traces' summaries: their locks
        summaries = batch.summaries
        if known:
            summaries = [summary for summary in summaries if _TRACE_KEY(summary) not in known]
        inserted = set(map(tuple, tx.query(INSERT_NEW_SUMMARIES, arrays(summaries))))
        if len(inserted) < len(summaries):  # another writer stored some of them meanwhile
            taken = [_TRACE_KEY(s) for s in summaries if _TRACE_KEY(s) not in inserted]
            stored = locked(tx, taken)
            if len(stored) < len(taken):  # and they were erased since: start again
                raise WriteConflict("a trace's summary went while it was being locked")
            known |= stored
    checked = set(known)
    if occurrences:  # a trace with a span sent twice in the batch
        checked.update(_TRACE_KEY(row) for row, n in zip(rows, occurrences, strict=True) if n > 1)
    fresh = [row for row in rows if _TRACE_KEY(row) not in checked] if checked else rows
    if fresh:
        tx.copy(f"spans ({_COLUMNS})", _TYPES, fresh)
    if len(fresh) == len(rows):
        return Written([], [])
    return _write_checked(tx, rows, occurrences, known, checked, window_ms)


def locked(tx: Transaction, traces: list[tuple[str, str]]) -> set[tuple[str, str]]:
    """Of the traces (project, trace; at least one), those with a summary, locked until
    the commit. A summary deleted while this transaction waited for its lock is not
    among them, nor one another transaction is inserting: a writer waits for that one as
    it inserts its new traces' (`write`), and so does `lock_every`."""
    return set(map(tuple, tx.query(LOCK_KNOWN_TRACES, arrays(traces))))


#: A placeholder summary of each trace (parameters: the projects, and their traces) that
#: has none, in key order; those inserted. Its key is the trace's lock, as a writer's new
#: trace's summary is (another's, inserted meanwhile, is waited for, then left).
_CLAIM_TRACES = (
    "INSERT INTO trace_summaries (project_id, trace_id, sort_ns, start_ns, span_count, "
    f"error_count, received_ms) SELECT project_id, trace_id, 0, 0, 0, 0, 0 FROM {_TRACES} "
    "ORDER BY 1, 2 ON CONFLICT (project_id, trace_id) DO NOTHING RETURNING project_id, trace_id"
)


def lock_every(tx: Transaction, traces: list[tuple[str, str]]) -> None:
    """Lock every trace of `traces`, whether or not it has a summary, as a writer does
    (`write`): each summary stored, and for the others a placeholder summary inserted,
    whose key is their lock (a writer inserting a new trace's waits for it; one whose
    insert this transaction met is waited for, then locked). Erasure and retention then
    delete rows under the locks, and `trace_summaries.recount` of every trace makes each
    placeholder a summary or deletes it."""
    held = locked(tx, traces)
    missing = [trace for trace in traces if trace not in held]
    while missing:
        claimed = set(map(tuple, tx.query(_CLAIM_TRACES, arrays(missing))))
        others = [trace for trace in missing if trace not in claimed]
        held = locked(tx, others) if others else set()
        missing = [trace for trace in others if trace not in held]


def _write_checked(
    tx: Transaction,
    rows: list[SpanRow],
    occurrences: list[int],
    known: set[tuple[str, str]],
    checked: set[tuple[str, str]],
    window_ms: int,
) -> Written:
    """The rows of the `checked` traces, staged and then written round by round; the
    positions of the rows refused, and of those that met a stored row of the same
    content, in queue order."""
    sends = occurrences or [1] * len(rows)
    staged = [
        (*row, send, trace in known)
        for row, send in zip(rows, sends, strict=True)
        if (trace := _TRACE_KEY(row)) in checked
    ]
    tx.execute(CREATE_STAGE)
    tx.copy(f"{STAGE} ({_COLUMNS}, occurrence, known)", (*_TYPES, "bigint", "boolean"), staged)
    statement = write_round(window_ms)
    refused: set[tuple[int, tuple[str, str, str]]] = set()
    unchanged: set[tuple[int, tuple[str, str, str]]] = set()
    replaced: set[tuple[str, str]] = set()  # stored traces with a stored row replaced
    for round_no in range(1, max(sends) + 1):
        for project, trace, span, refuses, same in tx.query(statement, (round_no,)):
            if refuses:
                refused.add((round_no, (project, trace, span)))
            elif same:
                unchanged.add((round_no, (project, trace, span)))
            elif (project, trace) in known:
                replaced.add((project, trace))
    # a model call added to a stored trace may wrap a stored one or be a wrapper
    # (genai/counting.py), which adding its row to the summary cannot tell
    replaced.update(
        trace for row in rows if row.llm_type in MODEL_TYPES and (trace := _TRACE_KEY(row)) in known
    )
    trace_summaries.refresh_staged(tx, STAGE, len(checked) > len(known), sorted(replaced))
    if not refused and not unchanged:
        return Written([], [])
    sent = [(send, _SPAN_KEY(row)) for row, send in zip(rows, sends, strict=True)]
    return Written(
        [at for at, key in enumerate(sent) if key in refused],
        [at for at, key in enumerate(sent) if key in unchanged],
    )
