"""The worker's steps that touch neither Redis nor the database: a part's entries
decoded into rows, split between writer threads, and what became of it merged."""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass, field
from itertools import chain

from genai.prices import Pricer
from spanqueue.consumer import Entry
from spanqueue.layout import QueuedRequest
from storage import trace_index
from storage.span_genai import rows_with_views
from storage.span_rows import SpanRow
from storage.spans import Prepared, SpanStore
from storage.storable import storable
from storage.trace_facets import Facets


@dataclass
class Decoded:
    entries: list[Entry] = field(default_factory=list)
    rows: list[list[SpanRow]] = field(default_factory=list)
    #: each entry's traces' documents of tokens, where the row builder made them (else
    #: None: made from the rows when prepared)
    facets: list[list[Facets] | None] = field(default_factory=list)
    poison: list[tuple[Entry, str]] = field(default_factory=list)
    #: the rows of every entry, prepared for the store (SpanStore.prepared) on the
    #: decoding thread, when handed to a writer thread
    prepared: Prepared | None = None

    def prepared_for(self, store: SpanStore) -> Prepared:
        """Its rows, all entries', prepared for `store`, with their documents of tokens
        (made here of an entry's rows where the row builder made none)."""
        rows = list(chain.from_iterable(self.rows))
        if not store.find_index:
            return store.prepared(rows)
        facets = [
            document
            for entry_rows, given in zip(self.rows, self.facets, strict=True)
            for document in (trace_index.documents(entry_rows) if given is None else given)
        ]
        return store.prepared(rows, facets)


@dataclass
class Written:
    """What became of a part: the entries written, their spans, the rows the window
    refused; and the entries whose rows the database refused, with the reason."""

    entries: list[Entry] = field(default_factory=list)
    spans: int = 0
    refused: list[SpanRow] = field(default_factory=list)
    failed: list[tuple[Entry, str]] = field(default_factory=list)


def shares(decoded: Decoded, writers: int) -> list[Decoded]:
    """The part split between `writers` by trace id: each share has every entry, with
    the rows of the entry's traces that fall to it (and their documents)."""
    if writers == 1:
        return [decoded]
    shares = [Decoded(decoded.entries) for _ in range(writers)]
    for rows, facets in zip(decoded.rows, decoded.facets, strict=True):
        split: list[list[SpanRow]] = [[] for _ in shares]
        trace, at = "", 0
        for row in rows:
            if row.trace_id != trace:  # a trace's rows mostly come together
                trace = row.trace_id
                at = hash(trace) % writers
            split[at].append(row)
        split_facets: list[list[Facets]] | None = None
        if facets is not None:
            split_facets = [[] for _ in shares]
            for document in facets:
                split_facets[hash(document[1]) % writers].append(document)
        for number, (into, rows_of_share) in enumerate(zip(shares, split, strict=True)):
            into.rows.append(rows_of_share)
            into.facets.append(None if split_facets is None else split_facets[number])
    return shares


def merged(entries: list[Entry], written: list[Written]) -> Written:
    """What became of a part from what became of each writer's share: an entry refused
    in any share failed."""
    failed: dict[int, tuple[Entry, str]] = {}
    for share in written:
        for entry, reason in share.failed:
            failed.setdefault(id(entry), (entry, reason))
    return Written(
        [entry for entry in entries if id(entry) not in failed],
        sum(share.spans for share in written),
        [row for share in written for row in share.refused],
        list(failed.values()),
    )


def decode(entries: list[Entry], pricer: Pricer, facets: bool = True) -> Decoded:
    """Rows of each entry, with their GenAI facts (priced by `pricer`) and (`facets`: for
    a store that keeps the attribute index) their traces' documents of tokens; the
    entries that do not decode, with the reason."""
    decoded = Decoded()
    for entry in entries:
        try:
            item = QueuedRequest.from_fields(entry.fields)
            rows, given = rows_with_views(
                item.body, item.project_id, item.received_ms, pricer, facets
            )
            rows = storable(rows)
        except (KeyError, ValueError, TypeError, AttributeError, IndexError) as e:
            decoded.poison.append((entry, f"undecodable entry: {type(e).__name__}: {e}"))
            continue
        decoded.entries.append(entry)
        decoded.rows.append(rows)
        decoded.facets.append(given)
    return decoded


def parts(entries: list[Entry], spans: int, first: int) -> Iterator[list[Entry]]:
    """Consecutive entries, in parts of at least `spans` spans, the first of at least
    `first` (the last may have fewer)."""
    part: list[Entry] = []
    counted = 0
    for entry in entries:
        part.append(entry)
        counted += entry.span_count
        if counted >= first:
            yield part
            part, counted, first = [], 0, spans
    if part:
        yield part
