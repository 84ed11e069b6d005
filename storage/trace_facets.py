"""A trace's attributes and span names, as the `attr` and `span_name` filters find them
(schema migration 21, storage/find_schema.py), written by the span store in the
transaction that writes the spans (storage/trace_index.py calls it).

* `trace_facets`: one row (a document) for the spans a batch brings of a trace, of
  tokens: one for each distinct (attribute key, value) of them and of their resources
  (`service.name`: a resource's attributes are its spans'), one for each key (what
  `attr=key` asks), one for each span name. A token is a 64-bit hash of the project,
  the key and the value (`key_token(project, key) ^ value hash`, where the value hash
  is storage/attribute_hashes.py's), or of the project and a name (`name_token`): a token
  finds one project's traces. The documents are indexed as FTS5 indexes a text on
  SQLite (the tokens in hex, without positions or sizes), as a GIN index of a
  `bigint[]` on PostgreSQL.
* `project_span_names`: a project's distinct span names, with their tokens: the
  `span_name` filter is a substring of a name, whose names are read there first.

Documents, not a row for each (project, key, value, trace): such rows are keyed by a
random trace id, and a batch's rows went to as many pages of the index as it had
pairs, each page written whole: one worker draining 1,000,000 spans into an empty
SQLite store stored 12,500 spans/s with them, 40,400 with the documents
(docs/benchmarks.md, "Decision: the attribute index").

The C row builder makes each body's documents as it builds its rows (storage/
_rows_tokens.h, with this module's token makers); `documents_of` makes them in Python
for the rest (a body it declined, a batch that sends a span twice, a stale trace).

Exact under the re-sending rules, as the texts are: a trace's documents may repeat
tokens (a span sent again, identical, brings a document of its own); what must not stay
is a token only a replaced or deleted span row gave, and a trace with such a row is
noted stale (storage/trace_index.py), its documents made anew from the rows stored
(`rebuild`).
"""

from __future__ import annotations

import hashlib
import struct
from collections.abc import Collection, Iterable

from storage import document_ceilings, shared_texts
from storage.attribute_hashes import attribute_pairs, resource_pairs
from storage.database import Transaction, arrays
from storage.storable import key_text
from storage.trace_texts import insert_indexed

#: A trace's document: project, trace, its tokens (`packed`).
Facets = tuple[str, str, bytes]
#: A project's span name: project, name, its token.
Name = tuple[str, str, int]

_MASK = 2**64 - 1


def _hash(person: bytes, project: str, text: str) -> int:
    digest = hashlib.blake2b(
        f"{project}\0{text}".encode("utf-8", "surrogatepass"), digest_size=8, person=person
    ).digest()
    return int.from_bytes(digest, "big", signed=True)


#: Key and span name tokens by (project, text): a batch's spans repeat them.
_keys: dict[tuple[str, str], int] = {}
_names: dict[tuple[str, str], int] = {}
_KEPT = 100_000


def _kept(kept: dict[tuple[str, str], int], made: int, project: str, text: str) -> int:
    if len(kept) >= _KEPT:
        kept.clear()
    kept[(project, text)] = made
    return made


def key_token(project: str, key: str) -> int:
    """The token of `attr=key` in a project (the key as the index keeps it: key_text);
    a pair's is it XOR the value's hash."""
    token = _keys.get((project, key))
    if token is None:
        token = _kept(_keys, _hash(b"attribute", project, key_text(key)), project, key)
    return token


def name_token(project: str, name: str) -> int:
    """The token of a span name in a project (`name` as the index keeps it: key_text)."""
    return _hash(b"span name", project, name)


def span_name_token(project: str, name: str) -> int:
    """The token of a span's name (as it was sent) in a project."""
    token = _names.get((project, name))
    if token is None:
        token = _kept(_names, name_token(project, key_text(name)), project, name)
    return token


def packed(tokens: Collection[int]) -> bytes:
    """Tokens as a document's bytes: 8 a token, big-endian, two's complement (what the C
    row builder gives, storage/_rows_tokens.h)."""
    return struct.pack(f">{len(tokens)}q", *tokens)


def unpacked(tokens: bytes) -> tuple[int, ...]:
    """A document's tokens from its bytes."""
    return struct.unpack(f">{len(tokens) // 8}q", tokens)


def hex_token(token: int) -> str:
    """A token as SQLite's documents hold it: 16 hex digits (`printf('%016x', token)`),
    one FTS5 token, which a document's text holds only where it holds the token."""
    return format(token & _MASK, "016x")


def hex_tokens(tokens: bytes) -> str:
    """A document's tokens (`packed`) as its text: each `hex_token`, a space apart."""
    return tokens.hex(" ", 8)


#: What a span gives its trace's document: project, trace, name, its attributes' stored
#: JSON text, its resource's JSON text.
Faceted = tuple[str, str, str, str, str]


def documents_of(spans: Iterable[Faceted]) -> list[Facets]:
    """The document of each trace of `spans`, in Python (the C row builder makes them as
    it builds the rows): a token for each span name, each key, each (key, value), of the
    spans' attributes and their resources' (what the `attr` filter finds:
    `service.name`, `deployment.environment`); each distinct one once."""
    traces: dict[tuple[str, str], set[int]] = {}
    resources: dict[str, list[tuple[str, int]]] = {}
    given: set[tuple[str, str, str]] = set()  # (project, trace, resource) in the tokens
    for project, trace_id, name, attributes, resource in spans:
        tokens = traces.get((project, trace_id))
        if tokens is None:
            tokens = traces[(project, trace_id)] = set()
        tokens.add(span_name_token(project, name))
        pairs = attribute_pairs(attributes) if attributes != "[]" else []
        if resource != "{}" and (project, trace_id, resource) not in given:
            given.add((project, trace_id, resource))
            if resource not in resources:
                known = not shared_texts.is_key(resource)  # a key: a text not at hand
                resources[resource] = resource_pairs(resource) if known else []
            pairs += resources[resource]
        for key, hashed in pairs:
            keyed = key_token(project, key)
            tokens.add(keyed)
            tokens.add(keyed ^ hashed)
    return [(project, trace_id, packed(tokens)) for (project, trace_id), tokens in traces.items()]


def merged(documents: Iterable[Facets]) -> list[Facets]:
    """One document a trace: the documents of a trace that came in several bodies made
    one, of their distinct tokens."""
    found: dict[tuple[str, str], bytes] = {}
    again: set[tuple[str, str]] = set()
    for project, trace_id, tokens in documents:
        trace = (project, trace_id)
        if trace in found:
            again.add(trace)
            tokens = found[trace] + tokens
        found[trace] = tokens
    for trace in again:
        found[trace] = packed(set(unpacked(found[trace])))
    return [(project, trace_id, tokens) for (project, trace_id), tokens in found.items()]


def names_of(spans: Iterable[tuple[str, str]]) -> list[Name]:
    """The distinct span names of `spans` (project, name), as the index keeps them
    (key_text), with their tokens."""
    return [
        (project, key_text(name), span_name_token(project, name)) for project, name in set(spans)
    ]


def write(tx: Transaction, facets: list[Facets], names: list[Name]) -> None:
    """Insert documents, and the project names not yet there."""
    if names:
        names = sorted(set(names))
        if tx.postgres:
            tx.execute(
                "INSERT INTO project_span_names (project_id, name, token) SELECT * FROM "
                "unnest(?::text[], ?::text[], ?::bigint[]) ON CONFLICT DO NOTHING",
                arrays(names),
            )
        else:
            tx.executemany(
                "INSERT INTO project_span_names (project_id, name, token) VALUES (?, ?, ?) "
                "ON CONFLICT DO NOTHING",
                names,
            )
    if not facets:
        return
    if tx.postgres:
        sorts = document_ceilings.sort_values(tx, {(p, t) for p, t, _ in facets})
        tx.copy(
            "trace_facets (project_id, trace_id, tokens, sort_ns)",
            ("text", "text", "bigint[]", "bigint"),
            [(p, t, list(unpacked(tokens)), sorts.get((p, t))) for p, t, tokens in facets],
        )
        return
    insert_indexed(
        tx,
        "trace_facets",
        "trace_facet_tokens",
        "project_id, trace_id",
        [(p, t, hex_tokens(tokens)) for p, t, tokens in facets],
    )


_STORED = (
    "SELECT project_id, trace_id, name, attributes, resource FROM spans WHERE project_id = ? "
    "AND trace_id = ?"
)


def rebuild(tx: Transaction, traces: Iterable[tuple[str, str]]) -> None:
    """Make the documents of these (project, trace) anew from the span rows stored."""
    spans: list[Faceted] = []
    for project, trace in sorted(set(traces)):
        tx.execute(
            "DELETE FROM trace_facets WHERE project_id = ? AND trace_id = ?", (project, trace)
        )
        rows = tx.query(_STORED, (project, trace))
        bodies = shared_texts.bodies(tx, project, (row[4] for row in rows))
        spans += [(*row[:4], shared_texts.text_of(row[4], bodies)) for row in rows]
    write(tx, documents_of(spans), names_of((p, name) for p, _, name, _, _ in spans))
