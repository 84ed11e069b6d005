"""The dashboard's small pages: home, the projects (and their JSON), a project, the
evaluations notice.

Server-rendered, so every page works without JavaScript; the little script
(static/dashboard.js) only collapses subtrees and shows a span without a reload.
"""

from __future__ import annotations

import asyncio
from typing import Any

from quart import Response, render_template, url_for

from dashboard.explorer import Explorer, signed_in_project
from dashboard.signin import current_session, redirect_to
from dashboard.views import View
from storage.identity import Project


class Projects(View[list[Project]]):
    """`/projects` and `GET /api/v1/projects`: the projects of the user's organisation."""

    def __init__(self, explorer: Explorer) -> None:
        self.explorer = explorer

    async def context(self) -> list[Project]:
        return await asyncio.to_thread(self.explorer.projects, current_session().user)

    async def page(self, context: list[Project]) -> str:
        return await render_template("projects.html", projects=context)

    async def data(self, context: list[Project]) -> dict[str, Any]:
        return {"projects": [{"name": p.name, "createdAt": p.created_at} for p in context]}


class Pages:
    """The pages that read nothing but the project."""

    def __init__(self, explorer: Explorer) -> None:
        self.explorer = explorer

    async def home(self) -> Response:
        return redirect_to(url_for("projects"), 302)

    async def project(self, project: str) -> Response:
        found = await signed_in_project(self.explorer, project)
        return redirect_to(url_for("traces", project=found.name), 302)

    async def evaluations(self, project: str) -> str:
        found = await signed_in_project(self.explorer, project)
        return await render_template("evaluations.html", project=found)
