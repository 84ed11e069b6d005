"""`spangate alerts|webhooks add|list`: what customers cannot create during the beta.

Operators add alert rules and webhooks here; the dashboard lists them (and pauses,
resumes or deletes rules). Evaluation and delivery are off: nothing fires or is sent.
"""

from __future__ import annotations

import argparse

from spangate.cli_support import print_json, print_table, with_database
from storage.alerts import AlertStore
from storage.database import Database
from storage.identity import IdentityStore
from storage.webhooks import EVENTS, WebhookStore

OPERATOR = "operator (CLI)"


def _alerts_add(args: argparse.Namespace) -> int:
    def action(db: Database) -> int:
        project = IdentityStore(db).project(args.project)
        rule = AlertStore(db).add(project.id, args.name, args.condition, OPERATOR)
        print(f"added alert rule {rule.id} to {project.name} (stored; evaluation is off)")
        return 0

    return with_database(action)


def _alerts_list(args: argparse.Namespace) -> int:
    def action(db: Database) -> int:
        rules = AlertStore(db).rules(IdentityStore(db).project(args.project).id)
        if args.json:
            print_json(
                [
                    {"id": r.id, "name": r.name, "condition": r.condition, "status": r.status}
                    for r in rules
                ]
            )
        else:
            print_table(
                [(r.id, r.name, r.status, r.condition) for r in rules],
                ("ID", "NAME", "STATUS", "CONDITION"),
            )
        return 0

    return with_database(action)


def _webhooks_add(args: argparse.Namespace) -> int:
    def action(db: Database) -> int:
        project = IdentityStore(db).project(args.project)
        hook = WebhookStore(db).add(project.id, args.url, tuple(args.event or EVENTS))
        print(f"added webhook {hook.id} to {project.name} (stored; delivery is off)")
        return 0

    return with_database(action)


def _webhooks_list(args: argparse.Namespace) -> int:
    def action(db: Database) -> int:
        hooks = WebhookStore(db).list(IdentityStore(db).project(args.project).id)
        if args.json:
            print_json([{"id": h.id, "url": h.url, "events": list(h.events)} for h in hooks])
        else:
            print_table([(h.id, h.url, ",".join(h.events)) for h in hooks], ("ID", "URL", "EVENTS"))
        return 0

    return with_database(action)


def register(commands: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    """Add the alerts and webhooks commands."""
    alerts = commands.add_parser("alerts", help="alert rules (evaluation is off)")
    alert_actions = alerts.add_subparsers(dest="alerts_command", metavar="ACTION", required=True)
    add = alert_actions.add_parser("add", help="add a rule to a project")
    add.add_argument("--project", required=True)
    add.add_argument("--name", required=True)
    add.add_argument("--condition", required=True, help="the rule, as text (stored as it is)")
    add.set_defaults(handler=_alerts_add)
    listing = alert_actions.add_parser("list", help="a project's rules")
    listing.add_argument("--project", required=True)
    listing.add_argument("--json", action="store_true")
    listing.set_defaults(handler=_alerts_list)

    webhooks = commands.add_parser("webhooks", help="webhooks (delivery is off)")
    hook_actions = webhooks.add_subparsers(dest="webhooks_command", metavar="ACTION", required=True)
    add = hook_actions.add_parser("add", help="add a webhook to a project")
    add.add_argument("--project", required=True)
    add.add_argument("--url", required=True)
    add.add_argument("--event", action="append", choices=EVENTS, help="repeatable")
    add.set_defaults(handler=_webhooks_add)
    listing = hook_actions.add_parser("list", help="a project's webhooks")
    listing.add_argument("--project", required=True)
    listing.add_argument("--json", action="store_true")
    listing.set_defaults(handler=_webhooks_list)
