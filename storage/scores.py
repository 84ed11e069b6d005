"""Scores recorded against traces (and optionally spans) of a project."""

from __future__ import annotations

import math
import re
import uuid
from dataclasses import dataclass
from typing import Any

from storage.clock import utc_now_iso
from storage.database import Database

SOURCES = ("api", "sdk", "ui", "eval")
MAX_NAME = 256
_TRACE_ID = re.compile(r"[0-9a-f]{32}")
_SPAN_ID = re.compile(r"[0-9a-f]{16}")
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


def _score(value: Any, problems: dict[str, str]) -> float:
    if type(value) not in (int, float):  # bool is a subclass of int and is not a number here
        problems["score"] = "required; a number from 0.0 to 1.0"
        return 0.0
    number = float(value) + 0.0  # -0.0 is taken as 0.0
    if not (math.isfinite(number) and 0.0 <= number <= 1.0):
        problems["score"] = "must be from 0.0 to 1.0"
    return number


def _optional_text(body: dict[str, Any], field: str, problems: dict[str, str]) -> str | None:
    value = body.get(field)
    if value is not None and type(value) is not str:
        problems[field] = "must be a string or null"
        return None
    return value


def check_score(body: dict[str, Any]) -> tuple[NewScore | None, dict[str, str]]:
    """A NewScore from a score's fields (`trace_id`, `span_id`, `name`, `score`,
    `comment`, `source`; defaults filled in), or None and what is wrong, field by field."""
    problems: dict[str, str] = {}
    trace_id = body.get("trace_id")
    if type(trace_id) is not str or not _TRACE_ID.fullmatch(trace_id):
        problems["trace_id"] = "required; exactly 32 lowercase hex characters"
    span_id = _optional_text(body, "span_id", problems)
    if span_id is not None and not _SPAN_ID.fullmatch(span_id):
        problems["span_id"] = "must be 16 lowercase hex characters or null"
    name = body.get("name") if body.get("name") is not None else "default"
    if type(name) is not str or not 0 < len(name) <= MAX_NAME:
        problems["name"] = f"must be a string of 1 to {MAX_NAME} characters"
    score = _score(body.get("score"), problems)
    comment = _optional_text(body, "comment", problems)
    source = body.get("source") if body.get("source") is not None else "api"
    if source not in SOURCES:
        problems["source"] = f"must be one of {', '.join(SOURCES)}"
    for field, text in (("name", name), ("comment", comment)):
        if isinstance(text, str) and "\x00" in text:  # PostgreSQL's text holds none
            problems[field] = "must not hold a NUL character"
    if problems:
        return None, problems
    return NewScore(trace_id, span_id, name, score, comment, source), {}  # type: ignore[arg-type]


class ScoreStore:
    """Creates scores; there is no listing route in the beta (the dashboard reads them)."""

    def __init__(self, db: Database) -> None:
        self.db = db

    def create(self, project_id: str, key_id: str, new: NewScore) -> Score:
        """Store one score for the key's project."""
        return self._insert(project_id, new, key_id, None)

    def create_by_user(self, project_id: str, user_id: str, new: NewScore) -> Score:
        """Store one score a signed-in user gave in the dashboard."""
        return self._insert(project_id, new, None, user_id)

    def _insert(
        self, project_id: str, new: NewScore, key_id: str | None, user_id: str | None
    ) -> Score:
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
                "source, key_id, user_id, created_at) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
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
                    user_id,
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
