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

from storage.attribute_hashes import value_hash
from storage.storable import key_text
from storage.text_words import TOKENIZE, split, tsquery
from storage.trace_facets import hex_token, key_token

if TYPE_CHECKING:
    from storage.database import Transaction
    from storage.trace_query import TraceFilter


def like(text: str) -> str:
    """A LIKE pattern of `text` anywhere, as it is (ESCAPE '\\')."""
    escaped = text.replace("\\", "\\\\").replace("%", "\\%").replace("_", "\\_")
    return f"%{escaped}%"


def any_case(column: str, text: str, postgres: bool) -> tuple[str, list[object]]:
    """SQL of whether `column` holds `text` in any case, and its parameters: both folded
    by one function a character at a time, so that any part of a text is found in it.
    PostgreSQL: its LOWER, of both. SQLite, whose LOWER and LIKE fold ASCII letters
    only: Python's casefold (`unicode_fold`, storage/database.py: a call a row; it
    folds `ΟΣ` to `οσ` wherever it stands, `ß` to `ss`), of the column only where
    LIKE's own ASCII folding did not find the text and the column is not ASCII alone
    (its bytes outnumber its characters)."""
    if postgres:
        return f"LOWER({column}) LIKE LOWER(?) ESCAPE '\\'", [like(text)]
    pattern = like(text.casefold())
    folded = f"unicode_fold({column}) LIKE ? ESCAPE '\\'"
    if not pattern.isascii():
        return folded, [pattern]
    unicode = f"length(CAST({column} AS BLOB)) > length({column})"
    return f"({column} LIKE ? ESCAPE '\\' OR ({unicode} AND {folded}))", [pattern, pattern]


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
            documents=Documents("", "trace_texts", words, [tsquery(word)]),
        )
    return _fts5_traces(word)


def _fts5_traces(word: str) -> IndexFilter:
    """SQLite: the traces whose text holds a word, by `_fts5_documents`; an ASCII word's
    text older than the newest set is first checked by a LIKE that rejects most for less
    than FTS5 would (an ASCII word's token is in the text only where the text contains
    it, in any case: the index keeps diacritics, and SQLite's LIKE folds ASCII only)."""
    prefilter: tuple[str, list[object]] | None = (
        ("x.body LIKE ? ESCAPE '\\'", [like(word.lower())]) if word.isascii() else None
    )
    return _fts5_documents("trace_text_words", "trace_texts", "?", [fts5_word(word)], prefilter)


def _fts5_documents(
    index: str,
    documents: str,
    match: str,
    match_params: list[object],
    prefilter: tuple[str, list[object]] | None = None,
) -> IndexFilter:
    """SQLite, the traces of the documents (`documents` as `x`) that FTS5's `index`
    matches by the query `match` (SQL, of `match_params`). Driving: the matching rows in
    FTS5's order, each joined to its document by rowid (a stream: a bounded count stops
    at its bound, where an `IN` of the matches read every match of a common word first).

    Checking a walked trace: its documents by the project's index, each looked up in the
    set of the query's NEWEST_TEXTS newest documents (FTS5 reads a doclist backwards,
    and the set is read once a query); a document older than the set's oldest (its rowid
    below) is matched by its rowid in FTS5 (a lookup of the whole doclist: 50-200 us on
    a large store), after the `prefilter` when one is given (SQL of `x`, and its
    parameters). Exact: the set holds every match at or above its edge (all of them when
    there are fewer), and below it FTS5 answers."""
    newest = f"SELECT rowid FROM {index} WHERE {index} MATCH {match}"
    edge = f"COALESCE(({newest} ORDER BY rowid DESC LIMIT 1 OFFSET {NEWEST_TEXTS - 1}), {_LEAST})"
    before, before_params = (f"{prefilter[0]} AND ", prefilter[1]) if prefilter else ("", [])
    return IndexFilter(
        f"SELECT x.trace_id FROM {index} CROSS JOIN {documents} AS x "
        f"ON x.id = {index}.rowid WHERE {index} MATCH {match} AND x.project_id = ?1",
        match_params,
        f"EXISTS (SELECT 1 FROM {documents} AS x WHERE x.project_id = ?1 "
        "AND x.trace_id = trace_summaries.trace_id "
        f"AND (x.id IN ({newest} AND rowid >= {edge}) OR (x.id < {edge} AND {before}"
        f"EXISTS (SELECT 1 FROM {index} WHERE {index} MATCH {match} AND rowid = x.id))))",
        [*match_params, *match_params, *match_params, *before_params, *match_params],
        documents=Documents(index, documents, match, match_params),
    )


def _substring_traces(word: str) -> IndexFilter:
    """Either store: the traces whose text has the word inside one of its words (`東京`
    in `東京タワーに行きました`), for a word of a script written without spaces, whose
    stored words are whole runs of it: the texts' stored words are read (the project's
    texts, by its index), as Langfuse and Phoenix read theirs for any word; a walked
    trace's are checked by its own texts. The word is split as a stored text is, once
    case-folded (`東京İ` folds to `東京i` and a mark, which is none: the word `東京i`),
    each of its words contained: one of such a script inside a stored word, any other
    as a stored word (`İ東京` is the words `i` and `東京`)."""
    conditions: list[str] = []
    pattern: list[object] = []
    for found in split(word.casefold(), sys.maxsize):
        if UNSPACED.search(found):
            conditions.append("x.body LIKE ? ESCAPE '\\'")
            pattern.append(like(found))
        else:
            conditions.append("' ' || x.body || ' ' LIKE ? ESCAPE '\\'")
            pattern.append(like(f" {found} "))
    contains = " AND ".join(conditions) or "FALSE"
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
    #: seek the summaries by (storage/trace_query.py), and a token's share of the
    #: documents it cannot guess
    counted: bool = False
    #: a query of its matches that counts them for less than `query` (its parameters)
    matches: str | None = None
    #: where its documents are read newest first (storage/newest_first.py): on SQLite,
    #: the FTS5 index, its table of documents, the MATCH operand and its parameters; on
    #: PostgreSQL, no index, the table, the condition on a document `x`, its parameters
    documents: Documents | None = None


class Documents(NamedTuple):
    """A table of documents, and a query of them: by their FTS5 index `fts` on SQLite."""

    fts: str
    table: str
    match: str
    params: list[object]


def index_queries(project_id: str, filters: TraceFilter, postgres: bool) -> list[IndexFilter]:
    """The filters answered by the worker's indexes (storage/trace_index.py): each as a
    query of the traces it lets through, as a condition on a summary's trace (the
    project is `?1` in both), and its parameters."""
    queries: list[IndexFilter] = []
    if filters.span_name:
        queries.append(_name_traces(postgres, filters.span_name, filters.span_name_tokens))
    for key, value in filters.attributes:
        queries.append(_attribute_traces(postgres, project_id, key, value))
    if filters.any_attribute:
        tokens = [key_token(project_id, k) ^ value_hash(v) for k, v in filters.any_attribute]
        queries.append(_token_traces(postgres, tokens))
    for word in filters.words:
        queries.append(_text_traces(postgres, word))
    return queries


def _attribute_traces(postgres: bool, project_id: str, key: str, value: str | None) -> IndexFilter:
    """The traces with an attribute (of a value: None for any), by their documents of
    tokens (storage/trace_facets.py)."""
    token = key_token(project_id, key)
    if value is not None:
        token ^= value_hash(value)
    return _token_traces(postgres, [token])


def _token_traces(postgres: bool, tokens: list[int]) -> IndexFilter:
    """The traces whose documents of tokens hold any of `tokens` (none: no trace).

    PostgreSQL: by the GIN index of the tokens, and a walked trace's documents by its
    key; counted, as a word is: the planner guessed a token of one trace common, and
    walked every summary of the project to find it (474 ms on a store of 1,000,000
    spans). SQLite: by FTS5 (its matches counted in FTS5 alone: a token holds its
    project), and a walked trace's documents by the project's index, each checked by
    its text, which holds a token's 16 hex digits only where it holds the token (every
    token is 16 of them, apart): one seek a trace, where the set of a word's newest
    texts costs 1-1.5 ms to read (`_fts5_documents`)."""
    if postgres:
        holds = "x.tokens && ?::bigint[]"
        return IndexFilter(
            f"SELECT x.trace_id FROM trace_facets AS x WHERE x.project_id = ?1 AND {holds}",
            [tokens],
            f"EXISTS (SELECT 1 {_WALKED} {holds})",
            [tokens],
            counted=True,
            documents=Documents("", "trace_facets", holds, [tokens]),
        )
    hexed = [hex_token(token) for token in tokens]
    match = " OR ".join(map(fts5_phrase, hexed)) or '""'
    matched = "trace_facet_tokens MATCH ?"
    return IndexFilter(
        "SELECT x.trace_id FROM trace_facet_tokens CROSS JOIN trace_facets AS x "
        f"ON x.id = trace_facet_tokens.rowid WHERE {matched} AND x.project_id = ?1",
        [match],
        f"EXISTS (SELECT 1 {_WALKED} ({' OR '.join(['instr(x.body, ?) > 0'] * len(hexed)) or 0}))",
        list[object](hexed),
        matches=f"SELECT rowid FROM trace_facet_tokens WHERE {matched}",
        documents=Documents("trace_facet_tokens", "trace_facets", "?", [match]),
    )


#: A walked trace's documents of tokens: the conditions on each follow.
_WALKED = (
    "FROM trace_facets AS x WHERE x.project_id = ?1 AND x.trace_id = trace_summaries.trace_id AND"
)
#: The most names a `span_name` filter's text may be in for the names' tokens to be
#: matched one by one (more: the project's names that hold it are read in the query).
NAMES_MATCHED = 64


def name_tokens(tx: Transaction, project_id: str, name: str) -> tuple[int, ...] | None:
    """The tokens of the project's span names that hold `name` in any case, when they
    are at most NAMES_MATCHED; else None."""
    names, named = _names(tx.postgres, name)
    rows = tx.query(
        f"SELECT p.token {names.replace('?1', '?')} LIMIT ?",
        (project_id, *named, NAMES_MATCHED + 1),
    )
    return None if len(rows) > NAMES_MATCHED else tuple(token for (token,) in rows)


def _names(postgres: bool, name: str) -> tuple[str, list[object]]:
    """The project's span names that hold `name` in any case (as the index keeps both),
    as a FROM clause of them (`p`), and its parameters."""
    holds, named = any_case("p.name", key_text(name), postgres)
    return f"FROM project_span_names AS p WHERE p.project_id = ?1 AND {holds}", named


def _name_traces(postgres: bool, name: str, tokens: tuple[int, ...] | None) -> IndexFilter:
    """The traces with a span whose name holds `name` in any case: of the tokens of the
    project's names that hold it (`tokens`, read before: `name_tokens`), or when there
    were too many of those, of each of the names the query reads, matched in the
    traces' documents of tokens (storage/trace_facets.py)."""
    if tokens is not None:
        return _token_traces(postgres, list(tokens))
    held, named = _names(postgres, name)
    if postgres:
        # each name's documents by the GIN index, a lookup each (one of an array of
        # every name's token cost 250 ms for 2,000 names)
        return IndexFilter(
            f"SELECT x.trace_id FROM (SELECT p.token {held}) AS n CROSS JOIN LATERAL "
            "(SELECT x.trace_id FROM trace_facets AS x WHERE x.project_id = ?1 "
            "AND x.tokens @> ARRAY[n.token]) AS x",
            named,
            f"EXISTS (SELECT 1 {_WALKED} EXISTS (SELECT 1 FROM unnest(x.tokens) AS t (token) "
            f"WHERE t.token IN (SELECT p.token {held})))",
            named,
            counted=True,
        )
    # a walked trace's documents read as JSON arrays of their tokens, each looked up in
    # the names' (read once a query), where an FTS5 lookup of each by rowid with a query
    # of every name's token cost 25 ms
    listed = "json_each('[\"' || replace(x.body, ' ', '\",\"') || '\"]') AS t"
    exists = (
        f"EXISTS (SELECT 1 {_WALKED} EXISTS (SELECT 1 FROM {listed} "
        f"WHERE t.value IN (SELECT printf('%016x', p.token) {held})))"
    )
    # each name's documents by its token in FTS5, a query each (one of every name's
    # token, OR'd, cost 250 ms for 5,000 names)
    names = f"(SELECT p.token {held}) AS n CROSS JOIN trace_facet_tokens"
    matched = "trace_facet_tokens MATCH ('\"' || printf('%016x', n.token) || '\"')"
    return IndexFilter(
        f"SELECT x.trace_id FROM {names} CROSS JOIN trace_facets AS x "
        f"ON x.id = trace_facet_tokens.rowid WHERE {matched}",
        named,
        exists,
        named,
        matches=f"SELECT trace_facet_tokens.rowid FROM {names} WHERE {matched}",
    )
