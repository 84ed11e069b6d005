"""Browser sign-in: the form, sessions, CSRF, the failure limit, signing out."""

from __future__ import annotations

from dataclasses import replace
from ipaddress import ip_network

import pytest

from dashboard.app import create_app
from service.settings import Settings
from storage.identity import IdentityStore
from storage.passwords import MAX_FAILURES_PER_IP, Passwords
from tests.dashboard.conftest import PASSWORD, Site, csrf_of, sign_in


async def _attempt(site: Site, client: object, email: str, password: str) -> tuple[int, str]:
    page = await (await client.get("/login")).get_data()  # type: ignore[attr-defined]
    response = await client.post(  # type: ignore[attr-defined]
        "/login", form={"email": email, "password": password, "csrf_token": csrf_of(page)}
    )
    return response.status_code, (await response.get_data()).decode()


async def test_login_form_is_labelled(site: Site) -> None:
    """The form has labelled Email and Password inputs, a Sign in button and a CSRF token."""
    page = (await (await site.client().get("/login")).get_data()).decode()
    assert '<label for="email">Email</label>' in page and 'id="email"' in page
    assert '<label for="password">Password</label>' in page and 'id="password"' in page
    assert '<button type="submit">Sign in</button>' in page
    assert 'name="csrf_token" value="' + csrf_of(page.encode()) + '"' in page


async def test_sign_in_sets_a_safe_cookie(site: Site) -> None:
    """Right credentials: 303 to /, an HttpOnly SameSite=Lax cookie (not Secure by default)."""
    client = site.client()
    page = await (await client.get("/login")).get_data()
    response = await client.post(
        "/login",
        form={"email": "Owner@Acme.test ", "password": PASSWORD, "csrf_token": csrf_of(page)},
    )
    assert response.status_code == 303 and response.headers["Location"] == "/"
    cookie = next(
        c for c in response.headers.getlist("Set-Cookie") if c.startswith("spangate_session=")
    )
    assert "HttpOnly" in cookie and "SameSite=Lax" in cookie and "Secure" not in cookie
    assert (await client.get("/projects")).status_code == 200


async def test_secure_cookie_setting(site: Site, settings: Settings) -> None:
    """SPANGATE_APP_SECURE_COOKIES=1 marks the session cookie Secure."""
    from dataclasses import replace

    app = create_app(replace(settings, app_secure_cookies=True))
    async with app.test_app():
        client = app.test_client()
        page = await (await client.get("/login")).get_data()
        response = await client.post(
            "/login",
            form={"email": "owner@acme.test", "password": PASSWORD, "csrf_token": csrf_of(page)},
        )
    cookies = response.headers.getlist("Set-Cookie")
    assert any(c.startswith("spangate_session=") and "Secure" in c for c in cookies)


async def test_failure_is_generic(site: Site) -> None:
    """A wrong password and an unknown email get the same 401 page."""
    wrong = await _attempt(site, site.client(), "owner@acme.test", "wrong password")
    unknown = await _attempt(site, site.client(), "nobody@acme.test", "wrong password")
    assert wrong[0] == unknown[0] == 401
    assert "Invalid email or password" in wrong[1] and "Invalid email or password" in unknown[1]
    assert "csrf-token" in wrong[1]


async def test_five_failures_lock_the_email(site: Site) -> None:
    """After 5 failures for one email, even the right password gets 429; others are not locked."""
    client = site.client()
    for _ in range(5):
        assert (await _attempt(site, client, "owner@acme.test", "nope nope"))[0] == 401
    assert (await _attempt(site, client, "owner@acme.test", PASSWORD))[0] == 429
    assert (await _attempt(site, client, "nobody@acme.test", "x"))[0] == 401
    assert (await _attempt(site, client, "viewer@acme.test", PASSWORD))[0] == 303


async def test_login_needs_its_csrf_token(site: Site) -> None:
    """POST /login without the form's token (or with another browser's) is 403."""
    client = site.client()
    await client.get("/login")
    response = await client.post("/login", form={"email": "owner@acme.test", "password": PASSWORD})
    assert response.status_code == 403
    other = csrf_of(await (await site.client().get("/login")).get_data())
    response = await client.post(
        "/login", form={"email": "owner@acme.test", "password": PASSWORD, "csrf_token": other}
    )
    assert response.status_code == 403


@pytest.mark.parametrize(
    ("given", "expected"),
    [
        ("/projects/demo/sessions", "/projects/demo/sessions"),
        ("//evil.test/x", "/"),
        ("https://evil.test/", "/"),
        ("/\\evil.test", "/"),
        ("/a\\..\\\\evil.test", "/"),
        ("/projects/démo?q=a b", "/projects/d%C3%A9mo?q=a%20b"),
        ("/%09/evil.test", "/%09/evil.test"),
    ],
)
async def test_next_stays_on_site(site: Site, given: str, expected: str) -> None:
    """`next` sends a signed-in browser back where it was, never to another site."""
    client = site.client()
    page = await (await client.get("/login")).get_data()
    response = await client.post(
        "/login",
        form={
            "email": "owner@acme.test",
            "password": PASSWORD,
            "csrf_token": csrf_of(page),
            "next": given,
        },
    )
    assert response.headers["Location"] == expected


@pytest.mark.parametrize("given", ["/\t/evil.test/phish", "//evil.test", "http:evil.test"])
async def test_next_stays_on_site_when_signed_in(site: Site, given: str) -> None:
    """A signed-in browser opening /login?next=... is sent to this site's home when
    `next` would lead a browser elsewhere (tabs are dropped by browsers)."""
    client = site.client()
    await sign_in(client, "owner@acme.test")
    response = await client.get("/login", query_string={"next": given})
    assert response.status_code == 303 and response.headers["Location"] == "/"


async def test_login_form_keeps_only_a_same_site_next(site: Site) -> None:
    """The form of a signed-out browser carries a `next` that browsers read as another
    site only as `/`."""
    response = await site.client().get("/login", query_string={"next": "/\t/evil.test/x"})
    page = (await response.get_data()).decode()
    assert response.status_code == 200 and 'name="next" value="/"' in page


@pytest.mark.parametrize("control", ["\n", "\r", "\x0b", "\x00", "\t"])
async def test_next_with_a_control_character_is_refused(site: Site, control: str) -> None:
    """POST /login with a control character in `next` is a 400 refusal, before the
    password is checked: no session is created."""
    client = site.client()
    page = await (await client.get("/login")).get_data()
    response = await client.post(
        "/login",
        form={
            "email": "owner@acme.test",
            "password": PASSWORD,
            "csrf_token": csrf_of(page),
            "next": f"/projects{control}Set-Cookie: x=1",
        },
    )
    assert response.status_code == 400
    assert "spangate_session" not in response.headers.get("Set-Cookie", "")
    with site.db.transaction() as tx:
        assert tx.query_one("SELECT count(*) FROM web_sessions", ()) == (0,)


async def test_signed_out_pages_go_to_login(site: Site) -> None:
    """A page asked for without a session redirects to the form, remembering where."""
    response = await site.client().get("/projects/demo/traces?q=x")
    assert response.status_code == 303
    assert response.headers["Location"] == "/login?next=%2Fprojects%2Fdemo%2Ftraces%3Fq%3Dx"


async def test_logout_ends_the_session_on_the_server(site: Site) -> None:
    """After POST /logout the old cookie signs nothing in, even replayed."""
    client = site.client()
    csrf = await sign_in(client, "owner@acme.test")
    jar = client.cookie_jar  # type: ignore[attr-defined]
    cookie = next(c.value for c in jar if c.name == "spangate_session")
    assert (await client.post("/logout", form={})).status_code == 403  # no token
    response = await client.post("/logout", form={"csrf_token": csrf})
    assert response.status_code == 303 and response.headers["Location"] == "/login"
    replay = site.client()
    response = await replay.get(
        "/api/v1/projects", headers={"Cookie": f"spangate_session={cookie}"}
    )
    assert response.status_code == 401


async def test_forged_cookie_is_ignored(site: Site) -> None:
    """A session cookie whose signature does not match is no session."""
    response = await site.client().get(
        "/api/v1/projects", headers={"Cookie": "spangate_session=abc.def"}
    )
    assert response.status_code == 401


async def test_sessions_survive_a_restart(site: Site, settings: Settings) -> None:
    """The session secret is kept in the data directory (0600): a new dashboard process
    honours the cookies of the one before."""
    client = site.client()
    await sign_in(client, "owner@acme.test")
    jar = client.cookie_jar  # type: ignore[attr-defined]
    cookie = next(c.value for c in jar if c.name == "spangate_session")
    secret_file = settings.data_dir / "session_secret"
    assert secret_file.stat().st_mode & 0o777 == 0o600
    app = create_app(settings)
    async with app.test_app():
        response = await app.test_client().get(
            "/api/v1/projects", headers={"Cookie": f"spangate_session={cookie}"}
        )
    assert response.status_code == 200


async def test_a_non_ascii_csrf_token_is_refused(site: Site) -> None:
    """A CSRF token with non-ASCII characters, in the header or the form, is 403."""
    client = site.client()
    await sign_in(client, "owner@acme.test")
    response = await client.post("/logout", headers={"X-CSRF-Token": "jeton-é"})
    assert response.status_code == 403
    response = await client.post("/logout", form={"csrf_token": "jeton-é"})
    assert response.status_code == 403
    response = await client.post("/api/v1/projects/demo/api-keys", headers={"X-CSRF-Token": "é"})
    assert response.status_code == 403
    assert (await response.get_json())["error"]["code"] == "CSRF_FAILED"


async def test_a_non_ascii_cookie_signature_is_signed_out(site: Site) -> None:
    """A session cookie whose signature has non-ASCII characters (which a page on
    another port of the host can set) reads as signed out, on pages and the API."""
    cookie = {"Cookie": "spangate_session=abc.d\xe9f; spangate_login=abc.d\xe9f"}
    response = await site.client().get("/api/v1/projects", headers=cookie)
    assert response.status_code == 401
    response = await site.client().get("/projects", headers=cookie)
    assert response.status_code == 303 and response.headers["Location"].startswith("/login")
    response = await site.client().get("/login", headers=cookie)
    assert response.status_code == 200


async def _signed_in_cookie(site: Site, email: str) -> str:
    client = site.client()
    await sign_in(client, email)
    jar = client.cookie_jar  # type: ignore[attr-defined]
    return str(next(c.value for c in jar if c.name == "spangate_session"))


async def _reads(site: Site, cookie: str) -> int:
    response = await site.client().get(
        "/api/v1/projects", headers={"Cookie": f"spangate_session={cookie}"}
    )
    return response.status_code


async def test_a_password_change_ends_every_session(site: Site) -> None:
    """After a password change, every cookie the user signed in with stops working;
    other users' sessions go on."""
    first, second = [await _signed_in_cookie(site, "member@acme.test") for _ in range(2)]
    other = await _signed_in_cookie(site, "viewer@acme.test")
    assert await _reads(site, first) == await _reads(site, second) == 200
    Passwords(site.db).set_password("member@acme.test", "a new password")
    assert await _reads(site, first) == await _reads(site, second) == 401
    assert await _reads(site, other) == 200


async def test_a_role_change_ends_every_session(site: Site) -> None:
    """A role change signs the user out; setting the role they already hold does not."""
    cookie = await _signed_in_cookie(site, "member@acme.test")
    IdentityStore(site.db).set_role("member@acme.test", "member")
    assert await _reads(site, cookie) == 200
    IdentityStore(site.db).set_role("member@acme.test", "viewer")
    assert await _reads(site, cookie) == 401


async def test_sign_out_ends_every_session_of_one_user(site: Site) -> None:
    """Signing a user out on request ends each of their sessions, and counts them."""
    cookies = [await _signed_in_cookie(site, "member@acme.test") for _ in range(2)]
    other = await _signed_in_cookie(site, "viewer@acme.test")
    assert IdentityStore(site.db).sign_out("Member@acme.test") == 2
    assert [await _reads(site, cookie) for cookie in cookies] == [401, 401]
    assert await _reads(site, other) == 200


async def _attempt_from(client: object, email: str, password: str, ip: str) -> int:
    page = await (await client.get("/login")).get_data()  # type: ignore[attr-defined]
    response = await client.post(  # type: ignore[attr-defined]
        "/login",
        form={"email": email, "password": password, "csrf_token": csrf_of(page)},
        headers={"X-Forwarded-For": ip},
        scope_base={"client": ("127.0.0.1", 40000)},  # the socket's peer: a proxy
    )
    return int(response.status_code)


async def test_failures_from_one_address_are_limited(site: Site, settings: Settings) -> None:
    """20 failures from one client address within 15 minutes, whatever the emails, make
    every further attempt from it 429 (a right password too); another address, read
    from X-Forwarded-For behind a trusted proxy, is not limited."""
    app = create_app(replace(settings, trusted_proxies=(ip_network("127.0.0.1/32"),)))
    async with app.test_app():
        client = app.test_client()
        for n in range(MAX_FAILURES_PER_IP):
            assert await _attempt_from(client, f"u{n}@acme.test", "nope", "198.51.100.7") == 401
        assert await _attempt_from(client, "owner@acme.test", PASSWORD, "198.51.100.7") == 429
        assert await _attempt_from(client, "owner@acme.test", PASSWORD, "198.51.100.8") == 303


async def test_forwarded_for_counts_only_behind_a_trusted_proxy(site: Site) -> None:
    """Without SPANGATE_TRUSTED_PROXIES, X-Forwarded-For is ignored: changing it does not
    escape the limit of the socket's address."""
    client = site.client()
    for n in range(MAX_FAILURES_PER_IP):
        assert await _attempt_from(client, f"u{n}@acme.test", "nope", f"203.0.113.{n}") == 401
    assert await _attempt_from(client, "owner@acme.test", PASSWORD, "203.0.113.99") == 429
