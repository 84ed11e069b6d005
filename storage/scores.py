"""Scores recorded against traces (and optionally spans) of a project."""

from __future__ import annotations

import uuid
from dataclasses import dataclass

from storage.clock import utc_now_iso
from storage.database import Database

SOURCES = ("api", "sdk", "ui", "eval")
_SELECT = (
    "SELECT id, project_id, trace_id, span_id, name, score, comment, source, created_at FROM scores"
)
_TRACES_ASKED = 500


@dataclass(frozen=True, slots=True)
class NewScore:
    """A validated score request, defaults filled in."""

    trace_id: str
    span_id: str | None
    name: str
    score: float
    comment: str | None
    source: str


@dataclass(frozen=True, slots=True)
class Score:
    """A stored score, as the API returns it."""

    id: str
    project_id: str
    trace_id: str
    span_id: str | None
    name: str
    score: float
    comment: str | None
    source: str
    created_at: str


class ScoreStore:
    """Creates scores; there is no listing route in the beta (the dashboard reads them)."""

    def __init__(self, db: Database) -> None:
        self.db = db

    def create(self, project_id: str, key_id: str, new: NewScore) -> Score:
        """Store one score for the key's project."""
        score = Score(
            f"scr_{uuid.uuid4().hex}",
            project_id,
            new.trace_id,
            new.span_id,
            new.name,
            new.score,
            new.comment,
            new.source,
            utc_now_iso(),
        )
        with self.db.transaction() as tx:
            tx.execute(
                "INSERT INTO scores (id, project_id, trace_id, span_id, name, score, comment, "
                "source, key_id, created_at) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
                (
                    score.id,
                    project_id,
                    score.trace_id,
                    score.span_id,
                    score.name,
                    score.score,
                    score.comment,
                    score.source,
                    key_id,
                    score.created_at,
                ),
            )
        return score

    def for_trace(self, project_id: str, trace_id: str) -> list[Score]:
        """A trace's scores, oldest first (for the trace page and the operator CLI)."""
        with self.db.transaction() as tx:
            rows = tx.query(
                f"{_SELECT} WHERE project_id = ? AND trace_id = ? ORDER BY created_at, id",
                (project_id, trace_id),
            )
        return [Score(*row) for row in rows]

    def for_traces(self, project_id: str, trace_ids: list[str]) -> dict[str, list[Score]]:
        """The scores of several traces (a page of the trace list), oldest first each."""
        found: dict[str, list[Score]] = {}
        for at in range(0, len(trace_ids), _TRACES_ASKED):
            asked = trace_ids[at : at + _TRACES_ASKED]
            with self.db.transaction() as tx:
                rows = tx.query(
                    f"{_SELECT} WHERE project_id = ? AND trace_id IN "
                    f"({', '.join('?' * len(asked))}) ORDER BY created_at, id",
                    (project_id, *asked),
                )
            for row in rows:
                found.setdefault(row[2], []).append(Score(*row))
        return found
