"""`spangate traces list|show|export|erase`: the stored spans, for operators."""

from __future__ import annotations

import argparse
import sys
from datetime import UTC, datetime
from decimal import Decimal

from genai.prices import settled
from spangate.cli_support import (
    CommandError,
    fail,
    print_json,
    print_table,
    whole_number,
    with_database,
)
from storage.database import Database
from storage.erasure import Eraser
from storage.export import MAX_EXPORT_TRACES, as_csv, check_limit, export_traces, status_name
from storage.identity import IdentityStore
from storage.spans import SpanStore
from storage.trace_list import TraceFilter, TraceSummaries


def _project_id(db: Database, name: str) -> str:
    return IdentityStore(db).project(name).id


def _nanos_to_ms(start: int, end: int | None) -> str:
    return "" if end is None else f"{(end - start) / 1e6:.1f}"


def decimal_usd(cost: float) -> str:
    """A cost in USD written out, as the dashboard reads it (0.00002985, not 2.985e-05)."""
    return f"{Decimal(repr(settled(cost))):f}"


def _start(nanos: int) -> str:
    """A start time for a terminal: UTC, to the second."""
    return datetime.fromtimestamp(nanos // 10**9, UTC).strftime("%Y-%m-%d %H:%M:%S")


def _list(args: argparse.Namespace) -> int:
    def action(db: Database) -> int:
        project_id = _project_id(db, args.project)
        traces = TraceSummaries(db).page(project_id, TraceFilter(), args.limit).traces
        if args.json:
            print_json(
                [
                    {
                        "traceId": t.trace_id,
                        "spans": t.span_count,
                        "rootName": t.root_name,
                        "startTimeUnixNano": str(t.start_ns),
                        "endTimeUnixNano": None if t.end_ns is None else str(t.end_ns),
                        "receivedMs": t.received_ms,
                        "errorCount": t.error_count,
                        "models": t.models,
                        "totalTokens": t.usage[2],
                        "costUsd": settled(t.usage[3]),
                    }
                    for t in traces
                ]
            )
        else:
            print_table(
                [
                    (
                        t.trace_id,
                        _start(t.start_ns),
                        _nanos_to_ms(t.start_ns, t.end_ns),
                        str(t.span_count),
                        str(t.error_count),
                        ",".join(t.models),
                        "" if t.usage[2] is None else str(t.usage[2]),
                        "" if t.usage[3] is None else decimal_usd(t.usage[3]),
                        t.root_name or "",
                    )
                    for t in traces
                ],
                (
                    "TRACE",
                    "START_UTC",
                    "DURATION_MS",
                    "SPANS",
                    "ERRORS",
                    "MODELS",
                    "TOKENS",
                    "COST_USD",
                    "ROOT",
                ),  # fmt: skip
            )
        return 0

    return with_database(action, existing=True)


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
                        status_name(s["status"]),
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

    return with_database(action, existing=True)


def _export(args: argparse.Namespace) -> int:
    try:
        check_limit(args.limit)
    except ValueError as e:
        return fail(f"--{e}", 2)

    def action(db: Database) -> int:
        traces = export_traces(db, _project_id(db, args.project), TraceFilter(), args.limit)
        if args.format == "json":
            print_json(traces)
        else:
            sys.stdout.write(as_csv(traces))
        return 0

    return with_database(action, existing=True)


def _erase(args: argparse.Namespace) -> int:
    def action(db: Database) -> int:
        eraser = Eraser(db, _project_id(db, args.project))
        if args.trace:
            selection = eraser.trace(args.trace)
        elif args.session:
            selection = eraser.session(args.session)
        else:
            key, _, value = args.attribute.partition("=")
            if not key or not _:
                raise CommandError("--attribute takes KEY=VALUE")
            selection = eraser.attribute(key, value, args.whole_traces)
        if not args.yes:
            found = eraser.count(selection)
            print(
                f"would erase {found.spans} spans of {found.traces} traces and "
                f"{found.scores} scores; nothing erased: add --yes to erase them"
            )
            return 0
        erased = eraser.erase(selection)
        print(f"erased {erased.spans} spans of {erased.traces} traces and {erased.scores} scores")
        return 0

    return with_database(action, existing=True)


def register(commands: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    """Add the traces commands."""
    traces = commands.add_parser("traces", help="stored traces").add_subparsers(
        dest="traces_command", metavar="ACTION", required=True
    )
    listing = traces.add_parser("list", help="recent traces of a project")
    listing.add_argument("--project", required=True)
    listing.add_argument("--limit", type=whole_number(1, 100_000), default=20)
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
    erase = traces.add_parser(
        "erase", help="erase stored spans on request: a trace, a session, a data subject's"
    )
    erase.add_argument("--project", required=True)
    which = erase.add_mutually_exclusive_group(required=True)
    which.add_argument("--trace", metavar="TRACE_ID", help="a whole trace")
    which.add_argument("--session", metavar="SESSION_ID", help="every trace of a session")
    which.add_argument(
        "--attribute",
        metavar="KEY=VALUE",
        help="the spans whose string attribute KEY is VALUE (e.g. user.id=u-42)",
    )
    erase.add_argument(
        "--whole-traces", action="store_true", help="with --attribute: their whole traces"
    )
    erase.add_argument(
        "--yes", action="store_true", help="erase (without it, only count what would go)"
    )
    erase.set_defaults(handler=_erase)
