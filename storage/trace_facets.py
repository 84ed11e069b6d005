"""A trace's attributes and span names, as the `attr` and `span_name` filters find them
(schema migration 21, storage/find_schema.py), written by the span store in the
transaction that writes the spans (storage/trace_index.py calls it).

* `trace_facets`: one row (a document) for the spans a batch brings of a trace, of
  tokens: one for each distinct (attribute key, value) of them, one for each key (what
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

Exact under the re-sending rules, as the texts are: a trace's documents may repeat
tokens (a span sent again, identical, brings a document of its own); what must not stay
is a token only a replaced or deleted span row gave, and a trace with such a row is
noted stale (storage/trace_index.py), its documents made anew from the rows stored
(`rebuild`).
"""

from __future__ import annotations

import hashlib
import struct
from collections.abc import Iterable, Sequence

from storage.attribute_hashes import attribute_pairs
from storage.database import Transaction, arrays
from storage.storable import key_text
from storage.trace_texts import insert_indexed

#: A trace's document: project, trace, its tokens.
Facets = tuple[str, str, list[int]]
#: A project's span name: project, name, its token.
Name = tuple[str, str, int]

_MASK = 2**64 - 1


def _hash(person: bytes, project: str, text: str) -> int:
    digest = hashlib.blake2b(
        f"{project}\0{text}".encode("utf-8", "surrogatepass"), digest_size=8, person=person
    ).digest()
    return int.from_bytes(digest, "big", signed=True)


#: Key tokens by (project, key): a batch's spans repeat their keys.
_keys: dict[tuple[str, str], int] = {}
_KEYS_KEPT = 100_000


def key_token(project: str, key: str) -> int:
    """The token of `attr=key` in a project (the key as the index keeps it: key_text);
    a pair's is it XOR the value's hash."""
    token = _keys.get((project, key))
    if token is None:
        token = _hash(b"attribute", project, key_text(key))
        if len(_keys) >= _KEYS_KEPT:
            _keys.clear()
        _keys[(project, key)] = token
    return token


def name_token(project: str, name: str) -> int:
    """The token of a span name in a project (as the index keeps it: key_text)."""
    return _hash(b"span name", project, name)


def hex_token(token: int) -> str:
    """A token as SQLite's documents hold it: 16 hex digits (`printf('%016x', token)`),
    one FTS5 token, which a document's text holds only where it holds the token."""
    return format(token & _MASK, "016x")


def hex_tokens(tokens: list[int]) -> str:
    """Tokens as a document's text: each `hex_token`, a space apart (their 8 bytes
    big-endian, two's complement, in hex: 0.03 us a token, where `hex_token` each took
    0.24)."""
    return struct.pack(f">{len(tokens)}q", *tokens).hex(" ", 8)


def facets_of(
    spans: Sequence[tuple[str, str, str]], pairs: Sequence[Iterable[tuple[str, int]] | None]
) -> tuple[list[Facets], list[Name]]:
    """The document of each trace of `spans` (project, trace, name), each with its
    attribute pairs (`pairs`), and the span names they have. A trace's spans repeat
    their names and pairs: each distinct one is made a token once."""
    traces: dict[tuple[str, str], tuple[set[str], set[tuple[str, int]]]] = {}
    for (project, trace_id, name), given in zip(spans, pairs, strict=True):
        of_trace = traces.get((project, trace_id))
        if of_trace is None:
            of_trace = traces[(project, trace_id)] = (set(), set())
        of_trace[0].add(name)
        if given is not None:
            of_trace[1].update(given)
    documents: list[Facets] = []
    names: dict[tuple[str, str], int] = {}
    for (project, trace_id), (of_names, of_pairs) in traces.items():
        tokens: set[int] = set()
        for name in of_names:
            named = (project, key_text(name))
            token = names.get(named)
            if token is None:
                token = names[named] = name_token(*named)
            tokens.add(token)
        for key, hashed in of_pairs:
            keyed = key_token(project, key)
            tokens.add(keyed)
            tokens.add(keyed ^ hashed)
        documents.append((project, trace_id, list(tokens)))
    return documents, [(project, name, token) for (project, name), token in names.items()]


def write(tx: Transaction, facets: list[Facets], names: list[Name]) -> None:
    """Insert documents, and the project names not yet there."""
    if names:
        names = sorted(names)
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
        tx.execute(
            "INSERT INTO trace_facets (project_id, trace_id, tokens) "
            "SELECT u1, u2, u3::bigint[] FROM unnest(?::text[], ?::text[], ?::text[]) "
            "AS u (u1, u2, u3)",
            arrays([(p, t, "{" + ",".join(map(str, tokens)) + "}") for p, t, tokens in facets]),
        )
        return
    insert_indexed(
        tx,
        "trace_facets",
        "trace_facet_tokens",
        "project_id, trace_id",
        [(p, t, hex_tokens(tokens)) for p, t, tokens in facets],
    )


_STORED = "SELECT name, attributes FROM spans WHERE project_id = ? AND trace_id = ?"


def rebuild(tx: Transaction, traces: Iterable[tuple[str, str]]) -> None:
    """Make the documents of these (project, trace) anew from the span rows stored."""
    spans: list[tuple[str, str, str]] = []
    pairs: list[Iterable[tuple[str, int]] | None] = []
    for project, trace in sorted(set(traces)):
        tx.execute(
            "DELETE FROM trace_facets WHERE project_id = ? AND trace_id = ?", (project, trace)
        )
        for name, attributes in tx.query(_STORED, (project, trace)):
            spans.append((project, trace, name))
            pairs.append(attribute_pairs(attributes) if attributes != "[]" else None)
    write(tx, *facets_of(spans, pairs))
