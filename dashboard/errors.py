"""The dashboard's one error type, rendered as JSON under /api/v1 and as a page elsewhere."""

from __future__ import annotations

from dataclasses import dataclass, field

from storage.identity import ROLE_RANK, Role, User


@dataclass(frozen=True)
class DashboardError(Exception):
    """A request the dashboard refuses: `{"error": {"code", "message"}}` or an error page."""

    status: int
    code: str
    message: str
    headers: dict[str, str] = field(default_factory=dict)


def authentication_required() -> DashboardError:
    """The answer to an API key, or to no session, on /api/v1 (docs/api.md)."""
    return DashboardError(401, "UNAUTHORIZED", "Authentication required")


def invalid(message: str) -> DashboardError:
    """400 VALIDATION_ERROR: a query parameter the route cannot use."""
    return DashboardError(400, "VALIDATION_ERROR", message)


def forbidden(message: str) -> DashboardError:
    """403 AUTHORIZATION_FAILED: the user's role does not allow this."""
    return DashboardError(403, "AUTHORIZATION_FAILED", message)


def require_role(user: User, least: Role, message: str) -> None:
    """403 AUTHORIZATION_FAILED unless the user's role is `least` or above."""
    if ROLE_RANK[user.role] < ROLE_RANK[least]:
        raise forbidden(message)
