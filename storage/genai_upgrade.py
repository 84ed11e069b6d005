"""The GenAI view's facts for the spans stored before the store had columns for them,
and for those stored before a convention described them.

Run once each, after the migrations, by the commands that start the worker (storage/
trace_walk.py): in each stored trace, the spans that a convention describes get their
facts (and a span of none the user its attributes name), and the trace's summary is
made anew from its spans (keeping its order in the list). Done again after a stop
midway, it changes nothing already done. A span that the worker replaced meanwhile is
left as the worker wrote it (the update names its content hash).
"""

from __future__ import annotations

import logging
from functools import partial

from genai import GenAIView, conventions
from genai.prices import Pricer
from storage import session_summaries, trace_index, trace_summaries, trace_texts, trace_walk
from storage.database import Database, Transaction
from storage.schema import SPAN_GENAI_COLUMNS
from storage.span_genai import described, facts, stored_ids, stored_view
from storage.storable import id_text, no_nul

#: The version recorded in schema_migrations once every stored span has its facts.
UPGRADED = 1011
#: The version recorded once every stored span of no convention when it was stored has
#: the facts a convention gives it now, and the user its attributes name.
REDESCRIBED = 1022
#: The version recorded once every stored model call stored without a model has the one
#: its parameters name (genai/view.py: a call that failed before an answer).
MODELLED = 1023
#: The version recorded once every stored trace with a model call under a model call
#: has its summary counting each provider call once (genai/counting.py), and every
#: stored OTel GenAI workflow (`invoke_workflow`) is a chain (it was a model call when
#: it carried messages, and nothing without them).
COUNTED_ONCE = 1025
#: The version recorded once every stored span that names its user or session by
#: OpenLLMetry's association properties (genai/conventions.py) has them.
ASSOCIATED = 1026
#: The version recorded once every stored trace with an embedding call that gives its
#: texts (OpenInference's `embedding.embeddings.N.embedding.text`) has them in its text
#: index and previews.
EMBEDDED = 1027

log = logging.getLogger("spangate.worker")

_USER_AT = [name for name, _ in SPAN_GENAI_COLUMNS].index("user_id")


def _ids(user: str | None, session: str | None) -> tuple[str | None, str | None]:
    """A user and session id as the worker stores them (storage/storable.py)."""
    return (None if user is None else id_text(user), None if session is None else id_text(session))


def _give_ids(tx: Transaction, attributes: str, key: tuple[str, ...]) -> bool:
    """Give the stored span `key` (project, trace, span, day, content hash) the user and
    session its attributes name, as span_genai.with_user does a span no convention
    describes; whether they name either."""
    user, session = stored_ids(attributes, True)
    if user is None and session is None:
        return False
    tx.execute(_SET_IDS, (*_ids(user, session), *key))
    return True


def _as_stored(values: tuple[object, ...], session: str | None) -> tuple[object, ...]:
    """A view's facts and session as the worker stores them (storage/storable.py): no
    NUL in a text, the ids cut."""
    fixed = [no_nul(v) if isinstance(v, str) else v for v in values]
    user = fixed[_USER_AT]
    fixed[_USER_AT], session = _ids(user if isinstance(user, str) else None, session)
    return (*fixed, session)


_SET = ", ".join(f"{name} = ?" for name, _ in SPAN_GENAI_COLUMNS)
_UPDATE = (
    f"UPDATE spans SET {_SET}, session_id = COALESCE(session_id, ?) WHERE project_id = ? "
    "AND trace_id = ? AND span_id = ? AND start_day = ? AND content_hash = ?"
)


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
        key = (project_id, trace_id, span_id, start_day, content_hash)
        tx.execute(_UPDATE, (*_as_stored(facts(view, pricer), view.session_id), *key))
    trace_summaries.refresh(tx, project_id, trace_id)


def upgrade(db: Database, pricer: Pricer, progress: trace_walk.Progress | None = None) -> int:
    """Give the spans stored before the GenAI columns their facts, and their traces'
    summaries their sums; the traces gone through (0 when it was done before)."""
    return trace_walk.walk(db, UPGRADED, partial(_upgrade_trace, pricer=pricer), progress=progress)


_UNDESCRIBED = (
    "SELECT span_id, start_day, name, kind, attributes, events, content_hash FROM spans "
    "WHERE project_id = ? AND trace_id = ? AND llm_type IS NULL AND user_id IS NULL"
)
_SET_IDS = (
    "UPDATE spans SET user_id = COALESCE(?, user_id), session_id = COALESCE(session_id, ?) "
    "WHERE project_id = ? AND trace_id = ? AND span_id = ? AND start_day = ? "
    "AND content_hash = ?"
)


#: A trace's model calls stored without a model.
_MODELLESS = (
    "SELECT span_id, start_day, name, kind, attributes, events, content_hash FROM spans "
    "WHERE project_id = ? AND trace_id = ? AND llm_type IN ('llm', 'embedding') "
    "AND model IS NULL"
)


def _redescribe_trace(
    tx: Transaction,
    project_id: str,
    trace_id: str,
    pricer: Pricer,
    spans: str = _UNDESCRIBED,
    also: tuple[str, ...] = (),
) -> None:
    """Give the trace's spans `spans` selects (its parameters: the project, the trace and
    `also`) the facts their views give now."""
    typed = given = False
    for span_id, day, name, kind, attributes, events, content_hash in tx.query(
        spans, (project_id, trace_id, *also)
    ):
        key = (project_id, trace_id, span_id, day, content_hash)
        view = _view(name, kind, attributes, events)
        if view is not None:
            tx.execute(_UPDATE, (*_as_stored(facts(view, pricer), view.session_id), *key))
            typed = given = True
            continue
        given = _give_ids(tx, attributes, key) or given
    if not given:
        return
    trace_summaries.refresh(tx, project_id, trace_id)
    if typed:  # its texts: the documents of its words, and its ends' previews
        trace_texts.rebuild_trace(tx, project_id, trace_id)
    # PostgreSQL notes an updated span's trace for its indexes, as a replaced one's
    trace_index.rebuild_stale(tx, [(project_id, trace_id)], recounted=True)
    session_summaries.refresh_stale(tx)


def _view(name: str, kind: str, attributes: str, events: str) -> GenAIView | None:
    """A stored span's view, when a convention describes it."""
    if not described(kind, attributes, events):
        return None
    try:
        return stored_view(name, kind, attributes, events)
    except Exception:  # a span is kept whatever its view makes of it
        log.exception("span's GenAI view failed; left without it")
        return None


def redescribe(db: Database, pricer: Pricer, progress: trace_walk.Progress | None = None) -> int:
    """Give the spans that no convention described when they were stored, and that one
    now describes (OpenInference's `input.value` or `output.value` on a span of no kind:
    a chain), their facts; and those that name a user (`user.id`, `enduser.id`, kept
    now whatever convention describes a span: storage/span_genai.py's with_user) their
    users; their traces' summaries, texts and previews, and sessions' summaries, anew;
    the traces gone through (0 when it was done before)."""
    work = partial(_redescribe_trace, pricer=pricer)
    return trace_walk.walk(db, REDESCRIBED, work, lock=True, progress=progress)


def remodel(db: Database, pricer: Pricer, progress: trace_walk.Progress | None = None) -> int:
    """Give the model calls stored without a model the one their parameters name (a
    call OpenInference recorded that failed before an answer), and their traces'
    summaries anew; the traces gone through (0 when it was done before)."""
    work = partial(_redescribe_trace, pricer=pricer, spans=_MODELLESS)
    return trace_walk.walk(db, MODELLED, work, lock=True, progress=progress)


#: Whether a trace has a model call whose parent is a model call.
_NESTED = (
    "SELECT 1 FROM spans AS c JOIN spans AS p ON p.project_id = c.project_id "
    "AND p.trace_id = c.trace_id AND p.span_id = c.parent_span_id "
    "WHERE c.project_id = ? AND c.trace_id = ? AND c.llm_type IN ('llm', 'embedding') "
    "AND p.llm_type IN ('llm', 'embedding') LIMIT 1"
)


#: A trace's spans that may be OTel GenAI workflows.
_WORKFLOWS = (
    "SELECT span_id, start_day, name, kind, attributes, events, content_hash FROM spans "
    "WHERE project_id = ? AND trace_id = ? AND attributes LIKE ?"
)


def _count_once(tx: Transaction, project_id: str, trace_id: str, pricer: Pricer) -> None:
    _redescribe_trace(tx, project_id, trace_id, pricer, _WORKFLOWS, ("%invoke_workflow%",))
    if tx.query_one(_NESTED, (project_id, trace_id)) is None:
        return
    trace_summaries.refresh(tx, project_id, trace_id)
    session_summaries.refresh_stale(tx)


def count_once(db: Database, pricer: Pricer, progress: trace_walk.Progress | None = None) -> int:
    """Give the stored OTel GenAI workflows the facts of a chain, and make anew the
    summaries of the traces stored with a model call under a model call, which counted
    a framework's wrapper beside its provider call, and their sessions'; the traces
    gone through (0 when it was done before)."""
    work = partial(_count_once, pricer=pricer)
    return trace_walk.walk(db, COUNTED_ONCE, work, lock=True, progress=progress)


#: A trace's spans that may name their user or session by an association property.
_ASSOCIATED = (
    "SELECT span_id, start_day, attributes, content_hash FROM spans "
    "WHERE project_id = ? AND trace_id = ? AND attributes LIKE ?"
)


def _associate_trace(tx: Transaction, project_id: str, trace_id: str) -> None:
    given = False
    for span_id, day, attributes, content_hash in tx.query(
        _ASSOCIATED, (project_id, trace_id, f'%"key":"{conventions.ASSOCIATION}%')
    ):
        key = (project_id, trace_id, span_id, day, content_hash)
        given = _give_ids(tx, attributes, key) or given
    if given:
        trace_summaries.refresh(tx, project_id, trace_id)
        trace_index.rebuild_stale(tx, [(project_id, trace_id)], recounted=True)
        session_summaries.refresh_stale(tx)


def associate(db: Database, progress: trace_walk.Progress | None = None) -> int:
    """Give the stored spans that name their user or session by OpenLLMetry's
    association properties (and by no earlier convention) those, and their traces' and
    sessions' summaries anew; the traces gone through (0 when it was done before)."""
    return trace_walk.walk(db, ASSOCIATED, _associate_trace, lock=True, progress=progress)


#: Whether a trace has an embedding call that may give its texts.
_EMBEDDED = (
    "SELECT 1 FROM spans WHERE project_id = ? AND trace_id = ? AND llm_type = 'embedding' "
    "AND attributes LIKE ? LIMIT 1"
)


#: The attributes' text of a span that may give an embedding call's texts.
_EMBEDDING_TEXTS = f'%"key":"{conventions.EMBEDDING_TEXTS}%'


def _embedded_trace(tx: Transaction, project_id: str, trace_id: str) -> None:
    if tx.query_one(_EMBEDDED, (project_id, trace_id, _EMBEDDING_TEXTS)) is not None:
        trace_texts.rebuild_trace(tx, project_id, trace_id)
        trace_texts.give_ends(tx, [(project_id, trace_id)])


def embed_texts(db: Database, progress: trace_walk.Progress | None = None) -> int:
    """Give the stored traces with an embedding call that gives its texts those in
    their text index and previews; the traces gone through (0 when it was done before)."""
    return trace_walk.walk(db, EMBEDDED, _embedded_trace, lock=True, progress=progress)
