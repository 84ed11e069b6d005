"""A store a newer build migrated stops the commands that start a worker."""

from __future__ import annotations

from pathlib import Path

import pytest

from spangate.cli import main
from storage.database import Database
from storage.schema import MIGRATIONS, migrate


@pytest.mark.parametrize("command", [["worker", "--burst"], ["serve"]])
def test_a_store_a_newer_build_migrated_stops_the_worker(
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
    command: list[str],
) -> None:
    """`spangate worker` and `spangate serve` refuse a store whose schema a newer build
    migrated, in one line, before writing anything to it."""
    url = f"sqlite:///{tmp_path / 'spans.db'}"
    db = Database(url)
    migrate(db)
    with db.transaction() as tx:
        tx.execute(
            "INSERT INTO schema_migrations (version, applied_at) VALUES (?, 'now')",
            (len(MIGRATIONS) + 1,),
        )
    db.close()
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("SPANGATE_DATA_DIR", str(tmp_path / "data"))
    monkeypatch.setenv("SPANGATE_DATABASE_URL", url)
    monkeypatch.delenv("SPANGATE_PRICES_FILE", raising=False)
    assert main(command) == 1
    err = capsys.readouterr().err.strip()
    assert f"schema is at version {len(MIGRATIONS) + 1}, newer than this build's" in err
