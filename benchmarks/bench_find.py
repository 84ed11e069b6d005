"""Finding a trace as the store grows: each filter and sort of the trace list on a small
store and on a large one, the ratio of their costs.

    python -m benchmarks.bench_find [--large-spans 1000000] [--seconds 2] [--keep DIR] \
        [--database postgresql://postgres@127.0.0.1:5432/test]

Two stores are filled straight through the span store (SpanStore.upsert, as the worker
writes: summaries, the full-text, attribute and name indexes, the sessions): a small
one of 10,000 spans and a large one of `--large-spans`, traces of 5 spans (a root, three
children, one model call with a question and an answer), the same mix in both: 20
tenants, 50 users, 4 models, a session every 10 traces, an error every 20, a request id
of its own per trace, words from a vocabulary where some are common and one is rare
(1 trace in 10,000), and a word of the same 5 traces in either store.
SQLite files by default, kept with `--keep DIR` (filled on the first run, read as
they are on the next: the large store takes minutes to fill); with `--database`, a
PostgreSQL schema each.

For each query (a page of 50 through storage/trace_list.py, with its input and output
previews, as the list JSON reads it), the median cost over paired rounds
(benchmarks/timing.py) of the large store against the small one. Targets: <= 1.5 for
each filter and sort, <= 3 for full text.
"""

from __future__ import annotations

import argparse
import tempfile
import time
from collections.abc import Callable, Iterator
from contextlib import ExitStack
from pathlib import Path

import orjson

from benchmarks.timing import paired_ratio
from genai.prices import Pricer
from spangate.cli_support import upgrade_stored_spans
from storage.database import Database
from storage.schema import migrate
from storage.span_rows import SpanRow, utc_day
from storage.spans import SpanStore
from storage.trace_list import TraceFilter, TraceOrder, TraceSummaries
from tests.postgres_server import postgres_schema

SMALL_SPANS = 10_000
SPANS = 5  # a trace
WORDS = [f"word{n}" for n in range(200)]
#: The first trace's start: 2026-10-22, a second between traces, so that a store of
#: 10,000,000 spans ends (2026-11-14) before it is read, as stored traces do: a trace
#: dated after the store's clock is ahead of its ceiling (storage/document_ceilings.py)
START_NS = 1_792_700_000 * 10**9
PROJECT = "bench"
#: The traces whose answer says a word no other trace says: five in either store, so
#: that the word's row measures its lookup, not a page that holds more traces.
FIVE = frozenset((11, 500, 1000, 1500, 1999))


def _message(role: str, text: str) -> str:
    return orjson.dumps([{"role": role, "parts": [{"type": "text", "content": text}]}]).decode()


def _attributes(pairs: dict[str, object]) -> str:
    def value(v: object) -> dict[str, object]:
        if isinstance(v, bool):
            return {"boolValue": v}
        if isinstance(v, int):
            return {"intValue": str(v)}
        return {"stringValue": str(v)}

    return orjson.dumps([{"key": k, "value": value(v)} for k, v in pairs.items()]).decode()


def _trace_rows(n: int) -> list[SpanRow]:
    """Trace n's rows, with the GenAI facts the worker would give its model call."""
    trace, start = f"{n:032x}", START_NS + n * 10**9
    day, session = utc_day(start), f"session-{n // 10}"
    common = {"tenant": f"tenant-{n % 20}", "request.id": f"req-{n}", "retries": n % 4}
    rows = []
    for s in range(SPANS):
        span = f"{s + 1:016x}"
        attributes = dict(common)
        facts: tuple[object, ...] = ()
        name, parent = ("handle request" if s == 0 else f"task {s}"), None if s == 0 else "1" * 16
        if s == SPANS - 1:
            name = "chat"
            rare = " zyzzyva" if n % 10_000 == 7 else ""
            rare += " quokka" if n in FIVE else ""
            attributes |= {
                "gen_ai.operation.name": "chat",
                "gen_ai.request.model": f"model-{n % 4}",
                "gen_ai.input.messages": _message("user", f"{WORDS[n % 200]} {WORDS[n % 7]}"),
                "gen_ai.output.messages": _message("assistant", f"{WORDS[n % 13]}{rare}"),
            }
            cost = None if n % 3 == 0 else (n % 100) / 1000
            tokens = (100 + n % 900, 10 + n % 90, 110 + n % 900 + n % 90)
            facts = ("llm", None, f"model-{n % 4}", "openai", f"user-{n % 50}", *tokens,
                     None, None, None, cost, "client")  # fmt: skip
        end = start + (s + 1) * 10**6 * (1 + n % 50)
        rows.append(
            SpanRow(
                PROJECT,
                trace,
                span,
                day,
                parent,
                name,
                "internal",
                2 if s == 1 and n % 20 == 0 else 0,
                None,
                start + s,
                end,
                session if n % 10 < 5 else None,
                _attributes(attributes),
                "[]",
                "[]",
                "{}",
                "{}",
                "{}",
                f"h{n}-{s}",
                1,
                *facts,
            )  # fmt: skip
        )
    return rows


def fill(db: Database, spans: int) -> None:
    """`spans` spans through the span store, in batches of 5,000, into a store made as
    a worker starts on it (migrated, and its upgrade walks recorded: none has anything
    to do on an empty store)."""
    migrate(db)
    upgrade_stored_spans(db, Pricer())
    store = SpanStore(db)
    batch: list[SpanRow] = []
    for n in range(spans // SPANS):
        batch += _trace_rows(n)
        if len(batch) >= 5000:
            store.upsert(batch, 1_200_000)
            batch = []
    if batch:
        store.upsert(batch, 1_200_000)
    if db.postgres:
        with db.transaction() as tx:
            tx.execute("ANALYZE")


def _last_hour(traces: int) -> TraceFilter:
    newest = START_NS + traces * 10**9
    return TraceFilter(from_ns=newest - 3600 * 10**9, to_ns=newest)


def queries() -> Iterator[tuple[str, Callable[[int], TraceFilter], TraceOrder]]:
    """What is measured: each filter (by start, newest first), then each sort; a
    filter made for a store of so many traces (the values are in both stores)."""
    start = TraceOrder()
    for what, filters in (
        ("no filter", TraceFilter()),
        ("q (root name)", TraceFilter(name="handle")),
        ("name (any span)", TraceFilter(span_name="task 2")),
        ("status=error", TraceFilter(errors_only=True)),
        ("session", TraceFilter(session="session-5")),
        ("user", TraceFilter(user="user-7")),
        ("model", TraceFilter(model="model-1")),
        ("minDurationMs", TraceFilter(min_duration_ns=100 * 10**6)),
        ("minCostUsd", TraceFilter(min_cost_usd=0.05)),
        ("minTokens", TraceFilter(min_tokens=500)),
        ("attr key=value (one trace)", TraceFilter(attributes=(("request.id", "req-7"),))),
        ("attr key=value (1 in 20)", TraceFilter(attributes=(("tenant", "tenant-3"),))),
        ("attr key", TraceFilter(attributes=(("retries", None),))),
        ("text, a common word", TraceFilter(words=("word3",))),
        ("text, two words", TraceFilter(words=("word3", "word5"))),
        ("text, a rare word", TraceFilter(words=("zyzzyva",))),
        ("text, a word of 5 traces", TraceFilter(words=("quokka",))),
    ):
        yield what, (lambda _, f=filters: f), start
    yield "from/to (the last hour)", _last_hour, start
    for sort in ("duration", "cost", "tokens"):
        for descending in (True, False):
            order = TraceOrder(sort, descending)
            yield f"sort={sort} {'desc' if descending else 'asc'}", lambda _: TraceFilter(), order


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--large-spans", type=int, default=1_000_000)
    parser.add_argument("--seconds", type=float, default=2.0, help="per query and store")
    parser.add_argument("--database", default="", help="postgresql://...; unset: SQLite")
    parser.add_argument("--only", default="", help="the queries whose name contains this")
    parser.add_argument("--keep", default="", help="SQLite: keep the stores in this directory")
    args = parser.parse_args()
    if args.keep and args.database:
        parser.error("--keep keeps SQLite files; a PostgreSQL schema is dropped after the run")
    with ExitStack() as stack:
        work = Path(
            args.keep or stack.enter_context(tempfile.TemporaryDirectory(prefix="bench-find-"))
        )
        work.mkdir(parents=True, exist_ok=True)
        stores = {}
        for label, spans in (("small", SMALL_SPANS), ("large", args.large_spans)):
            path = work / f"{label}-{spans}.db"
            filled = path.with_name(path.name + ".filled")  # written once it is
            kept = not args.database and filled.exists()
            if not args.database and not kept:
                for part in ("", "-wal", "-shm"):  # what a fill that did not end left
                    path.with_name(path.name + part).unlink(missing_ok=True)
            url = (
                stack.enter_context(postgres_schema(args.database))
                if args.database
                else f"sqlite:///{path}"
            )
            db = Database(url)
            stack.callback(db.close)
            if kept:  # brought up to this code's schema, as a worker starts on it
                migrate(db)
                upgrade_stored_spans(db, Pricer())
                print(f"{label}: {spans:,} spans, kept in {path}")
            else:
                began = time.perf_counter()
                fill(db, spans)
                print(f"{label}: {spans:,} spans stored in {time.perf_counter() - began:.0f} s")
                if not args.database:
                    filled.touch()
            stores[label] = (TraceSummaries(db), spans // SPANS)
        print(f"{'query':30} {'small ms':>9} {'large ms':>9} {'large/small':>11}  target")
        for what, make, order in queries():
            if args.only not in what:
                continue
            small, large = (
                _page(stores[label][0], make(stores[label][1]), order)
                for label in ("small", "large")
            )
            ratio, small_s, large_s = paired_ratio(small, large, args.seconds, rounds=6)
            target = 3.0 if what.startswith("text") else 1.5
            verdict = "ok" if ratio <= target else "OVER"
            print(
                f"{what:30} {small_s * 1e3:9.2f} {large_s * 1e3:9.2f} {ratio:11.2f}  "
                f"<= {target} {verdict}"
            )


def _page(summaries: TraceSummaries, filters: TraceFilter, order: TraceOrder) -> Callable[[], None]:
    def page() -> None:
        summaries.page(PROJECT, filters, 50, order=order)

    return page


if __name__ == "__main__":
    main()
