"""Organisations, users, roles, projects and keys in the relational store."""

from __future__ import annotations

import pytest

from storage import api_keys
from storage.database import Database
from storage.errors import Conflict, NotAllowed, NotFound
from storage.identity import IdentityStore


@pytest.fixture
def store(database: Database) -> IdentityStore:
    return IdentityStore(database)


def test_users_roles_and_email_normalisation(store: IdentityStore) -> None:
    """Users get one role in one organisation; emails compare case-insensitively."""
    ann = store.add_user(" Ann@Example.COM ", "owner")
    assert (ann.email, ann.org, ann.role) == ("ann@example.com", "default", "owner")
    with pytest.raises(Conflict):
        store.add_user("ann@example.com", "viewer")
    assert store.set_role("ANN@example.com", "viewer").role == "viewer"
    with pytest.raises(NotFound):
        store.set_role("nobody@example.com", "admin")
    with pytest.raises(ValueError, match="role must be one of"):
        store.add_user("x@example.com", "root")
    with pytest.raises(ValueError, match="not an email"):
        store.add_user("not-an-email", "owner")


def test_projects_default_org_and_uniqueness(store: IdentityStore) -> None:
    """A project goes to the only organisation; with several, one must be named."""
    store.add_user("ann@acme.io", "owner", org="acme")
    assert store.create_project("chat").org == "acme"
    with pytest.raises(Conflict, match="already exists"):
        store.create_project("chat")
    store.add_user("bo@other.io", "owner", org="other")
    with pytest.raises(Conflict, match="name one with --org"):
        store.create_project("search")
    assert store.create_project("search", org="other").org == "other"
    assert [p.name for p in store.list_projects()] == ["chat", "search"]
    with pytest.raises(ValueError, match="project name"):
        store.create_project("has space")


def test_only_owners_and_admins_create_keys(store: IdentityStore) -> None:
    """Owners and admins create keys; members and viewers are refused, clearly."""
    for email, role in [
        ("o@x.io", "owner"),
        ("a@x.io", "admin"),
        ("m@x.io", "member"),
        ("v@x.io", "viewer"),
    ]:
        store.add_user(email, role)
    assert store.create_key("p", "o@x.io").project == "p"  # project created on the way
    assert store.create_key("p", "a@x.io").user == "a@x.io"
    for email in ("m@x.io", "v@x.io"):
        with pytest.raises(NotAllowed, match="only owners and admins"):
            store.create_key("p", email)
    with pytest.raises(NotFound):
        store.create_key("p", "ghost@x.io")


def test_key_cannot_cross_organisations(store: IdentityStore) -> None:
    """A user cannot create a key for another organisation's project."""
    store.add_user("a@one.io", "owner", org="one")
    store.add_user("b@two.io", "owner", org="two")
    store.create_key("shared", "a@one.io")
    with pytest.raises(Conflict, match="belongs to organisation one"):
        store.create_key("shared", "b@two.io")


def test_key_acts_with_creators_current_role(store: IdentityStore) -> None:
    """A key's identity carries the creator's role as it is now, not as it was."""
    store.add_user("a@x.io", "admin")
    created = store.create_key("p", "a@x.io")
    digest = api_keys.key_hash(created.key)
    identity = store.identity_for_hash(digest)
    assert identity is not None and identity.role == "admin" and identity.project == "p"
    store.set_role("a@x.io", "viewer")
    assert store.identity_for_hash(digest).role == "viewer"  # type: ignore[union-attr]


def test_revoked_key_stops_working_and_revoke_is_idempotent(store: IdentityStore) -> None:
    """After revocation the key has no identity; revoking again keeps the first time."""
    store.add_user("a@x.io", "owner")
    created = store.create_key("p", "a@x.io")
    first = store.revoke_key(created.id)
    assert first.revoked_at is not None
    assert store.identity_for_hash(api_keys.key_hash(created.key)) is None
    assert store.revoke_key(created.id).revoked_at == first.revoked_at
    with pytest.raises(NotFound):
        store.revoke_key("key_missing")


def test_key_listing_fields_and_filter(store: IdentityStore) -> None:
    """Listings show id, prefix, project, creator and times, per project when asked."""
    store.add_user("a@x.io", "owner")
    one = store.create_key("p1", "a@x.io")
    store.create_key("p2", "a@x.io")
    [record] = store.list_keys("p1")
    assert (record.id, record.prefix, record.project, record.user, record.revoked_at) == (
        one.id,
        one.key[:12],
        "p1",
        "a@x.io",
        None,
    )
    assert len(store.list_keys()) == 2
    with pytest.raises(NotFound):
        store.list_keys("nope")


def test_secret_is_never_stored(store: IdentityStore, database: Database) -> None:
    """No column of any table holds a key's secret or its random part."""
    store.add_user("a@x.io", "owner")
    created = store.create_key("p", "a@x.io")
    secret_part = created.key[len(api_keys.KEY_PREFIX) :]
    with database.transaction() as tx:
        for table in ("organizations", "users", "projects", "api_keys"):
            for row in tx.query(f"SELECT * FROM {table}"):
                for cell in row:
                    assert secret_part[8:] not in str(cell)
        [(stored_hash, prefix)] = tx.query("SELECT key_hash, prefix FROM api_keys")
    assert stored_hash == api_keys.key_hash(created.key) and prefix == created.key[:12]


def test_keys_are_high_entropy_and_recognisable() -> None:
    """Keys carry the sgk_ prefix, 256 random bits, and never repeat."""
    keys = {api_keys.new_key() for _ in range(1000)}
    assert len(keys) == 1000
    assert all(api_keys.looks_like_key(key) for key in keys)
