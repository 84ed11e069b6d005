"""Browser sign-in: the login form, sessions in cookies, CSRF tokens, signing out.

Every request first passes `guard` (the app's first before-request hook): an API key
on /api/v1 is refused before anything is looked up, then the session is read from its
cookie, then a state-changing request must carry the session's CSRF token (the login
form's token, bound to a signed-out browser's cookie, before sign-in).
"""

from __future__ import annotations

import asyncio
import logging
import secrets
import time
from urllib.parse import urlencode

from quart import Response, g, render_template, request

from dashboard.cookies import LOGIN_COOKIE, SESSION_COOKIE, Signer
from dashboard.errors import DashboardError, authentication_required, invalid
from dashboard.redirects import has_control, same_site_path
from service.client_address import client_ip
from service.settings import IPNetwork
from storage.database import Database
from storage.passwords import InvalidCredentials, Passwords, TooManyAttempts
from storage.web_sessions import SESSION_LIFETIME_MS, WebSession, WebSessions

log = logging.getLogger("spangate.dashboard")
WRITES = frozenset(("POST", "PUT", "PATCH", "DELETE"))
PUBLIC_PREFIXES = ("/static/", "/health")
FAILED_MESSAGE = "Invalid email or password"


def _now_ms() -> int:
    return int(time.time() * 1000)


def is_api(path: str) -> bool:
    """Whether a path is under /api/v1 (where only a signed-in browser is answered)."""
    return path == "/api/v1" or path.startswith("/api/v1/")


def redirect_to(location: str, status: int = 303) -> Response:
    """A redirect (303 after a form, so the browser follows with GET)."""
    return Response("", status, headers={"Location": location})


def current_session() -> WebSession:
    """The signed-in browser's session (the guard let only those through)."""
    session: WebSession | None = g.web_session
    if session is None:
        raise authentication_required()
    return session


class SignIn:
    """Sessions, CSRF and the login and logout routes."""

    def __init__(
        self,
        db: Database,
        signer: Signer,
        secure_cookies: bool,
        trusted_proxies: tuple[IPNetwork, ...] = (),
    ) -> None:
        self.passwords = Passwords(db)
        self.sessions = WebSessions(db)
        self.signer = signer
        self.secure = secure_cookies
        self.trusted_proxies = trusted_proxies

    async def guard(self) -> Response | None:
        """Before each request: API keys out, the session in, CSRF checked, pages gated."""
        api = is_api(request.path)
        if api and ("Authorization" in request.headers or "X-API-Key" in request.headers):
            raise authentication_required()
        if request.method in ("GET", "HEAD") and request.path.startswith(PUBLIC_PREFIXES):
            g.web_session = None  # stylesheets, scripts, health checks: no session to look up
            return None
        token = self.signer.unsign(request.cookies.get(SESSION_COOKIE))
        g.session_token = token
        g.web_session = (
            None if token is None else await asyncio.to_thread(self.sessions.find, token, _now_ms())
        )
        if g.web_session is None:
            browser = self.signer.unsign(request.cookies.get(LOGIN_COOKIE))
            g.new_browser = browser is None
            g.browser_id = browser or secrets.token_urlsafe(16)
        if api and g.web_session is None:
            raise authentication_required()
        if request.method in WRITES:
            await self._check_csrf()
        if g.web_session is None and not api and not self._public(request.path):
            query = urlencode({"next": request.full_path.rstrip("?")})
            return redirect_to(f"/login?{query}", 303)
        return None

    @staticmethod
    def _public(path: str) -> bool:
        return path == "/login" or path.startswith(PUBLIC_PREFIXES)

    def csrf_token(self) -> str:
        """The token this browser's forms and writes must carry."""
        session: WebSession | None = g.get("web_session")
        if session is not None:
            return session.csrf_token
        return self.signer.login_token(g.browser_id) if "browser_id" in g else ""

    async def _check_csrf(self) -> None:
        sent = request.headers.get("X-CSRF-Token")
        if sent is None and request.mimetype in (
            "application/x-www-form-urlencoded",
            "multipart/form-data",
        ):
            sent = (await request.form).get("csrf_token")
        expected = self.csrf_token().encode()
        # Compared as bytes: compare_digest refuses a str with non-ASCII characters.
        given = (sent or "").encode(errors="replace")
        if not given or not expected or not secrets.compare_digest(given, expected):
            raise DashboardError(403, "CSRF_FAILED", "missing or wrong CSRF token: reload the page")

    def finish(self, response: Response) -> Response:
        """After each request: give a new signed-out browser its id cookie."""
        if g.get("new_browser"):
            self._set_cookie(response, LOGIN_COOKIE, g.browser_id)
        return response

    def _set_cookie(
        self, response: Response, name: str, value: str, max_age: int | None = None
    ) -> None:
        """A signed cookie the page's scripts cannot read, sent by same-site requests
        and top-level navigations only (SameSite=Lax), over HTTPS only when so set."""
        response.set_cookie(
            name,
            self.signer.sign(value),
            max_age=max_age,
            httponly=True,
            samesite="Lax",
            secure=self.secure,
        )

    async def login_page(self) -> Response:
        """GET /login: the form (or home, when already signed in)."""
        if g.web_session is not None:
            return redirect_to(same_site_path(request.args.get("next")), 303)
        return await self._form(200)

    async def _form(self, status: int, message: str | None = None) -> Response:
        body = await render_template(
            "login.html",
            message=message,
            next=same_site_path(request.args.get("next") or (await request.form).get("next")),
        )
        return Response(body, status=status, content_type="text/html; charset=utf-8")

    async def login(self) -> Response:
        """POST /login: a session cookie and 303 on success; 401 or 429 else."""
        form = await request.form
        given = request.args.get("next") or form.get("next")
        if given is not None and has_control(given):
            # No page of ours makes such a value: refuse it before anything is checked.
            log.info("sign-in refused: next holds a control character")
            raise invalid("next must be a path on this site")
        try:
            user = await asyncio.to_thread(
                self.passwords.sign_in,
                form.get("email", ""),
                form.get("password", ""),
                _now_ms(),
                self._client_ip(),
            )
        except InvalidCredentials:
            return await self._form(401, FAILED_MESSAGE)
        except TooManyAttempts as e:
            response = await self._form(429, "Too many failed attempts: try again later")
            response.headers["Retry-After"] = str(e.retry_after_s)
            return response
        if g.session_token is not None:
            await asyncio.to_thread(self.sessions.end, g.session_token)
        token, _ = await asyncio.to_thread(self.sessions.start, user, _now_ms())
        response = redirect_to(same_site_path(given), 303)
        self._set_cookie(response, SESSION_COOKIE, token, SESSION_LIFETIME_MS // 1000)
        return response

    def _client_ip(self) -> str:
        """The address signing in: X-Forwarded-For is read only behind a trusted proxy."""
        forwarded = request.headers.get("X-Forwarded-For") if self.trusted_proxies else None
        return client_ip(request.remote_addr, forwarded, self.trusted_proxies)

    async def logout(self) -> Response:
        """POST /logout: the session ends on the server; its cookie stops working."""
        if g.session_token is not None:
            await asyncio.to_thread(self.sessions.end, g.session_token)
        response = redirect_to("/login", 303)
        response.delete_cookie(SESSION_COOKIE, httponly=True, samesite="Lax", secure=self.secure)
        return response
