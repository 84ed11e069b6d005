"""Datasets: named lists of items (an input and, optionally, the expected output, each
any JSON value), made, edited and deleted in the dashboard only.

The items are written as one JSON array of `{"input": ..., "expected": ...}` objects;
`parse_items` says what is wrong with it, field by field, for the form to show.
"""

from __future__ import annotations

import uuid
from dataclasses import dataclass
from typing import Any

import orjson

from storage.clock import utc_now_iso
from storage.database import Database, Transaction
from storage.errors import Conflict, NotFound, StoreError

MAX_NAME = 200
MAX_DESCRIPTION = 2000
MAX_ITEMS = 1000
_ITEM_MEMBERS = frozenset(("input", "expected"))


class DatasetInvalid(StoreError):
    """A dataset's fields break its rules: `problems` maps each field to what is wrong."""

    def __init__(self, problems: dict[str, str]) -> None:
        super().__init__("; ".join(f"{k}: {v}" for k, v in problems.items()))
        self.problems = problems


@dataclass(frozen=True, slots=True)
class Item:
    """One item: JSON texts, as stored."""

    input: str
    expected: str | None


@dataclass(frozen=True, slots=True)
class Dataset:
    """A dataset, with its items when read whole."""

    id: str
    name: str
    description: str
    created_at: str
    updated_at: str
    items: tuple[Item, ...] = ()
    item_count: int = 0

    def items_text(self) -> str:
        """The items as the form edits them: an indented JSON array."""
        values: list[dict[str, Any]] = []
        for item in self.items:
            value: dict[str, Any] = {"input": orjson.loads(item.input)}
            if item.expected is not None:
                value["expected"] = orjson.loads(item.expected)
            values.append(value)
        return orjson.dumps(values, option=orjson.OPT_INDENT_2).decode()


def _item(value: Any, at: int) -> Item:
    if not isinstance(value, dict) or "input" not in value or not _ITEM_MEMBERS.issuperset(value):
        raise ValueError(
            f'item {at + 1} must be an object with "input" and, optionally, "expected"'
        )
    expected = value.get("expected")
    try:  # as `items_text` writes it back: in the array of items, an object each
        orjson.dumps([value])
    except orjson.JSONEncodeError:
        raise ValueError(f"item {at + 1} is nested too deep (at most 252 levels)") from None
    return Item(
        orjson.dumps(value["input"]).decode(),
        None if "expected" not in value else orjson.dumps(expected).decode(),
    )


def parse_items(text: str) -> tuple[Item, ...]:
    """The items of the form's JSON array; ValueError saying what is wrong."""
    if not text.strip():
        return ()
    try:
        values = orjson.loads(text)
    except orjson.JSONDecodeError as e:
        raise ValueError(f"not JSON: {e}") from None
    if not isinstance(values, list):
        raise ValueError("must be a JSON array of items")
    if len(values) > MAX_ITEMS:
        raise ValueError(f"at most {MAX_ITEMS} items")
    return tuple(_item(value, at) for at, value in enumerate(values))


def check(name: str, description: str, items_text: str) -> tuple[str, str, tuple[Item, ...]]:
    """The fields, cleaned; DatasetInvalid naming every bad one."""
    problems: dict[str, str] = {}
    name, description = name.strip(), description.strip()
    if not 0 < len(name) <= MAX_NAME:
        problems["name"] = f"1 to {MAX_NAME} characters"
    if len(description) > MAX_DESCRIPTION:
        problems["description"] = f"at most {MAX_DESCRIPTION} characters"
    items: tuple[Item, ...] = ()
    try:
        items = parse_items(items_text)
    except ValueError as e:
        problems["items"] = str(e)
    if problems:
        raise DatasetInvalid(problems)
    return name, description, items


class DatasetStore:
    """A project's datasets."""

    def __init__(self, db: Database) -> None:
        self.db = db

    def list(self, project_id: str) -> list[Dataset]:
        """The project's datasets by name, with their item counts."""
        with self.db.transaction() as tx:
            rows = tx.query(
                "SELECT d.id, d.name, d.description, d.created_at, d.updated_at, "
                "(SELECT COUNT(*) FROM dataset_items i WHERE i.dataset_id = d.id) "
                "FROM datasets d WHERE d.project_id = ? ORDER BY d.name",
                (project_id,),
            )
        return [
            Dataset(dataset_id, name, description, created, updated, item_count=int(count))
            for dataset_id, name, description, created, updated, count in rows
        ]

    def get(self, project_id: str, dataset_id: str) -> Dataset:
        """One dataset with its items; NotFound else."""
        with self.db.transaction() as tx:
            row = tx.query_one(
                "SELECT id, name, description, created_at, updated_at FROM datasets "
                "WHERE id = ? AND project_id = ?",
                (dataset_id, project_id),
            )
            if row is None:
                raise NotFound(f"no dataset {dataset_id}")
            items = tx.query(
                "SELECT input, expected FROM dataset_items WHERE dataset_id = ? ORDER BY position",
                (dataset_id,),
            )
        found = tuple(Item(text, expected) for text, expected in items)
        dataset_id, name, description, created, updated = row
        return Dataset(dataset_id, name, description, created, updated, found, len(found))

    def create(self, project_id: str, name: str, description: str, items_text: str) -> str:
        """A new dataset's id; DatasetInvalid or Conflict (the name is taken)."""
        name, description, items = check(name, description, items_text)
        dataset_id, now = f"dst_{uuid.uuid4().hex[:20]}", utc_now_iso()
        with self.db.transaction(immediate=True) as tx:
            self._name_free(tx, project_id, name, None)
            tx.execute(
                "INSERT INTO datasets (id, project_id, name, description, created_at, "
                "updated_at) VALUES (?, ?, ?, ?, ?, ?)",
                (dataset_id, project_id, name, description, now, now),
            )
            self._write_items(tx, dataset_id, items)
        return dataset_id

    def update(
        self, project_id: str, dataset_id: str, name: str, description: str, items_text: str
    ) -> None:
        """Replace a dataset's fields and items."""
        name, description, items = check(name, description, items_text)
        with self.db.transaction(immediate=True) as tx:
            self._name_free(tx, project_id, name, dataset_id)
            changed = tx.execute(
                "UPDATE datasets SET name = ?, description = ?, updated_at = ? "
                "WHERE id = ? AND project_id = ?",
                (name, description, utc_now_iso(), dataset_id, project_id),
            )
            if not changed:
                raise NotFound(f"no dataset {dataset_id}")
            tx.execute("DELETE FROM dataset_items WHERE dataset_id = ?", (dataset_id,))
            self._write_items(tx, dataset_id, items)

    def save(
        self,
        project_id: str,
        dataset_id: str | None,
        name: str,
        description: str,
        items_text: str,
    ) -> str:
        """Create a dataset (`dataset_id` None) or replace one; its id."""
        if dataset_id is None:
            return self.create(project_id, name, description, items_text)
        self.update(project_id, dataset_id, name, description, items_text)
        return dataset_id

    def append(self, project_id: str, name: str, value: Any) -> str:
        """Add one item (`{"input", "expected"}`) at the end of the dataset called `name`,
        made (empty) when there is none; its id. DatasetInvalid for a bad name or item,
        or when the dataset is full."""
        name = name.strip()
        try:
            item = _item(value, 0)
        except ValueError as e:
            raise DatasetInvalid({"items": str(e)}) from None
        if not 0 < len(name) <= MAX_NAME:
            raise DatasetInvalid({"name": f"1 to {MAX_NAME} characters"})
        with self.db.transaction(immediate=True) as tx:
            row = tx.query_one(
                "SELECT id FROM datasets WHERE project_id = ? AND name = ?", (project_id, name)
            )
            now = utc_now_iso()
            if row is None:
                dataset_id = f"dst_{uuid.uuid4().hex[:20]}"
                tx.execute(
                    "INSERT INTO datasets (id, project_id, name, description, created_at, "
                    "updated_at) VALUES (?, ?, ?, '', ?, ?)",
                    (dataset_id, project_id, name, now, now),
                )
            else:
                dataset_id = row[0]
            count = tx.query_one(
                "SELECT COUNT(*) FROM dataset_items WHERE dataset_id = ?", (dataset_id,)
            )
            position = int(count[0]) if count else 0
            if position >= MAX_ITEMS:
                raise DatasetInvalid({"items": f"{name} holds {MAX_ITEMS} items, the most"})
            tx.execute(
                "INSERT INTO dataset_items (dataset_id, position, input, expected) "
                "VALUES (?, ?, ?, ?)",
                (dataset_id, position, item.input, item.expected),
            )
            tx.execute("UPDATE datasets SET updated_at = ? WHERE id = ?", (now, dataset_id))
        return str(dataset_id)

    def delete(self, project_id: str, dataset_id: str) -> None:
        """Delete a dataset and its items."""
        with self.db.transaction(immediate=True) as tx:
            found = tx.query_one(
                "SELECT 1 FROM datasets WHERE id = ? AND project_id = ?", (dataset_id, project_id)
            )
            if found is None:
                raise NotFound(f"no dataset {dataset_id}")
            tx.execute("DELETE FROM dataset_items WHERE dataset_id = ?", (dataset_id,))
            tx.execute("DELETE FROM datasets WHERE id = ?", (dataset_id,))

    @staticmethod
    def _name_free(tx: Transaction, project_id: str, name: str, dataset_id: str | None) -> None:
        row = tx.query_one(
            "SELECT id FROM datasets WHERE project_id = ? AND name = ?", (project_id, name)
        )
        if row is not None and row[0] != dataset_id:
            raise Conflict(f"a dataset named {name} exists")

    @staticmethod
    def _write_items(tx: Transaction, dataset_id: str, items: tuple[Item, ...]) -> None:
        tx.executemany(
            "INSERT INTO dataset_items (dataset_id, position, input, expected) VALUES (?, ?, ?, ?)",
            [(dataset_id, at, item.input, item.expected) for at, item in enumerate(items)],
        )
