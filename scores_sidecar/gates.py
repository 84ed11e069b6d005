"""The beta gates of the API host: routes that exist but are closed to API keys.

Answer: 401 UNAUTHORIZED, "Authentication required", in the scores error form; the
same answer API keys get on the dashboard's /api/v1. These routes take a
browser session (or the fix runtime's own credential), which an API key is not, so
the request lacks valid credentials for them: 401, not 403. The key is not even
looked up, so the answer tells nothing about whether it is valid.
"""

from __future__ import annotations

from quart import Quart, Response

from scores_sidecar.errors import ApiError, render

#: GET /v1/fixes/active serves the optional client fix runtime; the Management API
#: lives under /v1/management/.
GATED_RULES = ("/v1/fixes/active", "/v1/management", "/v1/management/<path:rest>")
GATED_METHODS = ["GET", "POST", "PUT", "PATCH", "DELETE"]


async def _gated(rest: str = "") -> Response:
    return render(
        ApiError(
            401,
            "UNAUTHORIZED",
            "Authentication required",
            {"reason": "this route is not available with an API key"},
        )
    )


def install_gates(app: Quart) -> None:
    """Register the gated routes."""
    for rule in GATED_RULES:
        app.add_url_rule(rule, view_func=_gated, methods=GATED_METHODS, endpoint=f"gate:{rule}")
