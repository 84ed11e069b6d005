"""The score request body: every field checked, every failure reported in `details`."""

from __future__ import annotations

import math
import re
from typing import Any

import orjson

from scores_sidecar.errors import ApiError
from storage.scores import SOURCES, NewScore

_TRACE_ID = re.compile(r"[0-9a-f]{32}")
_SPAN_ID = re.compile(r"[0-9a-f]{16}")
MAX_NAME = 256


def _invalid(fields: dict[str, str]) -> ApiError:
    return ApiError(422, "VALIDATION_ERROR", "the score request is invalid", {"fields": fields})


def _score(value: Any, problems: dict[str, str]) -> float:
    if type(value) not in (int, float):  # bool is a subclass of int and is not a number here
        problems["score"] = "required; a number from 0.0 to 1.0"
        return 0.0
    number = float(value)
    if not (math.isfinite(number) and 0.0 <= number <= 1.0):
        problems["score"] = "must be from 0.0 to 1.0"
    return number


def _optional_text(body: dict[str, Any], field: str, problems: dict[str, str]) -> str | None:
    value = body.get(field)
    if value is not None and type(value) is not str:
        problems[field] = "must be a string or null"
        return None
    return value


def parse_score(data: bytes) -> NewScore:
    """A NewScore from a request body; 422 VALIDATION_ERROR naming every bad field."""
    try:
        body = orjson.loads(data)
    except orjson.JSONDecodeError:
        raise _invalid({"body": "not valid JSON"}) from None
    if type(body) is not dict:
        raise _invalid({"body": "must be a JSON object"})
    problems: dict[str, str] = {}
    trace_id = body.get("trace_id")
    if type(trace_id) is not str or not _TRACE_ID.fullmatch(trace_id):
        problems["trace_id"] = "required; exactly 32 lowercase hex characters"
    span_id = _optional_text(body, "span_id", problems)
    if span_id is not None and not _SPAN_ID.fullmatch(span_id):
        problems["span_id"] = "must be 16 lowercase hex characters or null"
    name = body.get("name") if body.get("name") is not None else "default"
    if type(name) is not str or not 0 < len(name) <= MAX_NAME:
        problems["name"] = f"must be a string of 1 to {MAX_NAME} characters"
    score = _score(body.get("score"), problems)
    comment = _optional_text(body, "comment", problems)
    source = body.get("source") if body.get("source") is not None else "api"
    if source not in SOURCES:
        problems["source"] = f"must be one of {', '.join(SOURCES)}"
    if problems:
        raise _invalid(problems)
    return NewScore(trace_id, span_id, name, score, comment, source)  # type: ignore[arg-type]
