"""A session read as a conversation, and the agent topology that fits, zooms, pans and
has a legend, in a real browser."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import orjson
import pytest

from storage.database import Database
from storage.identity import IdentityStore
from tests.dashboard.browsing import Browser, Page, expect, launched, serve, shot, sign_in
from tests.dashboard.conftest import store
from tests.dashboard.reading import HOSTILE, SCRIPT
from tests.proto_json.spans import span

SESSION = "chat-1"
QUESTIONS = ["Where is my order?", "Can I change the address?", f"And now? {HOSTILE}"]
ANSWERS = ["It **ships** today.", "Yes: until it ships.", "Done."]
TOOLS = [f"tool-{n:02d}" for n in range(12)]
HOSTILE_AGENT = f"</svg>{SCRIPT}"


def _turn(n: int) -> list[dict[str, Any]]:
    """One trace of the session: an agent and its model call, the third one failing."""
    trace = f"{n + 1:032x}"
    at = f"2026-11-22T10:0{n}:00Z"
    asked = [{"role": "user", "parts": [{"type": "text", "content": QUESTIONS[n]}]}]
    said = [{"role": "assistant", "parts": [{"type": "text", "content": ANSWERS[n]}]}]
    return [
        span(traceId=trace, spanId="1" * 16, name=f"turn {n + 1}", kind="agent", startTime=at,
             endTime=f"2026-11-22T10:0{n}:02Z", attributes={"session.id": SESSION},
             status="error" if n == 2 else "ok"),
        span(traceId=trace, spanId="2" * 16, parentSpanId="1" * 16, name="chat",
             startTime=at, endTime=f"2026-11-22T10:0{n}:01Z",
             attributes={"gen_ai.operation.name": "chat", "gen_ai.request.model": "gpt-4o",
                         "gen_ai.usage.input_tokens": 100, "gen_ai.usage.output_tokens": 10,
                         "gen_ai.input.messages": orjson.dumps(asked).decode(),
                         "gen_ai.output.messages": orjson.dumps(said).decode()}),
    ]  # fmt: skip


def _wide_run() -> list[dict[str, Any]]:
    """A planner calling twelve tools (one failing) and delegating to a hostile name."""
    trace = "c" * 32
    spans = [span(traceId=trace, spanId="1" * 16, name="planner", kind="agent",
                  startTime="2026-11-22T11:00:00Z", endTime="2026-11-22T11:00:09Z")]  # fmt: skip
    for n, tool in enumerate(TOOLS):
        spans.append(span(traceId=trace, spanId=f"{n + 2:016x}", parentSpanId="1" * 16,
                          name=tool, kind="tool_call", status="error" if n == 0 else "ok",
                          startTime="2026-11-22T11:00:01Z",
                          endTime="2026-11-22T11:00:02Z"))  # fmt: skip
    spans.append(span(traceId=trace, spanId="f" * 16, parentSpanId="1" * 16, name=HOSTILE_AGENT,
                      kind="agent", startTime="2026-11-22T11:00:03Z",
                      endTime="2026-11-22T11:00:04Z"))  # fmt: skip
    return spans


def _fill(db: Database, identity: IdentityStore) -> None:
    project = identity.create_project("talk", "acme")
    store(db, project, [s for n in range(3) for s in _turn(n)])
    store(db, project, _wide_run())


@pytest.fixture(scope="module")
def base(tmp_path_factory: pytest.TempPathFactory, redis_url: str) -> Iterator[str]:
    """The dashboard's base URL, with a three-trace session and a wide agent run."""
    with serve(tmp_path_factory.mktemp("talk"), redis_url, _fill) as urls:
        yield urls["app"]


@pytest.fixture(scope="module")
def browser() -> Iterator[Browser]:
    """Headless Chromium from the system."""
    with launched() as found:
        yield found


def _page(browser: Browser, base: str) -> Page:
    page = browser.new_page(viewport={"width": 1400, "height": 900})
    page.add_init_script("window.pwned = 0")
    sign_in(page, base)
    return page


def test_a_session_reads_as_a_conversation(browser: Browser, base: str, tmp_path: Path) -> None:
    """Each trace's input and output in time order, Markdown rendered and hostile text
    kept as text, with the session's totals; a turn links to its trace."""
    page = _page(browser, base)
    page.goto(f"{base}/projects/talk/sessions")
    page.get_by_role("link", name=SESSION).click()
    conversation = page.get_by_role("region", name="Conversation")
    turns = conversation.get_by_role("listitem")
    expect(turns).to_have_count(3)
    inputs = conversation.locator(".role-user .rendered").all_inner_texts()
    assert [text.strip() for text in inputs] == QUESTIONS
    expect(turns.nth(0).locator(".role-assistant strong")).to_have_text("ships")
    expect(turns.nth(2)).to_contain_text("1 error")
    totals = page.get_by_label("Session totals")
    expect(totals).to_contain_text("300 in, 30 out")
    expect(totals).to_contain_text("2 min 2 s")  # 10:00:00 to the last end, 10:02:02
    assert page.evaluate("window.pwned") == 0
    assert conversation.locator("script, img, svg, [onload], [onerror]").count() == 0
    assert conversation.locator('a[href^="javascript" i]').count() == 0
    shot(page, tmp_path, "session-conversation")
    turns.nth(1).get_by_role("link", name="turn 2").click()
    expect(page).to_have_title(f"Trace {2:032x} · spangate")
    page.close()


def test_the_session_json_lists_its_traces_in_time_order(browser: Browser, base: str) -> None:
    """`GET /api/v1/projects/talk/sessions/chat-1`: the session's trace items in order,
    with their inputs and outputs; an unknown session is 404."""
    page = _page(browser, base)
    found = page.request.get(f"{base}/api/v1/projects/talk/sessions/{SESSION}").json()
    assert found["sessionId"] == SESSION
    assert [t["input"] for t in found["traces"]] == QUESTIONS
    assert [t["output"] for t in found["traces"]] == ANSWERS
    assert [t["totalTokens"] for t in found["traces"]] == [110] * 3
    assert page.request.get(f"{base}/api/v1/projects/talk/sessions/nope").status == 404
    page.close()


def _node_box(page: Page, name: str) -> dict[str, float]:
    box = page.locator(f'svg.topology g.node[data-name="{name}"] rect').bounding_box()
    assert box is not None
    return box


def test_the_topology_fits_zooms_pans_and_has_a_legend(
    browser: Browser, base: str, tmp_path: Path
) -> None:
    """Fourteen nodes in a row fit the frame; nodes are coloured by type as the legend
    says; an edge with errors says how many; zoom and drag move the graph without
    opening a node; Fit shows it all again; a node still lists its traces; a hostile
    agent name stays text."""
    page = _page(browser, base)
    page.goto(f"{base}/projects/talk/agents")
    svg = page.get_by_role("img", name="Agent topology")
    frame = page.locator(".topology-frame").bounding_box()
    shown = svg.bounding_box()
    assert frame is not None and shown is not None
    assert shown["width"] <= frame["width"] and page.evaluate(
        "document.documentElement.scrollWidth <= innerWidth"
    )
    for name in [*TOOLS, "planner"]:
        box = _node_box(page, name)
        assert frame["x"] <= box["x"] and box["x"] + box["width"] <= frame["x"] + frame["width"]
    fill = "(el) => getComputedStyle(el).fill"
    swatch = "(el) => getComputedStyle(el).backgroundColor"
    legend = page.get_by_label("Legend")
    for kind, name in (("agent", "planner"), ("tool", TOOLS[0])):
        rect = svg.locator(f'g.node[data-name="{name}"] rect')
        assert rect.evaluate(fill) == legend.locator(f".swatch.node-{kind}").evaluate(swatch)
    assert svg.locator('g.node[data-kind="agent"] rect').first.evaluate(fill) != svg.locator(
        'g.node[data-kind="tool"] rect'
    ).first.evaluate(fill)
    failing = svg.locator(f'g.edge[data-target="{TOOLS[0]}"]')
    expect(failing.locator("text")).to_have_text("1 (1✗)")
    expect(failing).to_have_class("edge edge-call has-error")
    shot(page, tmp_path, "topology-fit")
    before = _node_box(page, "planner")
    page.get_by_role("button", name="Zoom in").click()
    zoomed = _node_box(page, "planner")
    assert zoomed["width"] > 1.3 * before["width"]
    start = (zoomed["x"] + 10, zoomed["y"] + 10)  # a drag that starts on a node's link
    page.mouse.move(*start)
    page.mouse.down()
    page.mouse.move(start[0] + 120, start[1] + 40, steps=5)
    page.mouse.up()
    moved = _node_box(page, "planner")
    assert abs(moved["x"] - zoomed["x"] - 120) < 3 and abs(moved["y"] - zoomed["y"] - 40) < 3
    expect(page.get_by_role("heading", name="Agents", exact=True)).to_be_visible()  # not left
    shot(page, tmp_path, "topology-zoomed")
    page.get_by_role("button", name="Fit").click()
    fitted = _node_box(page, "planner")
    assert abs(fitted["x"] - before["x"]) < 1 and abs(fitted["width"] - before["width"]) < 1
    hostile = svg.locator("g.node[data-kind='agent']").filter(has_text="</svg>")
    expect(hostile).to_have_count(1)
    assert page.evaluate("window.pwned") == 0 and svg.locator("script").count() == 0
    main = page.get_by_role("main")  # the agents table holds the name too
    assert main.locator("script, img, svg:not(.topology), [onload], [onerror]").count() == 0
    svg.locator(f'g.node[data-name="{TOOLS[3]}"]').click()
    expect(page.get_by_role("heading", name=f"Traces through tool {TOOLS[3]}")).to_be_visible()
    page.close()
