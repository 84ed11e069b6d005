"""The `spangate` command: one subcommand per part and per operator task."""

from __future__ import annotations

import argparse
import os
import sys
from collections.abc import Sequence

from spangate import (
    __version__,
    cli_alerts,
    cli_identity,
    cli_replay,
    cli_retention,
    cli_serve,
    cli_traces,
)

EXIT_BROKEN_PIPE = 128 + 13  # as a shell reports a command that SIGPIPE stopped


def build_parser() -> argparse.ArgumentParser:
    """The argument parser with every subcommand registered."""
    parser = argparse.ArgumentParser(
        prog="spangate", description="Span ingest gateway and scores service."
    )
    parser.add_argument("--version", action="version", version=f"spangate {__version__}")
    commands = parser.add_subparsers(dest="command", metavar="COMMAND")
    cli_serve.register(commands)
    cli_identity.register(commands)
    cli_traces.register(commands)
    cli_alerts.register(commands)
    cli_replay.register(commands)
    cli_retention.register(commands)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    """Entry point of the console script; returns the process exit code."""
    parser = build_parser()
    args = parser.parse_args(argv)
    handler = getattr(args, "handler", None)
    if handler is None:
        parser.print_help(sys.stderr)
        return 2
    try:
        return int(handler(args))
    except BrokenPipeError:
        # The reader left (`spangate traces export ... | head`): stop quietly, as a
        # command killed by SIGPIPE would, and keep Python's exit flush from failing too.
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        return EXIT_BROKEN_PIPE


if __name__ == "__main__":
    sys.exit(main())
