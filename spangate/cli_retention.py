"""`spangate retention --days N`: remove the spans that started more than N days ago."""

from __future__ import annotations

import argparse
from datetime import timedelta

from spangate.cli_support import print_json, whole_number, with_database
from storage.database import Database
from storage.retention import remove_days_before, today


def _retention(args: argparse.Namespace) -> int:
    cutoff = today() - timedelta(days=args.days)

    def remove(db: Database) -> int:
        if not args.yes:
            print_json({"keepFrom": cutoff.isoformat(), "removed": None})
            return 0
        removed = remove_days_before(db, cutoff)
        print_json(
            {
                "keepFrom": cutoff.isoformat(),
                "removed": {
                    "partitions": removed.partitions,
                    "rows": removed.rows,
                    "tracesRecounted": removed.traces,
                },
            }
        )
        return 0

    # no statement time limit: deleting a day's rows outside a partition may take long
    return with_database(remove, statement_timeout_ms=0, existing=True)


def register(commands: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    """Add the retention command."""
    retention = commands.add_parser(
        "retention",
        help="remove the spans whose UTC start day is more than N days before today",
    )
    retention.add_argument(  # a century at most: the cutoff is a date
        "--days", type=whole_number(1, 36_500), required=True, metavar="N"
    )
    retention.add_argument(
        "--yes", action="store_true", help="remove (without it, only say what would be kept)"
    )
    retention.set_defaults(handler=_retention)
