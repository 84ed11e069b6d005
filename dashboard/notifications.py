"""Alerts and webhooks pages: what the beta lets a customer do with them.

Alerts: list rules and their history; members and above pause, resume and delete a
rule. There is no route that creates one (operators add them with `spangate alerts
add`), and nothing evaluates them. Webhooks: a list, nothing else (`spangate webhooks
add`); nothing is delivered.
"""

from __future__ import annotations

import asyncio

from quart import Response, render_template, url_for

from dashboard.explorer import Explorer, signed_in_project
from dashboard.signin import current_session, redirect_to
from storage.alerts import AlertStore
from storage.webhooks import WebhookStore

RULE_ACTIONS = ("pause", "resume", "delete")


class Notifications:
    """The alerts and webhooks routes."""

    def __init__(self, explorer: Explorer) -> None:
        self.explorer = explorer
        self.alerts = AlertStore(explorer.db)
        self.webhooks = WebhookStore(explorer.db)

    async def alerts_page(self, project: str) -> str:
        found = await signed_in_project(self.explorer, project)
        rules = await asyncio.to_thread(self.alerts.rules, found.id)
        return await render_template("alerts.html", project=found, rules=rules)

    async def rule_action(self, project: str, rule_id: str, action: str) -> Response:
        refusal = f"viewers cannot {action} alert rules"
        found = await signed_in_project(self.explorer, project, "member", refusal)
        user = current_session().user
        if action == "delete":
            await asyncio.to_thread(self.alerts.delete, found.id, rule_id)
        else:
            paused = action == "pause"
            await asyncio.to_thread(self.alerts.set_paused, found.id, rule_id, paused, user.email)
        return redirect_to(url_for("alerts_page", project=found.name))

    async def webhooks_page(self, project: str) -> str:
        found = await signed_in_project(self.explorer, project)
        hooks = await asyncio.to_thread(self.webhooks.list, found.id)
        return await render_template("webhooks.html", project=found, hooks=hooks)
