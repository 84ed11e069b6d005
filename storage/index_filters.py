"""The trace list's filters that the worker's indexes answer (storage/trace_index.py):
span names, attributes and the LLM text. Each is a query of the traces it lets through,
which may drive a page, and a condition on one summary's trace, which checks the traces
of a walked sort index (storage/trace_query.py chooses)."""

from __future__ import annotations

from typing import TYPE_CHECKING, NamedTuple

from storage.trace_index import KEY_ONLY, value_hash

if TYPE_CHECKING:
    from storage.trace_query import TraceFilter


def like(text: str, fold: bool = True) -> str:
    """A LIKE pattern of `text` anywhere (folded to lower case when `fold`)."""
    text = text.lower() if fold else text
    escaped = text.replace("\\", "\\\\").replace("%", "\\%").replace("_", "\\_")
    return f"%{escaped}%"


def fts5_phrase(word: str) -> str:
    """A word as an FTS5 query: one quoted phrase (its tokens in a row)."""
    return '"' + word.replace('"', '""') + '"'


def _text_traces(postgres: bool, word: str) -> IndexFilter:
    """The traces whose text holds a word: as a query of them (driving a page), as a
    condition on one trace's texts (checking a walked trace's), and the parameters."""
    if postgres:
        words = "x.words @@ plainto_tsquery('simple', ?)"
        return IndexFilter(
            f"SELECT x.trace_id FROM span_texts AS x WHERE x.project_id = ?1 AND {words}",
            [word],
            f"EXISTS (SELECT 1 FROM span_texts AS x WHERE x.project_id = ?1 "
            f"AND x.trace_id = trace_summaries.trace_id AND {words})",
            [word],
        )
    # Driving: the words' rows first, then their project (`+`: not by the project's
    # index, which would read every text of the project). Checking a walked trace: its
    # few texts, each matched by its rowid, after a LIKE that rejects most for less (an
    # ASCII word's token is in the text only where the text contains it, in any case:
    # the index keeps diacritics, and SQLite's LIKE folds ASCII only).
    prefilter, contains = (
        ("AND x.body LIKE ? ESCAPE '\\' ", [like(word)]) if word.isascii() else ("", [])
    )
    return IndexFilter(
        "SELECT x.trace_id FROM span_texts AS x WHERE x.id IN (SELECT rowid "
        "FROM span_text_words WHERE span_text_words MATCH ?) AND +x.project_id = ?1",
        [fts5_phrase(word)],
        "EXISTS (SELECT 1 FROM span_texts AS x JOIN span_text_words AS w ON w.rowid = x.id "
        f"WHERE x.project_id = ?1 AND x.trace_id = trace_summaries.trace_id {prefilter}"
        "AND span_text_words MATCH ?)",
        [*contains, fts5_phrase(word)],
    )


class IndexFilter(NamedTuple):
    """A filter answered by one of the worker's indexes: as a query of the traces it
    lets through (driving a page), and as a condition on a summary's trace; each with
    its parameters (the project is `?1`)."""

    query: str
    query_params: list[object]
    exists: str
    exists_params: list[object]


def index_queries(filters: TraceFilter, postgres: bool) -> list[IndexFilter]:
    """The filters answered by the worker's indexes (storage/trace_index.py): each as a
    query of the traces it lets through, as a condition on a summary's trace (the
    project is `?1` in both), and its parameters."""
    queries: list[IndexFilter] = []
    if filters.span_name:
        names = (
            "FROM trace_span_names AS n WHERE n.project_id = ?1 AND n.name IN "
            "(SELECT p.name FROM project_span_names AS p WHERE p.project_id = ?1 "
            "AND LOWER(p.name) LIKE ? ESCAPE '\\')"
        )
        named: list[object] = [like(filters.span_name)]
        queries.append(
            IndexFilter(
                f"SELECT n.trace_id {names}",
                named,
                f"EXISTS (SELECT 1 {names} AND n.trace_id = trace_summaries.trace_id)",
                named,
            )
        )
    for key, value in filters.attributes:
        pairs = "FROM trace_attributes AS a WHERE a.project_id = ?1 AND a.attr_key = ? "
        pairs += "AND a.value_hash = ?"
        given: list[object] = [key, KEY_ONLY if value is None else value_hash(value)]
        queries.append(
            IndexFilter(
                f"SELECT a.trace_id {pairs}",
                given,
                f"EXISTS (SELECT 1 {pairs} AND a.trace_id = trace_summaries.trace_id)",
                given,
            )
        )
    for word in filters.words:
        queries.append(_text_traces(postgres, word))
    return queries
