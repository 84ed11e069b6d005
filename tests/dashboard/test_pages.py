"""The pages: the trace list, the waterfall (large traces too), sessions, empty states."""

from __future__ import annotations

import re

from dashboard.waterfall import lay_out
from storage.spans import SpanOutline
from tests.dashboard.conftest import Site, agent_run, sign_in, store
from tests.proto_json.spans import span

TRACE = "cd" * 16


def _text(page: bytes) -> str:
    return page.decode()


async def test_empty_states_say_what_to_do(site: Site) -> None:
    """With nothing stored, the list names where to send spans, with the project's name."""
    client = site.client()
    await sign_in(client, "owner@acme.test")
    page = _text(await (await client.get("/projects/demo/traces")).get_data())
    assert "No traces yet" in page and "http://127.0.0.1:4318/v1/spans" in page
    assert "<strong>demo</strong>" in page and "<title>Traces of demo" in page
    page = _text(await (await client.get("/projects/demo/sessions")).get_data())
    assert "No sessions yet" in page


async def test_waterfall_rows_indent_and_bars(site: Site) -> None:
    """One row per span under its parent, bars placed by start and sized by duration;
    an orphan and a second root are shown, errors marked, agent kinds named."""
    store(
        site.db,
        site.demo,
        [
            *agent_run(TRACE, status="error"),
            span(
                traceId=TRACE,
                spanId="3" * 16,
                parentSpanId="9" * 16,
                name="lost child",
                startTime="2026-11-22T10:00:01Z",
                endTime="2026-11-22T10:00:02Z",
            ),
        ],
    )
    client = site.client()
    await sign_in(client, "viewer@acme.test")
    page = _text(await (await client.get(f"/projects/demo/traces/{TRACE}")).get_data())
    rows = re.findall(r'<li class="span-row([^"]*)" data-depth="(\d+)" data-span-id="(\w+)"', page)
    assert [(depth, span_id[0]) for _, depth, span_id in rows] == [
        ("0", "1"),
        ("1", "2"),
        ("0", "3"),
    ]
    assert "error" in rows[1][0]
    bars = re.findall(r'style="left: ([\d.]+)%; width: ([\d.]+)%"', page)
    assert [(float(a), float(b)) for a, b in bars] == [(0, 100), (20, 50), (10, 10)]
    assert "llm_call" in page and "agent" in page and "orphan" in page


async def test_selected_span_details(site: Site) -> None:
    """?span= shows that span's attributes (nested values readable), events and scope."""
    store(
        site.db,
        site.demo,
        [
            span(
                traceId=TRACE,
                spanId="1" * 16,
                name="tool",
                attributes={"args": {"city": "Oslo"}},
                events=[{"name": "retry", "attributes": {"n": 2}}],
            )
        ],
    )
    client = site.client()
    await sign_in(client, "viewer@acme.test")
    page = _text(
        await (await client.get(f"/projects/demo/traces/{TRACE}?span={'1' * 16}")).get_data()
    )
    assert '<th scope="row">args</th>' in page and "&#34;city&#34;: &#34;Oslo&#34;" in page
    assert "<strong>retry</strong>" in page
    fragment = _text(
        await (await client.get(f"/projects/demo/traces/{TRACE}/spans/{'1' * 16}")).get_data()
    )
    assert fragment.startswith("\n<h2>tool</h2>") or "<h2>tool</h2>" in fragment[:50]


async def test_ten_thousand_span_trace_is_paged(site: Site) -> None:
    """A 10,000-span trace renders 1,000 rows a page, every span reachable."""
    spans = [
        span(
            traceId=TRACE,
            spanId="f" * 16,
            name="root",
            startTime="2026-11-22T10:00:00Z",
            endTime="2026-11-22T10:01:00Z",
        )
    ]
    spans += [
        span(
            traceId=TRACE,
            spanId=f"{n + 1:016x}",
            parentSpanId="f" * 16,
            name=f"s{n}",
            startTime=f"2026-11-22T10:00:{n % 60:02d}Z",
        )
        for n in range(9_999)
    ]
    store(site.db, site.demo, spans)
    client = site.client()
    await sign_in(client, "viewer@acme.test")
    seen = 0
    for number in range(1, 11):
        page = _text(
            await (await client.get(f"/projects/demo/traces/{TRACE}?page={number}")).get_data()
        )
        seen += page.count('<li class="span-row')
    assert seen == 10_000
    for number in ("0", "11", "9" * 5000, "x"):  # out of range, past Python's digits: page 1
        answer = await client.get(f"/projects/demo/traces/{TRACE}?page={number}")
        assert answer.status_code == 200
        assert _text(await answer.get_data()).count('<li class="span-row') == 1000


def test_deep_chain_lays_out() -> None:
    """A chain of 5,000 parents lays out without recursion, depth by depth."""
    spans = [
        SpanOutline(f"{n + 1:016x}", f"{n:016x}" if n else None, "s", "internal", 0, n, n + 1)
        for n in range(5_000)
    ]
    rows = lay_out(spans).rows()
    assert [row.depth for row in rows] == list(range(5_000))


async def test_sessions_pages(site: Site) -> None:
    """Sessions list trace counts; a session's page lists its traces in time order."""
    for n, session in enumerate(("s-a", "s-b", "s-a")):
        store(
            site.db,
            site.demo,
            [
                span(
                    traceId=f"{n + 1:032x}",
                    spanId="1" * 16,
                    name=f"turn {n}",
                    attributes={"session.id": session},
                    startTime=f"2026-11-22T10:00:0{n}Z",
                )
            ],
        )
    client = site.client()
    await sign_in(client, "viewer@acme.test")
    page = _text(await (await client.get("/projects/demo/sessions")).get_data())
    assert re.search(r"s-<wbr>a</a></td>\s*<td class=\"num\">2</td>", page)
    page = _text(await (await client.get("/projects/demo/sessions/s-a")).get_data())
    assert page.index("turn 0") < page.index("turn 2") and "turn 1" not in page
    assert (await client.get("/projects/demo/sessions/none")).status_code == 404


ODD_SESSIONS = {
    "x/../../settings": "x%2F..%2F..%2Fsettings",
    "..": "~..",
    ".": "~.",
    "~..": "~~..",
    "~x": "~x",
    "a//b": "a%2F%2Fb",
    "/lead": "%2Flead",
    "trail/": "trail%2F",
    "%2F?q#f": "%252F%3Fq%23f",
    "a b é": "a%20b%20%C3%A9",
}


async def test_session_ids_are_one_segment_in_links(site: Site) -> None:
    """A session id with slashes, dot segments, `%`, `?` or `#` is linked as one encoded
    path segment, and that link leads to the session's own page."""
    for n, session in enumerate(ODD_SESSIONS):
        store(
            site.db,
            site.demo,
            [span(traceId=f"{n + 1:032x}", name=f"turn {n}", attributes={"session.id": session})],
        )
    client = site.client()
    await sign_in(client, "viewer@acme.test")
    listing = _text(await (await client.get("/projects/demo/sessions")).get_data())
    for n, (session, segment) in enumerate(ODD_SESSIONS.items()):
        link = f"/projects/demo/sessions/{segment}"
        assert f'href="{link}"' in listing, session
        response = await client.get(link)
        assert response.status_code == 200, session
        assert f"turn {n}</" in _text(await response.get_data())


async def test_span_names_are_isolated_in_the_waterfall(site: Site) -> None:
    """A span name with a right-to-left override is written inside `<bdi>` on its
    waterfall row, so that the override ends with the name."""
    store(site.db, site.demo, [span(traceId=TRACE, name="\u202eevil")])
    client = site.client()
    await sign_in(client, "viewer@acme.test")
    page = _text(await (await client.get(f"/projects/demo/traces/{TRACE}")).get_data())
    assert '#detail"><bdi>\u202eevil</bdi></a>' in page


async def test_client_text_is_escaped(site: Site) -> None:
    """Span names, kinds of text and attribute values a client sent are shown as text,
    never as markup, in the list, the waterfall and the span's details."""
    evil = '<script>alert("x")</script>'
    store(
        site.db,
        site.demo,
        [span(traceId=TRACE, spanId="1" * 16, name=evil, attributes={"q": evil},
              events=[{"name": evil}])],
    )  # fmt: skip
    client = site.client()
    await sign_in(client, "viewer@acme.test")
    for path in (
        "/projects/demo/traces",
        f"/projects/demo/traces/{TRACE}?span={'1' * 16}",
        f"/projects/demo/traces/{TRACE}/spans/{'1' * 16}",
    ):
        page = _text(await (await client.get(path)).get_data())
        assert "<script>alert" not in page, path
        assert "&lt;script&gt;alert(" in page, path


async def test_held_areas(site: Site) -> None:
    """Evaluations show only a notice; diagnoses, fixes and deployments have no page or
    route (404), and no page links to them."""
    client = site.client()
    csrf = await sign_in(client, "owner@acme.test")
    page = _text(await (await client.get("/projects/demo/evaluations")).get_data())
    assert "Evaluations are held during the beta" in page
    assert "<form" not in page.split("<main>")[1]
    for area in ("diagnoses", "fixes", "deployments"):
        assert area not in page.lower()
        for path in (f"/projects/demo/{area}", f"/api/v1/projects/demo/{area}"):
            assert (await client.get(path)).status_code == 404
            response = await client.post(path, json={}, headers={"X-CSRF-Token": csrf})
            assert response.status_code in (404, 405)
