"""The users, projects and keys commands, as an operator types them."""

from __future__ import annotations

import io
import subprocess
import sys
from pathlib import Path

import orjson
import pytest

from spangate.cli import main


@pytest.fixture(autouse=True)
def data_dir(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("SPANGATE_DATA_DIR", str(tmp_path / "data"))
    monkeypatch.delenv("SPANGATE_DATABASE_URL", raising=False)
    return tmp_path / "data"


def run(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, str, str]:
    code = main(list(argv))
    out, err = capsys.readouterr()
    return code, out, err


def test_key_lifecycle(capsys: pytest.CaptureFixture[str], data_dir: Path) -> None:
    """users add, keys create (secret alone on the last line), list --json, revoke."""
    assert run(capsys, "users", "add", "ann@x.io", "--role", "owner")[0] == 0
    code, out, _ = run(capsys, "keys", "create", "--project", "chat", "--user", "ann@x.io")
    secret = out.strip().splitlines()[-1]
    assert code == 0 and secret.startswith("sgk_") and " " not in secret
    assert (data_dir / "spangate.db").exists()
    code, out, _ = run(capsys, "keys", "list", "--json")
    [listed] = orjson.loads(out)
    assert set(listed) == {"id", "prefix", "project", "user", "created_at", "revoked_at"}
    assert (listed["project"], listed["user"], listed["revoked_at"]) == ("chat", "ann@x.io", None)
    assert secret not in out
    code, out, _ = run(capsys, "keys", "revoke", listed["id"])
    assert code == 0 and "revoked" in out
    assert orjson.loads(run(capsys, "keys", "list", "--json", "--project", "chat")[1])[0][
        "revoked_at"
    ]
    code, _, err = run(capsys, "users", "add", "bo@x.io", "--role", "viewer")
    assert code == 0 and err == ""  # the database was there


def test_a_command_that_creates_the_database_says_where(
    capsys: pytest.CaptureFixture[str], data_dir: Path
) -> None:
    """Run where no database is (another directory than the service's, no setting), a
    command that writes one says on stderr that it created it, and where."""
    code, out, err = run(capsys, "users", "add", "ann@x.io", "--role", "owner")
    created = data_dir / "spangate.db"
    assert code == 0 and "added user ann@x.io" in out
    assert err == f"created a new database at {created.resolve()} " + (
        "(SPANGATE_DATA_DIR, SPANGATE_DATABASE_URL)\n"
    )


def test_keys_create_json(capsys: pytest.CaptureFixture[str]) -> None:
    """--json prints exactly id, key, prefix, project and user."""
    run(capsys, "users", "add", "ann@x.io", "--role", "admin")
    code, out, _ = run(capsys, "keys", "create", "--project", "p", "--user", "ann@x.io", "--json")
    created = orjson.loads(out)
    assert code == 0 and set(created) == {"id", "key", "prefix", "project", "user"}
    assert created["key"].startswith(created["prefix"])


def test_projects_create_and_list(capsys: pytest.CaptureFixture[str]) -> None:
    """projects create and list, in text and JSON."""
    assert run(capsys, "projects", "create", "search")[0] == 0
    code, out, _ = run(capsys, "projects", "list")
    assert code == 0 and "search" in out and "default" in out
    assert [p["name"] for p in orjson.loads(run(capsys, "projects", "list", "--json")[1])] == [
        "search"
    ]


@pytest.mark.parametrize(
    ("argv", "message"),
    [
        (["keys", "create", "--project", "p", "--user", "nobody@x.io"], "no user nobody@x.io"),
        (["users", "set-role", "nobody@x.io", "admin"], "no user"),
        (["keys", "revoke", "key_nope"], "no key key_nope"),
        (["users", "add", "not-an-email", "--role", "owner"], "not an email address"),
    ],
)
def test_errors_are_one_line_and_non_zero(
    capsys: pytest.CaptureFixture[str], argv: list[str], message: str
) -> None:
    """Each failure is one clear line on stderr and exit status 1."""
    code, out, err = run(capsys, *argv)
    assert code == 1 and out == ""
    assert err.count("\n") == 1 and message in err and err.startswith("spangate: error: ")


def test_member_cannot_create_keys(capsys: pytest.CaptureFixture[str]) -> None:
    """A member creating a key is refused with the reason."""
    run(capsys, "users", "add", "m@x.io", "--role", "member")
    code, _, err = run(capsys, "keys", "create", "--project", "p", "--user", "m@x.io")
    assert code == 1 and "only owners and admins create keys" in err


def test_bad_setting_names_the_variable(
    capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    """A bad SPANGATE_ value stops the command with a line naming the variable."""
    monkeypatch.setenv("SPANGATE_DATABASE_URL", "mysql://x")
    code, _, err = run(capsys, "projects", "list")
    assert code == 2 and "SPANGATE_DATABASE_URL" in err


def test_unreachable_database_is_one_line_no_traceback(tmp_path: Path) -> None:
    """A real process against an unreachable PostgreSQL prints one line, no traceback."""
    env = {"SPANGATE_DATABASE_URL": "postgresql://postgres@127.0.0.1:1/none", "PATH": "/usr/bin"}
    done = subprocess.run(
        [sys.executable, "-m", "spangate.cli", "projects", "list"],
        env=env,
        capture_output=True,
        text=True,
        timeout=60,
        cwd=tmp_path,
    )
    assert done.returncode == 1
    assert "Traceback" not in done.stderr and "unreachable" in done.stderr
    assert done.stderr.count("\n") == 1


def test_passwords_from_stdin(
    capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch, data_dir: Path
) -> None:
    """users add --password-stdin and users set-password read stdin; short ones are refused."""
    from storage.database import Database
    from storage.passwords import Passwords

    monkeypatch.setattr("sys.stdin", io.StringIO("a long password\n"))
    assert main(["users", "add", "p@x.io", "--role", "viewer", "--password-stdin"]) == 0
    monkeypatch.setattr("sys.stdin", io.StringIO("short\n"))
    assert main(["users", "set-password", "p@x.io"]) == 1
    assert "at least 8 characters" in capsys.readouterr().err
    monkeypatch.setattr("sys.stdin", io.StringIO("another long one\n"))
    assert main(["users", "set-password", "p@x.io"]) == 0
    monkeypatch.setattr("sys.stdin", io.StringIO("short\n"))
    assert main(["users", "add", "q@x.io", "--role", "viewer", "--password-stdin"]) == 1
    assert main(["users", "set-password", "nobody@x.io"]) == 1
    db = Database(f"sqlite:///{data_dir / 'spangate.db'}")
    try:
        assert Passwords(db).sign_in("p@x.io", "another long one", 0).email == "p@x.io"
    finally:
        db.close()
    # the user whose password was refused was not added: adding it now works
    assert main(["users", "add", "q@x.io", "--role", "viewer"]) == 0


def test_users_sign_out(capsys: pytest.CaptureFixture[str], data_dir: Path) -> None:
    """users sign-out EMAIL ends every dashboard session of that user and says how many;
    an unknown email is an error."""
    from storage.database import Database
    from storage.identity import IdentityStore
    from storage.web_sessions import WebSessions

    run(capsys, "users", "add", "ann@x.io", "--role", "owner")
    run(capsys, "users", "add", "bob@x.io", "--role", "owner")
    db = Database(f"sqlite:///{data_dir / 'spangate.db'}")
    try:
        sessions, identity = WebSessions(db), IdentityStore(db)
        ann, bob = identity.user("ann@x.io"), identity.user("bob@x.io")
        tokens = [sessions.start(ann, 0)[0] for _ in range(2)]
        kept = sessions.start(bob, 0)[0]
        code, out, _ = run(capsys, "users", "sign-out", "ann@x.io")
        assert code == 0 and "ended 2 dashboard sessions of ann@x.io" in out
        assert [sessions.find(token, 1) for token in tokens] == [None, None]
        assert sessions.find(kept, 1) is not None
    finally:
        db.close()
    code, _, err = run(capsys, "users", "sign-out", "nobody@x.io")
    assert code == 1 and "no user nobody@x.io" in err
