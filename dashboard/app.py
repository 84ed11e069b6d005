"""The dashboard app: sign-in, pages and /api/v1 on the relational and span stores."""

from __future__ import annotations

import logging
from itertools import chain

from quart import Quart, Response, g, render_template, request
from werkzeug.exceptions import HTTPException

from dashboard.cookies import Signer, session_secret
from dashboard.errors import DashboardError
from dashboard.explorer import Explorer
from dashboard.formats import (
    NO_COST,
    axis_tick,
    breakable,
    count,
    cut,
    iso,
    millis,
    model_html,
    nanos,
    no_cost_of,
    usd,
)
from dashboard.genai_json import span_view
from dashboard.ingestion import iso_ms
from dashboard.routes import Views, install_routes, route_table
from dashboard.segments import SegmentConverter
from dashboard.signin import SignIn, is_api
from dashboard.span_pane import (
    attribute_rows,
    conversation_ends,
    message_sources,
    message_texts,
    messages_cut,
)
from dashboard.span_text import arguments_html, content_html, plain_html
from genai.messages import MAX_CONTENT, was_cut
from genai.parameters import offered_tools, request_parameters
from genai.view import PREVIEW_CHARS
from service.framing import FramingGuard
from service.settings import Settings
from service.web import (
    http_exception_parts,
    install_health,
    install_lifespan,
    json_response,
)
from storage.database import Database
from storage.errors import NotFound, StoreError, StoreRefused, StoreUnavailable

log = logging.getLogger("spangate.dashboard")
MAX_FORM_BYTES = 2 * 1024 * 1024  # a dataset's items are the largest thing sent
SECURITY_HEADERS = {
    "Content-Security-Policy": (
        "default-src 'self'; style-src 'self' 'unsafe-inline'; img-src 'self' data:; "
        "frame-ancestors 'none'; form-action 'self'; base-uri 'none'"
    ),
    "X-Content-Type-Options": "nosniff",
    "Referrer-Policy": "same-origin",
    "X-Frame-Options": "DENY",
}


#: Routes outside /api/v1 that answer JSON (a page's script reads them): their errors too.
_JSON_ENDPOINTS = frozenset(("find_in_trace",))


async def _render(error: DashboardError) -> Response:
    if is_api(request.path) or request.endpoint in _JSON_ENDPOINTS:
        body = {"error": {"code": error.code, "message": error.message}}
        return json_response(body, error.status, headers=error.headers)
    page = await render_template("error.html", error=error)
    return Response(page, error.status, headers=error.headers, content_type="text/html")


def _install_error_handlers(app: Quart) -> None:
    @app.errorhandler(DashboardError)
    async def refused(error: DashboardError) -> Response:
        return await _render(error)

    @app.errorhandler(HTTPException)
    async def http_error(error: HTTPException) -> Response:
        status, code, message, headers = http_exception_parts(error)
        return await _render(DashboardError(status, code, message, headers))

    @app.errorhandler(NotFound)
    async def missing(error: NotFound) -> Response:
        return await _render(DashboardError(404, "NOT_FOUND", cut(str(error), _MESSAGE_CHARS)))

    @app.errorhandler(StoreError)
    async def store_failed(error: StoreError) -> Response:
        if isinstance(error, StoreRefused):  # a value given that the database cannot hold
            return await _render(DashboardError(400, "VALIDATION_ERROR", str(error)))
        if isinstance(error, StoreUnavailable):
            log.warning("database unavailable", extra={"error": str(error)})
            return await _render(
                DashboardError(503, "STORAGE_ERROR", "the database is not answering; try again")
            )
        log.error("database error", extra={"error": str(error)})
        return await _render(DashboardError(500, "INTERNAL_ERROR", "the request failed"))

    @app.errorhandler(Exception)
    async def internal_error(error: Exception) -> Response:
        log.exception("request failed")
        return await _render(DashboardError(500, "INTERNAL_ERROR", "the request failed"))


async def _no_nul() -> None:
    """A NUL character in the path, the query string or a form's field is refused at
    once (400), on either store alike: no page names anything with one, and PostgreSQL's
    text cannot hold one."""
    if "\x00" in request.path:
        raise DashboardError(400, "VALIDATION_ERROR", "the path holds a NUL character")
    fields = request.args.items(multi=True) if b"%00" in request.query_string else iter(())
    if request.mimetype in _FORMS:
        fields = chain(fields, (await request.form).items(multi=True))
    for key, value in fields:
        if "\x00" in key + value:
            named = key.replace("\x00", "") or "a parameter's name"
            raise DashboardError(400, "VALIDATION_ERROR", f"{named[:100]} holds a NUL character")
    if b"%00" in request.query_string:  # where the parameters' parsing did not show it
        raise DashboardError(400, "VALIDATION_ERROR", "the query string holds a NUL character")


_FORMS = ("application/x-www-form-urlencoded", "multipart/form-data")
#: The most characters of a message that names what the request gave (an id of
#: thousands of characters is not echoed whole).
_MESSAGE_CHARS = 200


def create_app(settings: Settings) -> Quart:
    """The dashboard on the database named by `settings.database_url`."""
    app = Quart(__name__)
    app.config["MAX_CONTENT_LENGTH"] = MAX_FORM_BYTES
    app.url_map.converters["segment"] = SegmentConverter
    db = Database(settings.database_url, settings.database_statement_timeout_ms)
    signin = SignIn(
        db,
        Signer(session_secret(settings.session_secret, settings.data_dir)),
        settings.app_secure_cookies,
        settings.trusted_proxies,
    )
    install_lifespan(app, db, log)
    app.before_request(_no_nul)
    app.before_request(signin.guard)

    @app.after_request
    async def finish(response: Response) -> Response:
        response.headers.update(SECURITY_HEADERS)
        if request.path != "/static" and not request.path.startswith("/static/"):
            response.headers["Cache-Control"] = "no-store"
        return signin.finish(response)

    @app.context_processor
    async def page_context() -> dict[str, object]:
        return {"csrf_token": signin.csrf_token(), "web_session": g.get("web_session")}

    app.add_template_filter(nanos)
    app.add_template_filter(breakable)
    app.add_template_filter(iso)
    app.add_template_filter(millis)
    app.add_template_filter(count)
    app.add_template_filter(usd)
    app.add_template_filter(model_html)
    app.add_template_filter(span_view, "llm_view")
    app.jinja_env.globals["no_cost"] = NO_COST
    app.jinja_env.globals["no_cost_of"] = no_cost_of
    app.jinja_env.globals["axis_tick"] = axis_tick
    app.jinja_env.globals["preview_chars"] = PREVIEW_CHARS
    app.jinja_env.globals["max_content"] = MAX_CONTENT
    app.add_template_test(was_cut, "cut")
    for text_filter in (attribute_rows, message_sources, message_texts, messages_cut,
                        content_html, arguments_html, plain_html, iso_ms,
                        conversation_ends, request_parameters, offered_tools):  # fmt: skip
        app.add_template_filter(text_filter)
    ingest_url = f"http://{settings.host}:{settings.ingest_port}"
    app.jinja_env.globals["collector_url"] = ingest_url

    install_health(app, db)
    views = Views.of(Explorer(db), signin, ingest_url, settings.redis_url)
    install_routes(app, route_table(views))
    app.after_serving(views.ingestion.close)
    _install_error_handlers(app)
    app.asgi_app = FramingGuard(app.asgi_app, "VALIDATION_ERROR")  # type: ignore[method-assign,assignment]
    return app
