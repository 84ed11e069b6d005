"""The indexes that find a trace, written by the span store in the transaction that
writes the spans (schema migration 13, storage/find_schema.py).

* The LLM text of the spans (storage/trace_texts.py): a document of a trace's words a
  batch and start day, and each span's previews.
* `trace_attributes`: one row per distinct (attribute key, value) of a trace's spans,
  the value as the hash of its string form (`value_text`).
* `trace_span_names` and `project_span_names`: a trace's distinct span names, and a
  project's.

What a batch adds is made before its transaction (`index_rows`, on the worker's
decoding thread), from the attribute pairs the C row builder gives where it built the
rows (nothing parsed again), and written in the transaction that writes the spans.

Exact under the re-sending rules: the rows the window refused add nothing; a stored
row replaced or deleted has its previews deleted and is noted stale with its start day,
whose trace's attribute and name rows, and whose trace's documents of that day, are
made anew here from what is stored (`rebuild_stale`), in the same transaction: by the
writer after a batch, by erasure and retention after they delete. A trigger notes a
deleted row, and on PostgreSQL a replaced one; on SQLite the writer notes the rows that
may replace a stored one of other content (`note_replaced`, and
`trace_texts.forget_previews`): an update trigger on the spans made every insert of the
upsert, most of which replace nothing, cost twice as much.
"""

from __future__ import annotations

import hashlib
from collections.abc import Iterable, Sequence
from typing import Any, NamedTuple

import orjson

from storage import trace_texts
from storage.database import Transaction, arrays
from storage.span_rows import SpanRow
from storage.storable import key_text


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
#: Short values only (KEPT_CHARS): long ones (a model call's messages) rarely repeat,
#: and 100,000 of them held 150-200 MB of the worker's memory.
_hashes: dict[tuple[str, Any], int] = {}
_HASHES_KEPT = 100_000
KEPT_CHARS = 256
_EMPTY = value_hash("")


def _hash_of(value: Any) -> int:
    """The hash of an AnyValue's string form (that of "" for what has none)."""
    if type(value) is not dict:
        return _EMPTY
    for kind, inner in value.items():
        if type(inner) in (dict, list):  # arrays and maps: their JSON, not kept
            return value_hash(orjson.dumps(inner).decode())
        kept = type(inner) is not str or len(inner) <= KEPT_CHARS
        hashed = _hashes.get((kind, inner)) if kept else None
        if hashed is None:
            try:
                hashed = value_hash(_text_of(kind, inner))
            except (TypeError, ValueError):
                hashed = _EMPTY
            if kept:
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


_INSERT = {
    "trace_attributes": "project_id, attr_key, value_hash, trace_id",
    "trace_span_names": "project_id, name, trace_id",
    "project_span_names": "project_id, name",
}
#: PostgreSQL: each table's columns' types.
_TYPES = {
    "trace_attributes": ("text", "text", "bigint", "text"),
    "trace_span_names": ("text",) * 3,
    "project_span_names": ("text",) * 2,
}


def _insert(tx: Transaction, table: str, rows: list[tuple[Any, ...]]) -> None:
    """Insert rows, leaving those already there as they are."""
    if not rows:
        return
    columns = _INSERT[table]
    if tx.postgres:
        types = _TYPES[table]
        unnest = ", ".join(f"?::{kind}[]" for kind in types)
        named = ", ".join(f"u{at}" for at in range(1, len(types) + 1))
        tx.execute(
            f"INSERT INTO {table} ({columns}) SELECT * "
            f"FROM unnest({unnest}) AS u ({named}) ON CONFLICT DO NOTHING",
            arrays(rows),
        )
        return
    marks = ", ".join("?" * len(rows[0]))
    tx.executemany(f"INSERT INTO {table} ({columns}) VALUES ({marks}) ON CONFLICT DO NOTHING", rows)


#: A row's attributes as (key, value hash) pairs (the C row builder gives them, hashing
#: each value's JSON text by `text_hash`: storage/_rows_json.h).
Pairs = tuple[tuple[str, int], ...]
#: Value hashes by an AnyValue's JSON text (short ones: long ones rarely repeat).
_text_hashes: dict[str, int] = {}


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
        if len(text) <= KEPT_CHARS:
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
    previews: list[trace_texts.Previews]
    documents: list[trace_texts.Document]
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
    return IndexRows(rows, *trace_texts.texts_of(rows), attributes, names)


def write(tx: Transaction, index: IndexRows, rows: list[SpanRow], refused: list[SpanRow]) -> None:
    """Index a batch just written in `tx` (`rows`, whose `index_rows` is `index`;
    `refused`: those the window refused, not written), then make the stale traces'
    indexes anew."""
    if refused:  # rare: the batch indexed anew without the rows refused
        gone = set(map(id, refused))
        index = index_rows([row for row in rows if id(row) not in gone])
    trace_texts.write(tx, index.previews, index.documents)
    write_facets(tx, index)
    rebuild_stale(tx)


def write_facets(tx: Transaction, index: IndexRows) -> None:
    """Insert a batch's attribute and span-name rows."""
    _insert(tx, "trace_attributes", index.attributes)
    _insert(tx, "trace_span_names", index.names)
    _insert(tx, "project_span_names", sorted({(p, n) for p, n, _ in index.names}))


#: What a stale row notes of a span row replaced or deleted.
_STALE_COLUMNS = "project_id, trace_id, name, attributes, start_day"
_STALE = f"SELECT {_STALE_COLUMNS} FROM trace_index_stale"
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
    or deleted) gave: those no stored span of their trace gives any more; and make their
    traces' documents of their days anew; how many traces were looked at."""
    stale = tx.query(_STALE)
    if not stale:
        return 0
    by_trace: dict[tuple[str, str], list[tuple[str, str]]] = {}
    days: set[tuple[str, str, str]] = set()
    for project, trace, name, attributes, day in stale:
        by_trace.setdefault((project, trace), []).append((name, attributes))
        if day is not None:
            days.add((project, trace, day))
    gone_pairs: list[tuple[Any, ...]] = []
    gone_names: list[tuple[Any, ...]] = []
    for (project, trace), rows in sorted(by_trace.items()):
        old_pairs, old_names = _given(project, trace, rows)
        now_pairs, now_names = _given(project, trace, tx.query(_STORED, (project, trace)))
        gone_pairs += sorted(old_pairs - now_pairs)
        gone_names += sorted(old_names - now_names)
    _delete(tx, "trace_attributes", gone_pairs)
    _delete(tx, "trace_span_names", gone_names)
    trace_texts.rebuild(tx, days)
    tx.execute("DELETE FROM trace_index_stale")
    return len(by_trace)


def _delete(tx: Transaction, table: str, rows: list[tuple[Any, ...]]) -> None:
    """Delete rows by their whole key."""
    if not rows:
        return
    where = " AND ".join(f"{column} = ?" for column in _INSERT[table].split(", "))
    tx.executemany(f"DELETE FROM {table} WHERE {where}", rows)


_SAME_SPAN = "project_id = ? AND trace_id = ? AND span_id = ? AND start_day = ?"


def note_replaced(tx: Transaction, rows: Sequence[SpanRow]) -> None:
    """SQLite, before an upsert: note the stored rows of these rows' keys (project,
    trace, span, day) stale where they hold other content, as the row the upsert may
    replace (noting one it keeps, refused by the window, is harmless: its trace's rows
    are made anew from what is stored)."""
    tx.executemany(
        f"INSERT INTO trace_index_stale ({_STALE_COLUMNS}) SELECT {_STALE_COLUMNS} "
        f"FROM spans WHERE {_SAME_SPAN} AND content_hash <> ?",
        [(*row[:4], row.content_hash) for row in rows],
    )


def stale_partition(tx: Transaction, partition: str) -> None:
    """PostgreSQL: note every span row of a partition about to be dropped as stale (a
    dropped table fires no trigger)."""
    tx.execute(
        f"INSERT INTO trace_index_stale ({_STALE_COLUMNS}) SELECT {_STALE_COLUMNS} FROM {partition}"
    )
