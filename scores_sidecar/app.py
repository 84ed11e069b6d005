"""The scores sidecar: POST /v1/scores, health routes and the beta gates."""

from __future__ import annotations

import asyncio
import logging
import re

from quart import Quart, Response, request
from werkzeug.exceptions import HTTPException, RequestEntityTooLarge

from scores_sidecar.auth import authorize
from scores_sidecar.errors import ApiError, render
from scores_sidecar.gates import install_gates
from scores_sidecar.validation import parse_score
from service.cors import install_cors
from service.framing import FramingGuard
from service.settings import Settings
from service.web import (
    http_exception_parts,
    install_health,
    install_lifespan,
    json_response,
    whole_body,
)
from storage.database import Database
from storage.errors import StoreError
from storage.identity import IdentityStore
from storage.scores import Score, ScoreStore
from storage.verifier import KeyVerifier

log = logging.getLogger("spangate.sidecar")
MAX_BODY_BYTES = 10 * 1024 * 1024  # the scores API's own limit, independent of the gateway's
_DIGITS = re.compile(r"[0-9]+")


def _content_length() -> int | None:
    """The declared body length; 400 INVALID_CONTENT_LENGTH when it is not an integer."""
    raw = request.headers.get("Content-Length")
    if raw is None:
        return None
    if not _DIGITS.fullmatch(raw.strip()):
        raise ApiError(
            400,
            "INVALID_CONTENT_LENGTH",
            "Content-Length must be an integer",
            {"content_length": raw},
        )
    return int(raw)


def _too_large() -> ApiError:
    return ApiError(
        413, "REQUEST_TOO_LARGE", "the body is over 10 MB", {"limit_bytes": MAX_BODY_BYTES}
    )


def _as_json(score: Score) -> dict[str, object]:
    return {
        "id": score.id,
        "project_id": score.project_id,
        "trace_id": score.trace_id,
        "span_id": score.span_id,
        "name": score.name,
        "score": score.score,
        "comment": score.comment,
        "source": score.source,
        "created_at": score.created_at,
    }


class Scores:
    """POST /v1/scores: authorize, read under the limit, validate, store, answer 201."""

    def __init__(self, verifier: KeyVerifier, store: ScoreStore) -> None:
        self.verifier = verifier
        self.store = store

    async def create(self) -> Response:
        length = _content_length()
        if length is not None and length > MAX_BODY_BYTES:
            raise _too_large()
        identity = await authorize(self.verifier, request.headers)
        try:
            # a body has SPANGATE_BODY_TIMEOUT_S (Quart's BODY_TIMEOUT) to arrive whole
            data = await asyncio.wait_for(whole_body(request.body), request.body_timeout)
        except RequestEntityTooLarge as e:
            raise _too_large() from e
        except TimeoutError as e:
            raise ApiError(
                408,
                "REQUEST_TIMEOUT",
                f"the body did not arrive whole within {request.body_timeout} s",
            ) from e
        new = parse_score(data)
        try:
            score = await asyncio.to_thread(
                self.store.create, identity.project_id, identity.key_id, new
            )
        except StoreError as e:
            log.error("score not stored", extra={"error": str(e)})
            raise ApiError(500, "INTERNAL_ERROR", "the API could not complete the request") from e
        return json_response(_as_json(score), 201)


def _install_error_handlers(app: Quart) -> None:
    @app.errorhandler(ApiError)
    async def api_error(error: ApiError) -> Response:
        return render(error)

    @app.errorhandler(HTTPException)
    async def http_error(error: HTTPException) -> Response:
        status, code, message, headers = http_exception_parts(error)
        response = render(ApiError(status, code, message))
        response.headers.update(headers)
        return response

    @app.errorhandler(Exception)
    async def internal_error(error: Exception) -> Response:
        log.exception("request failed")
        return render(ApiError(500, "INTERNAL_ERROR", "the API could not complete the request"))


def create_app(settings: Settings) -> Quart:
    """The scores API on the relational store named by `settings.database_url`."""
    app = Quart("spangate.sidecar")
    app.config["MAX_CONTENT_LENGTH"] = MAX_BODY_BYTES
    app.config["BODY_TIMEOUT"] = settings.body_timeout_s
    db = Database(settings.database_url, settings.database_statement_timeout_ms)
    scores = Scores(KeyVerifier(IdentityStore(db).identity_for_hash), ScoreStore(db))
    install_lifespan(app, db, log)

    app.add_url_rule("/v1/scores", view_func=scores.create, methods=["POST"])
    install_health(app, db)
    install_gates(app)
    _install_error_handlers(app)
    install_cors(app, settings.cors_allowed_origins)
    app.asgi_app = FramingGuard(app.asgi_app, "INVALID_CONTENT_LENGTH", details=True)  # type: ignore[method-assign,assignment]
    return app
