"""The indexes that find a trace, written by the span store in the transaction that
writes the spans (schema migration 13, storage/find_schema.py).

* The LLM text of the spans (storage/trace_texts.py): a document of a trace's words a
  batch and start day, and the previews of the spans that give its input and output.
* The attributes and span names of the spans (storage/trace_facets.py): a document of
  a trace's tokens a batch, and a project's distinct span names.

What a batch adds is made before its transaction (`index_rows`, on the worker's
decoding thread), from the documents of tokens the C row builder gives where it built
the rows (nothing parsed again), and written in the transaction that writes the spans.

Exact under the re-sending rules: the rows the window refused add nothing, nor do those
that met a stored row of the same content sent before (a span sent again: it may come
under another resource, which the content leaves out, and is stored as it was); a stored
row replaced or deleted has its previews deleted and is noted stale with its start day,
whose trace's documents of tokens, and whose trace's documents of words of that day,
are made anew here from what is stored (`rebuild_stale`), in the same transaction, by
whoever holds the trace's lock: the writer after a batch, erasure and retention after
they delete. A trigger notes a deleted row, and on PostgreSQL a replaced one; on SQLite
the writer notes the rows that may replace a stored one of other content
(`note_replaced`, and `trace_texts.forget_previews`): an update trigger on the spans
made every insert of the upsert, most of which replace nothing, cost twice as much.
"""

from __future__ import annotations

from collections.abc import Collection, Sequence
from operator import itemgetter
from typing import NamedTuple

from storage import document_ceilings, trace_facets, trace_texts
from storage.database import Transaction, arrays
from storage.resend import ROW_KEY, RowKey, Stored, Written, replaced_by
from storage.span_rows import SpanRow


class IndexRows(NamedTuple):
    """What a batch's rows add to the indexes, made before its transaction (by the
    worker, on its decoding thread): nothing stored is read."""

    #: the rows indexed: the batch's, each span's last send only
    rows: list[SpanRow]
    previews: list[trace_texts.Previews]
    documents: list[trace_texts.Document]
    facets: list[trace_facets.Facets]
    names: list[trace_facets.Name]


def index_rows(rows: list[SpanRow], facets: list[trace_facets.Facets] | None = None) -> IndexRows:
    """The index rows of a batch (`facets`: its traces' documents of tokens, when the row
    builder gave them); a span sent twice in it is indexed by its last send, the one
    stored."""
    last = {row[:4]: at for at, row in enumerate(rows)}  # project, trace, span, day
    if len(last) < len(rows):
        # the documents of the traces of a span sent twice made anew of the last sends
        again = {row[:2] for at, row in enumerate(rows) if last[row[:4]] != at}
        rows = [rows[at] for at in sorted(last.values())]
        if facets is not None:
            facets = [document for document in facets if document[:2] not in again]
            facets += documents([row for row in rows if row[:2] in again])
    facets = documents(rows) if facets is None else trace_facets.merged(facets)
    names = trace_facets.names_of(map(_NAMED, rows))
    return IndexRows(rows, *trace_texts.texts_of(rows), facets, names)


#: What a row's documents of tokens are made of: project, trace, name, attributes, and
#: its resource's text (the key a worker's row holds carries it: storage/shared_texts.py).
_FACETED = itemgetter(
    *(SpanRow._fields.index(f) for f in ("project_id", "trace_id", "name", "attributes"))
)
_RESOURCE = itemgetter(SpanRow._fields.index("resource"))


def _faceted(row: SpanRow) -> trace_facets.Faceted:
    resource = _RESOURCE(row)
    return (*_FACETED(row), getattr(resource, "body", resource))


_NAMED = itemgetter(SpanRow._fields.index("project_id"), SpanRow._fields.index("name"))


def documents(rows: list[SpanRow]) -> list[trace_facets.Facets]:
    """The documents of tokens of the traces of `rows`, made in Python (where the C row
    builder made none)."""
    return trace_facets.documents_of(map(_faceted, rows))


#: A row's resource (what a span sent again may carry anew).
_RESOURCE_AT = SpanRow._fields.index("resource")


def unchanged(rows: list[SpanRow], written: Written) -> list[int]:
    """Of the rows just written (`written`: what the rules did with them), those that
    met a stored row of the same content (`met`: a span sent again) under a resource:
    it wrote nothing, and its resource, which its content leaves out, must not be
    indexed."""
    return [at for at in written.met if rows[at][_RESOURCE_AT] != "{}"]


def write(
    tx: Transaction,
    index: IndexRows,
    rows: list[SpanRow],
    left_out: list[int],
    traces: Collection[tuple[str, str]],
) -> None:
    """Index a batch just written in `tx` (`rows`, whose `index_rows` is `index`;
    `left_out`: the positions of those that wrote nothing: the window refused them, or
    they were `unchanged`), then make the stale traces' indexes anew (`traces`: the
    rows' traces, which `tx` holds locked; `rebuild_stale`)."""
    if left_out:  # rare: the batch indexed anew without those rows
        gone = set(left_out)
        index = index_rows([row for at, row in enumerate(rows) if at not in gone])
    trace_texts.write(tx, index.previews, index.documents)
    trace_facets.write(tx, index.facets, index.names)
    rebuild_stale(tx, traces)


#: What a stale row notes of a span row replaced or deleted.
_STALE_COLUMNS = "project_id, trace_id, start_day"
#: PostgreSQL: the stale rows of the traces asked (parameters: their projects, traces).
_TAKE_STALE = (
    "DELETE FROM trace_index_stale AS stale USING unnest(?::text[], ?::text[]) AS asked "
    "(project_id, trace_id) WHERE stale.project_id = asked.project_id "
    "AND stale.trace_id = asked.trace_id "
    "RETURNING stale.project_id, stale.trace_id, stale.start_day"
)


def rebuild_stale(
    tx: Transaction, traces: Collection[tuple[str, str]], recounted: bool = False
) -> int:
    """Make the documents of the traces of the span rows noted stale (replaced or
    deleted) anew: their tokens, and their words of those rows' days; and give their
    ends the previews they lack (their summaries made anew before); how many traces
    were looked at. `recounted` (erasure, retention: every summary of `traces` was
    recounted): the ends of all of `traces` are given theirs, a trace with no note left
    too (a writer may have taken the notes of a dropped partition's rows first, and
    given the ends its summary named before the recount); and on SQLite, their
    documents that carry another sort value than the recounted summary's are made anew
    (storage/document_ceilings.py).

    On PostgreSQL, only `traces` (project, trace) are looked at: those whose summaries
    `tx` holds locked, as any transaction that changes a trace's span rows does first.
    Another writer of one of them waits for the commit, and no two transactions ever
    make one trace's documents at once (each would keep its own, unseen by the other).
    The stale rows of the other traces are their own writers' (retention's of a
    partition dropped: those it takes a chunk of traces at a time). SQLite has one
    writer at a time, which takes every stale row: none outlives its transaction."""
    if tx.postgres:
        stale = tx.query(_TAKE_STALE, arrays(list(traces))) if traces else []
    else:
        stale = tx.query(f"SELECT {_STALE_COLUMNS} FROM trace_index_stale")
        if stale:
            tx.execute("DELETE FROM trace_index_stale")
    taken = {(project, trace) for project, trace, _ in stale}
    days = {tuple(day) for day in stale if day[2] is not None}
    if recounted:  # a recount may move a trace's sort value: its documents' go with it
        facets, texts = document_ceilings.resorted(tx, traces)
        taken |= facets
        days |= texts
    if taken or days:
        trace_facets.rebuild(tx, taken)
        trace_texts.rebuild(tx, days)
    trace_texts.give_ends(tx, traces if recounted else taken)
    return len(taken)


#: SQLite: the keys one query of stored rows asks (4 parameters each; old SQLite allows 999).
_KEYS_ASKED = 240


def stored_before(tx: Transaction, rows: Sequence[SpanRow]) -> dict[RowKey, Stored]:
    """SQLite, before an upsert: what the rules read of the stored rows of these rows'
    keys (project, trace, span, day), by key."""
    keys = list({ROW_KEY(row) for row in rows})
    found: dict[RowKey, Stored] = {}
    for first in range(0, len(keys), _KEYS_ASKED):
        part = keys[first : first + _KEYS_ASKED]
        values = ", ".join("(?, ?, ?, ?)" for _ in part)
        for *stored_key, content_hash, received_ms in tx.query(
            f"WITH asked (project_id, trace_id, span_id, start_day) AS (VALUES {values}) "
            "SELECT s.project_id, s.trace_id, s.span_id, s.start_day, s.content_hash, "
            "s.received_ms FROM asked JOIN spans AS s ON s.project_id = asked.project_id "
            "AND s.trace_id = asked.trace_id AND s.span_id = asked.span_id "
            "AND s.start_day = asked.start_day",
            [value for key in part for value in key],
        ):
            found[tuple(stored_key)] = Stored(content_hash, received_ms)
    return found


def note_replaced(
    tx: Transaction, rows: Sequence[SpanRow], stored: dict[RowKey, Stored], window_ms: int
) -> None:
    """SQLite, before an upsert: note stale the stored rows (`stored_before`) that the
    upsert may replace (storage/resend.py: other content, or the same received later,
    whose resource may be another); noting one it keeps, refused by the window, is
    harmless: its trace's rows are made anew from what is stored."""
    stale = {
        (row.project_id, row.trace_id, row.start_day)
        for row in rows
        if (kept := stored.get(ROW_KEY(row))) is not None and replaced_by(kept, row, window_ms)
    }
    if stale:
        tx.executemany(
            f"INSERT INTO trace_index_stale ({_STALE_COLUMNS}) VALUES (?, ?, ?)", sorted(stale)
        )


def stale_partition(tx: Transaction, partition: str) -> None:
    """PostgreSQL: note every span row of a partition about to be dropped as stale (a
    dropped table fires no trigger)."""
    tx.execute(
        f"INSERT INTO trace_index_stale ({_STALE_COLUMNS}) SELECT {_STALE_COLUMNS} FROM {partition}"
    )
