"""Dataset pages: every role reads; members and above create, edit and delete. The
dashboard is the only place datasets are made (no API-key route touches them)."""

from __future__ import annotations

import asyncio
from typing import Any

import orjson
from quart import Response, render_template, request, url_for

from dashboard.errors import DashboardError
from dashboard.explorer import Explorer, signed_in_project
from dashboard.genai_json import span_view
from dashboard.signin import redirect_to
from dashboard.span_text import json_of
from storage.datasets import DatasetInvalid, DatasetStore
from storage.errors import Conflict
from storage.identity import Project

EMPTY_FORM = {"name": "", "description": "", "items": ""}


def _side(messages: list[dict[str, Any]]) -> Any:
    """A span's input or output as a dataset item holds it: one message's text (its JSON
    value when it is JSON), several messages as they are; None for none."""
    if len(messages) == 1 and set(messages[0]) == {"role", "content"}:
        content = messages[0]["content"]
        found = None if content is None else json_of(content)
        return content if found is None or not _fits(found) else found
    return messages or None


def _fits(value: Any) -> bool:
    """Whether a JSON value fits an item as the dataset writes its items back (two
    levels deeper: storage/datasets.py); a deeper one is kept as its text."""
    try:
        orjson.dumps([{"input": value}])
    except orjson.JSONEncodeError:
        return False
    return True


def span_item(span: dict[str, Any]) -> dict[str, Any]:
    """A span as a dataset item: its input as `input`, its output (if any) as
    `expected`; 400 for a span with no input."""
    view = span_view(span)
    given = None if view is None else _side(view["inputMessages"])
    if given is None:
        raise DashboardError(400, "VALIDATION_ERROR", "this span has no input to add")
    item = {"input": given}
    expected = _side(view["outputMessages"]) if view else None
    if expected is not None:
        item["expected"] = expected
    return item


class DatasetPages:
    """The dataset routes."""

    def __init__(self, explorer: Explorer) -> None:
        self.explorer = explorer
        self.store = DatasetStore(explorer.db)

    async def _project(self, name: str, change: bool = False) -> Project:
        if change:
            return await signed_in_project(
                self.explorer, name, "member", "viewers cannot change datasets"
            )
        return await signed_in_project(self.explorer, name)

    async def listing(self, project: str) -> str:
        found = await self._project(project)
        datasets = await asyncio.to_thread(self.store.list, found.id)
        return await render_template("datasets.html", project=found, datasets=datasets)

    async def new(self, project: str) -> str:
        found = await self._project(project, change=True)
        return await render_template(
            "dataset_form.html", project=found, dataset=None, form=EMPTY_FORM
        )

    async def _form_again(
        self,
        project: Project,
        dataset: Any,
        form: dict[str, str],
        problems: dict[str, str],
        status: int = 400,
    ) -> Response:
        """The form again, as it was sent, with each problem beside its field."""
        page = await render_template(
            "dataset_form.html", project=project, dataset=dataset, form=form, problems=problems
        )
        return Response(page, status, content_type="text/html; charset=utf-8")

    async def _save(self, project: str, dataset_id: str | None) -> Response:
        """Create (no id) or edit a dataset from the form; the form again on a problem."""
        found = await self._project(project, change=True)
        dataset = None
        if dataset_id is not None:
            dataset = await asyncio.to_thread(self.store.get, found.id, dataset_id)
        form = {k: (await request.form).get(k, "") for k in ("name", "description", "items")}
        try:
            saved = await asyncio.to_thread(
                self.store.save,
                found.id,
                dataset_id,
                form["name"],
                form["description"],
                form["items"],
            )
        except DatasetInvalid as e:
            return await self._form_again(found, dataset, form, e.problems)
        except Conflict as e:
            return await self._form_again(found, dataset, form, {"name": str(e)}, 409)
        return redirect_to(url_for("dataset", project=found.name, dataset_id=saved))

    async def create(self, project: str) -> Response:
        return await self._save(project, None)

    async def update(self, project: str, dataset_id: str) -> Response:
        return await self._save(project, dataset_id)

    async def show(self, project: str, dataset_id: str) -> str:
        found = await self._project(project)
        dataset = await asyncio.to_thread(self.store.get, found.id, dataset_id)
        form = {
            "name": dataset.name,
            "description": dataset.description,
            "items": dataset.items_text(),
        }
        return await render_template("dataset_form.html", project=found, dataset=dataset, form=form)

    def _append(self, project: Project, trace_id: str, span_id: str, name: str) -> str:
        span = self.explorer.span(project, trace_id.lower(), span_id.lower())
        try:
            return self.store.append(project.id, name, span_item(span))
        except DatasetInvalid as e:
            message = "; ".join(f"{k}: {v}" for k, v in e.problems.items())
            raise DashboardError(400, "VALIDATION_ERROR", message) from None

    async def add_span(self, project: str, trace_id: str, span_id: str) -> Response:
        found = await self._project(project, change=True)
        name = (await request.form).get("dataset", "")
        saved = await asyncio.to_thread(self._append, found, trace_id, span_id, name)
        return redirect_to(url_for("dataset", project=found.name, dataset_id=saved))

    async def delete(self, project: str, dataset_id: str) -> Response:
        found = await self._project(project, change=True)
        await asyncio.to_thread(self.store.delete, found.id, dataset_id)
        return redirect_to(url_for("datasets", project=found.name))
