"""The GenAI view's facts for the spans stored before the store had columns for them;
and the users of the spans no convention describes stored before the worker kept them.

Run once each, after the migrations, by the commands that start the worker (storage/
trace_walk.py): in each stored trace, the spans that a convention describes get their
facts (the spans that name a user, their user), and the trace's summary is made anew
from its spans (keeping its order in the list). Done again after a stop midway, it
changes nothing already done. A span that the worker replaced meanwhile is left as the
worker wrote it (the update names its content hash).
"""

from __future__ import annotations

from functools import partial

from genai.prices import Pricer
from storage import session_summaries, trace_index, trace_summaries, trace_walk
from storage.database import Database, Transaction
from storage.schema import SPAN_GENAI_COLUMNS
from storage.span_genai import described, facts, stored_user, stored_view

#: The version recorded in schema_migrations once every stored span has its facts.
UPGRADED = 1011
#: The version recorded once every stored span no convention describes has the user
#: its attributes name.
USERS_GIVEN = 1022

_SET = ", ".join(f"{name} = ?" for name, _ in SPAN_GENAI_COLUMNS)
_UPDATE = (
    f"UPDATE spans SET {_SET}, session_id = COALESCE(session_id, ?) WHERE project_id = ? "
    "AND trace_id = ? AND span_id = ? AND start_day = ? AND content_hash = ?"
)
_REFRESH = {
    postgres: trace_summaries.refresh_statement(
        "s.project_id = ? AND s.trace_id = ?", postgres=postgres
    )
    for postgres in (False, True)
}


def _upgrade_trace(tx: Transaction, project_id: str, trace_id: str, pricer: Pricer) -> None:
    rows = tx.query(
        "SELECT span_id, start_day, name, kind, attributes, events, content_hash FROM spans "
        "WHERE project_id = ? AND trace_id = ?",
        (project_id, trace_id),
    )
    for span_id, start_day, name, kind, attributes, events, content_hash in rows:
        if not described(kind, attributes, events):
            continue
        view = stored_view(name, kind, attributes, events)
        if view is None:
            continue
        found = facts(view, pricer)
        tx.execute(
            _UPDATE,
            (
                *found,
                view.session_id,
                project_id,
                trace_id,
                span_id,
                start_day,
                content_hash,
            ),
        )
    tx.execute(_REFRESH[tx.postgres], (project_id, trace_id))


def upgrade(db: Database, pricer: Pricer, progress: trace_walk.Progress | None = None) -> int:
    """Give the spans stored before the GenAI columns their facts, and their traces'
    summaries their sums; the traces gone through (0 when it was done before)."""
    return trace_walk.walk(db, UPGRADED, partial(_upgrade_trace, pricer=pricer), progress=progress)


_USERLESS = (
    "SELECT span_id, start_day, attributes, content_hash FROM spans WHERE project_id = ? "
    "AND trace_id = ? AND llm_type IS NULL AND user_id IS NULL"
)
_SET_USER = (
    "UPDATE spans SET user_id = ? WHERE project_id = ? AND trace_id = ? AND span_id = ? "
    "AND start_day = ? AND content_hash = ?"
)


def _give_users(tx: Transaction, project_id: str, trace_id: str) -> None:
    given = False
    for span_id, start_day, attributes, content_hash in tx.query(_USERLESS, (project_id, trace_id)):
        user = stored_user(attributes)
        if user is not None:
            tx.execute(_SET_USER, (user, project_id, trace_id, span_id, start_day, content_hash))
            given = True
    if given:
        tx.execute(_REFRESH[tx.postgres], (project_id, trace_id))
        # PostgreSQL notes an updated span's trace for its indexes, as a replaced one's
        trace_index.rebuild_stale(tx, [(project_id, trace_id)], recounted=True)
        session_summaries.refresh_stale(tx)


def give_users(db: Database, progress: trace_walk.Progress | None = None) -> int:
    """Give the spans no convention describes the users their attributes name
    (`user.id`, `enduser.id`: storage/span_genai.py's with_user), and their traces'
    and sessions' summaries their users; the traces gone through (0 when it was done
    before)."""
    return trace_walk.walk(db, USERS_GIVEN, _give_users, lock=True, progress=progress)
