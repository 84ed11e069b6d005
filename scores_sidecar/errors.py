"""The scores API's one error type: `{"error": {"code", "message", "details"}}`."""

from __future__ import annotations

from typing import Any

from quart import Response

from service.web import json_response


class ApiError(Exception):
    """A request the scores API answers with an error status."""

    def __init__(
        self, status: int, code: str, message: str, details: dict[str, Any] | None = None
    ) -> None:
        super().__init__(f"{status} {code}: {message}")
        self.status = status
        self.code = code
        self.message = message
        self.details = details or {}


def render(error: ApiError) -> Response:
    """The one place an ApiError becomes a response."""
    body = {"error": {"code": error.code, "message": error.message, "details": error.details}}
    return json_response(body, error.status)


def unauthorized(message: str) -> ApiError:
    """401 UNAUTHORIZED."""
    return ApiError(401, "UNAUTHORIZED", message)
