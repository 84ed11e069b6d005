"""The indexes that find a trace, written by the span store in the transaction that
writes the spans (schema migration 13, storage/find_schema.py).

* `span_texts`: the words of the LLM text (input and output messages) of each stored
  span row that has messages (storage/text_words.py), one row per span row, with the
  view's previews of them (the trace list shows a trace's input and output from them,
  storage/trace_list.py). Only the rows the GenAI view described are read (the worker
  marked them, storage/span_genai.py); their messages are read here, once, as they are
  written.
* `trace_attributes`: one row per distinct (attribute key, value) of a trace's spans,
  the value as the hash of its string form (`value_text`).
* `trace_span_names` and `project_span_names`: a trace's distinct span names, and a
  project's.

What a batch adds is made before its transaction (`index_rows`, on the worker's
decoding thread), from the attribute pairs the C row builder gives where it built the
rows (nothing parsed again), and written in the transaction that writes the spans.

Exact under the re-sending rules: the rows the window refused add nothing; a stored
row replaced or deleted has its text deleted and its trace noted stale, whose attribute
and name rows are made anew here from what is stored (`rebuild_stale`), in the same
transaction: by the writer after a batch, by erasure and retention after they delete.
A trigger does it for a deleted row, and on PostgreSQL for a replaced one; on SQLite
the writer does it for the rows that may replace a stored one (`note_replaced`,
`forget_texts`): an update trigger on the spans made every insert of the upsert, most
of which replace nothing, cost twice as much.
"""

from __future__ import annotations

import hashlib
import logging
import re
from collections.abc import Iterable, Sequence
from typing import Any, NamedTuple

import orjson

from genai import conventions as c
from genai import view_of
from storage.database import Transaction, arrays
from storage.span_rows import SpanRow
from storage.storable import key_text
from storage.text_words import joined, tsvector_of

log = logging.getLogger("spangate.worker")

#: A span's indexed text, at most (the words after it are not found).
MAX_TEXT = 100_000
_EVENT_MARKER = '"name":"gen_ai.'


def value_hash(value: str) -> int:
    """An attribute value's key in the attribute index: 8 bytes of its BLAKE2b, signed
    (a BIGINT), so that a prompt-long value costs the index what a short one does."""
    digest = hashlib.blake2b(value.encode("utf-8", "surrogatepass"), digest_size=8).digest()
    return int.from_bytes(digest, "big", signed=True)


def value_text(value: Any) -> str | None:
    """An OTLP/JSON AnyValue's string form, as the `attr` filter compares it: strings
    as they are, `true`/`false`, integers in decimal, doubles as JSON writes them,
    arrays and maps as their JSON; None for an empty value."""
    if not isinstance(value, dict) or not value:
        return None
    for kind, inner in value.items():
        return _text_of(kind, inner)
    return None


def _text_of(kind: str, inner: Any) -> str:
    if kind == "stringValue":
        return str(inner)
    if kind == "boolValue":
        return "true" if inner else "false"
    if kind == "intValue":
        return str(int(inner))
    if kind == "doubleValue":
        return orjson.dumps(float(inner)).decode()
    return orjson.dumps(inner).decode()


#: Value hashes by (kind, value): a batch's spans repeat their attributes' values.
_hashes: dict[tuple[str, Any], int] = {}
_HASHES_KEPT = 100_000
_EMPTY = value_hash("")


def _hash_of(value: Any) -> int:
    """The hash of an AnyValue's string form (that of "" for what has none)."""
    if type(value) is not dict:
        return _EMPTY
    for kind, inner in value.items():
        if type(inner) in (dict, list):  # arrays and maps: their JSON, not kept
            return value_hash(orjson.dumps(inner).decode())
        hashed = _hashes.get((kind, inner))
        if hashed is None:
            try:
                hashed = value_hash(_text_of(kind, inner))
            except (TypeError, ValueError):
                hashed = _EMPTY
            if len(_hashes) >= _HASHES_KEPT:
                _hashes.clear()
            _hashes[(kind, inner)] = hashed
        return hashed
    return _EMPTY


#: The value hash of a row that says only that a trace has the key (the `attr=key`
#: filter's row: one seek, where the key's rows of every value would be read).
KEY_ONLY = 0


def attribute_pairs(attributes: str) -> list[tuple[str, int]]:
    """The (key, value hash) pairs of a row's attributes (their stored JSON text),
    each key also with KEY_ONLY."""
    found: list[tuple[str, int]] = []
    hashes = _hashes
    for pair in orjson.loads(attributes):
        try:
            key, value = pair["key"], pair["value"]
            ((kind, inner),) = value.items()
            hashed = hashes[kind, inner]
        except (KeyError, TypeError, ValueError, AttributeError):  # not seen, or odd
            if type(pair) is not dict or type(pair.get("key")) is not str:
                continue
            key, hashed = pair["key"], _hash_of(pair.get("value"))
        found += ((key, hashed), (key, KEY_ONLY))
    return found


#: An attribute that may give a span messages (genai/conventions.py names them): the
#: messages' own (any value), indexed messages, and the values of tools and agents
#: (strings); or a GenAI event. Only a span with one is read for its text.
_MESSAGE_KEYS = (
    *(key for key, _ in (*c.INPUT_MESSAGES, *c.OUTPUT_MESSAGES)),
    c.SYSTEM_INSTRUCTIONS,
    c.VERCEL_TOOL_CALLS,
)
_STRING_KEYS = (*c.INPUT_VALUE, *c.OUTPUT_VALUE, *c.VERCEL_TEXT)
_SAID = re.compile(
    '"key":"(?:'
    + "|".join(re.escape(key) + '"' for key in _MESSAGE_KEYS)
    + "|"
    + "|".join(re.escape(prefix) for prefix, _ in (*c.INDEXED_INPUT, *c.INDEXED_OUTPUT))
    + "|(?:"
    + "|".join(map(re.escape, _STRING_KEYS))
    + ')","value":\\{"stringValue")'
)


def says(attributes: str, events: str) -> bool:
    """Whether a span's attributes or events (their stored JSON texts) may hold
    messages: a cheap test, no parsing."""
    return _EVENT_MARKER in events or _SAID.search(attributes) is not None


def text_and_previews(name: str, kind: str, attributes: str, events: str) -> tuple[str, str] | None:
    """What a span the GenAI view describes gives the text index, when it has messages:
    its input and output messages' contents, one a line (empty when none has any), and
    its view's previews as the JSON text `[input, output]` (the list shows them)."""
    if not says(attributes, events):
        return None
    read = (lambda: orjson.loads(events)) if _EVENT_MARKER in events else None
    view = view_of(orjson.loads(attributes), read, name, kind)
    if view is None or not (view.input_messages or view.output_messages):
        return None
    texts = [m.content for m in (*view.input_messages, *view.output_messages) if m.content]
    previews = orjson.dumps([view.input_preview, view.output_preview]).decode()
    return "\n".join(texts)[:MAX_TEXT], previews


def _texts(rows: Iterable[SpanRow]) -> list[tuple[str, ...]]:
    """The `span_texts` rows of span rows: each text's words, and its previews."""
    found: list[tuple[str, ...]] = []
    for row in rows:
        if row.llm_type is None:
            continue
        try:
            given = text_and_previews(row.name, row.kind, row.attributes, row.events)
        except Exception:  # a span is stored whatever its text makes of it
            log.exception("span's LLM text failed; stored without it")
            continue
        if given is None:
            continue
        text, previews = given
        found.append(
            (row.project_id, row.trace_id, row.span_id, row.start_day, joined(text), previews)
        )
    return found


_INSERT = {
    "span_texts": "project_id, trace_id, span_id, start_day, body, previews",
    "trace_attributes": "project_id, attr_key, value_hash, trace_id",
    "trace_span_names": "project_id, name, trace_id",
    "project_span_names": "project_id, name",
}
#: SQLite: the words of the texts past a rowid, indexed (schema migration 17 dropped the
#: trigger that indexed each text as it was inserted: twice the cost of this).
_WORDS_OF_TEXTS = (
    "INSERT INTO span_text_words (rowid, body) SELECT id, body FROM span_texts WHERE id > ?"
)
#: The unique key of a table whose rows may be updated (`_insert`).
_KEYS = {"span_texts": "project_id, trace_id, span_id, start_day"}
#: PostgreSQL: each table's columns' types.
_TYPES = {
    "span_texts": ("text",) * 6,
    "trace_attributes": ("text", "text", "bigint", "text"),
    "trace_span_names": ("text",) * 3,
    "project_span_names": ("text",) * 2,
}
#: PostgreSQL: what a text's row selects of the columns given it, its words' tsvector
#: made of its body (its words: storage/text_words.py).
_TEXT_SELECT = f"u1, u2, u3, u4, u5, u6, {tsvector_of('u5')}"


def _insert(
    tx: Transaction, table: str, rows: list[tuple[Any, ...]], update: str | None = None
) -> None:
    """Insert rows, leaving those already there as they are (`update`: but for this
    column, set to the row's)."""
    if not rows:
        return
    columns = _INSERT[table]
    if update is None:
        conflict = "ON CONFLICT DO NOTHING"
    else:
        conflict = f"ON CONFLICT ({_KEYS[table]}) DO UPDATE SET {update} = excluded.{update}"
    texts = table == "span_texts"
    if tx.postgres:
        types = _TYPES[table]
        unnest = ", ".join(f"?::{kind}[]" for kind in types)
        named = ", ".join(f"u{at}" for at in range(1, len(types) + 1))
        columns, select = (f"{columns}, words", _TEXT_SELECT) if texts else (columns, "*")
        tx.execute(
            f"INSERT INTO {table} ({columns}) SELECT {select} "
            f"FROM unnest({unnest}) AS u ({named}) {conflict}",
            arrays(rows),
        )
        return
    if texts:
        last = tx.query_one("SELECT MAX(id) FROM span_texts")
        top = last[0] if last is not None and last[0] is not None else 0
    marks = ", ".join("?" * len(rows[0]))
    tx.executemany(f"INSERT INTO {table} ({columns}) VALUES ({marks}) {conflict}", rows)
    if texts:
        # the texts added (rowids past the largest before; one updated keeps its rowid
        # and body), given to FTS5 in one statement: FTS5 writes what it holds to disk at
        # each statement's savepoint, so a trigger's insert made a segment of each text
        tx.execute(_WORDS_OF_TEXTS, (top,))


#: A row's attributes as (key, value hash) pairs (the C row builder gives them, hashing
#: each value's JSON text by `text_hash`: storage/_rows_json.h).
Pairs = tuple[tuple[str, int], ...]
#: Value hashes by an AnyValue's JSON text (short ones: long ones rarely repeat).
_text_hashes: dict[str, int] = {}
_TEXT_KEPT = 256


def text_hash(text: str) -> int:
    """The hash of an AnyValue's string form (`value_hash(value_text(...))`), from the
    AnyValue's JSON text."""
    hashed = _text_hashes.get(text)
    if hashed is None:
        inner = text[16:-2]
        if (
            text.startswith('{"stringValue":"')
            and text.endswith('"}')
            and "\\" not in inner
            and '"' not in inner  # one member: a quote unescaped would end the string
        ):
            hashed = value_hash(inner)
        else:
            try:
                hashed = _hash_of(orjson.loads(text))
            except orjson.JSONDecodeError:
                hashed = _EMPTY
        if len(text) <= _TEXT_KEPT:
            if len(_text_hashes) >= _HASHES_KEPT:
                _text_hashes.clear()
            _text_hashes[text] = hashed
    return hashed


def _facets(
    rows: list[SpanRow], pairs: list[Pairs | None] | None
) -> tuple[list[tuple[Any, ...]], list[tuple[Any, ...]]]:
    """The distinct (project, key, value hash, trace) and (project, name, trace) of
    rows (a trace's rows fall to one writer: no two writers insert the same ones);
    `pairs`: each row's attribute pairs, when the row builder gave them."""
    hashed: dict[tuple[str, str], set[tuple[str, int]]] = {}
    names: dict[tuple[str, str], set[str]] = {}
    for at, row in enumerate(rows):
        trace = (row.project_id, row.trace_id)
        of_trace = names.get(trace)
        if of_trace is None:
            of_trace = names[trace] = set()
            hashed[trace] = set()
        of_trace.add(key_text(row.name))
        given = None if pairs is None else pairs[at]
        if given is not None:
            hashed[trace].update(given)
        elif row.attributes != "[]":
            hashed[trace].update(attribute_pairs(row.attributes))
    found: list[tuple[Any, ...]] = []
    for (project, trace_id), of_trace_hashed in hashed.items():
        of_trace_hashed.update([(k, KEY_ONLY) for k, _ in of_trace_hashed])
        found += [(project, key_text(k), h, trace_id) for k, h in of_trace_hashed]
    return found, [(p, n, t) for (p, t), of_trace in names.items() for n in of_trace]


class IndexRows(NamedTuple):
    """What a batch's rows add to the indexes, made before its transaction (by the
    worker, on its decoding thread): nothing stored is read."""

    #: the rows indexed: the batch's, each span's last send only
    rows: list[SpanRow]
    texts: list[tuple[str, ...]]
    attributes: list[tuple[Any, ...]]
    names: list[tuple[Any, ...]]


def index_rows(rows: list[SpanRow], pairs: list[Pairs | None] | None = None) -> IndexRows:
    """The index rows of a batch (`pairs`: each row's attribute pairs, when the row
    builder gave them); a span sent twice in it is indexed by its last send, the one
    stored."""
    last = {(r.project_id, r.trace_id, r.span_id, r.start_day): at for at, r in enumerate(rows)}
    if len(last) < len(rows):
        kept = sorted(last.values())
        rows = [rows[at] for at in kept]
        pairs = None if pairs is None else [pairs[at] for at in kept]
    attributes, names = _facets(rows, pairs)
    return IndexRows(rows, _texts(rows), attributes, names)


def write(tx: Transaction, index: IndexRows, rows: list[SpanRow], refused: list[SpanRow]) -> None:
    """Index a batch just written in `tx` (`rows`, whose `index_rows` is `index`;
    `refused`: those the window refused, not written), then make the stale traces'
    indexes anew."""
    if refused:  # rare: the batch indexed anew without the rows refused
        gone = set(map(id, refused))
        index = index_rows([row for row in rows if id(row) not in gone])
    _insert(tx, "span_texts", index.texts)
    _insert(tx, "trace_attributes", index.attributes)
    _insert(tx, "trace_span_names", index.names)
    _insert(tx, "project_span_names", sorted({(p, n) for p, n, _ in index.names}))
    rebuild_stale(tx)


_STALE = "SELECT project_id, trace_id, name, attributes FROM trace_index_stale"
_STORED = "SELECT name, attributes FROM spans WHERE project_id = ? AND trace_id = ?"


def _given(
    project: str, trace: str, rows: Iterable[tuple[str, str]]
) -> tuple[set[tuple[Any, ...]], set[tuple[Any, ...]]]:
    """The attribute and name rows that span rows (name, attributes) of a trace give."""
    pairs: set[tuple[Any, ...]] = set()
    names: set[tuple[Any, ...]] = set()
    for name, attributes in rows:
        names.add((project, key_text(name), trace))
        if attributes != "[]":
            pairs.update((project, key_text(k), h, trace) for k, h in attribute_pairs(attributes))
    return pairs, names


def rebuild_stale(tx: Transaction) -> int:
    """Remove the attribute and name rows that only the span rows noted stale (replaced
    or deleted) gave: those no stored span of their trace gives any more; how many
    traces were looked at."""
    stale = tx.query(_STALE)
    if not stale:
        return 0
    by_trace: dict[tuple[str, str], list[tuple[str, str]]] = {}
    for project, trace, name, attributes in stale:
        by_trace.setdefault((project, trace), []).append((name, attributes))
    gone_pairs: list[tuple[Any, ...]] = []
    gone_names: list[tuple[Any, ...]] = []
    for (project, trace), rows in sorted(by_trace.items()):
        old_pairs, old_names = _given(project, trace, rows)
        now_pairs, now_names = _given(project, trace, tx.query(_STORED, (project, trace)))
        gone_pairs += sorted(old_pairs - now_pairs)
        gone_names += sorted(old_names - now_names)
    _delete(tx, "trace_attributes", gone_pairs)
    _delete(tx, "trace_span_names", gone_names)
    tx.execute("DELETE FROM trace_index_stale")
    return len(by_trace)


def _delete(tx: Transaction, table: str, rows: list[tuple[Any, ...]]) -> None:
    """Delete rows by their whole key."""
    if not rows:
        return
    where = " AND ".join(f"{column} = ?" for column in _INSERT[table].split(", "))
    tx.executemany(f"DELETE FROM {table} WHERE {where}", rows)


_SAME_SPAN = "project_id = ? AND trace_id = ? AND span_id = ? AND start_day = ?"


def note_replaced(tx: Transaction, keys: Sequence[tuple[str, ...]]) -> None:
    """SQLite, before an upsert: note the stored rows of these keys (project, trace,
    span, day) stale, as the row the upsert may replace (noting one it keeps is
    harmless: its trace's rows are made anew from what is stored)."""
    tx.executemany(
        "INSERT INTO trace_index_stale SELECT project_id, trace_id, name, attributes "
        f"FROM spans WHERE {_SAME_SPAN}",
        keys,
    )


def give_previews(tx: Transaction, rows: list[SpanRow]) -> None:
    """Give the stored texts of a trace's stored `rows` their previews (storage/
    find_upgrade.py: the texts stored before they had them), by an update of each: a
    text keeps its rowid, whose order is the text index's newest first
    (storage/index_filters.py)."""
    _insert(tx, "span_texts", _texts(rows), update="previews")


def forget_texts(tx: Transaction, keys: Sequence[tuple[str, ...]]) -> None:
    """SQLite, after an upsert: delete the texts of rows it replaced (by their keys),
    which the batch's own then take the place of."""
    tx.executemany(f"DELETE FROM span_texts WHERE {_SAME_SPAN}", keys)


def stale_partition(tx: Transaction, partition: str) -> None:
    """PostgreSQL: note every span row of a partition about to be dropped as stale (a
    dropped table fires no trigger)."""
    tx.execute(
        "INSERT INTO trace_index_stale SELECT project_id, trace_id, name, attributes "
        f"FROM {partition}"
    )
