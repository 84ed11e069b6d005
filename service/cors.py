"""CORS for the ingest and scores routes, for browser clients of allowed origins."""

from __future__ import annotations

from quart import Quart, Response, request

_ALLOW_HEADERS = "Authorization, Content-Type, Content-Encoding, X-API-Key"
_ALLOW_METHODS = "GET, POST, OPTIONS"
_MAX_AGE = "600"


def install_cors(app: Quart, origins: tuple[str, ...]) -> None:
    """Answer preflights and add CORS headers for `origins` (`*` allows any)."""
    if not origins:
        return
    any_origin = "*" in origins

    def allowed(origin: str | None) -> bool:
        return origin is not None and (any_origin or origin.rstrip("/") in origins)

    @app.before_request
    async def preflight() -> Response | None:
        if request.method != "OPTIONS" or "Access-Control-Request-Method" not in request.headers:
            return None
        response = Response(b"", status=204)
        if allowed(request.headers.get("Origin")):
            response.headers["Access-Control-Allow-Methods"] = _ALLOW_METHODS
            response.headers["Access-Control-Allow-Headers"] = _ALLOW_HEADERS
            response.headers["Access-Control-Max-Age"] = _MAX_AGE
        return response

    @app.after_request
    async def add_headers(response: Response) -> Response:
        origin = request.headers.get("Origin")
        if allowed(origin):
            response.headers["Access-Control-Allow-Origin"] = origin or "*"
            response.headers["Access-Control-Expose-Headers"] = "Retry-After"
            response.vary.add("Origin")
        return response
