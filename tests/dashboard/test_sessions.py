"""The sessions list: JSON and page from the per-session summaries, paged, filtered."""

from __future__ import annotations

import re

import orjson
import pytest
from quart.typing import TestClientProtocol as Client

from tests.dashboard.conftest import Site, sign_in, store
from tests.proto_json.spans import span

SESSIONS = "/api/v1/projects/demo/sessions"


def _seed(site: Site) -> None:
    """Sessions s0-s4, trace n of session n % 5 starting at 10:0n; trace 6 (of s1) has
    an error and user-1's model call."""
    for n in range(8):
        attributes: dict[str, object] = {"session.id": f"s{n % 5}"}
        spans = [
            span(traceId=f"{n + 1:032x}", spanId="a" * 16, name="turn",
                 startTime=f"2026-11-22T10:0{n}:00Z", endTime=f"2026-11-22T10:0{n}:30Z",
                 status="error" if n == 6 else None, attributes=attributes),
        ]  # fmt: skip
        if n == 6:
            spans.append(
                span(traceId=f"{n + 1:032x}", spanId="b" * 16, parentSpanId="a" * 16,
                     name="chat", startTime=f"2026-11-22T10:0{n}:01Z",
                     endTime=f"2026-11-22T10:0{n}:02Z",
                     attributes={"gen_ai.operation.name": "chat", "gen_ai.request.model": "m",
                                 "gen_ai.usage.input_tokens": 7, "gen_ai.usage.output_tokens": 3,
                                 "gen_ai.usage.cost": 0.5, "user.id": "user-1"})
            )  # fmt: skip
        store(site.db, site.demo, spans)


@pytest.fixture
async def client(site: Site) -> Client:
    """A signed-in viewer of the seeded project."""
    _seed(site)
    client = site.client()
    await sign_in(client, "viewer@acme.test")
    return client


async def _get(client: Client, query: str) -> dict[str, object]:
    response = await client.get(f"{SESSIONS}?{query}")
    assert response.status_code == 200, await response.get_data()
    return orjson.loads(await response.get_data())  # type: ignore[no-any-return]


async def test_the_sessions_json_sums_each_session(client: Client) -> None:
    """Each session's traces, times, errors, tokens, cost and user, latest first."""
    body = await _get(client, "")
    sessions = body["sessions"]
    assert isinstance(sessions, list)
    assert [s["sessionId"] for s in sessions] == ["s2", "s1", "s0", "s4", "s3"]
    s1 = sessions[1]
    assert s1 == {
        "sessionId": "s1", "traceCount": 2, "startTimeUnixNano": "1795341660000000000",
        "endTimeUnixNano": "1795341990000000000", "errorCount": 1, "inputTokens": 7,
        "outputTokens": 3, "costUsd": 0.5, "userId": "user-1",
    }  # fmt: skip
    assert sessions[0]["costUsd"] is None and body["next"] is None


async def test_the_sessions_page_by_cursor_and_filter(client: Client) -> None:
    """Paging gives every session once in order; user and from/to narrow the list."""
    seen, cursor = [], None
    for _ in range(6):
        body = await _get(client, "limit=2" + (f"&cursor={cursor}" if cursor else ""))
        seen += [s["sessionId"] for s in body["sessions"]]  # type: ignore[attr-defined]
        cursor = body["next"]
        if cursor is None:
            break
    assert seen == ["s2", "s1", "s0", "s4", "s3"]
    users = await _get(client, "user=user-1")
    assert [s["sessionId"] for s in users["sessions"]] == ["s1"]  # type: ignore[attr-defined]
    window = await _get(client, "from=2026-11-22T10:03:00Z&to=2026-11-22T10:05:00Z")
    assert [s["sessionId"] for s in window["sessions"]] == ["s4", "s3"]  # type: ignore[attr-defined]


async def test_a_session_of_several_users_is_found_by_each(site: Site, client: Client) -> None:
    """A session whose traces have two users shows one, and is found by either."""
    for n, user in ((8, "user-1"), (9, "user-2")):
        store(site.db, site.demo, [
            span(traceId=f"{n + 1:032x}", spanId="c" * 16, name="chat",
                 startTime=f"2026-11-22T10:0{n}:00Z", endTime=f"2026-11-22T10:0{n}:01Z",
                 attributes={"session.id": "shared", "gen_ai.operation.name": "chat",
                             "gen_ai.request.model": "m", "user.id": user})
        ])  # fmt: skip
    for user, expected in (("user-1", ["shared", "s1"]), ("user-2", ["shared"]), ("nobody", [])):
        found = await _get(client, f"user={user}")
        assert [s["sessionId"] for s in found["sessions"]] == expected  # type: ignore[attr-defined]
    page = await _get(client, "user=user-1&limit=1")
    assert [s["sessionId"] for s in page["sessions"]] == ["shared"]  # type: ignore[attr-defined]
    rest = await _get(client, f"user=user-1&limit=1&cursor={page['next']}")
    assert [s["sessionId"] for s in rest["sessions"]] == ["s1"]  # type: ignore[attr-defined]


@pytest.mark.parametrize(
    ("query", "parameter"),
    [
        ("from=soon", "from"),
        ("to=x", "to"),
        ("cursor=abc", "cursor"),
        ("limit=0", "limit"),
        ("cursor=WzEsInNcdTAwMDAiXQ", "cursor"),
    ],  # [1, "s\u0000"]: no id holds a NUL
)
async def test_a_bad_sessions_parameter_is_a_400(
    client: Client, query: str, parameter: str
) -> None:
    """A bad value is 400 VALIDATION_ERROR naming its parameter."""
    response = await client.get(f"{SESSIONS}?{query}")
    assert response.status_code == 400
    error = orjson.loads(await response.get_data())["error"]
    assert error["code"] == "VALIDATION_ERROR" and error["message"].startswith(parameter)
    assert (await client.get(f"/projects/demo/sessions?{query}")).status_code == 400


async def test_a_sessions_traces_in_time_order(client: Client) -> None:
    """`GET …/sessions/{id}`: the session's trace items, in time order."""
    response = await client.get(f"{SESSIONS}/s1")
    found = orjson.loads(await response.get_data())
    assert found["sessionId"] == "s1"
    assert [t["traceId"] for t in found["traces"]] == [f"{2:032x}", f"{7:032x}"]
    assert found["traces"][1]["costUsd"] == 0.5
    assert (await client.get(f"{SESSIONS}/nothing")).status_code == 404


async def test_a_trace_whose_root_came_late_takes_its_place_by_its_start(
    site: Site, client: Client
) -> None:
    """X's child (10:00:10) is stored, then Y (10:00:05), then X's root (10:00:00): the
    session lists X first, by its start as it now is, on its page and in its JSON."""
    x, y = "a1" * 16, "b2" * 16
    session = {"session.id": "late-root"}
    for sent in (
        span(traceId=x, spanId="2" * 16, parentSpanId="1" * 16, name="child",
             startTime="2026-11-27T10:00:10Z", endTime="2026-11-27T10:00:11Z",
             attributes=session),
        span(traceId=y, spanId="3" * 16, name="y", startTime="2026-11-27T10:00:05Z",
             endTime="2026-11-27T10:00:06Z", attributes=session),
        span(traceId=x, spanId="1" * 16, name="x", startTime="2026-11-27T10:00:00Z",
             endTime="2026-11-27T10:00:20Z", attributes=session),
    ):  # fmt: skip
        store(site.db, site.demo, [sent])
    found = orjson.loads(await (await client.get(f"{SESSIONS}/late-root")).get_data())
    assert [t["traceId"] for t in found["traces"]] == [x, y]
    page = (await (await client.get("/projects/demo/sessions/late-root")).get_data()).decode()
    assert page.index(f"/traces/{x}") < page.index(f"/traces/{y}")


async def test_a_long_sessions_traces_page_and_its_totals_are_the_whole_sessions(
    site: Site, client: Client
) -> None:
    """A session of more traces than a page: its JSON pages by cursor in time order,
    each trace once; its page's totals are the whole session's on every page, and it
    links the later traces."""
    for n in range(5):
        store(site.db, site.demo, [
            span(traceId=f"{n + 100:032x}", spanId="a" * 16, name="chat",
                 startTime=f"2026-11-22T11:0{n}:00Z", endTime=f"2026-11-22T11:0{n}:01Z",
                 status="error" if n == 4 else None,
                 attributes={"session.id": "long", "gen_ai.operation.name": "chat",
                             "gen_ai.request.model": "m", "gen_ai.usage.input_tokens": 10,
                             "gen_ai.usage.output_tokens": 1, "gen_ai.usage.cost": 0.01}),
        ])  # fmt: skip
    seen, query = [], "limit=2"
    while True:
        found = orjson.loads(await (await client.get(f"{SESSIONS}/long?{query}")).get_data())
        assert len(found["traces"]) <= 2
        seen += [t["traceId"] for t in found["traces"]]
        if found["next"] is None:
            break
        query = f"limit=2&cursor={found['next']}"
    assert seen == [f"{n + 100:032x}" for n in range(5)]
    whole = orjson.loads(await (await client.get(f"{SESSIONS}/long")).get_data())
    assert [t["traceId"] for t in whole["traces"]] == seen and whole["next"] is None
    page = (await (await client.get("/projects/demo/sessions/long?limit=2")).get_data()).decode()
    totals = page.split('aria-label="Session totals">', 1)[1].split("</dl>", 1)[0]
    assert "<dt>Traces</dt><dd>5</dd>" in totals and "50 in, 5 out" in totals
    assert "<dt>Duration</dt><dd>4 min 1 s</dd>" in totals  # 11:00:00 to 11:04:01
    assert '<span class="status-error">1</span>' in totals and "$0.05" in totals
    assert "Later traces" in page and "cursor=" in page and "First traces" not in page
    later = page.split('rel="next"', 1)[0].rsplit('href="?', 1)[1].split('"', 1)[0]
    last = (await (await client.get(f"/projects/demo/sessions/long?{later}".replace("&amp;", "&")))
            .get_data()).decode()  # fmt: skip
    assert "<dt>Traces</dt><dd>5</dd>" in last and "First traces" in last
    listed = orjson.loads(await (await client.get(f"{SESSIONS}/long?limit=1")).get_data())
    wrong = orjson.loads(
        await (await client.get("/api/v1/projects/demo/traces?limit=1")).get_data()
    )
    for bad in ("limit=0", "limit=1001", "cursor=abc", f"cursor={wrong['next']}"):
        response = await client.get(f"{SESSIONS}/long?{bad}")
        assert response.status_code == 400, bad
    assert listed["next"] is not None


async def test_a_session_id_with_a_newline_opens(site: Site, client: Client) -> None:
    """A session id holding a newline (span text may): its page and JSON, by the link
    the sessions page gives."""
    store(site.db, site.demo, [
        span(traceId="f" * 32, spanId="a" * 16, name="turn", startTime="2026-11-22T12:00:00Z",
             endTime="2026-11-22T12:00:01Z", attributes={"session.id": "line1\nline2"}),
    ])  # fmt: skip
    listing = (await (await client.get("/projects/demo/sessions")).get_data()).decode()
    link = re.search(r'href="(/projects/demo/sessions/line1[^"]*)"', listing)[1]  # type: ignore[index]
    assert link == "/projects/demo/sessions/line1%0Aline2"
    assert (await client.get(link)).status_code == 200
    found = orjson.loads(await (await client.get(f"{SESSIONS}/line1%0Aline2")).get_data())
    assert found["sessionId"] == "line1\nline2" and len(found["traces"]) == 1


async def test_a_turn_cut_to_its_preview_says_so_and_links_its_trace(
    site: Site, client: Client
) -> None:
    """A question longer than the previews keep (500 characters): its turn says it shows
    the first 500 and links the trace; a short turn says nothing of the kind."""
    long = "word " * 200
    for n, question in ((1, long), (2, "short question")):
        store(site.db, site.demo, [
            span(traceId=f"{n:x}" * 32, spanId="a" * 16, name="turn",
                 startTime=f"2026-11-22T12:0{n}:00Z", endTime=f"2026-11-22T12:0{n}:01Z",
                 attributes={"session.id": f"cut-{n}", "openinference.span.kind": "AGENT",
                             "input.value": question}),
        ])  # fmt: skip
    page = (await (await client.get("/projects/demo/sessions/cut-1")).get_data()).decode()
    note = page.split('<p class="muted cut">', 1)[1].split("</p>", 1)[0]
    assert "first 500 characters" in note and f'/traces/{"1" * 32}"' in note
    page = (await (await client.get("/projects/demo/sessions/cut-2")).get_data()).decode()
    assert 'class="muted cut"' not in page


async def test_the_sessions_page_lists_and_pages(client: Client) -> None:
    """The page shows the sessions with their sums and a next-page link keeping the
    filters."""
    page = (await (await client.get("/projects/demo/sessions?limit=1&user=user-1"))
            .get_data()).decode()  # fmt: skip
    assert ">s1</a>" in page and "user-1" in page and ">s0</a>" not in page
    assert "Next page" not in page
    page = (await (await client.get("/projects/demo/sessions?limit=2")).get_data()).decode()
    assert "Next page" in page and "cursor=" in page


async def test_the_sessions_user_filter_picks_from_the_projects_users(client: Client) -> None:
    """The sessions page's User is a picker of the project's users (an id typed in part
    found nothing, and said nothing); a user asked for whom the newest traces lack is
    among its choices, chosen."""
    page = (await (await client.get("/projects/demo/sessions")).get_data()).decode()
    assert re.search(r'<select id="user" name="user"><option value="">Any</option>\s*'
                     r'<option value="user-1">user-1</option>\s*</select>', page)  # fmt: skip
    page = (await (await client.get("/projects/demo/sessions?user=gone")).get_data()).decode()
    assert '<option value="gone" selected>gone</option>' in page
    assert "No sessions match these filters." in page
