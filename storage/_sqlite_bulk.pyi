"""Types of storage/_sqlite_bulk.c."""

import sqlite3
from collections.abc import Sequence
from typing import Any

def executemany(
    connection: sqlite3.Connection,
    sql: str,
    rows: list[Sequence[Any]],
    unless: str | None = None,
    checked: bytes | None = None,
    /,
) -> list[int]: ...
def handle_file(connection: sqlite3.Connection, /) -> str: ...
