"""The waterfall's tools on the server: per-subtree totals, error positions, the search
within a trace, and the page a selected span is on."""

from __future__ import annotations

import json
from urllib.parse import quote

import orjson

from dashboard.waterfall import PAGE_ROWS, lay_out
from storage.spans import SpanStore
from tests.dashboard.big import NEEDLE, big_run, is_model_call, span_id
from tests.dashboard.conftest import Site, sign_in, store
from tests.proto_json.spans import span

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
    for bad in ("", "?q=", "?q=" + "x" * 201):
        response = await client.get(base + bad)
        assert response.status_code == 400
        assert b"1 to 200 characters to look for" in await response.get_data()
    assert (await client.get(f"/projects/demo/traces/{'0' * 32}/find?q=x")).status_code == 404


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
