"""Search within one trace: the spans whose name, attributes (keys and values), events or
status message contain the words asked for, in any case (folded as Unicode folds case for
comparison: `strasse` finds `Straße`). A string value holding JSON is looked in as its
JSON decoded too, so `Zürich` is found where a client wrote `Z\\u00fcrich`.

`GET /projects/{p}/traces/{t}/find?q=` answers `{"matches": [{"spanId", "position",
"page"}], "total"}`: each match's place in the waterfall's tree order and the page of the
waterfall that shows it, so the page's script can go to a match on another page.
"""

from __future__ import annotations

import asyncio
from typing import Any

import orjson
from quart import Response, request

from dashboard.errors import DashboardError
from dashboard.explorer import Explorer
from dashboard.params import one
from dashboard.waterfall import PAGE_ROWS, lay_out, plain
from storage.spans import SpanStore

MAX_QUERY = 200
MAX_MATCHES = 1000


def _decoded(text: str) -> str | None:
    """The JSON a string holds written without escapes, when it holds JSON with some."""
    if "\\u" not in text or text.lstrip()[:1] not in ("[", "{"):
        return None
    try:
        return orjson.dumps(orjson.loads(text)).decode()
    except (orjson.JSONDecodeError, orjson.JSONEncodeError):  # not JSON, or nested too deep
        return None


def _texts(pairs: Any) -> list[str]:
    texts = []
    for pair in pairs or []:
        texts.append(str(pair.get("key", "")))
        value = plain(pair.get("value", {}))
        if isinstance(value, str):
            texts.append(value)
            decoded = _decoded(value)
            if decoded is not None:
                texts.append(decoded)
        else:
            texts.append(orjson.dumps(value).decode())
    return texts


def span_text(span: dict[str, Any]) -> str:
    """Everything of a span that a search looks in, case-folded, one line each."""
    texts = [span.get("name", ""), span.get("status", {}).get("message") or ""]
    texts += _texts(span.get("attributes"))
    for event in span.get("events") or []:
        texts.append(str(event.get("name", "")))
        texts += _texts(event.get("attributes"))
    return "\n".join(texts).casefold()


def matching(spans: list[dict[str, Any]], query: str) -> set[str]:
    """The ids of the spans that contain every word of `query`."""
    words = query.casefold().split()
    return {span["spanId"] for span in spans if all(word in span_text(span) for word in words)}


def matching_stored(rows: list[tuple[str, str, str, str, str]], query: str) -> set[str]:
    """`matching` on a trace's stored texts (SpanStore.texts): a span's JSON is parsed
    only when its raw text holds every word, so a search of a big trace reads most
    spans without parsing them."""
    words = query.casefold().split()
    # JSON escapes quotes, backslashes and control characters: such a word is looked
    # for in every span, parsed; so is any word in a span whose raw text is not plain
    # ASCII (a letter that folds into others, `ß`; an escape, `\\u00fc`)
    prefilter = all(word.isascii() for word in words) and not any(
        c in '"\\' or c < " " for word in words for c in word
    )
    found = set()
    for span_id, name, message, attributes, events in rows:
        raw = f"{name}\n{message}\n{attributes}\n{events}"
        plain_ascii = raw.isascii() and "\\u" not in raw
        if prefilter and plain_ascii and not all(word in raw.lower() for word in words):
            continue
        span = {
            "spanId": span_id,
            "name": name,
            "status": {"message": message},
            "attributes": orjson.loads(attributes),
            "events": orjson.loads(events),
        }
        if matching([span], query):
            found.add(span_id)
    return found


def _query() -> str:
    query = one(request.args, "q")
    if not 0 < len(query) <= MAX_QUERY:
        raise DashboardError(400, "VALIDATION_ERROR", f"q: 1 to {MAX_QUERY} characters to look for")
    return query


class TraceFind:
    """The search route."""

    def __init__(self, explorer: Explorer) -> None:
        self.explorer = explorer

    def _find(self, name: str, trace_id: str, query: str) -> dict[str, Any]:
        project = self.explorer.signed_in(name)
        outline = self.explorer.outline(project, trace_id)  # NotFound for no trace
        found = matching_stored(
            SpanStore(self.explorer.db).texts(project.id, outline.trace_id), query
        )
        waterfall = lay_out(outline.spans)
        matches = [
            {"spanId": span_id, "position": position, "page": position // PAGE_ROWS + 1}
            for position, placed in enumerate(waterfall.order)
            if (span_id := waterfall.spans[placed.at].span_id) in found
        ]
        return {"matches": matches[:MAX_MATCHES], "total": len(matches)}

    async def find(self, project: str, trace_id: str) -> Response:
        answer = await asyncio.to_thread(self._find, project, trace_id, _query())
        return Response(orjson.dumps(answer), content_type="application/json")
