"""The dashboard in a real browser: Playwright driving the system's Chromium.

Debian's `chromium-headless-shell` (Playwright's own browser download is not used). In
CI a missing browser fails these tests; elsewhere they skip, saying how to install it.
"""

from __future__ import annotations

import os
import re
import time
from collections.abc import Iterator
from pathlib import Path

import httpx
import orjson
import pytest

from storage.database import Database
from storage.identity import IdentityStore
from storage.passwords import Passwords
from storage.schema import migrate
from storage.scores import NewScore, ScoreStore
from tests.dashboard.conftest import PASSWORD, agent_run, store
from tests.dashboard.served import dashboard_and_collector, forget_queue
from tests.dashboard.test_genai import TRACE as LLM_TRACE
from tests.dashboard.test_genai import _run as llm_run
from tests.proto_json.spans import span

CHROMIUM = Path("/usr/bin/chromium-headless-shell")
TOPOLOGY_TRACE = "cd" * 16
TRACE = "ef" * 16
ODD_TRACE = "0d" * 16
ODD_SESSION = "x/../../settings"
RIGHT_TO_LEFT = "\u202eevil name"  # a right-to-left override, never closed
LONG_NAME = "batch-" + "x" * 200  # no space to break it at
LONG_USER = "user-" + "u" * 125
LONG_SESSION = "session-" + "s" * 120
NOJS_TRACE = "0f" * 16
LONG_TEXT = " ".join(f"word{n}" for n in range(400)) + " THE-END"

if not CHROMIUM.exists():
    if os.environ.get("CI") == "true":
        raise RuntimeError(f"{CHROMIUM} is missing in CI: .ci/run installs it with apt")
    pytest.skip(
        f"no {CHROMIUM}: apt-get install -y chromium-headless-shell to run the browser tests",
        allow_module_level=True,
    )

from playwright.sync_api import Browser, Page, expect, sync_playwright  # noqa: E402


def topology_run() -> list[dict[str, object]]:
    """planner delegates to researcher, who delegates back once; each calls a tool."""
    specs = [
        ("1", None, "planner", "agent"),
        ("2", "1", "researcher", "agent"),
        ("3", "2", "search", "tool_call"),
        ("4", "2", "planner", "agent"),
        ("5", "4", "gpt", "llm_call"),
    ]
    return [
        span(traceId=TOPOLOGY_TRACE, spanId=sid * 16, parentSpanId=parent and parent * 16,
             name=name, kind=kind, startTime=f"2026-11-22T12:00:0{sid}Z",
             endTime=f"2026-11-22T12:00:0{sid}.5Z")
        for sid, parent, name, kind in specs
    ]  # fmt: skip


BUSY_TRACE = "0b" * 16


def busy_run() -> list[dict[str, object]]:
    """An agent run as an instrumented app sends it: two models with dated names, a
    long user and session id, the question and the answer (scores added beside)."""
    asked = [
        {
            "role": "user",
            "parts": [{"type": "text", "content": "Can I get a refund for order 9672? " * 3}],
        }
    ]
    said = [
        {
            "role": "assistant",
            "parts": [{"type": "text", "content": "Based on the lookup, yes. " * 5}],
        }
    ]
    base = {"traceId": BUSY_TRACE, "endTime": "2026-11-22T15:00:03Z"}
    calls = [
        span(**base, spanId=f"{n + 2:016x}", parentSpanId="1" * 16, name=f"chat {model}",
             startTime="2026-11-22T15:00:01Z",
             attributes={"gen_ai.operation.name": "chat", "gen_ai.response.model": model,
                         "gen_ai.usage.input_tokens": 120, "gen_ai.usage.output_tokens": 30,
                         "gen_ai.input.messages": orjson.dumps(asked).decode(),
                         "gen_ai.output.messages": orjson.dumps(said).decode()})
        for n, model in enumerate(("gpt-4o-mini-2024-07-18", "gpt-4.1-mini-2025-04-14"))
    ]  # fmt: skip
    root = span(**base, spanId="1" * 16, name="invoke_agent support-agent", kind="agent",
                startTime="2026-11-22T15:00:00Z",
                attributes={"user.id": "user-11@acme-corporation.example.com",
                            "session.id": "sess-checkout-2026-11-22-000123"})  # fmt: skip
    return [root, *calls]


def odd_run() -> list[dict[str, object]]:
    """A trace in session `x/../../settings` whose child span's name overrides the
    direction of the text after it."""
    return [
        span(traceId=ODD_TRACE, spanId="1" * 16, name="root", kind="agent",
             startTime="2026-11-22T13:00:00Z", endTime="2026-11-22T13:00:02Z",
             attributes={"session.id": ODD_SESSION}),
        span(traceId=ODD_TRACE, spanId="2" * 16, parentSpanId="1" * 16, name=RIGHT_TO_LEFT,
             kind="tool_call", status="error", startTime="2026-11-22T13:00:01Z",
             endTime="2026-11-22T13:00:02Z"),
    ]  # fmt: skip


@pytest.fixture(scope="module")
def served(tmp_path_factory: pytest.TempPathFactory, redis_url: str) -> Iterator[dict[str, str]]:
    """`spangate dashboard` and `spangate collector` on a database with a user, a
    project and one trace: their base URLs."""
    root = tmp_path_factory.mktemp("dashboard")
    url = f"sqlite:///{root / 'spangate.db'}"
    db = Database(url)
    migrate(db)
    owner = IdentityStore(db).add_user("owner@acme.test", "owner", "acme")
    Passwords(db).set_password("owner@acme.test", PASSWORD)
    project = IdentityStore(db).create_project("demo", "acme")
    store(
        db,
        project,
        [
            *agent_run(TRACE, attributes={"gen_ai.request": {"model": "m-1", "temperature": 0.2}}),
            span(
                traceId=TRACE,
                spanId="3" * 16,
                parentSpanId="2" * 16,
                name="parse",
                kind="tool_call",
                status="error",
                startTime="2026-11-22T10:00:05Z",
                endTime="2026-11-22T10:00:06Z",
            ),
        ],
    )
    store(db, project, topology_run())
    odd = IdentityStore(db).create_project("odd", "acme")
    IdentityStore(db).create_key("odd", "owner@acme.test")  # a row on its keys' page
    store(db, odd, odd_run())
    long_ids = {"user.id": LONG_USER, "session.id": LONG_SESSION}
    store(db, odd, [span(traceId="0e" * 16, spanId="1" * 16, name=LONG_NAME,
                         startTime="2026-11-22T14:00:00Z", endTime="2026-11-22T14:00:01Z",
                         attributes=long_ids)])  # fmt: skip
    store(db, odd, busy_run())
    for name, value in (("helpfulness", 0.8), ("answer_correctness", 1.0)):
        given = NewScore(BUSY_TRACE, None, name, value, None, "ui")
        ScoreStore(db).create_by_user(odd.id, owner.id, given)
    store(db, IdentityStore(db).create_project("llm", "acme"), llm_run())
    store(db, IdentityStore(db).create_project("nojs", "acme"), [
        span(traceId=NOJS_TRACE, spanId="1" * 16, name="root", startTime="2026-11-22T15:00:00Z",
             endTime="2026-11-22T15:00:02Z", attributes={"prompt": LONG_TEXT}),
        span(traceId=NOJS_TRACE, spanId="2" * 16, parentSpanId="1" * 16, name="child",
             status="error", startTime="2026-11-22T15:00:01Z", endTime="2026-11-22T15:00:02Z"),
    ])  # fmt: skip
    live = IdentityStore(db).create_project("live", "acme")
    store(db, live, agent_run("1e" * 16))
    short_ids = {"user.id": "carol@acme.io", "session.id": "session-7f3a"}
    store(db, live, [span(traceId="4e" * 16, spanId="1" * 16, name="short ids",
                          startTime="2026-11-22T16:00:00Z", endTime="2026-11-22T16:00:01Z",
                          attributes=short_ids)])  # fmt: skip
    db.close()
    try:
        with dashboard_and_collector(root, url, redis_url) as urls:
            yield {**urls, "database": url}
    finally:
        forget_queue(redis_url, project.id)


@pytest.fixture(scope="module")
def dashboard_url(served: dict[str, str]) -> str:
    """The dashboard's base URL."""
    return served["app"]


@pytest.fixture(scope="module")
def browser() -> Iterator[Browser]:
    """Headless Chromium from the system."""
    with sync_playwright() as playwright:
        launched = playwright.chromium.launch(executable_path=str(CHROMIUM))
        yield launched
        launched.close()


def _sign_in(page: Page, base: str) -> None:
    page.goto(f"{base}/login")
    page.get_by_label("Email").fill("owner@acme.test")
    page.get_by_label("Password").fill(PASSWORD)
    page.get_by_role("button", name="Sign in").click()
    expect(page).to_have_url(f"{base}/projects")


def test_sign_in_open_a_trace_and_read_its_waterfall(browser: Browser, dashboard_url: str) -> None:
    """Sign in through the form, open the trace from the list, and see bars in proportion."""
    page = browser.new_page(viewport={"width": 1400, "height": 900})
    _sign_in(page, dashboard_url)
    page.get_by_role("link", name="demo").click()
    expect(page.get_by_role("heading", name="Traces")).to_be_visible()
    page.get_by_role("link", name=TRACE).click()
    expect(page).to_have_title(f"Trace {TRACE} · spangate")
    bars = page.locator(".span-row .bar")
    expect(bars).to_have_count(3)
    track = page.locator(".span-row .track").first.bounding_box()
    boxes = [bars.nth(n).bounding_box() for n in range(3)]
    assert track is not None and all(box is not None for box in boxes)
    # root 0-10 s, model 2-7 s, parse 5-6 s: left and width as fractions of the track
    for box, (left, width) in zip(boxes, [(0, 1), (0.2, 0.5), (0.5, 0.1)], strict=True):
        assert box is not None
        assert abs((box["x"] - track["x"]) / track["width"] - left) < 0.01
        assert abs(box["width"] / track["width"] - width) < 0.01
    page.get_by_role("link", name="ask model").click()
    detail = page.get_by_label("Span details")
    expect(detail.get_by_role("heading", name="ask model")).to_be_visible()
    expect(detail).to_contain_text('"temperature": 0.2')
    page.get_by_role("button", name="Collapse ask model").click()
    expect(page.locator('.span-row[data-span-id="3333333333333333"]')).to_be_hidden()
    page.get_by_role("button", name="Expand ask model").click()
    expect(page.locator('.span-row[data-span-id="3333333333333333"]')).to_be_visible()
    page.close()


def test_export_from_the_list(browser: Browser, dashboard_url: str, tmp_path: Path) -> None:
    """The list's Export CSV button downloads the traces' spans, newest trace first."""
    page = browser.new_page()
    _sign_in(page, dashboard_url)
    page.goto(f"{dashboard_url}/projects/demo/traces")
    with page.expect_download() as download:
        page.get_by_role("link", name="Export CSV").click()
    saved = tmp_path / "export.csv"
    download.value.save_as(saved)
    lines = saved.read_text().splitlines()
    assert lines[0].startswith("traceId,spanId,parentSpanId,name")
    traces = [line.split(",")[0] for line in lines[1:]]
    assert traces == [TOPOLOGY_TRACE] * 5 + [TRACE] * 3  # newest trace first
    page.close()


def test_api_key_page_create_use_revoke(browser: Browser, served: dict[str, str]) -> None:
    """Create a key on the API keys page: its secret is shown once, works on the gateway
    at once, and is refused within 5 s of Revoke."""
    base, ingest = served["app"], served["ingest"]
    page = browser.new_page()
    _sign_in(page, base)
    page.goto(f"{base}/projects/demo/settings")
    page.get_by_role("link", name="API keys").click()
    page.get_by_role("button", name="Create key").click()
    secret = page.locator("#new-key").inner_text()
    expect(page.get_by_role("button", name="Copy", exact=True)).to_be_visible()
    body = orjson.dumps({"spans": [span(traceId="ab" * 16)]})
    sent = httpx.post(
        f"{ingest}/v1/spans", content=body, headers={"Authorization": f"Bearer {secret}"}
    )
    assert sent.status_code == 200 and sent.json()["accepted"] == 1
    page.goto(f"{base}/projects/demo/settings/api-keys")
    assert secret not in page.content()
    prefix = secret[:12]
    page.get_by_role("button", name=f"Revoke {prefix}").click()
    expect(page.get_by_role("cell", name=prefix + "…")).to_be_visible()
    deadline = time.monotonic() + 5
    while True:
        sent = httpx.post(
            f"{ingest}/v1/spans", content=body, headers={"Authorization": f"Bearer {secret}"}
        )
        if sent.status_code == 401 or time.monotonic() > deadline:
            break
        time.sleep(0.25)
    assert sent.status_code == 401
    page.close()


def test_topology_has_a_node_per_agent_and_an_edge_per_delegation(
    browser: Browser, dashboard_url: str
) -> None:
    """The agents page draws the seeded run: a node per agent, an edge per delegation,
    and a node leads to the traces through it."""
    page = browser.new_page(viewport={"width": 1400, "height": 900})
    _sign_in(page, dashboard_url)
    page.goto(f"{dashboard_url}/projects/demo/agents")
    svg = page.get_by_role("img", name="Agent topology")
    expect(svg).to_be_visible()
    agents = svg.locator('g.node[data-kind="agent"]')
    expect(agents).to_have_count(3)
    names = sorted(agents.nth(n).get_attribute("data-name") or "" for n in range(3))
    assert names == ["agent run", "planner", "researcher"]
    delegations = svg.locator("g.edge-delegation")
    expect(delegations).to_have_count(2)
    pairs = sorted(
        (
            delegations.nth(n).get_attribute("data-source"),
            delegations.nth(n).get_attribute("data-target"),
        )
        for n in range(2)
    )
    assert pairs == [("planner", "researcher"), ("researcher", "planner")]
    svg.locator('g.node[data-name="researcher"]').click()
    expect(page.get_by_role("heading", name="Traces through agent researcher")).to_be_visible()
    expect(page.get_by_role("link", name=TOPOLOGY_TRACE)).to_be_visible()
    page.close()


def test_next_with_a_tab_cannot_lead_to_another_site(browser: Browser, dashboard_url: str) -> None:
    """Signed in, /login?next=/%09/evil.example/phish stays on the dashboard: Chromium,
    which drops tabs from URLs, is never sent to evil.example."""
    page = browser.new_page()
    _sign_in(page, dashboard_url)
    page.goto(f"{dashboard_url}/login?next=/%09/evil.example/phish")
    assert page.url == f"{dashboard_url}/projects"
    page.close()


def test_a_session_id_with_dot_segments_links_to_its_own_page(
    browser: Browser, dashboard_url: str
) -> None:
    """The session `x/../../settings` is linked to its own page, which Chromium reaches
    (not the project's settings page the dot segments would lead to)."""
    page = browser.new_page()
    _sign_in(page, dashboard_url)
    page.goto(f"{dashboard_url}/projects/odd/sessions")
    page.get_by_role("link", name=ODD_SESSION).click()
    expect(page.get_by_role("heading", name=f"Session {ODD_SESSION}")).to_be_visible()
    expect(page.get_by_role("link", name=ODD_TRACE)).to_be_visible()
    page.close()


def test_a_right_to_left_span_name_leaves_its_row_in_order(
    browser: Browser, dashboard_url: str
) -> None:
    """A span name with an unclosed right-to-left override is isolated: its row's kind
    and status labels still follow the name, left to right."""
    page = browser.new_page(viewport={"width": 1400, "height": 900})
    _sign_in(page, dashboard_url)
    page.goto(f"{dashboard_url}/projects/odd/traces/{ODD_TRACE}")
    row = page.locator('.span-row[data-span-id="2222222222222222"]')
    name = row.locator(".label a").bounding_box()
    kind = row.locator(".kind").bounding_box()
    status = row.locator(".status-error").bounding_box()
    assert name is not None and kind is not None and status is not None
    assert name["x"] + name["width"] <= kind["x"] + 1
    assert kind["x"] + kind["width"] <= status["x"] + 1
    page.close()


def test_long_user_and_session_ids_wrap_rather_than_widen_the_pages(
    browser: Browser, dashboard_url: str
) -> None:
    """A user id of 130 characters and a session id of 128, neither with a space: the
    sessions list and the trace's page show them whole, at 1024 px and at 1280, without
    scrolling sideways."""
    page = browser.new_page(viewport={"width": 1024, "height": 800})
    _sign_in(page, dashboard_url)
    for width in (1024, 1280):
        page.set_viewport_size({"width": width, "height": 800})
        page.goto(f"{dashboard_url}/projects/odd/sessions")
        row = page.get_by_role("row").filter(has_text=LONG_SESSION)
        expect(row.get_by_role("cell", name=LONG_USER, exact=True)).to_be_visible()
        assert page.evaluate("document.documentElement.scrollWidth <= innerWidth"), width
        page.goto(f"{dashboard_url}/projects/odd/traces/{'0e' * 16}")
        expect(page.locator(".facts dd").filter(has_text=LONG_USER)).to_have_text(LONG_USER)
        expect(page.get_by_role("link", name=LONG_SESSION)).to_be_visible()
        assert page.evaluate("document.documentElement.scrollWidth <= innerWidth"), width
    page.close()


def test_a_live_view_signed_out_goes_to_the_sign_in_page(
    browser: Browser, dashboard_url: str
) -> None:
    """Live on in one tab, signed out in another: the live tab's next refresh shows the
    sign-in page, not a list that silently stops."""
    context = browser.new_context()
    live = context.new_page()
    _sign_in(live, dashboard_url)
    live.goto(f"{dashboard_url}/projects/live/traces?live=1")
    other = context.new_page()
    other.goto(f"{dashboard_url}/projects")
    other.get_by_role("button", name="Sign out").click()
    expect(live).to_have_url(re.compile(r"/login"), timeout=12_000)
    context.close()


def test_a_short_id_keeps_to_one_line_and_a_longer_breaks_after_a_separator(
    browser: Browser, dashboard_url: str
) -> None:
    """A user's and a session's id of 12-13 characters read on one line at 1280 px; at
    1024, where the list's columns are narrower, they break after a separator
    (`carol@acme.` `io`), not anywhere (`carol@acme.i` `o`)."""
    page = browser.new_page(viewport={"width": 1280, "height": 800})
    _sign_in(page, dashboard_url)
    page.goto(f"{dashboard_url}/projects/live/traces")
    row = page.get_by_role("row").filter(has_text="short ids")
    cells = [row.get_by_role("cell", name=text) for text in ("carol@acme.io", "session-7f3a")]
    lines = (  # the lines of a cell's text: its boxes' distinct tops
        "e => { const r = document.createRange(); r.selectNodeContents(e); "
        "return new Set([...r.getClientRects()].map(b => Math.round(b.top))).size; }"
    )
    assert [cell.evaluate(lines) for cell in cells] == [1, 1]
    page.set_viewport_size({"width": 1024, "height": 800})
    first_line = (  # the characters before the first whose top is another
        "e => { const w = document.createTreeWalker(e, NodeFilter.SHOW_TEXT); let n, text = '';"
        " const tops = []; while ((n = w.nextNode())) for (let i = 0; i < n.length; i++) {"
        " const r = document.createRange(); r.setStart(n, i); r.setEnd(n, i + 1);"
        " tops.push(Math.round(r.getBoundingClientRect().top)); text += n.data[i]; }"
        " const at = tops.findIndex(t => t !== tops[0]);"
        " return at < 0 ? text : text.slice(0, at); }"
    )
    for cell, whole in zip(cells, ("carol@acme.io", "session-7f3a"), strict=True):
        line = cell.evaluate(first_line)
        assert line == whole or line[-1] in "@.-", line
    page.close()


def test_the_trace_list_fits_a_laptops_width_whatever_its_texts(
    browser: Browser, dashboard_url: str, tmp_path: Path
) -> None:
    """At 1280 px, and at 1024, the list's every column shows without scrolling
    sideways (and at 1024 the header keeps to one row), and the filter bar's pickers
    keep their size: an agent run with two dated
    models, long user and session ids, two scores, its question and answer (both
    shown); a root name of 206 characters and no space, and a user id of 130, wrap in
    their cells (the id is cut in the user picker), and a trace id shows its first
    digits (all of them on hover)."""
    page = browser.new_page(viewport={"width": 1024, "height": 800})
    _sign_in(page, dashboard_url)
    page.goto(f"{dashboard_url}/projects/odd/traces")
    expect(page.get_by_role("link", name="0e" * 16)).to_be_visible()
    scroll = page.locator(".table-scroll")
    fits = "e => e.scrollWidth <= e.clientWidth"
    widths = (
        "e => `${e.scrollWidth} > ${e.clientWidth}: ` + "
        "[...e.querySelectorAll('th')].map(h => `${h.innerText} ${h.offsetWidth}`).join(', ')"
    )
    assert scroll.evaluate(fits), scroll.evaluate(widths)
    middles = (
        "h => [...h.children].map(c => { const b = c.getBoundingClientRect(); "
        "return b.top + b.height / 2; })"
    )
    centred = page.locator("header.top").evaluate(middles)
    assert max(centred) - min(centred) < 2, centred  # one row, the user's role on hover
    page.set_viewport_size({"width": 1280, "height": 800})
    assert scroll.evaluate(fits), scroll.evaluate(widths)
    busy = page.get_by_role("row").filter(has_text="invoke_agent support-agent")
    expect(page.get_by_role("cell", name=LONG_USER, exact=True).first).to_be_visible()
    expect(busy.locator(".io .said")).to_have_count(2)  # the question and the answer
    expect(busy.locator(".score").first).to_have_text("0.80 helpfulness")  # its value first
    parts = busy.locator(".model .part")  # a name and its date, each on one line
    expect(parts).to_have_count(4)
    assert parts.evaluate_all(
        "ps => ps.every(p => p.getClientRects().length === 1 && "
        "p.offsetHeight < 1.8 * parseFloat(getComputedStyle(p).fontSize))"
    )
    for width in (900, 1100):  # the header's links wrap rather than run off the page
        page.set_viewport_size({"width": width, "height": 800})
        assert page.evaluate("document.documentElement.scrollWidth <= innerWidth"), width
    page.set_viewport_size({"width": 1280, "height": 800})
    picker = page.get_by_label("User").bounding_box()
    assert picker is not None and picker["width"] <= 14 * 16 + 1
    label = page.locator('label[for="user"]').bounding_box()
    assert label is not None and abs(label["y"] - picker["y"]) < picker["height"]
    shot = Path(os.environ.get("SPANGATE_SCREENSHOTS", tmp_path)) / "trace-list-1280.png"
    page.screenshot(path=str(shot), full_page=True)
    page.close()


def test_an_llm_run_shows_its_models_tokens_cost_and_messages(
    browser: Browser, dashboard_url: str, tmp_path: Path
) -> None:
    """An OTel GenAI agent run: the list shows its models, tokens and cost; the trace its
    totals; its LLM call's row its model and tokens; selecting the call shows its
    messages role by role, with newlines kept, and where each field came from."""
    page = browser.new_page(viewport={"width": 1400, "height": 900})
    _sign_in(page, dashboard_url)
    page.goto(f"{dashboard_url}/projects/llm/traces")
    row = page.get_by_role("row").filter(has_text=LLM_TRACE)
    expect(row).to_contain_text("gpt-4o, my-model")
    expect(row).to_contain_text("175")
    expect(row).to_contain_text("cust-42")
    page.screenshot(path=str(tmp_path / "llm-list.png"), full_page=True)
    page.get_by_role("link", name=LLM_TRACE).click()
    expect(page.locator("dl.facts").first).to_contain_text("175 (150 in, 25 out)")
    call = page.locator("li.span-row", has_text="chat gpt-4o")
    expect(call.locator(".llm-facts")).to_have_text("gpt-4o 100→20 tok")
    call.get_by_role("link", name="chat gpt-4o").click()
    llm = page.get_by_role("region", name="LLM")
    expect(llm).to_contain_text("gpt-4o (openai)")
    expect(llm.locator(".message.role-user .rendered")).to_have_text("Where is my order?")
    expect(llm).to_contain_text("gen_ai.request.model")
    page.screenshot(path=str(tmp_path / "llm-trace.png"), full_page=True)
    if os.environ.get("SPANGATE_SCREENSHOTS"):  # to look at them: a directory to copy to
        for shot in tmp_path.glob("llm-*.png"):
            (Path(os.environ["SPANGATE_SCREENSHOTS"]) / shot.name).write_bytes(shot.read_bytes())


def test_without_javascript_no_control_needs_it_and_long_texts_show_whole(
    browser: Browser, dashboard_url: str
) -> None:
    """A trace page read with scripts off: the waterfall's and the pane's controls that
    need a script (zoom, collapse, errors, find, the rows' toggles, Raw, Show all) are
    not shown, and a long attribute shows whole; with scripts on, they are there."""
    path = f"/projects/nojs/traces/{NOJS_TRACE}?span={'1' * 16}"
    for scripts in (False, True):
        context = browser.new_context(java_script_enabled=scripts)
        page = context.new_page()
        _sign_in(page, dashboard_url)
        page.goto(f"{dashboard_url}{path}")
        controls = [
            page.get_by_role("button", name="Zoom in"),
            page.get_by_label("Collapse to depth"),
            page.get_by_role("button", name="Next error"),
            page.get_by_role("searchbox", name="Find in trace"),
            page.get_by_role("button", name="Collapse root"),
            page.get_by_role("button", name=re.compile("^Show all")),
        ]
        for control in controls:
            expect(control).to_be_visible(visible=scripts)
        fold = page.locator(".fold", has_text="THE-END")
        clipped = "e => e.scrollHeight > e.clientHeight + 1"
        assert fold.evaluate(clipped) == scripts  # folded to a few lines where it unfolds
        if scripts:
            page.get_by_role("button", name=re.compile("^Show all")).click()
            assert not fold.evaluate(clipped)
        context.close()


def test_filter_sort_and_go_live(browser: Browser, dashboard_url: str, tmp_path: Path) -> None:
    """The trace list's filter bar: pick a model (listed with its count), search the
    answer's words, sort by cost, then turn the live view on; each step is in the URL
    (the fields given alone) and the list follows."""
    page = browser.new_page(viewport={"width": 1400, "height": 900})
    _sign_in(page, dashboard_url)
    page.goto(f"{dashboard_url}/projects/llm/traces")
    page.get_by_label("Model").select_option(label="gpt-4o (1)")
    page.get_by_label("Words in the LLM text").fill("SHIPS today")
    page.get_by_role("button", name="Filter").click()
    # the fields given alone: a short link to share
    expect(page).to_have_url(re.compile(r"/traces\?text=SHIPS\+today&model=gpt-4o$"))
    expect(page.get_by_role("link", name=LLM_TRACE)).to_be_visible()
    page.go_back()
    expect(page.get_by_label("User")).to_be_enabled()  # the fields left out come back
    page.go_forward()
    page.get_by_role("link", name="Cost", exact=True).click()
    expect(page).to_have_url(re.compile(r"model=gpt-4o&text=SHIPS\+today&sort=cost&order=desc"))
    expect(page.get_by_role("link", name="Cost ▼")).to_be_visible()
    expect(page.get_by_label("Words in the LLM text")).to_have_value("SHIPS today")
    shot = Path(os.environ.get("SPANGATE_SCREENSHOTS", tmp_path)) / "trace-list-filters.png"
    page.screenshot(path=str(shot), full_page=True)
    page.get_by_label("Words in the LLM text").fill("nowhere")
    page.get_by_role("button", name="Filter").click()
    expect(page.get_by_text("No traces match these filters.")).to_be_visible()
    page.get_by_role("link", name="Clear filters").click()
    page.get_by_role("link", name="Live").click()
    expect(page.get_by_role("link", name="Live: on (every 5 s)")).to_be_visible()
    page.close()


@pytest.mark.parametrize("javascript", [True, False])
def test_the_live_view_shows_new_traces_and_keeps_a_filter_being_typed(
    browser: Browser, served: dict[str, str], javascript: bool
) -> None:
    """Live on, a trace stored meanwhile shows within seconds: with JavaScript the list
    alone is fetched again, and words being typed in a filter stay, with the focus;
    without it the page reloads itself."""
    context = browser.new_context(java_script_enabled=javascript)
    page = context.new_page()
    _sign_in(page, served["app"])
    page.goto(f"{served['app']}/projects/live/traces?live=1")
    expect(page.get_by_role("link", name="Live: on (every 5 s)")).to_be_visible()
    field = page.get_by_label("Words in the LLM text")
    field.fill("half typed")
    arrived = "2e" * 16 if javascript else "3e" * 16
    db = Database(served["database"])
    store(db, IdentityStore(db).project("live"), agent_run(arrived))
    db.close()
    expect(page.get_by_role("link", name=arrived)).to_be_visible(timeout=12_000)
    if javascript:
        expect(field).to_have_value("half typed")
        expect(field).to_be_focused()
    page.close()
    context.close()


def test_a_phone_reads_every_page_without_scrolling_sideways(
    browser: Browser, dashboard_url: str, tmp_path: Path
) -> None:
    """At 390 px the header's links wrap, a wide table scrolls in its own box, and the
    trace page's span pane comes below its waterfall, not beside it."""
    page = browser.new_page(viewport={"width": 390, "height": 844})
    _sign_in(page, dashboard_url)
    wide = []
    for path in (
        "/projects",
        "/projects/odd/traces",
        f"/projects/odd/traces/{BUSY_TRACE}?span={'1' * 16}",
        "/projects/odd/sessions",
        "/projects/demo/agents",
        "/projects/demo/ingestion",
        "/projects/odd/settings",
        "/projects/odd/settings/api-keys",
        "/projects/odd/datasets",
        "/projects/odd/datasets/new",
        "/projects/odd/alerts",
        "/projects/odd/webhooks",
        "/projects/odd/evaluations",
    ):
        page.goto(f"{dashboard_url}{path}")
        width = page.evaluate("document.documentElement.scrollWidth")
        if width > 390:
            wide.append((path, width))
    assert wide == []
    page.goto(f"{dashboard_url}/projects/odd/traces/{BUSY_TRACE}?span={'1' * 16}")
    waterfall = page.locator("ol.spans").bounding_box()
    pane = page.locator("#detail").bounding_box()
    assert waterfall is not None and pane is not None
    assert pane["y"] >= waterfall["y"] + waterfall["height"] and pane["width"] > 300
    page.screenshot(path=str(tmp_path / "phone-trace.png"), full_page=True)
    page.close()
