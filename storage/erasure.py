"""Erasing stored spans on request (a trace, a session, a data subject's spans): an
operator's task, never a route. The trace summaries and scores follow in the same
transaction.

Only the span store is touched: entries still queued in Redis are stored afterwards
(erase once the queue is drained), a client may send the spans again, and the raw-request
archive (SPANGATE_ARCHIVE_DIR), when on, keeps its copies.
"""

from __future__ import annotations

from dataclasses import dataclass

import orjson

from storage import session_summaries, trace_index
from storage.database import Database, Transaction
from storage.index_filters import like
from storage.span_copy import lock_every
from storage.trace_summaries import recount


@dataclass(frozen=True, slots=True)
class Selection:
    """What an erasure takes: whole traces, and single spans (trace, span, start day)."""

    traces: frozenset[str]
    spans: frozenset[tuple[str, str, str]]


@dataclass(frozen=True, slots=True)
class Erased:
    """What an erasure took, or would take."""

    traces: int  # traces touched
    spans: int
    scores: int


def _has_attribute(attributes: str, key: str, value: str) -> bool:
    return any(
        pair.get("key") == key and pair.get("value", {}).get("stringValue") == value
        for pair in orjson.loads(attributes)
    )


class Eraser:
    """Select, then erase, in one project."""

    def __init__(self, db: Database, project_id: str) -> None:
        self.db = db
        self.project_id = project_id

    def trace(self, trace_id: str) -> Selection:
        """A whole trace."""
        return Selection(frozenset([trace_id.lower()]), frozenset())

    def session(self, session_id: str) -> Selection:
        """Every trace with a span of the session (a scan of the project's spans)."""
        with self.db.transaction() as tx:
            rows = tx.query(
                "SELECT DISTINCT trace_id FROM spans WHERE project_id = ? AND session_id = ?",
                (self.project_id, session_id),
            )
        return Selection(frozenset(trace for (trace,) in rows), frozenset())

    def attribute(self, key: str, value: str, whole_traces: bool) -> Selection:
        """The spans whose string attribute `key` is `value` (a data subject's spans, by
        the attribute that names them), or their whole traces."""
        needle = orjson.dumps({"key": key}).decode()[1:-1]  # "key":"..." as stored
        with self.db.transaction() as tx:
            rows = tx.query(
                "SELECT trace_id, span_id, start_day, attributes FROM spans "
                "WHERE project_id = ? AND attributes LIKE ? ESCAPE '\\'",
                # escaped: PostgreSQL's LIKE reads a backslash (a key's, doubled in
                # JSON) as its escape, and a key's % or _ as wildcards
                (self.project_id, like(needle)),
            )
        spans = {
            (t, s, d) for t, s, d, attributes in rows if _has_attribute(attributes, key, value)
        }
        if whole_traces:
            return Selection(frozenset(t for t, _, _ in spans), frozenset())
        return Selection(frozenset(), frozenset(spans))

    def count(self, selection: Selection) -> Erased:
        """What erasing would take."""
        with self.db.transaction() as tx:
            return self._apply(tx, selection, erase=False)

    def erase(self, selection: Selection) -> Erased:
        """Erase, in one transaction: spans, the scores of whole traces, summaries. On
        PostgreSQL the traces' summaries are locked first, in key order, as a writer locks
        them: a writer of one of them waits for the erasure's commit (or the erasure for
        the writer's, and erases what it wrote). A transaction that met another's is run
        again."""
        return self.db.retried(lambda tx: self._apply(tx, selection, erase=True), immediate=True)

    def _apply(self, tx: Transaction, selection: Selection, erase: bool) -> Erased:
        touched = set(selection.traces) | {trace for trace, _, _ in selection.spans}
        keys = [(self.project_id, trace) for trace in sorted(touched)]
        if erase and tx.postgres and keys:
            lock_every(tx, keys)
        spans = scores = 0
        for trace_id in sorted(selection.traces):
            spans += self._take(tx, "spans", erase, "trace_id = ?", (trace_id,))
            scores += self._take(tx, "scores", erase, "trace_id = ?", (trace_id,))
        for key in sorted(s for s in selection.spans if s[0] not in selection.traces):
            where = "trace_id = ? AND span_id = ? AND start_day = ?"
            spans += self._take(tx, "spans", erase, where, key)
        if erase:
            recount(tx, self.project_id, touched)
            trace_index.rebuild_stale(tx, keys, recounted=True)
            session_summaries.refresh_stale(tx)
        return Erased(len(touched), spans, scores)

    def _take(
        self, tx: Transaction, table: str, erase: bool, where: str, params: tuple[str, ...]
    ) -> int:
        """Delete (or count) the project's rows of `table` that `where` names."""
        where, values = f"project_id = ? AND {where}", (self.project_id, *params)
        if erase:
            return tx.execute(f"DELETE FROM {table} WHERE {where}", values)
        row = tx.query_one(f"SELECT COUNT(*) FROM {table} WHERE {where}", values)
        return int(row[0]) if row else 0
