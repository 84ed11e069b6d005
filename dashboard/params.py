"""Query parameters shared by the trace list page, its JSON and the export: parsed
here, once, into the storage layer's filter, order and cursor (docs/api.md lists them).
A bad value is a 400 VALIDATION_ERROR whose message starts with the parameter's name."""

from __future__ import annotations

import math
import re
from collections.abc import Iterable
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any, Protocol

import orjson
from quart import request
from werkzeug.datastructures import MultiDict

from dashboard.errors import invalid
from dashboard.genai_json import summary_genai_json
from genai.prices import settled
from storage.session_summaries import SessionCursor, SessionFilter, SessionSummary
from storage.text_words import WORD
from storage.trace_list import Cursor, TraceFilter, TraceOrder, TraceSummary
from storage.trace_query import INT64_MAX, INT64_MIN, SORTS, ScoreCondition

DEFAULT_LIMIT = 50
MAX_LIMIT = 500
#: `attr`, `score` conditions and `text` words, at most, in one query.
MAX_CONDITIONS = 20
#: The parameters of the list, in the order a link writes them.
FILTER_PARAMS = (
    "q", "name", "status", "session", "user", "model", "from", "to", "minDurationMs",
    "maxDurationMs", "minCostUsd", "minTokens", "attr", "text", "score", "sort", "order",
)  # fmt: skip
_SCORE = re.compile(r"(?P<name>[^<>]+?)(?:(?P<op>>=|<=)(?P<value>.*))?")


#: A query string's values.
Args = MultiDict[str, str]


@dataclass(frozen=True, slots=True)
class ListQuery:
    """What a request asks of the trace list."""

    filters: TraceFilter
    order: TraceOrder
    after: Cursor | None
    limit: int


@dataclass(frozen=True, slots=True)
class SessionQuery:
    """What a request asks of the sessions list."""

    filters: SessionFilter
    after: SessionCursor | None
    limit: int


class _Cursor(Protocol):
    def encode(self) -> str: ...


def encoded(cursor: _Cursor | None) -> str | None:
    """A page's cursor as the JSON gives it: its opaque text, or null."""
    return None if cursor is None else cursor.encode()


def one(args: Args, name: str, strip: bool = True) -> str:
    """A parameter that takes one value, stripped unless `strip` is false ("" when not
    given); 400 naming it when given more than once (which of two values was meant is
    not for the server to guess, and a bad second value would go unseen)."""
    values = args.getlist(name)
    if len(values) > 1:
        raise invalid(f"{name} may be given once")
    if not values:
        return ""
    return values[0].strip() if strip else values[0]


def _text(args: Args, name: str) -> str | None:
    """A text compared as given (an id with a space at its end is another id; a name
    containing " agent" is not one containing "agent"); None when not given or empty."""
    return one(args, name, strip=False) or None


def _number(args: Args, name: str) -> float | None:
    raw = one(args, name)
    if not raw:
        return None
    if not raw.isascii():  # float() reads any script's digits
        raise invalid(f"{name} must be a number, 0 or more")
    try:
        value = float(raw)
    except ValueError:
        value = math.nan
    if not math.isfinite(value) or value < 0:
        raise invalid(f"{name} must be a number, 0 or more")
    return value


def _integer(args: Args, name: str) -> int | None:
    raw = one(args, name)
    if not raw:
        return None
    if not (raw.isascii() and raw.isdigit()):
        raise invalid(f"{name} must be an integer, 0 or more")
    return _digits(raw)


def _within(value: int) -> int:
    """A bound kept within the store's integers (times, durations, token counts): one
    past them (a `from` in the year 9999) lets through what it would have, and the
    database is never asked to bind a larger number."""
    return min(max(value, INT64_MIN), INT64_MAX)


def _digits(raw: str, scale: int = 1) -> int:
    """A decimal integer's digits, times `scale`, within INT64_MIN..INT64_MAX (without
    reading thousands of digits, which Python refuses)."""
    digits = raw.lstrip("0") or "0"
    return INT64_MAX if len(digits) > 19 else _within(int(digits) * scale)


def time_ns(args: Args, name: str) -> int | None:
    """A time parameter: ISO 8601 (UTC when it names no offset; `t` and `z` in either
    case, as RFC 3339 allows) or Unix milliseconds, as Unix nanoseconds. Every digit of
    a fraction counts (datetime reads six): a fraction finer than a nanosecond rounds
    up, which keeps `[from, to)` exact on the store's whole nanoseconds."""
    raw = one(args, name)
    if not raw:
        return None
    if not raw.isascii():
        raise invalid(f"{name} must be an ISO 8601 time or Unix milliseconds")
    if raw.isdigit():
        return _digits(raw, 1_000_000)
    whole, nanos = raw.upper(), 0
    fraction = _FRACTION.search(whole)
    if fraction is not None:
        digits = fraction[1]
        nanos = int(digits[:9].ljust(9, "0")) + (digits[9:].strip("0") != "")
        whole = whole[: fraction.start()] + whole[fraction.end() :]
    try:
        when = datetime.fromisoformat(whole)
    except ValueError as e:
        raise invalid(f"{name} must be an ISO 8601 time or Unix milliseconds") from e
    if when.tzinfo is None:
        when = when.replace(tzinfo=UTC)
    delta = when - datetime(1970, 1, 1, tzinfo=UTC)
    return _within((delta.days * 86_400 + delta.seconds) * 10**9 + nanos)


#: The fraction of a second of an ISO 8601 time (after its seconds).
_FRACTION = re.compile(r"(?<=:[0-9][0-9])[.,]([0-9]+)")


def _attributes(values: Iterable[str]) -> tuple[tuple[str, str | None], ...]:
    found: list[tuple[str, str | None]] = []
    for raw in values:
        if not raw:  # a form's empty field
            continue
        key, equals, value = raw.partition("=")
        if not key:
            raise invalid("attr must be key=value or key, with a key")
        found.append((key, value if equals else None))
    return tuple(found)


def _scores(values: Iterable[str]) -> tuple[ScoreCondition, ...]:
    found = []
    for raw in values:
        if not raw.strip():
            continue
        match = _SCORE.fullmatch(raw.strip())
        if match is None or not match["name"].strip():
            raise invalid("score must be NAME, NAME>=X or NAME<=X")
        if match["op"] is None:
            found.append(ScoreCondition(match["name"].strip()))
            continue
        try:
            value = float(match["value"])
        except ValueError:
            value = math.nan
        if not math.isfinite(value):
            raise invalid("score must be NAME, NAME>=X or NAME<=X, X a number")
        found.append(ScoreCondition(match["name"].strip(), match["op"], value))
    return tuple(found)


def _words(args: Args) -> tuple[str, ...]:
    raw = one(args, "text")
    if not raw:
        return ()
    words = tuple(dict.fromkeys(word.lower() for word in WORD.findall(raw)))
    if not words:
        raise invalid("text must hold a word (letters or digits)")
    return words


def _nanos(ms: float | None, up: bool) -> int | None:
    if ms is None:
        return None
    exact = ms * 1_000_000
    if not math.isfinite(exact):  # 1e308 ms: past every duration the store can hold
        return INT64_MAX
    return _within(math.ceil(exact) if up else math.floor(exact))


def trace_filter(args: Args) -> TraceFilter:
    """The filters of the list (docs/api.md); 400 naming the parameter for a bad one."""
    status = one(args, "status")
    if status not in ("", "error"):
        raise invalid("status may only be 'error'")
    min_tokens = _integer(args, "minTokens")
    attributes = _attributes(args.getlist("attr"))
    scores = _scores(args.getlist("score"))
    words = _words(args)
    for name, many in (("attr", attributes), ("score", scores), ("text", words)):
        if len(many) > MAX_CONDITIONS:
            raise invalid(f"{name} may give at most {MAX_CONDITIONS} conditions")
    return TraceFilter(
        name=_text(args, "q"),
        errors_only=status == "error",
        session=_text(args, "session"),
        span_name=_text(args, "name"),
        user=_text(args, "user"),
        model=_text(args, "model"),
        from_ns=time_ns(args, "from"),
        to_ns=time_ns(args, "to"),
        min_duration_ns=_nanos(_number(args, "minDurationMs"), up=True),
        max_duration_ns=_nanos(_number(args, "maxDurationMs"), up=False),
        min_cost_usd=_number(args, "minCostUsd"),
        min_tokens=min_tokens,
        attributes=attributes,
        words=words,
        scores=scores,
    )


def trace_order(args: Args) -> TraceOrder:
    """`sort` (start, duration, cost, tokens) and `order` (desc, asc)."""
    sort = one(args, "sort") or "start"
    if sort not in SORTS:
        raise invalid(f"sort must be one of {', '.join(SORTS)}")
    order = one(args, "order") or "desc"
    if order not in ("desc", "asc"):
        raise invalid("order must be desc or asc")
    return TraceOrder(sort, order == "desc")


def limit_of(args: Args, default: int, maximum: int) -> int:
    """`limit`, 1 to `maximum`; 400 otherwise."""
    raw = one(args, "limit")
    if not raw:
        return default
    if not (raw.isascii() and raw.isdigit()) or not 1 <= (limit := _digits(raw)) <= maximum:
        raise invalid(f"limit must be an integer from 1 to {maximum}")
    return limit


def cursor_of(args: Args, order: TraceOrder | None = None) -> Cursor | None:
    """`cursor`, as a previous page of the same order gave it; 400 for anything else."""
    raw = one(args, "cursor")
    if not raw:
        return None
    try:
        cursor = Cursor.decode(raw)
    except ValueError as e:
        raise invalid(str(e)) from e
    if order is not None and cursor.order != order:
        raise invalid("cursor is from a list in another order (sort, order)")
    return cursor


def list_query(args: Args, default: int, maximum: int) -> ListQuery:
    """The whole of a list request: filters, order, cursor and limit."""
    order = trace_order(args)
    return ListQuery(
        trace_filter(args), order, cursor_of(args, order), limit_of(args, default, maximum)
    )


def session_query(args: Args) -> SessionQuery:
    """The sessions list's filters (`user`, `from`, `to`), cursor and limit."""
    filters = SessionFilter(_text(args, "user"), time_ns(args, "from"), time_ns(args, "to"))
    raw = one(args, "cursor")
    try:
        after = SessionCursor.decode(raw) if raw else None
    except ValueError as e:
        raise invalid(str(e)) from e
    return SessionQuery(filters, after, limit_of(args, DEFAULT_LIMIT, MAX_LIMIT))


def session_json(session: SessionSummary) -> dict[str, Any]:
    """One session of `GET .../sessions`."""
    return {
        "sessionId": session.session_id,
        "traceCount": session.traces,
        "startTimeUnixNano": str(session.start_ns),
        "endTimeUnixNano": None if session.end_ns is None else str(session.end_ns),
        "errorCount": session.error_count,
        "inputTokens": session.input_tokens,
        "outputTokens": session.output_tokens,
        "costUsd": settled(session.cost_usd),
        "userId": session.user_id,
    }


def asked_limit(args: Args) -> list[tuple[str, str]]:
    """The page size a request asked for, which its page's links keep (none: the
    default's)."""
    limit = args.get("limit", "")
    return [("limit", limit)] if limit else []


def kept_params(args: Args) -> list[tuple[str, str]]:
    """The list's parameters a request gave (not its cursor or limit), for links."""
    return [(name, value) for name in FILTER_PARAMS for value in args.getlist(name) if value]


async def json_object() -> dict[str, Any]:
    """The request's body as a JSON object; 400 VALIDATION_ERROR for anything else."""
    try:
        body = orjson.loads(await request.get_data())
    except orjson.JSONDecodeError as e:
        raise invalid("the body is not JSON") from e
    if not isinstance(body, dict):
        raise invalid("the body must be a JSON object")
    return body


def summary_json(trace: TraceSummary) -> dict[str, Any]:
    """One trace of `GET .../traces`."""
    return {
        "traceId": trace.trace_id,
        "rootName": trace.root_name,
        "startTimeUnixNano": str(trace.start_ns),
        "durationMs": trace.duration_ms,
        "spanCount": trace.span_count,
        "errorCount": trace.error_count,
        "sessionId": trace.session_id,
        **summary_genai_json(trace),
    }
