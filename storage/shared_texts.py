"""A resource's and a scope's JSON text, stored once a project however many spans share it.

An exporter sends a resource, and a scope, once for all the spans under it, and the
canonical form keeps them so; a row of each span holding the text stored it once a
span (500 spans under a resource of 1,000 attributes stored its 150 KB 500 times).
A row holds a text shorter than a key itself (`{}`, an empty resource or scope), and a
longer one's key: the BLAKE2b-128 of its UTF-8 bytes in hex, the text stored once in
`shared_texts` by the transaction that writes the rows. Rows stored before this held
every text themselves; a reader tells a text from a key by its first character (the
canonical form's resource and scope are objects).

Each text keeps the latest start day of the rows written with it (an upper bound: the
latest of their batch), and retention removes it once every day up to that one is gone.
Erasure removes span rows, not the texts other spans may share.
"""

from __future__ import annotations

from collections.abc import Iterable
from hashlib import blake2b
from operator import itemgetter
from typing import Any

from storage.database import Transaction

#: The length of a key (32 hex digits); a shorter text is held by the row itself.
KEY_LENGTH = 32
#: Keys asked in one query (SQLite's old limit is 999 parameters).
_ASKED = 400
_PROJECT, _DAY = itemgetter(0), itemgetter(3)
#: A row's resource and scope (storage/span_rows.py: SpanRow's fields 16 and 17).
_RESOURCE, _SCOPE = itemgetter(16), itemgetter(17)

_UPSERT = (
    "INSERT INTO shared_texts (project_id, key, body, last_day) VALUES (?, ?, ?, ?) "
    "ON CONFLICT (project_id, key) DO UPDATE SET last_day = excluded.last_day "
    "WHERE shared_texts.last_day < excluded.last_day"
)


class SharedText(str):
    """A text's key, as a row holds it, carrying the text (`body`) for the store to write."""

    body: str


def held(text: str) -> str:
    """What a span row holds of a resource's or a scope's JSON text: the text when it is
    shorter than a key, else its key (a SharedText). Both row builders call it once a
    resource and once a scope."""
    if len(text) < KEY_LENGTH:
        return text
    key = SharedText(blake2b(text.encode("utf-8", "surrogatepass"), digest_size=16).hexdigest())
    key.body = text
    return key


def is_key(value: str) -> bool:
    """Whether a stored resource or scope is a key (else the JSON text itself)."""
    return not value.startswith("{")


def text_of(value: str, bodies: dict[str, str]) -> str:
    """The JSON text a stored resource or scope stands for, given the texts of its
    project's keys; `{}` for a key whose text is gone (a row of a day retention removed,
    written after it ran, until its next run)."""
    if not is_key(value):
        return value
    return bodies.get(value, "{}")


def _carried(rows: list[Any]) -> dict[tuple[str, str], SharedText]:
    """The rows' keys that carry their text, by (project, key)."""
    projects = set(map(_PROJECT, rows))
    if len(projects) == 1:
        [project] = projects
        values: Iterable[tuple[str, Any]] = (
            (project, value) for value in {*map(_RESOURCE, rows), *map(_SCOPE, rows)}
        )
    else:
        values = {(row[0], value) for row in rows for value in (_RESOURCE(row), _SCOPE(row))}
    return {
        (project, str(value)): value for project, value in values if isinstance(value, SharedText)
    }


def write(tx: Transaction, rows: list[Any]) -> None:
    """Store the texts the rows' keys carry that are not stored yet, or are stored with
    an earlier last day than the rows' latest start day, in `tx` (the rows' own)."""
    carried = _carried(rows)
    if not carried:
        return
    day = max(map(_DAY, rows))
    stored: dict[tuple[str, str], str] = {}
    by_project: dict[str, list[str]] = {}
    for project, key in carried:
        by_project.setdefault(project, []).append(key)
    for project, keys in by_project.items():
        for at in range(0, len(keys), _ASKED):
            asked = keys[at : at + _ASKED]
            for key, last_day in tx.query(
                "SELECT key, last_day FROM shared_texts WHERE project_id = ? AND key IN "
                f"({', '.join('?' * len(asked))})",
                (project, *asked),
            ):
                stored[(project, key)] = last_day
    wanted = sorted(
        (project, key, text.body, day)
        for (project, key), text in carried.items()
        if stored.get((project, key), "") < day
    )  # in key order: two writers of the same new texts wait, never deadlock
    if wanted:
        tx.executemany(_UPSERT, wanted)


def bodies(tx: Transaction, project_id: str, values: Iterable[str]) -> dict[str, str]:
    """The texts of the keys among a project's stored resources and scopes (`values`),
    by key (a key with no text stored is left out); no query when none is a key."""
    asked = sorted({value for value in values if is_key(value)})
    found: dict[str, str] = {}
    for at in range(0, len(asked), _ASKED):
        part = asked[at : at + _ASKED]
        found.update(
            tx.query(
                "SELECT key, body FROM shared_texts WHERE project_id = ? AND key IN "
                f"({', '.join('?' * len(part))})",
                (project_id, *part),
            )
        )
    return found


def remove_before(tx: Transaction, day: str) -> int:
    """Remove the texts whose rows' days are all before `day`; how many."""
    return tx.execute("DELETE FROM shared_texts WHERE last_day < ?", (day,))
