"""What every CLI command shares: settings, the store, and one-line errors."""

from __future__ import annotations

import argparse
import math
import os
import sys
import threading
from collections.abc import Callable
from typing import Any
from urllib.parse import urlsplit

import orjson

from genai.prices import PriceFileError, Pricer, read_price_file
from service.settings import Settings, SettingsError
from storage import find_upgrade, genai_upgrade, trace_walk
from storage.database import Database
from storage.errors import NotFound, StoreError, StoreUnavailable
from storage.schema import migrate, refuse_newer

EXIT_FAILED = 1
EXIT_USAGE = 2


class CommandError(Exception):
    """A command cannot do what was asked; the message is printed as one line."""


def fail(message: str, code: int = EXIT_FAILED) -> int:
    """Print one error line on stderr; the exit code."""
    print(f"spangate: error: {message}", file=sys.stderr)
    return code


def load_settings() -> Settings:
    """Settings from this process's environment (the one place that reads it)."""
    return Settings.from_env(os.environ)


#: What moves the database a command asks, named where it found none of what it asked.
_WHERE = "(SPANGATE_DATA_DIR, SPANGATE_DATABASE_URL)"


def store_failure(error: StoreError) -> str:
    """A store's failure as one line; one that could not reach it names the settings
    that say where it is."""
    return f"{error} {_WHERE}" if isinstance(error, StoreUnavailable) else str(error)


def with_database(
    action: Callable[[Database], int],
    statement_timeout_ms: int | None = None,
    existing: bool = False,
) -> int:
    """Run `action` against the migrated database (`statement_timeout_ms`: the setting's
    when None; 0 for none; `existing`: a SQLite file must be there already, as the
    commands that read or remove spans want: run from another directory, they made an
    empty one); every failure becomes one line."""
    try:
        settings = load_settings()
    except SettingsError as e:
        return fail(str(e), EXIT_USAGE)
    if statement_timeout_ms is None:
        statement_timeout_ms = settings.database_statement_timeout_ms
    db = Database(settings.database_url, statement_timeout_ms)
    path = db.sqlite_path
    new = path is not None and not path.exists()
    if existing and path is not None and new:
        db.close()
        return fail(f"no database at {path.resolve()} {_WHERE}")
    try:
        migrate(db)
        done = action(db)
        if path is not None and new and done == 0:  # not where the service's is?
            print(f"created a new database at {path.resolve()} {_WHERE}", file=sys.stderr)
        return done
    except NotFound as e:  # a command run where another database is: say which this is
        return fail(f"{e} in {db.display_url} {_WHERE}")
    except StoreError as e:
        return fail(store_failure(e))
    except (CommandError, ValueError) as e:
        return fail(str(e))
    finally:
        db.close()


def print_json(value: Any) -> None:
    """JSON on stdout, one document."""
    sys.stdout.write(orjson.dumps(value, option=orjson.OPT_INDENT_2).decode() + "\n")


def print_table(rows: list[tuple[str, ...]], header: tuple[str, ...]) -> None:
    """Columns aligned for a terminal."""
    table = [header, *rows]
    widths = [max(len(row[i]) for row in table) for i in range(len(header))]
    for row in table:
        print(
            "  ".join(cell.ljust(width) for cell, width in zip(row, widths, strict=True)).rstrip()
        )


def load_pricer(settings: Settings) -> Pricer:
    """The prices a worker costs model calls with: the operator's price file, when set,
    before the table; PriceFileError naming the setting, the file and the line of what
    is wrong."""
    if not settings.prices_file:
        return Pricer()
    try:
        return Pricer(read_price_file(str(settings.prices_file)))
    except PriceFileError as e:
        raise PriceFileError(f"SPANGATE_PRICES_FILE: {e}") from None


def base_url(text: str) -> str:
    """An argument's type: an http(s) URL with a host (and a port, where it has one),
    else argparse's one line naming the argument."""
    parts = urlsplit(text)
    try:
        parts.port  # noqa: B018 - ValueError when it is not a port
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r} has no valid port") from None
    if parts.scheme not in ("http", "https") or not parts.hostname:
        raise argparse.ArgumentTypeError(f"{text!r} is not an http:// or https:// URL")
    return text


def whole_number(low: int, high: int | None = None) -> Callable[[str], int]:
    """An argument's type: a whole number from `low` (to `high`), else argparse's one
    line naming the argument, not a traceback."""

    def parse(text: str) -> int:
        try:
            value = int(text)
        except ValueError:
            raise argparse.ArgumentTypeError(f"{text!r} is not a whole number") from None
        if value < low or (high is not None and value > high):
            bounds = f"{low:,} or more" if high is None else f"{low:,} to {high:,}"
            raise argparse.ArgumentTypeError(f"must be {bounds}")
        return value

    return parse


def rate(text: str) -> float:
    """An argument's type: a rate above 0."""
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r} is not a number") from None
    if not (math.isfinite(value) and value > 0):
        raise argparse.ArgumentTypeError("must be a number above 0")
    return value


def upgrade_stored_spans(db: Database, pricer: Pricer, stop: threading.Event | None = None) -> None:
    """Before a worker starts: refuse a store a newer build migrated (StoreError); give
    spans stored before the GenAI columns their facts (storage/genai_upgrade.py),
    with its progress on stderr when the store is large enough to take a while; then
    index the traces stored before the find indexes, and give the texts stored before
    their previews and (PostgreSQL) their words theirs, and the traces stored before
    their attributes' documents (storage/find_upgrade.py); and the spans stored with
    no convention's facts those a convention gives them now, and their users; and the
    model calls stored without a model the one their parameters name; and the traces
    stored with a model call under a model call their summaries counting it once,
    and the OTel GenAI workflows stored the facts of a chain; and the spans that name
    their user or session by OpenLLMetry's association properties those; and the
    embedding calls' texts to the text index. Once `stop` is set, the walk under way
    stops between two chunks (trace_walk.Stopped), the next start going on from there."""

    def progress(done: int, total: int) -> None:
        end = "\n" if done >= total else ""
        print(
            f"\rspangate: upgrading stored traces for the LLM view: {done:,}/{total:,}",
            end=end,
            file=sys.stderr,
            flush=True,
        )

    refuse_newer(db)
    with trace_walk.stopped_by(stop or threading.Event()):  # Stopped once `stop` is set
        _walk_all(db, pricer, progress)


def _walk_all(db: Database, pricer: Pricer, progress: trace_walk.Progress) -> None:
    genai_upgrade.upgrade(db, pricer, progress)
    find_upgrade.upgrade(db)
    find_upgrade.preview(db, progress)
    find_upgrade.reword(db, progress)
    find_upgrade.resource(db, progress)
    genai_upgrade.redescribe(db, pricer, progress)
    genai_upgrade.remodel(db, pricer, progress)
    genai_upgrade.count_once(db, pricer, progress)
    genai_upgrade.associate(db, progress)
    genai_upgrade.embed_texts(db, progress)
