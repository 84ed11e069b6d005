"""The trace list's filters that the worker's indexes answer (storage/trace_index.py):
span names, attributes and the LLM text. Each is a query of the traces it lets through,
which may drive a page, and a condition on one summary's trace, which checks the traces
of a walked sort index (storage/trace_query.py chooses)."""

from __future__ import annotations

import re
import sqlite3
import sys
import threading
from typing import TYPE_CHECKING, NamedTuple

from storage.storable import key_text
from storage.text_words import TOKENIZE, split, tsquery
from storage.trace_index import KEY_ONLY, value_hash

if TYPE_CHECKING:
    from storage.trace_query import TraceFilter


def like(text: str, fold: bool = True) -> str:
    """A LIKE pattern of `text` anywhere (folded to lower case when `fold`)."""
    text = text.lower() if fold else text
    escaped = text.replace("\\", "\\\\").replace("%", "\\%").replace("_", "\\_")
    return f"%{escaped}%"


def fts5_phrase(token: str) -> str:
    """A token as an FTS5 query: one quoted string."""
    return '"' + token.replace('"', '""') + '"'


def fts5_word(word: str) -> str:
    """A word of the `text` filter as an FTS5 query of the texts' words: the tokens of
    its words case-folded, as the worker stores a text's (storage/text_words.py: a
    folded letter may be two, `İ` an `i` and a mark, which is none), each present; or
    the tokens of the word as written where they differ, as FTS5 folded a text an
    earlier build stored whole (lower case only: `ß` stays). Each token is a query of
    its own: the index keeps no positions (storage/find_schema.py), and FTS5 refuses a
    phrase of two tokens, which a word would be where the tokenizer splits it and
    str.isalnum does not (the tokenizer keeps whole the letters SQLite 3.40's tables
    split at: storage/text_words.py; another SQLite's may split at others)."""
    stored = _every(split(word.casefold(), sys.maxsize))
    written = _every([word])
    return stored if written == stored else f"({written}) OR ({stored})"


def _every(words: list[str]) -> str:
    """An FTS5 query of every token of the words; one that matches nothing when they
    have none."""
    tokens = sorted({token for word in words for token in fts5_tokens(word)})
    return " AND ".join(map(fts5_phrase, tokens)) or '""'


_ASCII_TOKEN = re.compile("[a-z0-9]+")
_tokenizer: sqlite3.Connection | None = None
_tokenizer_lock = threading.Lock()


def fts5_tokens(word: str) -> list[str]:
    """The tokens FTS5's tokenizer makes of a word, as the text index keeps them: an
    ASCII word's are its runs of letters and digits in lower case; any other's are
    asked of SQLite's own tokenizer (its tables of letters are its Unicode version's,
    which is not Python's), through an index in memory (26 us)."""
    if word.isascii():
        return _ASCII_TOKEN.findall(word.lower())
    global _tokenizer
    with _tokenizer_lock:
        if _tokenizer is None:
            connection = sqlite3.connect(":memory:", check_same_thread=False)
            connection.execute(
                f"CREATE VIRTUAL TABLE t USING fts5(x, detail=none, tokenize={TOKENIZE})"
            )
            connection.execute("CREATE VIRTUAL TABLE v USING fts5vocab(t, 'row')")
            _tokenizer = connection
        try:
            _tokenizer.execute("INSERT INTO t (rowid, x) VALUES (1, ?)", (word,))
            return [term for (term,) in _tokenizer.execute("SELECT term FROM v")]
        finally:
            _tokenizer.execute("DELETE FROM t")


#: SQLite: how many of a word's newest texts (FTS5's highest rowids) a walk checks by
#: one set read once a query, rather than by a lookup of FTS5 each.
NEWEST_TEXTS = 2000
_LEAST = -(2**63)


#: Letters of the scripts written without spaces between words (Han, Hiragana, Katakana,
#: Hangul, whose particles join the word before them, Thai, Lao, Khmer, Myanmar): a run
#: of them is one stored word however many words it holds.
UNSPACED = re.compile(
    "[\u0e00-\u0eff\u1000-\u109f\u1100-\u11ff\u1780-\u17ff\u3040-\u30ff"
    "\u3130-\u318f\u31f0-\u31ff\u3400-\u4dbf\u4e00-\u9fff\uac00-\ud7af"
    "\uf900-\ufaff\uff66-\uff9f\U00020000-\U0003134f]"
)


def _text_traces(postgres: bool, word: str) -> IndexFilter:
    """The traces whose text holds a word: as a query of them (driving a page), as a
    condition on one trace's texts (checking a walked trace's), and the parameters."""
    if UNSPACED.search(word):
        return _substring_traces(word)
    if postgres:
        words = "x.words @@ ?::tsquery"
        return IndexFilter(
            f"SELECT x.trace_id FROM trace_texts AS x WHERE x.project_id = ?1 AND {words}",
            [tsquery(word)],
            f"EXISTS (SELECT 1 FROM trace_texts AS x WHERE x.project_id = ?1 "
            f"AND x.trace_id = trace_summaries.trace_id AND {words})",
            [tsquery(word)],
            counted=True,
        )
    return _fts5_traces(word)


def _fts5_traces(word: str) -> IndexFilter:
    """SQLite. Driving: the word's rows in FTS5's order, each joined to its text by
    rowid (a stream: a bounded count stops at its bound, where an `IN` of the matches
    read every match of a common word first).

    Checking a walked trace: its texts by the project's index, each looked up in the set
    of the word's NEWEST_TEXTS newest texts (FTS5 reads a doclist backwards, and the set
    is read once a query); a text older than the set's oldest (its rowid below) is
    matched by its rowid in FTS5 (a lookup of the whole doclist: 50-200 us on a large
    store), after a LIKE that rejects most for less (an ASCII word's token is in the text
    only where the text contains it, in any case: the index keeps diacritics, and
    SQLite's LIKE folds ASCII only). Exact: the set holds every match at or above its
    edge (all of them when there are fewer), and below it FTS5 answers."""
    query = fts5_word(word)
    newest = "SELECT rowid FROM trace_text_words WHERE trace_text_words MATCH ?"
    edge = f"COALESCE(({newest} ORDER BY rowid DESC LIMIT 1 OFFSET {NEWEST_TEXTS - 1}), {_LEAST})"
    prefilter, contains = (
        ("AND x.body LIKE ? ESCAPE '\\' ", [like(word)]) if word.isascii() else ("", [])
    )
    return IndexFilter(
        "SELECT x.trace_id FROM trace_text_words CROSS JOIN trace_texts AS x "
        "ON x.id = trace_text_words.rowid WHERE trace_text_words MATCH ? AND x.project_id = ?1",
        [query],
        "EXISTS (SELECT 1 FROM trace_texts AS x WHERE x.project_id = ?1 "
        "AND x.trace_id = trace_summaries.trace_id "
        f"AND (x.id IN ({newest} AND rowid >= {edge}) OR (x.id < {edge} {prefilter}"
        "AND EXISTS (SELECT 1 FROM trace_text_words WHERE trace_text_words MATCH ? "
        "AND rowid = x.id))))",
        [query, query, query, *contains, query],
    )


def _substring_traces(word: str) -> IndexFilter:
    """Either store: the traces whose text has the word inside one of its words (`東京`
    in `東京タワーに行きました`), for a word of a script written without spaces, whose
    stored words are whole runs of it: the texts' stored words are read (the project's
    texts, by its index), as Langfuse and Phoenix read theirs for any word; a walked
    trace's are checked by its own texts."""
    contains = "x.body LIKE ? ESCAPE '\\'"
    pattern: list[object] = [like(word.casefold(), fold=False)]
    return IndexFilter(
        f"SELECT x.trace_id FROM trace_texts AS x WHERE x.project_id = ?1 AND {contains}",
        pattern,
        "EXISTS (SELECT 1 FROM trace_texts AS x WHERE x.project_id = ?1 "
        f"AND x.trace_id = trace_summaries.trace_id AND {contains})",
        pattern,
        counted=True,
    )


class IndexFilter(NamedTuple):
    """A filter answered by one of the worker's indexes: as a query of the traces it
    lets through (driving a page), and as a condition on a summary's trace; each with
    its parameters (the project is `?1`)."""

    query: str
    query_params: list[object]
    exists: str
    exists_params: list[object]
    #: whether its matches are counted to choose a driver on PostgreSQL, whose planner
    #: weighs the others itself (SQLite counts every one): a word's traces it cannot
    #: seek the summaries by (storage/trace_query.py), and a count of span names walked
    #: the project's whole name index there
    counted: bool = False


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
        named: list[object] = [like(key_text(filters.span_name))]  # as the index keeps it
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
        given: list[object] = [key_text(key), KEY_ONLY if value is None else value_hash(value)]
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
