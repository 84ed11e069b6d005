"""`spangate users|projects|keys`: identity management for operators."""

from __future__ import annotations

import argparse
import getpass
import sys
from dataclasses import asdict

from spangate.cli_support import CommandError, print_json, print_table, with_database
from storage.database import Database
from storage.identity import ROLES, IdentityStore
from storage.passwords import Passwords, check_password


def _read_password() -> str:
    """A password from stdin: prompted for (twice) on a terminal, else its first line."""
    if sys.stdin.isatty():
        password = getpass.getpass("Password: ")
        if getpass.getpass("Again: ") != password:
            raise CommandError("the two passwords differ")
        return check_password(password)
    return check_password(sys.stdin.readline().rstrip("\r\n"))


def _users_add(args: argparse.Namespace) -> int:
    def action(db: Database) -> int:
        password = _read_password() if args.password_stdin else None
        user = IdentityStore(db).add_user(args.email, args.role, args.org)
        print(f"added user {user.email} ({user.role}) in organisation {user.org}")
        if password is not None:
            Passwords(db).set_password(user.email, password)
            print(f"{user.email} can sign in to the dashboard")
        return 0

    return with_database(action)


def _users_set_password(args: argparse.Namespace) -> int:
    def action(db: Database) -> int:
        user = Passwords(db).set_password(args.email, _read_password())
        print(f"password set for {user.email}; their dashboard sessions have ended")
        return 0

    return with_database(action)


def _users_set_role(args: argparse.Namespace) -> int:
    def action(db: Database) -> int:
        user = IdentityStore(db).set_role(args.email, args.role)
        print(f"user {user.email} is now {user.role}; their keys act as {user.role} within 5 s")
        return 0

    return with_database(action)


def _users_sign_out(args: argparse.Namespace) -> int:
    def action(db: Database) -> int:
        ended = IdentityStore(db).sign_out(args.email)
        print(f"ended {ended} dashboard sessions of {args.email.strip().lower()}")
        return 0

    return with_database(action)


def _projects_create(args: argparse.Namespace) -> int:
    def action(db: Database) -> int:
        project = IdentityStore(db).create_project(args.name, args.org)
        print(f"created project {project.name} in organisation {project.org}")
        return 0

    return with_database(action)


def _projects_list(args: argparse.Namespace) -> int:
    def action(db: Database) -> int:
        projects = IdentityStore(db).list_projects()
        if args.json:
            print_json(
                [{"name": p.name, "org": p.org, "created_at": p.created_at} for p in projects]
            )
        else:
            print_table(
                [(p.name, p.org, p.created_at) for p in projects],
                ("NAME", "ORGANISATION", "CREATED"),
            )
        return 0

    return with_database(action)


def _keys_create(args: argparse.Namespace) -> int:
    def action(db: Database) -> int:
        created = IdentityStore(db).create_key(args.project, args.user)
        if args.json:
            print_json(asdict(created))
        else:
            print(
                f"created key {created.id} ({created.prefix}...) for project "
                f"{created.project}, acting as {created.user}"
            )
            print("the secret is shown once; store it now:")
            print(created.key)
        return 0

    return with_database(action)


def _keys_list(args: argparse.Namespace) -> int:
    def action(db: Database) -> int:
        keys = IdentityStore(db).list_keys(args.project)
        if args.json:
            print_json([asdict(key) for key in keys])
        else:
            print_table(
                [
                    (k.id, k.prefix + "...", k.project, k.user, k.created_at, k.revoked_at or "")
                    for k in keys
                ],
                ("ID", "PREFIX", "PROJECT", "USER", "CREATED", "REVOKED"),
            )
        return 0

    return with_database(action)


def _keys_revoke(args: argparse.Namespace) -> int:
    def action(db: Database) -> int:
        key = IdentityStore(db).revoke_key(args.key_id)
        print(
            f"revoked key {key.id} ({key.prefix}...) at {key.revoked_at}; "
            "it stops working within 5 s"
        )
        return 0

    return with_database(action)


def register(commands: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    """Add the users, projects and keys commands."""
    users = commands.add_parser("users", help="users and their roles").add_subparsers(
        dest="users_command", metavar="ACTION", required=True
    )
    add = users.add_parser("add", help="add a user to an organisation")
    add.add_argument("email")
    add.add_argument("--role", required=True, choices=ROLES)
    add.add_argument("--org", default="default", help="organisation (created if new)")
    add.add_argument(
        "--password-stdin",
        action="store_true",
        help="read a dashboard password from stdin (at least 8 characters)",
    )
    add.set_defaults(handler=_users_add)
    set_password = users.add_parser(
        "set-password",
        help="set a user's dashboard password (read from stdin); ends their sessions",
    )
    set_password.add_argument("email")
    set_password.set_defaults(handler=_users_set_password)
    set_role = users.add_parser(
        "set-role", help="change a user's role (ends their dashboard sessions)"
    )
    set_role.add_argument("email")
    set_role.add_argument("role", choices=ROLES)
    set_role.set_defaults(handler=_users_set_role)
    sign_out = users.add_parser("sign-out", help="end every dashboard session of a user")
    sign_out.add_argument("email")
    sign_out.set_defaults(handler=_users_sign_out)

    projects = commands.add_parser("projects", help="projects").add_subparsers(
        dest="projects_command", metavar="ACTION", required=True
    )
    create = projects.add_parser("create", help="create a project")
    create.add_argument("name")
    create.add_argument(
        "--org", default=None, help="organisation (default: the only one, or 'default')"
    )
    create.set_defaults(handler=_projects_create)
    listing = projects.add_parser("list", help="list projects")
    listing.add_argument("--json", action="store_true")
    listing.set_defaults(handler=_projects_list)

    keys = commands.add_parser("keys", help="API keys").add_subparsers(
        dest="keys_command", metavar="ACTION", required=True
    )
    key_create = keys.add_parser("create", help="create a key (secret on the last line)")
    key_create.add_argument("--project", required=True)
    key_create.add_argument("--user", required=True, help="creator: an owner or admin")
    key_create.add_argument("--json", action="store_true")
    key_create.set_defaults(handler=_keys_create)
    key_list = keys.add_parser("list", help="list keys (never their secrets)")
    key_list.add_argument("--project")
    key_list.add_argument("--json", action="store_true")
    key_list.set_defaults(handler=_keys_list)
    revoke = keys.add_parser("revoke", help="revoke a key")
    revoke.add_argument("key_id")
    revoke.set_defaults(handler=_keys_revoke)
