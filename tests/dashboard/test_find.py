"""Finding a trace: every filter of the list, alone and together, the sorts and their
cursors, the 400s, and the export of the page shown (JSON API; the page shares the
parser)."""

from __future__ import annotations

import base64
import json
import re
from datetime import UTC, datetime, timedelta
from html import unescape
from typing import Any
from urllib.parse import quote, quote_plus

import orjson
import pytest
from quart.typing import TestClientProtocol as Client

from storage.identity import IdentityStore
from storage.scores import NewScore, ScoreStore
from tests.dashboard.conftest import Site, sign_in, store
from tests.proto_json.spans import span

LIST = "/api/v1/projects/demo/traces"
SESSIONS_LIST = "/api/v1/projects/demo/sessions"
_ANSWERS = ("Your parcel ships Tuesday", "The refund was approved", "Nothing found")


def _trace_id(n: int) -> str:
    return f"{n + 1:032x}"


def _trace(n: int, **llm: Any) -> list[dict[str, Any]]:
    """Trace n: a root at 10:0n (n+1 s long; errors when n is 2), a child `lookup_order`
    when n is even, and an OTel model call when `llm` gives its attributes."""
    trace_id, start = _trace_id(n), f"2026-11-22T10:0{n}:00Z"
    end = f"2026-11-22T10:0{n}:0{n + 1}Z"
    spans = [
        span(traceId=trace_id, spanId="a" * 16, name=f"handle request {n}", startTime=start,
             endTime=end, status="error" if n == 2 else None,
             attributes={"tenant": f"t{n % 2}", "retries": n, "cached": n == 1,
                         "ratio": 0.5 + n}),
    ]  # fmt: skip
    if n % 2 == 0:
        spans.append(span(traceId=trace_id, spanId="b" * 16, parentSpanId="a" * 16,
                          name="lookup_order", startTime=start, endTime=end))  # fmt: skip
    if llm:
        spans.append(span(traceId=trace_id, spanId="c" * 16, parentSpanId="a" * 16,
                          name="chat", startTime=start, endTime=end,
                          attributes={"gen_ai.operation.name": "chat", **llm}))  # fmt: skip
    return spans


def _seed(site: Site) -> None:
    """Six traces; 0-2 with model calls of their own model, user, tokens and words."""
    for n in range(6):
        llm: dict[str, Any] = {}
        if n < 3:
            llm = {
                "gen_ai.request.model": ["gpt-4o", "gpt-4o-mini", "gpt-4o"][n],
                "user.id": f"user-{n % 2}",
                "gen_ai.usage.input_tokens": 100 * (n + 1),
                "gen_ai.usage.output_tokens": 10,
                "gen_ai.usage.cost": [0.25, 0.125, 1.0][n],
                "gen_ai.input.messages": orjson.dumps(
                    [{"role": "user", "parts": [{"type": "text", "content": f"Question {n}"}]}]
                ).decode(),
                "gen_ai.output.messages": orjson.dumps(
                    [{"role": "assistant", "parts": [{"type": "text", "content": _ANSWERS[n]}]}]
                ).decode(),
            }
        spans = _trace(n, **llm)
        if n in (1, 4):
            spans[0]["attributes"]["session.id"] = "chat-a"
        store(site.db, site.demo, spans)
    user = IdentityStore(site.db).user("owner@acme.test")
    for n, value in ((0, 0.2), (3, 0.9)):
        ScoreStore(site.db).create_by_user(
            site.demo.id, user.id, NewScore(_trace_id(n), None, "helpful", value, None, "ui")
        )


async def _ids(client: Client, query: str) -> list[int]:
    response = await client.get(f"{LIST}?{query}")
    assert response.status_code == 200, await response.get_data()
    body = orjson.loads(await response.get_data())
    return [int(t["traceId"], 16) - 1 for t in body["traces"]]


@pytest.fixture
async def client(site: Site) -> Client:
    """A signed-in viewer of the seeded project."""
    _seed(site)
    client = site.client()
    await sign_in(client, "viewer@acme.test")
    return client


@pytest.mark.parametrize(
    ("query", "expected"),
    [
        ("", [5, 4, 3, 2, 1, 0]),
        ("q=request+3", [3]),
        ("name=LOOKUP_ord", [4, 2, 0]),
        ("status=error", [2]),
        ("session=chat-a", [4, 1]),
        ("user=user-0", [2, 0]),
        ("model=gpt-4o", [2, 0]),
        ("model=gpt-4o-mini", [1]),
        ("model=gpt", []),
        ("from=2026-11-22T10:02:00Z&to=2026-11-22T10:04:00Z", [3, 2]),
        ("from=1795341720000", [5, 4, 3, 2]),  # 10:02 in Unix ms
        ("from=2026-11-22T10:02:00%2B00:00&to=1795341840000", [3, 2]),
        # every digit of a fraction counts; one finer than a nanosecond rounds up
        ("from=2026-11-22T10:02:00.000000001Z&to=2026-11-22T10:04:00.0000000001Z", [4, 3]),
        ("from=2026-11-22t10:02:00z&to=2026-11-22T10:02:00.000000001Z", [2]),
        ("from=2026-11-22T12:02:00.5%2B02:00&to=2026-11-22T10:03:00,000000001", [3]),
        ("minDurationMs=3000", [5, 4, 3, 2]),
        ("maxDurationMs=2000", [1, 0]),
        ("minDurationMs=2000&maxDurationMs=2000", [1]),
        ("minCostUsd=0.25", [2, 0]),
        ("minTokens=210", [2, 1]),
        ("minTokens=211", [2]),
        ("attr=tenant=t1", [5, 3, 1]),
        ("attr=session.id=chat-a", [4, 1]),
        ("attr=retries=4", [4]),
        ("attr=cached=true", [1]),
        ("attr=ratio=2.5", [2]),
        ("attr=gen_ai.request.model", [2, 1, 0]),
        ("attr=tenant=t1&attr=retries=3", [3]),
        ("attr=nothing", []),
        ("text=PARCEL", [0]),
        ("text=refund+question", [1]),
        ("text=refund+parcel", []),
        ("text=question", [2, 1, 0]),
        ("score=helpful", [3, 0]),
        ("score=helpful>=0.5", [3]),
        ("score=helpful<=0.5", [0]),
        ("score=other", []),
        ("name=lookup&attr=tenant=t0&minTokens=1&status=error", [2]),
    ],
)
async def test_each_filter_and_their_and(client: Client, query: str, expected: list[int]) -> None:
    """Each filter of the contract selects exactly its traces; several are ANDed."""
    assert await _ids(client, query) == expected


_SORTED = {  # the full order of each sort, descending; the traces with no value last
    "start": [5, 4, 3, 2, 1, 0],
    "duration": [5, 4, 3, 2, 1, 0],
    "cost": [2, 0, 1],
    "tokens": [2, 1, 0],
}


@pytest.mark.parametrize("sort", list(_SORTED))
@pytest.mark.parametrize("order", ["desc", "asc"])
@pytest.mark.parametrize("limit", [1, 2, 4])
async def test_cursors_page_every_sort_in_both_orders(
    client: Client, sort: str, order: str, limit: int
) -> None:
    """Paging by cursor under any sort and order gives every trace once, in order, the
    traces with no value for the sort last (by trace id) in either order; paging back
    from the last page by each page's `previous` gives the same pages."""
    known = _SORTED[sort] if order == "desc" else _SORTED[sort][::-1]
    unknown = sorted(set(range(6)) - set(known), reverse=order == "desc")
    pages: list[list[int]] = []
    query = f"sort={sort}&order={order}&limit={limit}"

    async def page(cursor: str | None) -> dict[str, Any]:
        response = await client.get(f"{LIST}?{query}" + (f"&cursor={cursor}" if cursor else ""))
        body: dict[str, Any] = orjson.loads(await response.get_data())
        assert len(body["traces"]) <= limit
        pages.append([int(t["traceId"], 16) - 1 for t in body["traces"]])
        return body

    body = await page(None)
    assert body["previous"] is None
    for _ in range(10):
        if body["next"] is None:
            break
        body = await page(body["next"])
        assert body["previous"] is not None
    assert [n for forward in pages for n in forward] == known + unknown
    forward, pages = pages, []
    while body["previous"] is not None:
        body = await page(body["previous"])
    assert [forward[-1], *pages] == forward[::-1]


@pytest.mark.parametrize(
    ("query", "parameter"),
    [
        ("status=ok", "status"),
        ("from=yesterday", "from"),
        ("to=2026-13-01", "to"),
        ("minDurationMs=-1", "minDurationMs"),
        ("maxDurationMs=abc", "maxDurationMs"),
        ("minCostUsd=nan", "minCostUsd"),
        ("minTokens=1.5", "minTokens"),
        ("attr==x", "attr"),
        ("text=%3F%21", "text"),
        ("score=>=0.5", "score"),
        ("score=helpful>=high", "score"),
        ("sort=name", "sort"),
        ("order=up", "order"),
        ("limit=0", "limit"),
        ("limit=" + "9" * 5000, "limit"),  # more digits than Python reads
        ("cursor=" + "W1tdLCB0cnVlLCAxLCAiYSJd", "cursor"),  # [[], true, 1, "a"]
        ("preset=3+weeks", "preset"),
        ("preset=1+h&preset=bad", "preset"),
        ("preset=24+h&preset=1+h", "preset"),
        ("cursor=bm90LWEtY3Vyc29y", "cursor"),
        ("cursor=WyJzdGFydCIsdHJ1ZSwxLCJhXHUwMDAwIl0", "cursor"),  # a NUL in the trace id
        ("sort=cost&cursor=WyJzdGFydCIsdHJ1ZSwxLCJhIl0", "cursor"),  # a start cursor
        ("sort=cost&sort=bogus", "sort"),  # a parameter of one value, given twice
        ("limit=5&limit=6", "limit"),
        ("status=error&status=error", "status"),
        ("from=2026-11-22&from=2026-11-23", "from"),
        ("minDurationMs=%D9%A1%D9%A2", "minDurationMs"),  # digits of another script
        ("minCostUsd=%D9%A1", "minCostUsd"),
        ("to=%D9%A1%D9%A2", "to"),
    ],
)
async def test_a_bad_value_is_a_400_naming_its_parameter(
    client: Client, query: str, parameter: str
) -> None:
    """Each bad value is 400 VALIDATION_ERROR whose message names the parameter, on the
    JSON, the export and the page (which keeps its filter bar)."""
    for path in (LIST, f"{LIST}/export", "/projects/demo/traces"):
        response = await client.get(f"{path}?{query}")
        assert response.status_code == 400, (path, query)
        if path.startswith("/api"):
            error = orjson.loads(await response.get_data())["error"]
            assert error["code"] == "VALIDATION_ERROR"
            assert error["message"].startswith(parameter), error
        else:  # the page with its filter bar, to correct the value there
            page = (await response.get_data()).decode()
            assert re.search(f'<p class="alert" role="alert">{parameter}\\b', page), page
            assert '<form class="filters"' in page


_UNSPACED = {
    60: "昨日は東京タワーに行きました。",
    61: "明日は大阪城に行きます",
    62: "서울에서 만나요",
    63: "ผมไปกรุงเทพเมื่อวาน",
    64: "東京İ ソウルǰは",  # İ and ǰ fold to a letter and a mark, which is no letter
    65: "東京 is a big city",
}


@pytest.mark.parametrize(
    ("query", "expected"),
    [
        ("text=東京", [65, 64, 60]),
        ("text=タワー", [60]),
        ("text=行き", [61, 60]),
        ("text=行きました", [60]),
        ("text=京都", []),
        ("text=서울", [62]),
        ("text=กรุงเทพ", [63]),
        ("text=東京+PARCEL", []),
        ("text=大阪+明日", [61]),
        ("text=東京İ", [64]),
        ("text=ソウルǰ", [64]),
        ("text=İ東京", []),  # the words i and 東京: no text has the word i
    ],
)
async def test_a_word_of_a_script_without_spaces_is_found_inside_the_texts_words(
    site: Site, client: Client, query: str, expected: list[int]
) -> None:
    """Chinese, Japanese, Korean and Thai text is stored as runs of letters that hold
    several words: such a word is found inside them, with the other words ANDed."""
    for n, said in _UNSPACED.items():
        answer = [{"role": "assistant", "parts": [{"type": "text", "content": said}]}]
        store(site.db, site.demo, [span(
            traceId=_trace_id(n), spanId="e" * 16, name="chat",
            startTime=f"2026-11-22T11:{n - 50}:00Z", endTime=f"2026-11-22T11:{n - 50}:01Z",
            attributes={"gen_ai.operation.name": "chat",
                        "gen_ai.output.messages": orjson.dumps(answer).decode()},
        )])  # fmt: skip
    assert await _ids(client, quote(query, safe="=+&")) == expected


@pytest.mark.parametrize(
    ("query", "expected"),
    [
        ("from=9999-12-31T23:59:59", []),
        ("from=99999999999999999999", []),
        ("from=" + "9" * 5000, []),
        ("to=0001-01-01T00:00:00%2B23:59", []),
        ("to=9999-12-31", [5, 4, 3, 2, 1, 0]),
        ("minTokens=9223372036854775808", []),
        ("minDurationMs=1e300", []),
        ("minDurationMs=1e308", []),
        ("maxDurationMs=1.7e308", [5, 4, 3, 2, 1, 0]),
        ("limit=" + "0" * 5000 + "6", [5, 4, 3, 2, 1, 0]),  # 6, in more digits than Python reads
        ("maxDurationMs=99999999999999999999999999", [5, 4, 3, 2, 1, 0]),
    ],
)
async def test_a_bound_past_the_stores_integers_answers_as_it_would(
    client: Client, query: str, expected: list[int]
) -> None:
    """A bound past the 64-bit times, durations and counts the store holds (a `from` in
    the year 9999) lets through what it would have: none or every trace; not a 500."""
    assert await _ids(client, query) == expected
    for path in (f"{LIST}/export", "/projects/demo/traces", "/api/v1/projects/demo/sessions"):
        response = await client.get(f"{path}?{query}")
        assert response.status_code == 200, (path, query)


@pytest.mark.parametrize(
    "raw",
    [
        ["start", True, 2**63, "a"],
        ["tokens", True, 2**64 - 1, "a"],
        [2**64 - 1, "s"],
        ["start", True, 1.5, "a"],  # a time is an integer
        ["start", True, 2**70, "a"],  # which a JSON parser may make a float
        ["duration", True, 2.0, "a"],
        ["cost", True, 1, "a"],  # a cost, a float
    ],
)
async def test_a_cursor_past_the_stores_integers_is_a_400(
    client: Client, raw: list[object]
) -> None:
    """A cursor whose number no store integer can be was not given by a list: 400."""
    text = base64.urlsafe_b64encode(json.dumps(raw).encode()).decode().rstrip("=")
    path = LIST if len(raw) == 4 else "/api/v1/projects/demo/sessions"
    response = await client.get(
        f"{path}?cursor={text}" + (f"&sort={raw[0]}" if raw[0] != "start" and len(raw) == 4 else "")
    )
    assert response.status_code == 400
    assert orjson.loads(await response.get_data())["error"]["message"].startswith("cursor")


async def test_a_time_preset_is_a_range_from_now_at_each_view(site: Site, client: Client) -> None:
    """A preset's link says `preset=`, not the `from` of when it was drawn, and each
    view starts its range then; a range typed in wins; the export of a preset's page
    has the range the page was drawn with."""
    now = datetime.now(UTC)
    recent = _trace_id(40)
    start, end = (now - timedelta(minutes=m) for m in (30, 29))
    store(
        site.db,
        site.demo,
        [
            span(
                traceId=recent,
                spanId="d" * 16,
                name="recent",
                startTime=start.isoformat(),
                endTime=end.isoformat(),
            )
        ],
    )
    page = (await (await client.get("/projects/demo/traces")).get_data()).decode()
    links = re.findall(r'<a href="\?([^"]*)"[^>]*>(15 min|1 h|24 h|7 d|All)</a>', page)
    assert [label for _, label in links] == ["15 min", "1 h", "24 h", "7 d", "All"]
    assert all("from=" not in query and f"preset={quote_plus(label)}" in query
               for query, label in links)  # fmt: skip
    everything = [40, 5, 4, 3, 2, 1, 0]
    for preset, expected in (("15+min", []), ("1+h", [40]), ("All", everything),
                             ("all", everything), ("1+H", [40]), ("1h", [40]),
                             ("15min", [])):  # fmt: skip
        assert await _ids(client, f"preset={preset}") == expected
    page = (await (await client.get("/projects/demo/traces?preset=1+h")).get_data()).decode()
    assert recent in page and _trace_id(5) not in page
    assert '<input type="hidden" name="preset" value="1 h">' in page
    assert '<a href="?preset=1+h" aria-current="true">1 h</a>' in page
    drawn = int(re.search(r"traces/export\?format=json&amp;from=(\d+)", page)[1])  # type: ignore[index]
    assert abs(drawn - (now.timestamp() - 3600) * 1000) < 60_000
    typed = "preset=1+h&from=2026-11-22T10:04:00Z&to=2026-11-22T10:06:00Z"
    assert await _ids(client, typed) == [5, 4]


async def test_a_pages_links_and_form_keep_the_page_size_asked_for(client: Client) -> None:
    """`limit` given: the sortable headers, the time presets, Live, the filter form and
    the next page keep it; given none, no link names one."""
    page = (await (await client.get("/projects/demo/traces?limit=2&q=a")).get_data()).decode()
    links = re.findall(r'<a (?:class="live" )?href="\?([^"]*)"', page)
    kept = [q for q in links if "sort=" in q or "preset=" in q or "live=" in q or "cursor=" in q]
    assert len(kept) == 4 + 5 + 1 + 1  # the headers, the presets, Live, the next page
    assert all("limit=2" in q.split("&amp;") for q in kept), kept
    assert '<input type="hidden" name="limit" value="2">' in page
    page = (await (await client.get("/projects/demo/traces?q=a")).get_data()).decode()
    assert "limit=" not in page.split("traces/export", 1)[0].split("<nav", 1)[1]
    assert 'name="limit"' not in page


@pytest.mark.parametrize(
    ("path", "named"),
    [
        (f"{LIST}?q=a%00b", "q"),
        (f"{LIST}?attr=k%00=v", "attr"),
        ("/projects/demo/traces?user=%00", "user"),
        ("/api/v1/projects/demo/sessions?user=a%00", "user"),
        ("/api/v1/projects/demo/sessions?us%00er=a", "user"),
        ("/api/v1/projects/demo/sessions/a%00b", "the path"),
        ("/api/v1/projects/de%00mo/traces", "the path"),
    ],
)
async def test_a_nul_character_in_a_request_is_a_400(client: Client, path: str, named: str) -> None:
    """A NUL character (which PostgreSQL's text cannot hold) in a parameter or the path:
    400 VALIDATION_ERROR naming where it is, on either store."""
    response = await client.get(path)
    assert response.status_code == 400
    if path.startswith("/api"):
        error = orjson.loads(await response.get_data())["error"]
        message = f"{named} holds a NUL character"
        assert error == {"code": "VALIDATION_ERROR", "message": message}


async def test_the_export_answers_the_page_shown(client: Client) -> None:
    """The export with the page's filters, sort, cursor and limit holds that page's
    traces, in its order."""
    query = "attr=tenant=t0&sort=duration&order=asc&limit=1"
    first = orjson.loads(await (await client.get(f"{LIST}?{query}")).get_data())
    paged = f"{query}&cursor={first['next']}"
    second = orjson.loads(await (await client.get(f"{LIST}?{paged}")).get_data())
    exported = orjson.loads(await (await client.get(f"{LIST}/export?{paged}")).get_data())
    assert [t["traceId"] for t in exported] == [t["traceId"] for t in second["traces"]]
    assert [t["traceId"] for t in second["traces"]] == [_trace_id(2)]
    assert exported[0]["spans"]


async def test_the_page_keeps_the_filters_in_its_links(client: Client) -> None:
    """The list page's next-page, export and sort links carry the filters."""
    page = (await (await client.get("/projects/demo/traces?attr=tenant%3Dt0&limit=1"))
            .get_data()).decode()  # fmt: skip
    assert "Next page" in page and "Previous page" not in page
    assert page.count("attr=tenant%3Dt0") >= 4  # next, export (2), the sort headers
    assert 'value="tenant=t0"' in page
    later = re.search(r'href="\?([^"]*)" rel="next"', page)
    assert later is not None
    second = (
        await (await client.get(f"/projects/demo/traces?{unescape(later[1])}")).get_data()
    ).decode()
    earlier = re.search(r'href="\?([^"]*)" rel="prev">Previous page', second)
    assert earlier is not None and "attr=tenant%3Dt0" in earlier[1]
    first = (
        await (await client.get(f"/projects/demo/traces?{unescape(earlier[1])}")).get_data()
    ).decode()
    assert _listed(first) == _listed(page) and "Previous page" not in first

    async def opened(link: str) -> str:
        return (
            await (await client.get(f"/projects/demo/traces?{unescape(link)}")).get_data()
        ).decode()

    third = re.search(r'href="\?([^"]*)" rel="next"', second)
    assert third is not None
    back = re.search(r'href="\?([^"]*)" rel="prev">Previous page', await opened(third[1]))
    assert back is not None
    again = await opened(back[1])
    assert _listed(again) == _listed(second)
    # its export reads that page forward: after the first page's last trace
    link = re.search(r'href="/api/v1/projects/demo/traces/export\?format=json&amp;([^"]*)"', again)
    assert link is not None
    forward = unescape(later[1]).split("cursor=")[1].split("&")[0]
    assert f"cursor={forward}" in unescape(link[1])
    path = f"/api/v1/projects/demo/traces/export?format=json&{unescape(link[1])}"
    exported = orjson.loads(await (await client.get(path)).get_data())
    assert [t["traceId"] for t in exported] == _listed(second)


async def test_a_404_does_not_echo_a_long_id_whole(client: Client) -> None:
    """An id of thousands of characters is not a trace: 404, its message cut short."""
    response = await client.get(f"{LIST}/{'x' * 5000}")
    assert response.status_code == 404
    error = orjson.loads(await response.get_data())["error"]
    assert error["code"] == "NOT_FOUND"
    assert "no trace xxx" in error["message"], error
    assert len(error["message"]) == 200 and error["message"].endswith("…")


def _listed(page: str) -> list[str]:
    """The trace ids a list page links to, in order."""
    return re.findall(r'title="([0-9a-f]{32})" href=', page)


@pytest.mark.parametrize(
    "pasted",
    [_trace_id(3), f" {_trace_id(3).upper()} ", "00000000-0000-0000-0000-000000000004"],
)
async def test_a_trace_id_pasted_as_the_root_name_goes_to_its_trace(
    client: Client, pasted: str
) -> None:
    """A trace id in the root-name field (from a log: any case, or as a UUID) opens its
    trace; one the project does not have is searched as a name (none found), and the
    list's JSON reads `q` as a name always."""
    response = await client.get(f"/projects/demo/traces?q={quote(pasted)}")
    assert response.status_code == 303
    assert response.headers["Location"] == f"/projects/demo/traces/{_trace_id(3)}"
    missing = await client.get(f"/projects/demo/traces?q={'f' * 32}")
    assert missing.status_code == 200
    assert "No traces match these filters." in (await missing.get_data()).decode()
    assert await _ids(client, f"q={quote(pasted)}") == []
    twice = await client.get(f"/projects/demo/traces?q={quote(pasted)}&q=x")
    assert twice.status_code == 400


async def test_a_picker_shows_the_value_filtered_by_though_not_counted(client: Client) -> None:
    """A model or user asked for whom the newest traces counted lack is a choice of its
    picker, chosen (without a count): the bar shows the filter the list applies, and
    sending the form again keeps it."""
    page = await (await client.get("/projects/demo/traces?user=gone&model=old-1")).get_data()
    text = page.decode()
    assert '<option value="gone" selected>gone</option>' in text
    assert '<option value="old-1" selected>old-1</option>' in text
    assert '<option value="user-0">user-0 (2)</option>' in text


async def test_a_filters_text_is_compared_as_given(site: Site, client: Client) -> None:
    """Spaces around a filter's text are part of it: an id with spaces is found by
    itself alone, not by the id without them (nor the other way), and no name that
    begins with "handle" contains " handle"."""
    padded = [span(traceId=_trace_id(9), spanId="d" * 16, name="padded",
                   startTime="2026-11-22T11:00:00Z", endTime="2026-11-22T11:00:01Z",
                   attributes={"session.id": " chat-a ", "user.id": "user-0 ",
                               " tenant": "t0", "gen_ai.operation.name": "chat",
                               "gen_ai.request.model": " gpt-4o "})]  # fmt: skip
    store(site.db, site.demo, padded)
    assert await _ids(client, "session=%20chat-a%20") == [9]
    assert await _ids(client, "session=chat-a") == [4, 1]
    assert await _ids(client, "user=user-0%20") == [9]
    assert await _ids(client, "user=user-0") == [2, 0]
    assert await _ids(client, "model=%20gpt-4o%20") == [9]
    assert await _ids(client, "model=gpt-4o") == [2, 0]
    assert await _ids(client, "attr=%20tenant=t0") == [9]
    assert await _ids(client, "q=%20handle") == []
    assert await _ids(client, "q=handle%20request%201") == [1]
    assert await _ids(client, "q=%20request%201") == [1]
    response = await client.get(f"{SESSIONS_LIST}?user=user-0%20")
    assert [s["sessionId"] for s in orjson.loads(await response.get_data())["sessions"]] == [
        " chat-a "
    ]


async def test_a_cost_bound_is_on_the_cost_as_shown(site: Site, client: Client) -> None:
    """Calls of 0.7 and 0.1 sum to 0.7999999999999999, shown as 0.8: `minCostUsd=0.8`
    finds that trace beside one of 0.8, and `minCostUsd=0.8000000001` neither."""
    for n, costs in ((10, (0.7, 0.1)), (11, (0.8,))):
        trace = _trace_id(n)
        spans = [span(traceId=trace, spanId="a" * 16, name="turn",
                      startTime="2026-11-22T12:00:00Z", endTime="2026-11-22T12:00:01Z",
                      attributes={"session.id": "cost-tie"})]  # fmt: skip
        for at, cost in enumerate(costs):
            spans.append(span(traceId=trace, spanId=f"{at + 1:016x}", parentSpanId="a" * 16,
                              name="chat", startTime="2026-11-22T12:00:00Z",
                              endTime="2026-11-22T12:00:01Z",
                              attributes={"gen_ai.operation.name": "chat",
                                          "gen_ai.request.model": "m", "gen_ai.usage.cost": cost,
                                          "gen_ai.usage.input_tokens": 1}))  # fmt: skip
        store(site.db, site.demo, spans)
    response = await client.get(f"{LIST}?session=cost-tie")
    assert [t["costUsd"] for t in orjson.loads(await response.get_data())["traces"]] == [0.8, 0.8]
    assert sorted(await _ids(client, "session=cost-tie&minCostUsd=0.8")) == [10, 11]
    assert await _ids(client, "session=cost-tie&minCostUsd=0.8000000001") == []
    for order in ("desc", "asc"):
        found = await _ids(client, f"session=cost-tie&minCostUsd=0.8&sort=cost&order={order}")
        assert sorted(found) == [10, 11]


async def test_a_page_longer_than_an_export_says_what_its_export_holds(
    site: Site, client: Client
) -> None:
    """A page of more traces than an export holds offers the first of them, and says so;
    a page of fewer offers them all."""
    many = [
        span(traceId=f"{n:032x}", spanId="a" * 16, name="many",
             startTime=f"2026-11-23T10:{n // 60:02}:{n % 60:02}Z",
             endTime=f"2026-11-23T10:{n // 60:02}:{n % 60:02}.5Z")
        for n in range(100, 201)
    ]  # fmt: skip
    store(site.db, site.demo, many)
    page = (await (await client.get("/projects/demo/traces?limit=200")).get_data()).decode()
    assert "Export the spans of the first 100 traces on this page" in page
    assert "limit=100" in page.split('class="export"')[1].split("</p>")[0]
    page = (await (await client.get("/projects/demo/traces?limit=20")).get_data()).decode()
    assert "Export the spans of the traces on this page" in page


async def test_a_listed_trace_with_errors_says_what_went_wrong(site: Site, client: Client) -> None:
    """Each listed trace with errors shows its earliest error span and what it says went
    wrong (an exception event's type and message, else `error.type`), on the list and on
    its session's page; a trace without errors shows none."""
    failing = [
        (20, "call_model", {"error.type": "rate_limited", "session.id": "errs"}, None),
        (21, "search_orders", {"session.id": "errs"},
         [{"name": "exception", "attributes": {"exception.type": "KeyError",
                                               "exception.message": "order <7>"}}]),
    ]  # fmt: skip
    for n, name, attributes, events in failing:
        trace = _trace_id(n)
        store(site.db, site.demo, [
            span(traceId=trace, spanId="a" * 16, name="turn", startTime="2026-11-23T09:00:00Z",
                 endTime="2026-11-23T09:00:09Z", attributes={"session.id": "errs"}),
            span(traceId=trace, spanId="b" * 16, parentSpanId="a" * 16, name=name,
                 status="error", startTime="2026-11-23T09:00:02Z",
                 endTime="2026-11-23T09:00:03Z", attributes=attributes, events=events),
            span(traceId=trace, spanId="c" * 16, parentSpanId="a" * 16, name="later",
                 status="error", startTime="2026-11-23T09:00:05Z",
                 endTime="2026-11-23T09:00:06Z"),
        ])  # fmt: skip
    expected = ["✗ call_model: rate_limited", "✗ search_orders: KeyError: order &lt;7&gt;"]
    for path in ("/projects/demo/traces?status=error", "/projects/demo/sessions/errs"):
        page = (await (await client.get(path)).get_data()).decode()
        said = re.findall(r'<div class="failed" title="[^"]*">([^<]*)</div>', page)
        assert all(line in said for line in expected), (path, said)
    page = (await (await client.get("/projects/demo/traces?q=request+3")).get_data()).decode()
    assert 'class="failed"' not in page


async def test_a_session_of_more_traces_with_errors_than_one_read_asks_shows_each(
    site: Site, client: Client
) -> None:
    """A session's page of 600 traces with errors, more than one read of their error
    spans asks for: each says what went wrong."""
    failing = [
        span(traceId=f"{n:032x}", spanId="e" * 16, name=f"step {n}", status="error",
             startTime="2026-11-24T08:00:00Z", endTime="2026-11-24T08:00:01Z",
             attributes={"session.id": "many-errors", "error.type": f"boom {n}"})
        for n in range(1000, 1600)
    ]  # fmt: skip
    store(site.db, site.demo, failing)
    page = (await (await client.get("/projects/demo/sessions/many-errors")).get_data()).decode()
    said = re.findall(r'<div class="failed" title="[^"]*">✗ step (\d+): boom \1</div>', page)
    assert sorted(map(int, said)) == list(range(1000, 1600))


async def test_the_list_and_the_trace_page_name_the_same_earliest_error(
    site: Site, client: Client
) -> None:
    """A's child fails at 10:00:05 and B at 10:00:02: the waterfall shows A's child
    first, yet both the list and the trace's header name B, the earliest error."""
    trace = _trace_id(30)
    at = "2026-11-25T10:00:0{}Z".format
    store(site.db, site.demo, [
        span(traceId=trace, spanId="1" * 16, name="root", startTime=at(0), endTime=at(9)),
        span(traceId=trace, spanId="a" * 16, parentSpanId="1" * 16, name="A",
             startTime=at(1), endTime=at(8)),
        span(traceId=trace, spanId="c" * 16, parentSpanId="a" * 16, name="A's child",
             status="error", startTime=at(5), endTime=at(6),
             attributes={"error.type": "late"}),
        span(traceId=trace, spanId="b" * 16, parentSpanId="1" * 16, name="B",
             status="error", startTime=at(2), endTime=at(3),
             attributes={"error.type": "early"}),
    ])  # fmt: skip
    listed = (await (await client.get("/projects/demo/traces?q=root")).get_data()).decode()
    assert "✗ B: early</div>" in listed
    page = (await (await client.get(f"/projects/demo/traces/{trace}")).get_data()).decode()
    said = re.search(r'<dd class="whole first-error">(.*?)</dd>', page, re.S)
    assert said is not None and f'?span={"b" * 16}">B</a>' in said[1]


async def test_an_error_after_its_traces_last_end_is_listed(site: Site, client: Client) -> None:
    """A trace that ends at 23:55 and whose failing span, sent without an end, starts
    after midnight: the list still says what went wrong (the span was sent after it
    began: the trace's last receipt bounds the days read)."""
    trace = _trace_id(40)
    received = int(datetime(2026, 11, 30, 0, 2, tzinfo=UTC).timestamp() * 1000)
    store(site.db, site.demo, [
        span(traceId=trace, spanId="1" * 16, name="late-root", startTime="2026-11-29T23:50:00Z",
             endTime="2026-11-29T23:55:00Z"),
        span(traceId=trace, spanId="2" * 16, parentSpanId="1" * 16, name="late-err",
             status="error", startTime="2026-11-30T00:01:00Z",
             attributes={"error.type": "after midnight"}),
    ], received_ms=received)  # fmt: skip
    page = (await (await client.get("/projects/demo/traces?q=late-root")).get_data()).decode()
    assert "✗ late-err: after midnight</div>" in page
