"""`spangate replay PATH... [--rate R]`: send example files or archived requests again."""

from __future__ import annotations

import argparse
from pathlib import Path

from service.settings import SettingsError
from spangate.cli_support import base_url, fail, load_settings, rate
from spangate.replay import ReplayError, replay


def _replay(args: argparse.Namespace) -> int:
    try:
        settings = load_settings()
    except SettingsError as e:
        return fail(str(e), 2)
    ingest = args.url or f"http://{settings.host}:{settings.ingest_port}"
    api = args.api_url or f"http://{settings.host}:{settings.api_port}"
    paths = [Path(p) for p in args.paths]
    missing = [str(p) for p in paths if not p.is_file()]
    if missing:
        return fail(f"no such file: {', '.join(missing)}")
    try:
        summary = replay(
            paths, ingest, api, args.key, args.rate, progress=not args.quiet, now=args.now
        )
    except (ReplayError, OSError, ValueError) as e:
        return fail(str(e))
    statuses = ", ".join(
        f"{status or 'no answer'}: {n}" for status, n in sorted(summary.statuses.items())
    )
    scores = (
        f"; scores recorded {summary.scores}, refused {summary.scores_refused}"
        if summary.scores or summary.scores_refused
        else ""
    )
    print(
        f"{summary.requests} requests ({statuses}); spans accepted {summary.accepted}, "
        f"rejected {summary.rejected}, refused {summary.refused}{scores}"
    )
    return 0 if summary.refused == 0 and summary.scores_refused == 0 else 1


def register(commands: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    """Add the replay command."""
    parser = commands.add_parser("replay", help="send example files or archived requests")
    parser.add_argument(
        "paths",
        nargs="+",
        metavar="PATH",
        help="*.json, *.ndjson, their .gz, a score, or archive-*.jsonl.gz",
    )
    parser.add_argument("--key", required=True, help="the API key to send them with")
    parser.add_argument("--rate", type=rate, default=None, help="requests per second at most")
    parser.add_argument(
        "--url", type=base_url, help="gateway base URL (default: SPANGATE_HOST:INGEST_PORT)"
    )
    parser.add_argument(
        "--api-url", type=base_url, help="scores API base URL (default: ...:API_PORT)"
    )
    parser.add_argument("--quiet", action="store_true", help="no progress bar")
    parser.add_argument(
        "--now",
        action="store_true",
        help="send as a new run: fresh trace and span ids, times moved to end now",
    )
    parser.set_defaults(handler=_replay)
