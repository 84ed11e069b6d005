"""Project settings and API keys: the only project setting a customer changes is its
name; keys are listed for everyone, created (the secret shown once) and revoked by
owners and admins. Pages and /api/v1 routes share one set of rules (`Settings`).
"""

from __future__ import annotations

import asyncio
from typing import Any

from quart import Response, render_template, request, url_for

from dashboard.errors import DashboardError, invalid, require_role
from dashboard.explorer import Explorer
from dashboard.params import json_object
from dashboard.signin import current_session, redirect_to
from service.web import json_response
from storage.errors import Conflict, NotFound
from storage.identity import CreatedKey, IdentityStore, KeyRecord, Project, User


class Settings:
    """The rules, for one signed-in user (synchronous: called on a thread)."""

    def __init__(self, explorer: Explorer) -> None:
        self.explorer = explorer
        self.identity = IdentityStore(explorer.db)

    @staticmethod
    def _manager(user: User, what: str) -> None:
        require_role(user, "admin", f"only owners and admins {what}; you are {user.role}")

    def rename(self, user: User, name: str, new_name: str) -> Project:
        """The project renamed; 403 for members and viewers, 400 or 409 for the name."""
        project = self.explorer.project(user, name)
        self._manager(user, "rename a project")
        try:
            return self.identity.rename_project(project.name, new_name.strip())
        except ValueError as e:
            raise invalid(str(e)) from e
        except Conflict as e:
            raise DashboardError(409, "CONFLICT", str(e)) from e

    def keys(self, user: User, name: str) -> tuple[Project, list[KeyRecord]]:
        """The project and its keys, newest first (every role sees them)."""
        project = self.explorer.project(user, name)
        return project, self.identity.list_keys(project.name)

    def create_key(self, user: User, name: str) -> CreatedKey:
        """A new key of the project, acting as the user who created it."""
        project = self.explorer.project(user, name)
        self._manager(user, "create keys")
        return self.identity.create_key(project.name, user.email)

    def revoke(self, user: User, key_id: str) -> KeyRecord:
        """Revoke a key of the user's organisation (another's is 404, said as of none:
        its project's name stays theirs)."""
        record = self.identity.key(key_id)
        try:
            self.explorer.project(user, record.project)
        except NotFound:
            raise NotFound(f"no key {key_id}") from None
        self._manager(user, "revoke keys")
        return self.identity.revoke_key(key_id)


def key_json(key: KeyRecord) -> dict[str, Any]:
    """A key as `GET .../api-keys` lists it: never the secret."""
    return {
        "id": key.id,
        "prefix": key.prefix,
        "user": key.user,
        "createdAt": key.created_at,
        "revokedAt": key.revoked_at,
    }


class SettingsRoutes:
    """The pages and the JSON routes."""

    def __init__(self, settings: Settings) -> None:
        self.settings = settings

    async def _run(self, method: Any, *args: Any) -> Any:
        return await asyncio.to_thread(method, current_session().user, *args)

    # -- pages ---------------------------------------------------------------------

    async def page(self, project: str) -> str:
        found = await self._run(self.settings.explorer.project, project)
        return await render_template("settings.html", project=found, error=None)

    async def rename_page(self, project: str) -> Response | str:
        new_name = (await request.form).get("name", "")
        try:
            renamed = await self._run(self.settings.rename, project, new_name)
        except DashboardError as e:
            if e.status not in (400, 409):
                raise
            found = await self._run(self.settings.explorer.project, project)
            page = await render_template("settings.html", project=found, error=e.message)
            return Response(page, e.status, content_type="text/html; charset=utf-8")
        return redirect_to(url_for("settings_page", project=renamed.name))

    async def keys_page(self, project: str, created: CreatedKey | None = None) -> str:
        found, keys = await self._run(self.settings.keys, project)
        return await render_template("api_keys.html", project=found, keys=keys, created=created)

    async def create_key_page(self, project: str) -> str:
        created = await self._run(self.settings.create_key, project)
        return await self.keys_page(project, created)  # the secret, shown this once

    async def revoke_page(self, project: str, key_id: str) -> Response:
        await self._run(self.settings.revoke, key_id)
        return redirect_to(url_for("keys_page", project=project))

    # -- /api/v1 -------------------------------------------------------------------

    async def rename(self, project: str) -> Response:
        name = (await json_object()).get("name")
        if not isinstance(name, str):
            raise invalid("name must be a string")
        renamed = await self._run(self.settings.rename, project, name)
        return json_response({"name": renamed.name, "createdAt": renamed.created_at})

    async def keys(self, project: str) -> Response:
        _, keys = await self._run(self.settings.keys, project)
        return json_response({"keys": [key_json(key) for key in keys]})

    async def create_key(self, project: str) -> Response:
        await json_object()
        created = await self._run(self.settings.create_key, project)
        return json_response({"id": created.id, "key": created.key, "prefix": created.prefix}, 201)

    async def revoke(self, key_id: str) -> Response:
        return json_response(key_json(await self._run(self.settings.revoke, key_id)))
