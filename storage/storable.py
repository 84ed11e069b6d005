"""What every store can hold of a span row's texts, made so before the row is written.

PostgreSQL's text holds no NUL character (U+0000), which JSON may carry (`\\u0000`) in a
span's name, status message, ids or an attribute's key: a row with one would fail its
whole batch, whose other spans were acknowledged. It is stored as U+FFFD (the
replacement character) in those columns and in the index keys, on either store alike;
the span's attributes and events are stored as JSON text, where it stays escaped, as
sent.

A B-tree entry holds at most about 2,700 bytes (PostgreSQL's limit): an index key made
of a text (a span's name in the name index, an attribute's key, a session or user id)
is the text's first MAX_KEY_BYTES bytes in UTF-8 (`key_text`), and a session or user id
its first MAX_ID_CHARS characters first, as the GenAI view reads one (`id_text`), on
either store alike, so that no text a span may carry can fail the batch that writes it.
The filters cut what they are given the same way, so that a longer one is still found.
"""

from __future__ import annotations

from operator import itemgetter
from typing import Any

from genai.view import TEXT_CHARS
from storage.span_rows import SpanRow

#: The longest key text kept whole, in UTF-8 bytes.
MAX_KEY_BYTES = 2000
#: The characters of a session or user id kept: the GenAI view's bound on a text it
#: reads, for ids it did not read too (a native span's `session.id`).
MAX_ID_CHARS = TEXT_CHARS
#: A text of at most this many characters is at most MAX_KEY_BYTES bytes (4 a character).
_SHORT = MAX_KEY_BYTES // 4
#: The columns of a row that hold a text decoded from the span's JSON (not JSON text).
_TEXTS = ("name", "kind", "status_message", "session_id", "llm_name", "model", "provider",
          "user_id")  # fmt: skip
_NUL = "\x00"


def no_nul(text: str) -> str:
    """`text` with a NUL character as U+FFFD, as every store keeps it."""
    return text.replace(_NUL, "\ufffd") if _NUL in text else text


def key_text(text: str) -> str:
    """`text` as an index keeps it: its first MAX_KEY_BYTES bytes in UTF-8, cut between
    characters, a NUL character as U+FFFD (an attribute's key may hold one)."""
    text = no_nul(text)
    if len(text) <= _SHORT:
        return text
    encoded = text.encode("utf-8", "surrogatepass")
    if len(encoded) <= MAX_KEY_BYTES:
        return text
    return encoded[:MAX_KEY_BYTES].decode("utf-8", "ignore")


_COLUMNS = [itemgetter(SpanRow._fields.index(column)) for column in _TEXTS]
_SESSION, _USER = (_COLUMNS[_TEXTS.index(column)] for column in ("session_id", "user_id"))


def id_text(text: str) -> str:
    """A session or user id as the store keeps it: its first MAX_ID_CHARS characters
    (as the GenAI view reads an id, genai/view.py), then `key_text`."""
    return key_text(text[:MAX_ID_CHARS])


def _longest(rows: list[SpanRow], column: itemgetter[Any]) -> int:
    """The length of the longest text of a column (C loops: most batches have none long)."""
    return max(map(len, filter(None, map(column, rows))), default=0)


def _long(text: str | None) -> bool:
    return text is not None and len(text) > _SHORT


def storable(rows: list[SpanRow]) -> list[SpanRow]:
    """`rows`, those with a NUL in a text column or a session or user id over
    MAX_KEY_BYTES made storable (in place). Each test is a loop in C over a column
    (0.15 us a span; a scan of a GenAI batch's body for `\\u0000` took 1.9)."""
    nul = any(_NUL in "\x01".join(filter(None, map(column, rows))) for column in _COLUMNS)
    long = _longest(rows, _SESSION) > _SHORT or _longest(rows, _USER) > _SHORT
    if not (nul or long):
        return rows
    for at, row in enumerate(rows):
        if nul:
            fixed: dict[str, Any] = {
                column: no_nul(value)
                for column in _TEXTS
                if isinstance(value := getattr(row, column), str) and _NUL in value
            }
            if fixed:
                row = rows[at] = row._replace(**fixed)
        if _long(row.session_id) or _long(row.user_id):
            rows[at] = row._replace(
                session_id=None if row.session_id is None else id_text(row.session_id),
                user_id=None if row.user_id is None else id_text(row.user_id),
            )
    return rows
