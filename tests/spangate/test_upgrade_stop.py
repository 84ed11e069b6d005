"""`spangate worker` stopped while it walks the stored traces: it stops between two
chunks, and the next start goes on from there."""

from __future__ import annotations

import signal
from pathlib import Path

from genai.prices import Pricer
from spangate.cli_support import upgrade_stored_spans
from storage import genai_upgrade
from storage.database import Database
from storage.schema import migrate
from storage.spans import SpanStore
from tests.processes import spawn
from tests.storage.rows import span_row

TRACES = 12_000


def test_sigterm_stops_the_workers_walk_which_the_next_start_goes_on_with(
    tmp_path: Path,
) -> None:
    """SIGTERM once the walk has reported progress: the worker exits 0 within the
    chunk under way, saying the next start goes on; the walk is not recorded, its
    progress is kept, and the next start finishes it."""
    url = f"sqlite:///{tmp_path / 'spans.db'}"
    db = Database(url)
    migrate(db)
    upgrade_stored_spans(db, Pricer())  # every walk recorded, on an empty store
    SpanStore(db).upsert([span_row(trace=f"{n:032x}") for n in range(TRACES)], 1000)
    with db.transaction() as tx:  # as a store from before the LLM view's columns
        tx.execute("DELETE FROM schema_migrations WHERE version = ?", (genai_upgrade.UPGRADED,))
    env = {"SPANGATE_DATABASE_URL": url, "SPANGATE_DATA_DIR": str(tmp_path / "data")}
    worker = spawn(["worker"], env, tmp_path)
    assert worker.stderr is not None
    said = b""
    while b"upgrading stored traces" not in said:  # the first chunk done
        chunk = worker.stderr.read1(4096)
        assert chunk, said.decode()
        said += chunk
    worker.send_signal(signal.SIGTERM)
    _, err = worker.communicate(timeout=60)
    said += err
    assert worker.returncode == 0, said.decode()
    assert b"the next start goes on from there" in said, said.decode()
    with db.transaction() as tx:
        [(after,)] = tx.query(
            "SELECT trace_id FROM walk_progress WHERE version = ?", (genai_upgrade.UPGRADED,)
        )
    assert f"{0:032x}" < after < f"{TRACES - 1:032x}"
    upgrade_stored_spans(db, Pricer())
    with db.transaction() as tx:
        assert tx.query("SELECT * FROM walk_progress") == []
        assert tx.query_one(
            "SELECT 1 FROM schema_migrations WHERE version = ?", (genai_upgrade.UPGRADED,)
        )
    db.close()
