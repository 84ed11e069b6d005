"""PostgreSQL: the pending lists of the find indexes' GIN indexes (the words of
`trace_texts`, the tokens of `trace_facets`), merged by the worker's transaction that
filled them.

A GIN index takes new entries into a pending list, which every search reads whole, and
merges it into the index when an insert takes it past `gin_pending_list_limit` (or a
vacuum runs). The merge sorts the entries it holds and updates each word's postings
once, so a longer list is cheaper to merge an entry; but until it is merged every
search pays for it (a rare word read 3.9 ms through a full list of 4 MB, 0.12 ms
through an empty one).

So the list may grow to 4 MB while a batch is written, and the batch's transaction
merges it (`gin_clean_pending_list`) before it commits: a batch's entries are merged in
a few passes, not one each few hundred documents, and a search after the commit reads
no list. What it bought, in `bench_worker --genai` on PostgreSQL: docs/benchmarks.md.

The worker's batches merge (storage/spans.py); the walks that index the stored traces
anew leave the lists to their inserts, and the next batch merges what they left.
`gin_clean_pending_list` needs the index's owner (or a member of its role): a worker that
does not own them leaves the lists to its inserts' merges, 4 MB at most.
"""

from __future__ import annotations

from storage.database import Transaction

#: The GIN indexes the worker's transactions write.
INDEXES = ("trace_texts_words", "trace_facets_tokens")
#: Their pending lists' limit, in kB (PostgreSQL's default).
LIMIT_KB = 4096

#: Schema migration 27 (PostgreSQL).
MIGRATION = tuple(
    f"ALTER INDEX {index} SET (gin_pending_list_limit = {LIMIT_KB})" for index in INDEXES
)

#: Those of the indexes that are there and GIN (an operator may have dropped or remade
#: one), of an owner whose privileges the user has.
_MERGE = (
    "SELECT gin_clean_pending_list(index.oid) FROM pg_class AS index "
    "JOIN pg_am AS method ON method.oid = index.relam AND method.amname = 'gin' "
    "WHERE index.oid IN ("
    + ", ".join(f"to_regclass('{name}')" for name in INDEXES)
    + ") AND pg_has_role(index.relowner, 'USAGE')"
)


def merge(tx: Transaction) -> None:
    """Merge the indexes' pending lists into them, within `tx` (those it may: `_MERGE`)."""
    tx.query(_MERGE)
