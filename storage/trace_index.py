"""The indexes that find a trace, written by the span store in the transaction that
writes the spans (schema migration 13, storage/find_schema.py).

* `span_texts`: the LLM text (input and output messages) of each stored span row that
  has some, one row per span row. Only the rows the GenAI view described are read (the
  worker marked them, storage/span_genai.py); their messages are read here, once, as
  they are written.
* `trace_attributes`: one row per distinct (attribute key, value) of a trace's spans,
  the value as the hash of its string form (`value_text`).
* `trace_span_names` and `project_span_names`: a trace's distinct span names, and a
  project's.

Exact under the re-sending rules: the rows the window refused add nothing; a stored
row replaced or deleted has a trigger delete its text and note its trace as stale,
whose attribute and name rows (and texts) are made anew here from what is stored
(`rebuild_stale`), in the same transaction: by the writer after a batch, by erasure
and retention after they delete.
"""

from __future__ import annotations

import hashlib
import logging
from collections.abc import Iterable, Iterator
from typing import Any

import orjson

from genai import view_of
from storage.database import Transaction, arrays
from storage.span_rows import SpanRow

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
    kind, inner = next(iter(value.items()))
    if kind == "stringValue":
        return str(inner)
    if kind == "boolValue":
        return "true" if inner else "false"
    if kind == "intValue":
        return str(int(inner))
    if kind == "doubleValue":
        return orjson.dumps(float(inner)).decode()
    return orjson.dumps(inner).decode()


def attribute_pairs(attributes: str) -> Iterator[tuple[str, int]]:
    """The (key, value hash) pairs of a row's attributes (their stored JSON text)."""
    for pair in orjson.loads(attributes):
        key = pair.get("key")
        if not isinstance(key, str):
            continue
        try:
            text = value_text(pair.get("value"))
        except (TypeError, ValueError):
            text = None
        yield key, value_hash("" if text is None else text)


def text_of(name: str, kind: str, attributes: str, events: str) -> str | None:
    """The LLM text of a span the GenAI view describes: its input and output
    messages' contents, one a line (None when it has none)."""
    read = (lambda: orjson.loads(events)) if _EVENT_MARKER in events else None
    view = view_of(orjson.loads(attributes), read, name, kind)
    if view is None:
        return None
    texts = [m.content for m in (*view.input_messages, *view.output_messages) if m.content]
    return "\n".join(texts)[:MAX_TEXT] or None


def _texts(rows: Iterable[SpanRow]) -> list[tuple[str, str, str, str, str]]:
    found = []
    for row in rows:
        if row.llm_type is None:
            continue
        try:
            body = text_of(row.name, row.kind, row.attributes, row.events)
        except Exception:  # a span is stored whatever its text makes of it
            log.exception("span's LLM text failed; stored without it")
            continue
        if body is not None:
            found.append((row.project_id, row.trace_id, row.span_id, row.start_day, body))
    return found


_INSERT = {
    "span_texts": "project_id, trace_id, span_id, start_day, body",
    "trace_attributes": "project_id, attr_key, value_hash, trace_id",
    "trace_span_names": "project_id, name, trace_id",
    "project_span_names": "project_id, name",
}
_TYPES = {
    "span_texts": ("text",) * 5,
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
        unnest = ", ".join(f"?::{kind}[]" for kind in _TYPES[table])
        tx.execute(
            f"INSERT INTO {table} ({columns}) SELECT * FROM unnest({unnest}) "
            "ON CONFLICT DO NOTHING",
            arrays(rows),
        )
        return
    marks = ", ".join("?" * len(rows[0]))
    tx.executemany(f"INSERT OR IGNORE INTO {table} ({columns}) VALUES ({marks})", rows)


def _facets(rows: Iterable[SpanRow]) -> tuple[set[tuple[Any, ...]], set[tuple[Any, ...]]]:
    """The distinct (project, key, value hash, trace) and (project, name, trace) of
    rows."""
    pairs: set[tuple[Any, ...]] = set()
    names: set[tuple[Any, ...]] = set()
    for row in rows:
        project, trace = row.project_id, row.trace_id
        names.add((project, row.name, trace))
        if row.attributes != "[]":
            pairs.update((project, k, h, trace) for k, h in attribute_pairs(row.attributes))
    return pairs, names


def _write_facets(tx: Transaction, rows: Iterable[SpanRow]) -> None:
    pairs, names = _facets(rows)
    _insert(tx, "trace_attributes", sorted(pairs))
    _insert(tx, "trace_span_names", sorted(names))
    _insert(tx, "project_span_names", sorted({(p, n) for p, n, _ in names}))


def write(tx: Transaction, rows: list[SpanRow], refused: list[SpanRow]) -> None:
    """Index a batch just written in `tx` (`refused`: the rows the window refused, not
    written), then make the stale traces' indexes anew."""
    if refused:
        gone = set(map(id, refused))
        rows = [row for row in rows if id(row) not in gone]
    # a span sent twice in the batch: the last send written is what is stored
    last = {(r.project_id, r.trace_id, r.span_id, r.start_day): r for r in rows}
    written = list(last.values()) if len(last) < len(rows) else rows
    _insert(tx, "span_texts", _texts(written))
    _write_facets(tx, written)
    rebuild_stale(tx)


_STORED = (
    "SELECT project_id, trace_id, span_id, start_day, parent_span_id, name, kind, "
    "status_code, status_message, start_ns, end_ns, session_id, attributes, events, "
    "'[]', '{}', '{}', '{}', content_hash, received_ms, llm_type FROM spans "
    "WHERE project_id = ? AND trace_id = ?"
)


def mark_stale(tx: Transaction, traces: list[Any]) -> None:
    """Note traces (project, trace) stale: their spans changed where no trigger saw it
    (a dropped partition)."""
    if tx.postgres and traces:
        tx.execute(
            "INSERT INTO trace_index_stale SELECT * FROM unnest(?::text[], ?::text[]) "
            "ON CONFLICT DO NOTHING",
            arrays([tuple(t) for t in traces]),
        )
    elif traces:
        tx.executemany(
            "INSERT OR IGNORE INTO trace_index_stale VALUES (?, ?)", [tuple(t) for t in traces]
        )


def rebuild_stale(tx: Transaction) -> int:
    """Make anew, from what is stored, the indexes of the traces noted stale; how many."""
    stale = tx.query("SELECT project_id, trace_id FROM trace_index_stale")
    if not stale:
        return 0
    for project, trace in sorted(stale):
        for table in ("span_texts", "trace_attributes", "trace_span_names"):
            tx.execute(
                f"DELETE FROM {table} WHERE project_id = ? AND trace_id = ?", (project, trace)
            )
        stored = [SpanRow(*row) for row in tx.query(_STORED, (project, trace))]
        _insert(tx, "span_texts", _texts(stored))
        _write_facets(tx, stored)
    tx.execute("DELETE FROM trace_index_stale")
    return len(stale)
