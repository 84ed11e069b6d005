"""`spangate traces list|show|export` over a real store."""

from __future__ import annotations

import csv
import io
import os
import subprocess
import sys
from datetime import UTC, datetime
from pathlib import Path

import orjson
import pytest

import proto_json
from spangate.cli import main
from spangate.cli_traces import decimal_usd
from storage.database import Database
from storage.identity import IdentityStore
from storage.schema import migrate
from storage.span_rows import rows_of
from storage.spans import SpanStore
from tests.proto_json.spans import span


@pytest.fixture(autouse=True)
def filled(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("SPANGATE_DATABASE_URL", f"sqlite:///{tmp_path / 'db.db'}")
    db = Database(f"sqlite:///{tmp_path / 'db.db'}")
    migrate(db)
    identity = IdentityStore(db)
    project = identity.create_project("demo")
    spans = [
        span(
            traceId=f"{t + 1:032x}",
            spanId=f"{s + 1:016x}",
            name=f"t{t}-s{s}",
            kind="agent" if s == 0 else "tool_call",
            parentSpanId=None if s == 0 else "1".zfill(16),
            startTime=f"2026-11-22T10:00:0{t}Z",
            endTime=f"2026-11-22T10:00:0{t}.5Z",
            attributes={"n": s},
        )
        for t in range(3)
        for s in range(2)
    ]
    request = proto_json.convert_spans(orjson.dumps({"spans": spans})).request
    SpanStore(db).upsert(rows_of(request, project.id, 1), 1_200_000)
    db.close()


def run(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, str, str]:
    code = main(list(argv))
    out, err = capsys.readouterr()
    return code, out, err


def test_list_newest_first(capsys: pytest.CaptureFixture[str]) -> None:
    """traces list shows the most recent traces first, with span counts and root names."""
    code, out, _ = run(capsys, "traces", "list", "--project", "demo", "--json")
    listed = orjson.loads(out)
    assert code == 0 and [t["traceId"][-1] for t in listed] == ["3", "2", "1"]
    assert listed[0]["spans"] == 2 and listed[0]["rootName"] == "t2-s0"
    assert (
        len(
            orjson.loads(
                run(capsys, "traces", "list", "--project", "demo", "--limit", "1", "--json")[1]
            )
        )
        == 1
    )


def test_list_as_a_table_reads_like_the_dashboards(capsys: pytest.CaptureFixture[str]) -> None:
    """Without --json: the start in UTC (not nanoseconds), duration, spans, errors,
    models, tokens, cost and root, one trace a line under a header."""
    code, out, _ = run(capsys, "traces", "list", "--project", "demo")
    header, first, *_ = out.splitlines()
    assert code == 0 and header.split() == [
        "TRACE", "START_UTC", "DURATION_MS", "SPANS", "ERRORS", "MODELS", "TOKENS", "COST_USD",
        "ROOT",
    ]  # fmt: skip
    listed = orjson.loads(run(capsys, "traces", "list", "--project", "demo", "--json")[1])[0]
    start = int(listed["startTimeUnixNano"]) // 10**9
    shown = datetime.fromtimestamp(start, UTC).strftime("%Y-%m-%d %H:%M:%S")
    assert first.startswith(f"{listed['traceId']}  {shown}  ")
    assert first.split()[-1] == listed["rootName"] and listed["errorCount"] == 0


def test_a_cost_is_written_out() -> None:
    """The table's costs read as the dashboard's, written out: never in e-notation."""
    assert [decimal_usd(c) for c in (2.985e-05, 0.0005876400000000001, 1.5, 0.0, 12.0)] == [
        "0.00002985", "0.00058764", "1.5", "0.0", "12.0"
    ]  # fmt: skip


def test_a_command_run_where_no_database_is_makes_none(
    capsys: pytest.CaptureFixture[str], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Run from another directory (or with another URL), a command that reads spans says
    where it looked, and leaves no empty database there."""
    monkeypatch.setenv("SPANGATE_DATABASE_URL", f"sqlite:///{tmp_path}/elsewhere/spangate.db")
    for command in (("traces", "list"), ("traces", "export", "--format", "json")):
        code, _, err = run(capsys, *command, "--project", "demo")
        assert code == 1 and f"no database at {tmp_path}/elsewhere/spangate.db" in err
    assert not (tmp_path / "elsewhere").exists()


def test_show_as_stored(capsys: pytest.CaptureFixture[str]) -> None:
    """traces show prints the stored spans: ids, SDK kind, status, times, attributes."""
    code, out, _ = run(capsys, "traces", "show", f"{1:032X}", "--project", "demo", "--json")
    shown = orjson.loads(out)
    assert code == 0 and shown["traceId"] == f"{1:032x}"
    root, child = shown["spans"]
    assert (root["name"], root["kind"], root["parentSpanId"]) == ("t0-s0", "agent", None)
    assert child["kind"] == "tool_call" and child["status"] == {"code": 0}
    assert root["startTimeUnixNano"] == "1795341600000000000"
    assert {"key": "n", "value": {"intValue": "0"}} in root["attributes"]
    code, out, _ = run(capsys, "traces", "show", f"{1:032x}", "--project", "demo")
    header, *rows = out.splitlines()
    assert header.split()[3:5] == ["KIND", "STATUS"]
    assert [row.split()[-4:-2] for row in rows] == [["agent", "unset"], ["tool_call", "unset"]]
    code, _, err = run(capsys, "traces", "show", "f" * 32, "--project", "demo")
    assert code == 1 and "no stored spans" in err


def test_export_json_and_csv(capsys: pytest.CaptureFixture[str]) -> None:
    """traces export gives JSON traces or one CSV row per span (status by name, the
    attributes as one JSON object); at most 100 traces."""
    exported = orjson.loads(
        run(capsys, "traces", "export", "--project", "demo", "--format", "json")[1]
    )
    assert [len(t["spans"]) for t in exported] == [2, 2, 2]
    code, out, _ = run(
        capsys, "traces", "export", "--project", "demo", "--format", "csv", "--limit", "2"
    )
    rows = list(csv.DictReader(io.StringIO(out)))
    assert code == 0 and len(rows) == 4 and rows[0]["kind"] == "agent"
    assert orjson.loads(rows[0]["attributes"]) == {"n": 0, "spangate.span.kind": "agent"}
    assert {row["status"] for row in rows} <= {"unset", "ok", "error"}
    code, _, err = run(
        capsys, "traces", "export", "--project", "demo", "--format", "json", "--limit", "101"
    )
    assert code == 2 and "at most 100 traces" in err


def test_csv_export_neutralises_formulas(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    """traces export --format csv writes a cell that a spreadsheet would run as a
    formula behind a `'`; --format json keeps it exact."""
    db = Database(f"sqlite:///{tmp_path / 'db.db'}")
    formula = '=HYPERLINK("http://evil.example/s","s")'
    newest = "2026-11-22T11:00:00Z"
    attributes = {"session.id": "@x"}
    body = {
        "spans": [span(traceId="f" * 32, name=formula, startTime=newest, attributes=attributes)]
    }
    request = proto_json.convert_spans(orjson.dumps(body)).request
    SpanStore(db).upsert(rows_of(request, IdentityStore(db).project("demo").id, 1), 1_200_000)
    db.close()
    args = ("traces", "export", "--project", "demo", "--limit", "1", "--format")
    row = next(csv.DictReader(io.StringIO(run(capsys, *args, "csv")[1], newline="")))
    assert (row["name"], row["sessionId"]) == ("'" + formula, "'@x")
    (exported,) = orjson.loads(run(capsys, *args, "json")[1])
    assert exported["spans"][0]["name"] == formula


def test_unknown_project(capsys: pytest.CaptureFixture[str]) -> None:
    """An unknown project is one clear error line, which names the database asked (a
    command run from another directory asks another)."""
    code, _, err = run(capsys, "traces", "list", "--project", "nope")
    assert code == 1 and "no project nope in sqlite:///" in err and err.count("\n") == 1
    assert err.endswith(".db (SPANGATE_DATA_DIR, SPANGATE_DATABASE_URL)\n")


def test_erase_counts_first_then_erases(capsys: pytest.CaptureFixture[str]) -> None:
    """traces erase without --yes only counts; with it the trace is gone from every read."""
    trace = f"{1:032x}"
    code, out, _ = run(capsys, "traces", "erase", "--project", "demo", "--trace", trace)
    assert code == 0 and "would erase 2 spans of 1 traces" in out and "nothing erased" in out
    code, out, _ = run(capsys, "traces", "erase", "--project", "demo", "--trace", trace, "--yes")
    assert code == 0 and "erased 2 spans of 1 traces" in out
    code, _, err = run(capsys, "traces", "show", trace, "--project", "demo")
    assert code == 1 and "no stored spans" in err
    listed = orjson.loads(run(capsys, "traces", "list", "--project", "demo", "--json")[1])
    assert trace not in [t["traceId"] for t in listed]
    code, _, err = run(capsys, "traces", "erase", "--project", "demo", "--attribute", "novalue")
    assert code == 1 and "KEY=VALUE" in err


def test_a_closed_pipe_ends_the_export_quietly(tmp_path: Path) -> None:
    """`traces export | head`: a reader that has left. No traceback; exit 141, as a
    command stopped by SIGPIPE."""
    read_end, write_end = os.pipe()
    os.close(read_end)  # the reader is gone before the first line
    env = {**os.environ, "SPANGATE_DATABASE_URL": f"sqlite:///{tmp_path / 'db.db'}"}
    try:
        export = subprocess.run(
            [sys.executable, "-m", "spangate.cli", "traces", "export", "--project", "demo",
             "--format", "json"],
            env=env, stdout=write_end, stderr=subprocess.PIPE, timeout=60, check=False,
        )  # fmt: skip
    finally:
        os.close(write_end)
    assert export.returncode == 141 and export.stderr.decode() == ""


@pytest.mark.parametrize(
    ("argv", "says"),
    [
        (["traces", "list", "--project", "demo", "--limit", "0"], "--limit: must be 1 to 100,000"),
        (["traces", "list", "--project", "demo", "--limit", "x"], "--limit: 'x' is not a whole"),
        (["retention", "--days", "800000"], "--days: must be 1 to 36,500"),
        (["retention", "--days", "99999999999"], "--days: must be 1 to 36,500"),
        (["worker", "--claim-idle-ms", "-5", "--burst"], "--claim-idle-ms: must be 0 or more"),
        (["replay", "x.json", "--key", "k", "--rate", "0"], "--rate: must be a number above 0"),
        (["replay", "x.json", "--key", "k", "--rate", "nan"], "--rate: must be a number above 0"),
        (
            ["replay", "x.json", "--key", "k", "--url", "http://127.0.0.1:99999"],
            "--url: 'http://127.0.0.1:99999' has no valid port",
        ),
        (
            ["replay", "x.json", "--key", "k", "--api-url", "ftp://h"],
            "--api-url: 'ftp://h' is not an http:// or https:// URL",
        ),
    ],
)
def test_a_bad_number_is_one_line_naming_its_argument(
    capsys: pytest.CaptureFixture[str], argv: list[str], says: str
) -> None:
    """A number out of its range is argparse's error naming the argument (exit 2), not
    a traceback or the queue store's error."""
    with pytest.raises(SystemExit) as exited:
        main(argv)
    err = capsys.readouterr().err
    assert exited.value.code == 2 and says in err and "Traceback" not in err


def test_a_database_out_of_reach_names_the_settings_that_place_it(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """A data directory that cannot be made: the worker's one line says the database is
    out of reach and names the settings that say where it is."""
    monkeypatch.setenv("SPANGATE_DATA_DIR", "/proc/no-such-directory")
    monkeypatch.delenv("SPANGATE_DATABASE_URL", raising=False)
    monkeypatch.delenv("SPANGATE_PRICES_FILE", raising=False)
    assert main(["worker", "--burst"]) == 1
    err = capsys.readouterr().err.strip()
    assert err.startswith("spangate: error: database sqlite:////proc/no-such-directory/")
    assert err.endswith("(SPANGATE_DATA_DIR, SPANGATE_DATABASE_URL)")
