"""The LLM text of the stored spans, as the `text` filter finds it and the trace list
shows it (schema migration 20, storage/find_schema.py), written by the span store in
the transaction that writes the spans (storage/trace_index.py calls it).

* `trace_texts`: the words (storage/text_words.py) of the input and output messages of
  a trace's spans of one start day, one row (a document) for the spans a batch brings
  of it, their words given once: a trace's model calls repeat one another's messages
  (each call's input holds the conversation so far), and a full-text index pays for
  each word of each document (FTS5 on SQLite, a `tsvector` under GIN on PostgreSQL). A
  document holds the texts of at most MAX_TEXT characters of spans (a span's own is cut
  there), so that its words fit in a `tsvector`.
* `span_texts`: the previews (genai/view.py's `previews` as JSON text: `[input,
  output]`, and a chat's turn's question third) of the spans that give a trace's input
  and output in the trace list (storage/trace_list.py): its first and last LLM calls
  and its earliest root (storage/summary_genai.py). A batch gives them to its own
  ends, those of each of its traces' days (`_ends`): a span that is an end once the
  batch is stored is one of them. A span that becomes an end later, when the one
  before it is replaced or deleted, gets its previews then (`give_ends`). A model
  call's previews are about 1 KB; a row for each call (where a trace's 20 calls now
  have 2) cost the writer about 9 of the 60 us a GenAI span of `bench_worker --genai`
  took to write on SQLite (docs/benchmarks.md).

Only the rows the GenAI view described are read (the worker marked them, storage/
span_genai.py); their messages are read here, once, as they are written.

Exact under the re-sending rules: a trace's documents may repeat words (a span sent
again, identical, brings a document of its own), which finds the same traces; what
must not stay is a word that only a replaced or deleted span row gave. Such a row is
noted stale with its start day (storage/trace_index.py), and the documents of its
trace and day are made anew from the rows stored (`rebuild`); its previews go with it
(a trigger deletes them), and its trace's ends are given theirs (`give_ends`).
"""

from __future__ import annotations

import logging
from collections.abc import Iterable, Iterator, Sequence
from typing import Any

from storage import document_ceilings
from storage.database import Transaction, arrays
from storage.llm_text import MAX_TEXT, text_and_previews
from storage.span_rows import SpanRow
from storage.summary_genai import span_of
from storage.text_words import joined, tsvector_of

log = logging.getLogger("spangate.worker")

#: A span's previews row: project, trace, span, start day, previews.
Previews = tuple[str, str, str, str, str]
#: A document: project, trace, start day, its words.
Document = tuple[str, str, str, str]


def texts_of(rows: Sequence[SpanRow]) -> tuple[list[Previews], list[Document]]:
    """The previews of the rows that may give their trace's input or output (`_ends`)
    and have messages, and the documents of the texts of all that have: one a trace and
    start day (more when its texts pass MAX_TEXT), of what each text adds to the day's
    earlier ones (`_added`)."""
    previews: list[Previews] = []
    ends: set[int] | None = None  # made when a row first has messages
    #: each trace's day: its latest texts (_LOOK_BACK), and what each text added
    latest: dict[tuple[str, str, str], list[str]] = {}
    added: dict[tuple[str, str, str], list[str]] = {}
    for row in rows:
        given = _text_of(row)
        if given is None:
            continue
        text, shown = given
        if ends is None:
            ends = _ends(rows)
        if id(row) in ends:
            previews.append((row.project_id, row.trace_id, row.span_id, row.start_day, shown))
        day = (row.project_id, row.trace_id, row.start_day)
        earlier = latest.setdefault(day, [])
        part = _added(text, earlier)
        earlier.append(text)
        if len(earlier) > _LOOK_BACK:
            del earlier[0]
        if part:
            added.setdefault(day, []).append(part)
    documents = [
        (project, trace, day, words)
        for (project, trace, day), of_day in added.items()
        for document in _bounded(of_day)
        if (words := joined(document))
    ]
    return previews, documents


def _text_of(row: SpanRow) -> tuple[str, str] | None:
    """A row's text and previews (storage/llm_text.py), if it has any."""
    if row.llm_type is None:
        return None
    try:
        return text_and_previews(row.llm_type, row.attributes, row.events)
    except Exception:  # a span is stored whatever its text makes of it
        log.exception("span's LLM text failed; stored without it")
        return None


def _ends(rows: Sequence[SpanRow]) -> set[int]:
    """The ids of the rows that may give their trace's input or output: of each trace's
    rows of a start day, the first and last LLM calls and the earliest root, in the
    order of storage/summary_genai.py (start, span id, start day). An end of a trace
    once these rows are stored is one of them; a trace's rows of a day all go, or stay,
    together under retention."""
    first: dict[tuple[str, str, str], tuple[tuple[int, str], SpanRow]] = {}
    last: dict[tuple[str, str, str], tuple[tuple[int, str], SpanRow]] = {}
    root: dict[tuple[str, str, str], tuple[tuple[int, str], SpanRow]] = {}
    for row in rows:
        kind = row.llm_type
        if kind is None and row.parent_span_id is not None:
            continue
        day = (row.project_id, row.trace_id, row.start_day)
        order = (row.start_ns, row.span_id)
        if row.parent_span_id is None and (day not in root or order < root[day][0]):
            root[day] = (order, row)
        if kind == "llm":
            if day not in first or order < first[day][0]:
                first[day] = (order, row)
            if day not in last or order > last[day][0]:
                last[day] = (order, row)
    return {id(row) for ends in (first, last, root) for _, row in ends.values()}


#: How many of a trace's day's latest texts a text is compared with (the model calls
#: of an agent's turn, and the tools' texts between them).
_LOOK_BACK = 8


def _added(text: str, earlier: list[str]) -> str:
    """What a text adds to the words of its trace's day's latest `earlier` texts: the
    part after the longest of them it begins with, where a line ends (a word cannot run
    on past it); none when it is one of them; else the whole text. A model call's input
    holds the conversation so far, so its text begins with an earlier call's: its words
    are read once, not once a call (the words of N calls cost O(N), not O(N**2))."""
    longest = 0
    for before in earlier:
        if before == text:
            return ""
        length = len(before)
        if longest < length < len(text) and text[length] == "\n" and text.startswith(before):
            longest = length
    return text[longest:]


def _bounded(texts: list[str]) -> Iterator[str]:
    """Texts joined a line each into documents of at most MAX_TEXT characters (but for
    a document of one text)."""
    document: list[str] = []
    length = 0
    for text in texts:
        if document and length + len(text) > MAX_TEXT:
            yield "\n".join(document)
            document, length = [], 0
        document.append(text)
        length += len(text) + 1
    if document:
        yield "\n".join(document)


_PREVIEW_COLUMNS = "project_id, trace_id, span_id, start_day, previews"


def write(tx: Transaction, previews: list[Previews], documents: list[Document]) -> None:
    """Insert spans' previews (a span's replacing the one stored) and documents."""
    if previews:
        conflict = (
            "ON CONFLICT (project_id, trace_id, span_id, start_day) "
            "DO UPDATE SET previews = excluded.previews"
        )
        if tx.postgres:
            tx.execute(
                f"INSERT INTO span_texts ({_PREVIEW_COLUMNS}) SELECT * FROM "
                "unnest(?::text[], ?::text[], ?::text[], ?::text[], ?::text[]) "
                f"{conflict}",
                arrays(previews),
            )
        else:
            tx.executemany(
                f"INSERT INTO span_texts ({_PREVIEW_COLUMNS}) VALUES (?, ?, ?, ?, ?) {conflict}",
                previews,
            )
    if not documents:
        return
    if tx.postgres:
        tx.execute(
            "INSERT INTO trace_texts (project_id, trace_id, start_day, body, words, sort_ns) "
            f"SELECT u1, u2, u3, u4, {tsvector_of('u4')}, (SELECT s.sort_ns FROM "
            "trace_summaries AS s WHERE s.project_id = u1 AND s.trace_id = u2) "
            "FROM unnest(?::text[], ?::text[], ?::text[], ?::text[]) AS u (u1, u2, u3, u4)",
            arrays(documents),
        )
        return
    insert_indexed(
        tx, "trace_texts", "trace_text_words", "project_id, trace_id, start_day", documents
    )


def insert_indexed(
    tx: Transaction, documents: str, index: str, columns: str, rows: Sequence[tuple[str, ...]]
) -> None:
    """SQLite: insert `rows` (`columns`, then the body) into a table of documents, each
    with its trace's sort value and its ceiling (storage/document_ceilings.py), and
    their bodies into its FTS5 `index` in one statement: FTS5 writes what it holds at
    each statement's savepoint (a trigger's insert of each made a segment of each)."""
    top, marked = document_ceilings.marked(tx, documents, rows)
    marks = ", ".join("?" * (columns.count(",") + 4))
    tx.executemany(
        f"INSERT INTO {documents} ({columns}, body, sort_ns, ceiling) VALUES ({marks})", marked
    )
    tx.execute(
        f"INSERT INTO {index} (rowid, body) SELECT id, body FROM {documents} WHERE id > ?", (top,)
    )


#: A trace's stored rows, as SpanRow wants them (what the indexes read of a row: its key,
#: name, kind, attributes, events, type).
STORED_ROWS = (
    "SELECT project_id, trace_id, span_id, start_day, parent_span_id, name, kind, "
    "status_code, status_message, start_ns, end_ns, session_id, attributes, events, "
    "'[]', '{}', '{}', '{}', content_hash, received_ms, llm_type FROM spans "
    "WHERE project_id = ? AND trace_id = ?"
)
#: Those of a day that the GenAI view described, in the order they started (a call's
#: text then follows the earlier calls' it begins with: `_added`).
_STORED = STORED_ROWS + " AND start_day = ? AND llm_type IS NOT NULL ORDER BY start_ns"
_DAY = "project_id = ? AND trace_id = ? AND start_day = ?"
_STORED_SPAN = STORED_ROWS + " AND start_day = ? AND span_id = ? AND llm_type IS NOT NULL"


def rebuild(tx: Transaction, days: Iterable[tuple[str, str, str]]) -> None:
    """Make the documents of these (project, trace, start day) anew from the span rows
    stored: those a replaced or deleted row's words were in."""
    documents: list[Document] = []
    for day in sorted(set(days)):
        tx.execute(f"DELETE FROM trace_texts WHERE {_DAY}", day)
        rows = [SpanRow(*row) for row in tx.query(_STORED, day)]
        documents += texts_of(rows)[1]
    write(tx, [], documents)


def rebuild_trace(tx: Transaction, project_id: str, trace_id: str) -> None:
    """Make every document of a trace anew from its stored span rows."""
    stored = tx.query(
        "SELECT DISTINCT start_day FROM spans WHERE project_id = ? AND trace_id = ?",
        (project_id, trace_id),
    )
    had = tx.query(
        "SELECT DISTINCT start_day FROM trace_texts WHERE project_id = ? AND trace_id = ?",
        (project_id, trace_id),
    )
    rebuild(tx, [(project_id, trace_id, day) for (day,) in {*stored, *had}])


#: A trace's ends, as its summary names them (storage/summary_genai.py).
_ENDS = (
    "SELECT first_llm, last_llm, first_root FROM trace_summaries "
    "WHERE project_id = ? AND trace_id = ?"
)
_PREVIEWED = f"SELECT 1 FROM span_texts WHERE {_DAY} AND span_id = ? AND previews IS NOT NULL"


def give_ends(tx: Transaction, traces: Iterable[tuple[str, str]]) -> None:
    """Give the ends of these traces (project, trace) that have messages the previews
    they lack (a span that became one when the span before it was replaced or deleted),
    once their summaries are made anew."""
    previews: list[Previews] = []
    for project_id, trace_id in sorted(set(traces)):
        ends = tx.query_one(_ENDS, (project_id, trace_id))
        for key in {key for key in ends or () if key is not None}:
            _, span_id, day = span_of(trace_id, key)
            if tx.query_one(_PREVIEWED, (project_id, trace_id, day, span_id)) is not None:
                continue
            stored = tx.query(_STORED_SPAN, (project_id, trace_id, day, span_id))
            previews += _previews([SpanRow(*row) for row in stored])
    write(tx, previews, [])


def _previews(rows: Iterable[SpanRow]) -> list[Previews]:
    """The previews of those of `rows` that have messages (no words split)."""
    return [(*row[:4], given[1]) for row in rows if (given := _text_of(row)) is not None]


def give_previews(tx: Transaction, project_id: str, trace_id: str, rows: list[SpanRow]) -> None:
    """Give the ends among a trace's stored spans `rows` their previews, and forget its
    other spans' rows, which have none (storage/find_upgrade.py: the texts stored before
    they had previews, a row each)."""
    ends = _ends(rows)
    write(tx, _previews(row for row in rows if id(row) in ends), [])
    tx.execute(
        "DELETE FROM span_texts WHERE project_id = ? AND trace_id = ? AND previews IS NULL",
        (project_id, trace_id),
    )


def forget_previews(tx: Transaction, keys: list[tuple[Any, ...]]) -> None:
    """SQLite, after an upsert: delete the previews of rows it replaced (by their keys),
    which the batch's own then take the place of."""
    tx.executemany(
        "DELETE FROM span_texts WHERE project_id = ? AND trace_id = ? AND span_id = ? "
        "AND start_day = ?",
        keys,
    )
