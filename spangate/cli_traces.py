"""`spangate traces list|show|export`: the stored spans, for operators."""

from __future__ import annotations

import argparse
import csv
import sys
from typing import Any

import orjson

from spangate.cli_support import CommandError, fail, print_json, print_table, with_database
from storage.database import Database
from storage.identity import IdentityStore
from storage.spans import MAX_EXPORT_TRACES, SpanStore


def _project_id(db: Database, name: str) -> str:
    return IdentityStore(db).project(name).id


def _nanos_to_ms(start: int, end: int | None) -> str:
    return "" if end is None else f"{(end - start) / 1e6:.1f}"


def _list(args: argparse.Namespace) -> int:
    def action(db: Database) -> int:
        traces = SpanStore(db).list_traces(_project_id(db, args.project), args.limit)
        if args.json:
            print_json(
                [
                    {
                        "traceId": t.trace_id,
                        "spans": t.spans,
                        "rootName": t.root_name,
                        "startTimeUnixNano": str(t.start_ns),
                        "endTimeUnixNano": None if t.end_ns is None else str(t.end_ns),
                        "receivedMs": t.received_ms,
                    }
                    for t in traces
                ]
            )
        else:
            print_table(
                [
                    (
                        t.trace_id,
                        str(t.spans),
                        t.root_name or "",
                        str(t.start_ns),
                        _nanos_to_ms(t.start_ns, t.end_ns),
                    )
                    for t in traces
                ],
                ("TRACE", "SPANS", "ROOT", "START_NS", "DURATION_MS"),
            )
        return 0

    return with_database(action)


def _show(args: argparse.Namespace) -> int:
    def action(db: Database) -> int:
        spans = SpanStore(db).trace(_project_id(db, args.project), args.trace_id)
        if not spans:
            raise CommandError(f"no stored spans for trace {args.trace_id} in {args.project}")
        if args.json:
            print_json({"traceId": args.trace_id.lower(), "spans": spans})
        else:
            print_table(
                [
                    (
                        s["spanId"],
                        s["parentSpanId"] or "",
                        s["name"],
                        s["kind"],
                        str(s["status"]["code"]),
                        s["startTimeUnixNano"],
                        _nanos_to_ms(
                            int(s["startTimeUnixNano"]),
                            int(s["endTimeUnixNano"]) if s["endTimeUnixNano"] else None,
                        ),
                    )
                    for s in spans
                ],
                ("SPAN", "PARENT", "NAME", "KIND", "STATUS", "START_NS", "DURATION_MS"),
            )
        return 0

    return with_database(action)


_CSV_COLUMNS = (
    "traceId",
    "spanId",
    "parentSpanId",
    "name",
    "kind",
    "status",
    "startTimeUnixNano",
    "endTimeUnixNano",
    "sessionId",
    "attributes",
    "events",
)


def _csv_cell(span: dict[str, Any], column: str) -> str:
    value = span.get(column)
    if column == "status":
        return str(span["status"]["code"])
    if isinstance(value, list | dict):
        return orjson.dumps(value).decode()
    return "" if value is None else str(value)


def _export(args: argparse.Namespace) -> int:
    if not 1 <= args.limit <= MAX_EXPORT_TRACES:
        return fail(
            f"--limit must be 1 to {MAX_EXPORT_TRACES}: an export holds at most "
            f"{MAX_EXPORT_TRACES} traces",
            2,
        )

    def action(db: Database) -> int:
        project_id = _project_id(db, args.project)
        store = SpanStore(db)
        traces: list[dict[str, Any]] = [
            {"traceId": t.trace_id, "spans": store.trace(project_id, t.trace_id)}
            for t in store.list_traces(project_id, args.limit)
        ]
        if args.format == "json":
            print_json(traces)
        else:
            writer = csv.writer(sys.stdout)
            writer.writerow(_CSV_COLUMNS)
            for trace in traces:
                for span in trace["spans"]:
                    writer.writerow([_csv_cell(span, column) for column in _CSV_COLUMNS])
        return 0

    return with_database(action)


def register(commands: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    """Add the traces commands."""
    traces = commands.add_parser("traces", help="stored traces").add_subparsers(
        dest="traces_command", metavar="ACTION", required=True
    )
    listing = traces.add_parser("list", help="recent traces of a project")
    listing.add_argument("--project", required=True)
    listing.add_argument("--limit", type=int, default=20)
    listing.add_argument("--json", action="store_true")
    listing.set_defaults(handler=_list)
    show = traces.add_parser("show", help="the stored spans of a trace")
    show.add_argument("trace_id")
    show.add_argument("--project", required=True)
    show.add_argument("--json", action="store_true")
    show.set_defaults(handler=_show)
    export = traces.add_parser("export", help="export up to 100 traces as CSV or JSON")
    export.add_argument("--project", required=True)
    export.add_argument("--format", choices=("csv", "json"), required=True)
    export.add_argument("--limit", type=int, default=MAX_EXPORT_TRACES)
    export.set_defaults(handler=_export)
