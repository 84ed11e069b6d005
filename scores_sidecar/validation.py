"""The score request body: every field checked, every failure reported in `details`."""

from __future__ import annotations

import orjson

from scores_sidecar.errors import ApiError
from storage.scores import NewScore, check_score


def _invalid(fields: dict[str, str]) -> ApiError:
    return ApiError(422, "VALIDATION_ERROR", "the score request is invalid", {"fields": fields})


def parse_score(data: bytes) -> NewScore:
    """A NewScore from a request body; 422 VALIDATION_ERROR naming every bad field."""
    try:
        body = orjson.loads(data)
    except orjson.JSONDecodeError:
        raise _invalid({"body": "not valid JSON"}) from None
    if type(body) is not dict:
        raise _invalid({"body": "must be a JSON object"})
    new, problems = check_score(body)
    if new is None:
        raise _invalid(problems)
    return new
