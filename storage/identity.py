"""Organisations, users and roles, projects and API keys, and who may do what.

Only owners and admins create keys; a key acts with the role its creator holds now
(roles are joined at lookup, never copied into the key); a revoked key stops working.
"""

from __future__ import annotations

import re
import uuid
from dataclasses import dataclass
from typing import Literal

from storage import api_keys
from storage.clock import utc_now_iso
from storage.database import Database, Transaction
from storage.errors import Conflict, NotAllowed, NotFound

Role = Literal["owner", "admin", "member", "viewer"]
ROLES: tuple[Role, ...] = ("owner", "admin", "member", "viewer")
ROLE_RANK: dict[str, int] = {"viewer": 0, "member": 1, "admin": 2, "owner": 3}
KEY_MANAGERS = frozenset(("owner", "admin"))
DEFAULT_ORG = "default"
_EMAIL = re.compile(r"[^@\s]+@[^@\s]+")
_NAME = re.compile(r"[A-Za-z0-9][A-Za-z0-9._-]{0,99}")


@dataclass(frozen=True, slots=True)
class User:
    """A user with one role in one organisation."""

    id: str
    email: str
    org: str
    role: Role


@dataclass(frozen=True, slots=True)
class Project:
    """A project of an organisation; its name is unique across the installation."""

    id: str
    name: str
    org: str
    created_at: str


@dataclass(frozen=True, slots=True)
class CreatedKey:
    """A key just created: the only moment its secret exists outside the client."""

    id: str
    key: str
    prefix: str
    project: str
    user: str


@dataclass(frozen=True, slots=True)
class KeyRecord:
    """A stored key as listings show it: never the secret, never the hash."""

    id: str
    prefix: str
    project: str
    user: str
    created_at: str
    revoked_at: str | None


@dataclass(frozen=True, slots=True)
class KeyIdentity:
    """Who a valid key acts as, right now."""

    key_id: str
    project_id: str
    project: str
    org_id: str
    user_id: str
    role: Role


def _new_id(kind: str) -> str:
    return f"{kind}_{uuid.uuid4().hex[:20]}"


def normalise_email(email: str) -> str:
    """The stored form of an email address; Conflict-free comparisons are on this form."""
    cleaned = email.strip().lower()
    if not _EMAIL.fullmatch(cleaned):
        raise ValueError(f"not an email address: {email!r}")
    return cleaned


def check_role(role: str) -> Role:
    """The role, or ValueError naming the allowed ones."""
    if role not in ROLES:
        raise ValueError(f"role must be one of {', '.join(ROLES)}")
    return role


def check_name(name: str, what: str) -> str:
    """A project or organisation name: letters, digits, `.`, `_`, `-`; up to 100."""
    if not _NAME.fullmatch(name):
        raise ValueError(
            f"{what} name must be 1-100 letters, digits, '.', '_' or '-', starting with a "
            "letter or digit"
        )
    return name


def end_sessions(tx: Transaction, user_id: str) -> int:
    """End every dashboard session of a user (storage/web_sessions.py), in the caller's
    transaction: each of their cookies stops working at once. How many ended."""
    return tx.execute("DELETE FROM web_sessions WHERE user_id = ?", (user_id,))


class IdentityStore:
    """The operations on identity, each in one transaction."""

    def __init__(self, db: Database) -> None:
        self.db = db

    # -- organisations and users ---------------------------------------------------

    def _org_id(self, tx: Transaction, name: str, create: bool) -> str:
        row = tx.query_one("SELECT id FROM organizations WHERE name = ?", (name,))
        if row is not None:
            return str(row[0])
        if not create:
            raise NotFound(f"no organisation named {name!r}")
        org_id = _new_id("org")
        tx.execute(
            "INSERT INTO organizations (id, name, created_at) VALUES (?, ?, ?)",
            (org_id, name, utc_now_iso()),
        )
        return org_id

    def add_user(self, email: str, role: str, org: str = DEFAULT_ORG) -> User:
        """Add a user to an organisation (created if new); Conflict if the email exists."""
        email, checked_role = normalise_email(email), check_role(role)
        check_name(org, "organisation")
        with self.db.transaction(immediate=True) as tx:
            if tx.query_one("SELECT 1 FROM users WHERE email = ?", (email,)):
                raise Conflict(f"user {email} already exists")
            org_id = self._org_id(tx, org, create=True)
            user_id = _new_id("usr")
            tx.execute(
                "INSERT INTO users (id, email, org_id, role, created_at) VALUES (?, ?, ?, ?, ?)",
                (user_id, email, org_id, checked_role, utc_now_iso()),
            )
        return User(user_id, email, org, checked_role)

    def _user(self, tx: Transaction, email: str) -> User:
        row = tx.query_one(
            "SELECT u.id, u.email, o.name, u.role FROM users u "
            "JOIN organizations o ON o.id = u.org_id WHERE u.email = ?",
            (normalise_email(email),),
        )
        if row is None:
            raise NotFound(f"no user {email.strip().lower()}")
        return User(row[0], row[1], row[2], row[3])

    def has_users(self) -> bool:
        """Whether anyone can sign in yet."""
        with self.db.transaction() as tx:
            return tx.query_one("SELECT 1 FROM users LIMIT 1") is not None

    def user(self, email: str) -> User:
        """The user of an email; NotFound when there is none."""
        with self.db.transaction() as tx:
            return self._user(tx, email)

    def set_role(self, email: str, role: str) -> User:
        """Change a user's role; every key the user created acts with it from then on.
        A change ends the user's dashboard sessions (they sign in again with it)."""
        checked_role = check_role(role)
        with self.db.transaction(immediate=True) as tx:
            user = self._user(tx, email)
            if user.role != checked_role:
                tx.execute("UPDATE users SET role = ? WHERE id = ?", (checked_role, user.id))
                end_sessions(tx, user.id)
        return User(user.id, user.email, user.org, checked_role)

    def sign_out(self, email: str) -> int:
        """End every dashboard session of a user: how many there were."""
        with self.db.transaction(immediate=True) as tx:
            return end_sessions(tx, self._user(tx, email).id)

    # -- projects ------------------------------------------------------------------

    def _project(self, tx: Transaction, name: str) -> Project | None:
        row = tx.query_one(
            "SELECT p.id, p.name, o.name, p.created_at FROM projects p "
            "JOIN organizations o ON o.id = p.org_id WHERE p.name = ?",
            (name,),
        )
        return None if row is None else Project(row[0], row[1], row[2], row[3])

    def _insert_project(self, tx: Transaction, name: str, org_id: str, org: str) -> Project:
        project = Project(_new_id("prj"), check_name(name, "project"), org, utc_now_iso())
        tx.execute(
            "INSERT INTO projects (id, name, org_id, created_at) VALUES (?, ?, ?, ?)",
            (project.id, project.name, org_id, project.created_at),
        )
        return project

    def _default_org(self, tx: Transaction) -> str:
        names = [row[0] for row in tx.query("SELECT name FROM organizations ORDER BY name")]
        if len(names) > 1:
            raise Conflict(f"several organisations exist ({', '.join(names)}): name one with --org")
        return names[0] if names else DEFAULT_ORG

    def create_project(self, name: str, org: str | None = None) -> Project:
        """Create a project; without `org`, in the only organisation (or `default`)."""
        check_name(name, "project")
        with self.db.transaction(immediate=True) as tx:
            if self._project(tx, name) is not None:
                raise Conflict(f"project {name} already exists")
            org_name = org if org is not None else self._default_org(tx)
            check_name(org_name, "organisation")
            return self._insert_project(tx, name, self._org_id(tx, org_name, True), org_name)

    def list_projects(self, org: str | None = None) -> list[Project]:
        """Every project (of one organisation, when named), by name."""
        where, params = (" WHERE o.name = ?", (org,)) if org is not None else ("", ())
        with self.db.transaction() as tx:
            rows = tx.query(
                "SELECT p.id, p.name, o.name, p.created_at FROM projects p "
                f"JOIN organizations o ON o.id = p.org_id{where} ORDER BY p.name",
                params,
            )
        return [Project(*row) for row in rows]

    def project(self, name: str) -> Project:
        """The named project, or NotFound."""
        with self.db.transaction() as tx:
            project = self._project(tx, name)
        if project is None:
            raise NotFound(f"no project {name}")
        return project

    def rename_project(self, name: str, new_name: str) -> Project:
        """Rename a project (its keys, spans and scores follow: they hold its id);
        Conflict when the new name is taken, NotFound when the project is gone."""
        check_name(new_name, "project")
        with self.db.transaction(immediate=True) as tx:
            project = self._project(tx, name)
            if project is None:
                raise NotFound(f"no project {name}")
            if new_name != name and self._project(tx, new_name) is not None:
                raise Conflict(f"project {new_name} already exists")
            tx.execute("UPDATE projects SET name = ? WHERE id = ?", (new_name, project.id))
        return Project(project.id, new_name, project.org, project.created_at)

    # -- keys ----------------------------------------------------------------------

    def create_key(self, project: str, user_email: str) -> CreatedKey:
        """A new key for `project`, created by an owner or admin of its organisation.

        The project is created in the user's organisation when it does not exist.
        """
        check_name(project, "project")
        with self.db.transaction(immediate=True) as tx:
            user = self._user(tx, user_email)
            if user.role not in KEY_MANAGERS:
                raise NotAllowed(
                    f"user {user.email} is {user.role}; only owners and admins create keys"
                )
            found = self._project(tx, project)
            if found is None:
                org_id = self._org_id(tx, user.org, create=False)
                found = self._insert_project(tx, project, org_id, user.org)
            elif found.org != user.org:
                raise Conflict(
                    f"project {project} belongs to organisation {found.org}, "
                    f"user {user.email} to {user.org}"
                )
            key = api_keys.new_key()
            created = CreatedKey(
                _new_id("key"), key, api_keys.display_prefix(key), found.name, user.email
            )
            tx.execute(
                "INSERT INTO api_keys (id, key_hash, prefix, project_id, user_id, created_at) "
                "VALUES (?, ?, ?, ?, ?, ?)",
                (
                    created.id,
                    api_keys.key_hash(key),
                    created.prefix,
                    found.id,
                    user.id,
                    utc_now_iso(),
                ),
            )
        return created

    _KEY_COLUMNS = (
        "SELECT k.id, k.prefix, p.name, u.email, k.created_at, k.revoked_at FROM api_keys k "
        "JOIN projects p ON p.id = k.project_id JOIN users u ON u.id = k.user_id"
    )

    def list_keys(self, project: str | None = None) -> list[KeyRecord]:
        """Keys, newest first; of one project when named."""
        with self.db.transaction() as tx:
            if project is not None and self._project(tx, project) is None:
                raise NotFound(f"no project {project}")
            where, params = (" WHERE p.name = ?", (project,)) if project else ("", ())
            rows = tx.query(self._KEY_COLUMNS + where + " ORDER BY k.created_at DESC, k.id", params)
        return [KeyRecord(*row) for row in rows]

    def key(self, key_id: str) -> KeyRecord:
        """One key as listings show it; NotFound when there is none."""
        with self.db.transaction() as tx:
            row = tx.query_one(self._KEY_COLUMNS + " WHERE k.id = ?", (key_id,))
        if row is None:
            raise NotFound(f"no key {key_id}")
        return KeyRecord(*row)

    def revoke_key(self, key_id: str) -> KeyRecord:
        """Revoke a key (idempotent: revoking twice keeps the first time)."""
        with self.db.transaction(immediate=True) as tx:
            tx.execute(
                "UPDATE api_keys SET revoked_at = ? WHERE id = ? AND revoked_at IS NULL",
                (utc_now_iso(), key_id),
            )
            row = tx.query_one(self._KEY_COLUMNS + " WHERE k.id = ?", (key_id,))
        if row is None:
            raise NotFound(f"no key {key_id}")
        return KeyRecord(*row)

    def identity_for_hash(self, digest: str) -> KeyIdentity | None:
        """Who the key with this hash acts as now; None for unknown or revoked keys."""
        with self.db.transaction() as tx:
            row = tx.query_one(
                "SELECT k.id, p.id, p.name, p.org_id, u.id, u.role FROM api_keys k "
                "JOIN projects p ON p.id = k.project_id JOIN users u ON u.id = k.user_id "
                "WHERE k.key_hash = ? AND k.revoked_at IS NULL",
                (digest,),
            )
        return None if row is None else KeyIdentity(*row)
