"""Alert rules: operators add them; the dashboard lists them and their history, pauses,
resumes and deletes them. Evaluation is off during the beta: nothing reads a rule's
condition, so no rule fires and no `alert.triggered` event is ever sent.
"""

from __future__ import annotations

import uuid
from dataclasses import dataclass

from storage.clock import utc_now_iso
from storage.database import Database, Transaction
from storage.errors import NotFound

MAX_NAME = 200
MAX_CONDITION = 2000


@dataclass(frozen=True, slots=True)
class AlertEvent:
    """One line of a rule's history: created, paused or resumed, when and by whom."""

    at: str
    event: str
    actor: str


@dataclass(frozen=True, slots=True)
class AlertRule:
    """A rule as the dashboard lists it, with its history (oldest first)."""

    id: str
    name: str
    condition: str
    status: str
    created_at: str
    history: tuple[AlertEvent, ...]


def _text(value: str, what: str, limit: int) -> str:
    value = value.strip()
    if not 0 < len(value) <= limit:
        raise ValueError(f"{what} must be 1 to {limit} characters")
    return value


class AlertStore:
    """The rules of projects, and what happened to them."""

    def __init__(self, db: Database) -> None:
        self.db = db

    def add(self, project_id: str, name: str, condition: str, actor: str) -> AlertRule:
        """An operator's new rule, active (it is stored, never evaluated)."""
        rule_id = f"alr_{uuid.uuid4().hex[:20]}"
        name, condition = (
            _text(name, "name", MAX_NAME),
            _text(condition, "condition", MAX_CONDITION),
        )
        with self.db.transaction() as tx:
            tx.execute(
                "INSERT INTO alert_rules (id, project_id, name, condition, status, created_at) "
                "VALUES (?, ?, ?, ?, 'active', ?)",
                (rule_id, project_id, name, condition, utc_now_iso()),
            )
            self._record(tx, rule_id, "created", actor)
        return self.rule(project_id, rule_id)

    @staticmethod
    def _record(tx: Transaction, rule_id: str, event: str, actor: str) -> None:
        tx.execute(
            "INSERT INTO alert_history (rule_id, at, event, actor) VALUES (?, ?, ?, ?)",
            (rule_id, utc_now_iso(), event, actor),
        )

    def rules(self, project_id: str) -> list[AlertRule]:
        """A project's rules, newest first, each with its history."""
        with self.db.transaction() as tx:
            rows = tx.query(
                "SELECT id, name, condition, status, created_at FROM alert_rules "
                "WHERE project_id = ? ORDER BY created_at DESC, id",
                (project_id,),
            )
            events = tx.query(
                "SELECT h.rule_id, h.at, h.event, h.actor FROM alert_history h "
                "JOIN alert_rules r ON r.id = h.rule_id WHERE r.project_id = ? "
                "ORDER BY h.at, h.event",
                (project_id,),
            )
        history: dict[str, list[AlertEvent]] = {}
        for rule_id, at, event, actor in events:
            history.setdefault(rule_id, []).append(AlertEvent(at, event, actor))
        return [
            AlertRule(rule_id, name, condition, status, created, tuple(history.get(rule_id, ())))
            for rule_id, name, condition, status, created in rows
        ]

    def rule(self, project_id: str, rule_id: str) -> AlertRule:
        """One rule of a project; NotFound else."""
        for rule in self.rules(project_id):
            if rule.id == rule_id:
                return rule
        raise NotFound(f"no alert rule {rule_id}")

    def set_paused(self, project_id: str, rule_id: str, paused: bool, actor: str) -> None:
        """Pause or resume a rule of the project (a rule already so is left alone)."""
        status, event = ("paused", "paused") if paused else ("active", "resumed")
        with self.db.transaction() as tx:
            self._check(tx, project_id, rule_id)
            changed = tx.execute(
                "UPDATE alert_rules SET status = ? WHERE id = ? AND status <> ?",
                (status, rule_id, status),
            )
            if changed:
                self._record(tx, rule_id, event, actor)

    def delete(self, project_id: str, rule_id: str) -> None:
        """Delete a rule of the project and its history."""
        with self.db.transaction() as tx:
            self._check(tx, project_id, rule_id)
            tx.execute("DELETE FROM alert_history WHERE rule_id = ?", (rule_id,))
            tx.execute("DELETE FROM alert_rules WHERE id = ?", (rule_id,))

    @staticmethod
    def _check(tx: Transaction, project_id: str, rule_id: str) -> None:
        found = tx.query_one(
            "SELECT 1 FROM alert_rules WHERE id = ? AND project_id = ?", (rule_id, project_id)
        )
        if found is None:
            raise NotFound(f"no alert rule {rule_id}")
