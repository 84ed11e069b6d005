"""The waterfall's tools on the server: per-subtree totals, error positions, the search
within a trace, and the page a selected span is on."""

from __future__ import annotations

import json
import re
from typing import Any
from urllib.parse import quote

import orjson

from dashboard.waterfall import PAGE_ROWS, lay_out
from genai.prices import Pricer
from proto_json import convert_otlp
from storage.span_genai import with_views
from storage.span_rows import rows_of
from storage.spans import SpanStore
from tests.dashboard.big import NEEDLE, big_run, is_model_call, span_id
from tests.dashboard.conftest import WINDOW_MS, Site, agent_run, sign_in, store
from tests.proto_json.spans import otlp_body, otlp_span, span

TRACE = "b2" * 16


async def test_subtrees_count_spans_errors_and_model_usage(site: Site) -> None:
    """The root has every other span below it, their errors, and the model calls' tokens
    (in + out) only; a leaf has nothing below."""
    store(site.db, site.demo, big_run(TRACE, 200, needle_at=150))
    waterfall = lay_out(SpanStore(site.db).outline(site.demo.id, TRACE))
    subtrees = waterfall.subtrees()
    assert subtrees[0].spans == 199 and subtrees[0].errors == 2  # spans 97 and 194
    assert subtrees[0].tokens == 15 * sum(map(is_model_call, range(200)))
    leaf = next(n for n, placed in enumerate(waterfall.order) if placed.children == 0)
    assert subtrees[leaf] == (0, 0, None, None)
    assert [span for _, span in waterfall.errors()] == [span_id(194), span_id(97)]  # tree order


async def test_find_in_a_trace(site: Site) -> None:
    """Find answers the matching spans' places and pages (attribute values count,
    case-insensitive, every word needed); an empty or too long query is a 400."""
    store(site.db, site.demo, big_run(TRACE, 200, needle_at=150))
    client = site.client()
    await sign_in(client, "viewer@acme.test")
    base = f"/projects/demo/traces/{TRACE}/find"
    found = orjson.loads(await (await client.get(f"{base}?q={NEEDLE.upper()}")).get_data())
    assert found["total"] == 1 and found["matches"][0]["spanId"] == span_id(150)
    assert found["matches"][0]["page"] == found["matches"][0]["position"] // PAGE_ROWS + 1
    both = orjson.loads(await (await client.get(f"{base}?q=task+gpt-4o")).get_data())
    assert both["total"] == sum(map(is_model_call, range(200)))
    for bad in ("", "?q=", "?q=" + "x" * 201, "?q=a&q=b"):  # a page's script reads JSON
        response = await client.get(base + bad)
        assert response.status_code == 400
        error = orjson.loads(await response.get_data())["error"]
        assert error["code"] == "VALIDATION_ERROR" and error["message"].startswith("q")
    missing = await client.get(f"/projects/demo/traces/{'0' * 32}/find?q=x")
    assert missing.status_code == 404 and orjson.loads(await missing.get_data())["error"]


async def test_find_reads_text_as_sent_not_as_stored(site: Site) -> None:
    """Quotes, backslashes and non-ASCII text are found as they were sent (the stored
    JSON escapes some of them); JSON's own member names are not text of the span."""
    said = 'he said "yes" to C:\\data, café'
    store(site.db, site.demo, [span(traceId=TRACE, spanId="1" * 16, name="root",
                                    attributes={"note": said})])  # fmt: skip
    client = site.client()
    await sign_in(client, "viewer@acme.test")
    base = f"/projects/demo/traces/{TRACE}/find?q="
    for query, total in (('"yes"', 1), ("c:\\data", 1), ("CAFÉ", 1), ("stringValue", 0)):
        answer = await client.get(base + quote(query))
        assert orjson.loads(await answer.get_data())["total"] == total, query


async def test_find_reads_json_escapes_and_folds_case_as_unicode_does(site: Site) -> None:
    """A message attribute a client wrote with JSON escapes (Python's json.dumps:
    `Z\\u00fcrich`) is found by the text it stands for; `strasse` finds `Straße`."""
    messages = json.dumps([{"role": "user", "content": "Zürich, Hauptstraße 1"}])
    assert "\\u00fc" in messages
    store(site.db, site.demo, [span(traceId=TRACE, spanId="1" * 16, name="root",
                                    attributes={"gen_ai.input.messages": messages}),
                               span(traceId=TRACE, spanId="2" * 16, name="other")])  # fmt: skip
    client = site.client()
    await sign_in(client, "viewer@acme.test")
    base = f"/projects/demo/traces/{TRACE}/find?q="
    for query, total in (("Zürich", 1), ("ZÜRICH hauptstrasse", 1), ("genève", 0)):
        answer = await client.get(base + quote(query))
        assert orjson.loads(await answer.get_data())["total"] == total, query


async def test_a_selected_span_opens_its_own_page(site: Site) -> None:
    """`?span=` without `page` shows the waterfall page that holds the span."""
    store(site.db, site.demo, big_run(TRACE, 1200, needle_at=0))
    waterfall = lay_out(SpanStore(site.db).outline(site.demo.id, TRACE))
    last = waterfall.row(len(waterfall) - 1).span.span_id
    client = site.client()
    await sign_in(client, "viewer@acme.test")
    page = await (await client.get(f"/projects/demo/traces/{TRACE}?span={last}")).get_data()
    assert b"Spans 1001" in page and f'data-span-id="{last}"'.encode() in page


async def test_the_header_says_what_the_first_error_was(site: Site) -> None:
    """A trace with errors names its earliest error span (by start), linked,
    with its status message, or its exception event's type and message when it has
    none; a trace with no error names none."""
    client = site.client()
    await sign_in(client, "viewer@acme.test")

    async def first_error(status: dict[str, Any], received_ms: int) -> str | None:
        rows = rows_of(convert_otlp(_erring(status)).request, site.demo.id, received_ms)
        SpanStore(site.db).upsert(with_views(rows, Pricer()), WINDOW_MS)
        page = (await (await client.get(f"/projects/demo/traces/{TRACE}")).get_data()).decode()
        said = re.search(r'<dd class="whole first-error">(.*?)</dd>', page, re.S)
        return None if said is None else said[1]

    rate_limited = {"code": 2, "message": "Error code: 429 - rate limit <exceeded>"}
    assert await first_error(rate_limited, 1) == (
        f'<a href="?span={"2" * 16}">chat gpt-4o</a>: '
        '<span class="error-said">Error code: 429 - rate limit &lt;exceeded&gt;</span>'
    )
    blank = {"code": 2, "message": "   "}  # says nothing: the exception event says it
    assert await first_error(blank, 2 * WINDOW_MS) == (
        f'<a href="?span={"2" * 16}">chat gpt-4o</a>'
    )
    assert await first_error({"code": 0}, 4 * WINDOW_MS) == (  # the call sent again, fine
        f'<a href="?span={"3" * 16}">lookup</a>: <span class="error-said">KeyError: order 7</span>'
    )
    store(site.db, site.demo, agent_run("c3" * 16))
    page = (await (await client.get(f"/projects/demo/traces/{'c3' * 16}")).get_data()).decode()
    assert "First error" not in page
    # no message, no exception event: the error's class (OpenTelemetry's error.type)
    timed_out = span(traceId="c4" * 16, spanId="4" * 16, name="search_orders", status="error",
                     attributes={"error.type": "timeout"})  # fmt: skip
    store(site.db, site.demo, [timed_out])
    page = (await (await client.get(f"/projects/demo/traces/{'c4' * 16}")).get_data()).decode()
    assert f'<a href="?span={"4" * 16}">search_orders</a>: <span class="error-said">timeout' in page
    status = span(traceId="c5" * 16, spanId="5" * 16, name="GET", status="error",
                  attributes={"error.type": 503})  # fmt: skip
    store(site.db, site.demo, [status])
    page = (await (await client.get(f"/projects/demo/traces/{'c5' * 16}")).get_data()).decode()
    assert f'<a href="?span={"5" * 16}">GET</a>: <span class="error-said">503' in page


def _erring(status: dict[str, Any]) -> bytes:
    """An agent, its model call of `status` and a tool call failing by an exception."""
    exception = [
        {"key": "exception.type", "value": {"stringValue": "KeyError"}},
        {"key": "exception.message", "value": {"stringValue": "order 7"}},
    ]
    return otlp_body(
        otlp_span(traceId=TRACE, spanId="1" * 16, name="agent", endTimeUnixNano=_at(9)),
        otlp_span(traceId=TRACE, spanId="2" * 16, parentSpanId="1" * 16, name="chat gpt-4o",
                  startTimeUnixNano=_at(1), endTimeUnixNano=_at(2), status=status),
        otlp_span(traceId=TRACE, spanId="3" * 16, parentSpanId="1" * 16, name="lookup",
                  startTimeUnixNano=_at(3), endTimeUnixNano=_at(4), status={"code": 2},
                  events=[{"name": "exception", "timeUnixNano": _at(4), "attributes": exception}]),
    )  # fmt: skip


def _at(second: int) -> str:
    return str(1_795_341_600_000_000_000 + second * 10**9)


async def test_the_header_and_the_list_give_a_trace_one_duration(site: Site) -> None:
    """A span that ends before it starts (sent so) makes the trace's duration negative:
    its page says what the list says, and a trace with no span ended says so."""
    store(site.db, site.demo, [span(traceId=TRACE, spanId="1" * 16, name="backwards",
                                    startTime="2026-11-22T10:00:04Z",
                                    endTime="2026-11-22T10:00:00Z")])  # fmt: skip
    store(site.db, site.demo, [span(traceId="c3" * 16, spanId="1" * 16, name="open")])
    client = site.client()
    await sign_in(client, "viewer@acme.test")
    listed = orjson.loads(await (await client.get("/api/v1/projects/demo/traces")).get_data())
    durations = {t["traceId"]: t["durationMs"] for t in listed["traces"]}
    assert durations == {TRACE: -4000.0, "c3" * 16: None}
    for trace, shown in ((TRACE, "ends 4.00 s before its start"), ("c3" * 16, "not ended")):
        page = (await (await client.get(f"/projects/demo/traces/{trace}")).get_data()).decode()
        assert f"<dt>Duration</dt><dd>{shown}</dd>" in page
