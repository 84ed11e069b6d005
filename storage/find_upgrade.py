"""The find indexes (storage/trace_index.py) for the spans stored before them; the
previews of the texts stored before texts had them (schema migration 16); and on
PostgreSQL, the words of the texts stored before the worker split them (migration 18:
they were PostgreSQL's parser's, storage/text_words.py); the documents of tokens of the
traces stored before them (migration 21, storage/trace_facets.py).

Run once each, after the migrations, by the commands that start the worker (storage/
trace_walk.py): each stored trace's rows give their texts, attribute and name rows (or
their texts and previews anew), its traces locked on PostgreSQL as a writer locks them.
Done again after a stop midway, each adds nothing already there.
"""

from __future__ import annotations

from storage import trace_facets, trace_index, trace_texts, trace_walk
from storage.database import Database, Transaction
from storage.span_rows import SpanRow

#: The version recorded in schema_migrations once every stored trace is indexed.
UPGRADED = 1013
#: The version recorded once every stored trace's ends have their previews.
PREVIEWED = 1016
#: The version recorded once every stored text has its words split by
#: storage/text_words.py (on PostgreSQL; SQLite's full-text index is FTS5's).
WORDED = 1018
#: The version recorded once every stored trace has its documents of tokens.
FACETED = 1021
#: The version recorded once every stored trace's documents hold its resources' tokens.
RESOURCED = 1024


def _stored(tx: Transaction, project_id: str, trace_id: str) -> list[SpanRow]:
    return [SpanRow(*row) for row in tx.query(trace_texts.STORED_ROWS, (project_id, trace_id))]


def _index_trace(tx: Transaction, project_id: str, trace_id: str) -> None:
    rows = _stored(tx, project_id, trace_id)
    trace_index.write(tx, trace_index.index_rows(rows), rows, [], [(project_id, trace_id)])


def upgrade(db: Database) -> int:
    """Index every stored trace; the traces gone through (0 when it was done before).
    The traces' documents of tokens are made too, recorded done; the texts it writes have
    their previews and words: when there were none before it (a text an earlier build
    wrote is kept as it is), those are recorded done too."""
    if not trace_walk.needed(db, UPGRADED):
        return 0
    with db.transaction() as tx:
        texts_before = tx.query_one("SELECT 1 FROM span_texts LIMIT 1") is not None
    done = trace_walk.walk(db, UPGRADED, _index_trace, lock=True)
    trace_walk.record(db, FACETED)
    trace_walk.record(db, RESOURCED)
    if not texts_before:
        trace_walk.record(db, PREVIEWED)
        trace_walk.record(db, WORDED)
    return done


def _preview_trace(tx: Transaction, project_id: str, trace_id: str) -> None:
    trace_texts.give_previews(tx, project_id, trace_id, _stored(tx, project_id, trace_id))


def preview(db: Database, progress: trace_walk.Progress | None = None) -> int:
    """Give every stored trace's ends (storage/trace_texts.py) their previews, and
    forget its other texts' rows; the traces gone through (0 when it was done before)."""
    return trace_walk.walk(db, PREVIEWED, _preview_trace, lock=True, progress=progress)


def _reword_trace(tx: Transaction, project_id: str, trace_id: str) -> None:
    trace_texts.rebuild_trace(tx, project_id, trace_id)


def reword(db: Database, progress: trace_walk.Progress | None = None) -> int:
    """PostgreSQL: give every stored trace's texts their words as the worker splits
    them (its documents made anew from its spans); the traces gone through (0 when it
    was done before, and on SQLite)."""
    if not db.postgres:
        if trace_walk.needed(db, WORDED):
            trace_walk.record(db, WORDED)
        return 0
    return trace_walk.walk(db, WORDED, _reword_trace, lock=True, progress=progress)


def _facet_trace(tx: Transaction, project_id: str, trace_id: str) -> None:
    trace_facets.rebuild(tx, [(project_id, trace_id)])


def facet(db: Database, progress: trace_walk.Progress | None = None) -> int:
    """Make every stored trace's documents of tokens anew from its spans; the traces
    gone through (0 when it was done before)."""
    return trace_walk.walk(db, FACETED, _facet_trace, lock=True, progress=progress)


def resource(db: Database, progress: trace_walk.Progress | None = None) -> int:
    """Make every stored trace's documents of tokens anew, with its resources'
    attributes (documents made before held its spans' alone), by `facet` when they
    have none; the traces gone through (0 when it was done before)."""
    if trace_walk.needed(db, FACETED):
        done = facet(db, progress)
        trace_walk.record(db, RESOURCED)
        return done
    return trace_walk.walk(db, RESOURCED, _facet_trace, lock=True, progress=progress)
