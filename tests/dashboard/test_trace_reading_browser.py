"""The trace page read in a real browser: messages, Markdown, JSON, long values, and
hostile span text that stays text."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import orjson
import pytest

from storage.database import Database
from storage.identity import IdentityStore
from tests.dashboard.browsing import Browser, Page, expect, launched, serve, shot, sign_in
from tests.dashboard.conftest import span, store
from tests.dashboard.reading import AGENT, CALL, SVG_BREAK, TOOL, TRACE, UNBROKEN, reading_run

#: An agent's 21st call: the instructions, 40 turns before it, its question, its answer.
LONG_TRACE, LONG_CALL = "7f" * 16, "7f" * 8
TURNS = [
    {"role": role, "parts": [{"type": "text", "content": f"turn {n} of the {role}"}]}
    for n in range(1, 41)
    for role in (("user", "assistant")[n % 2],)
]


def _long_conversation() -> list[dict[str, object]]:
    asked = [
        {"role": "system", "parts": [{"type": "text", "content": "You are a research agent."}]},
        *TURNS,
        {"role": "user", "parts": [{"type": "text", "content": "So, what did you find?"}]},
    ]
    said = [{"role": "assistant", "parts": [{"type": "text", "content": "The 21st answer."}]}]
    return [span(traceId=LONG_TRACE, spanId=LONG_CALL, name="chat gpt-4o",
                 startTime="2026-11-22T11:00:00Z", endTime="2026-11-22T11:00:02Z",
                 attributes={"gen_ai.operation.name": "chat", "gen_ai.request.model": "gpt-4o",
                             "gen_ai.input.messages": orjson.dumps(asked).decode(),
                             "gen_ai.output.messages": orjson.dumps(said).decode()})]  # fmt: skip


def _fill(db: Database, identity: IdentityStore) -> None:
    project = identity.create_project("read", "acme")
    store(db, project, reading_run())
    store(db, project, _long_conversation())


@pytest.fixture(scope="module")
def base(tmp_path_factory: pytest.TempPathFactory, redis_url: str) -> Iterator[str]:
    """The dashboard's base URL, with the hard-to-read trace in project `read`."""
    with serve(tmp_path_factory.mktemp("reading"), redis_url, _fill) as urls:
        yield urls["app"]


@pytest.fixture(scope="module")
def browser() -> Iterator[Browser]:
    """Headless Chromium from the system."""
    with launched() as found:
        yield found


def _open(browser: Browser, base: str, span_id: str) -> Page:
    page = browser.new_page(viewport={"width": 1400, "height": 900})
    page.add_init_script("window.pwned = 0")
    sign_in(page, base)
    page.goto(f"{base}/projects/read/traces/{TRACE}")
    page.locator(f'.span-row[data-span-id="{span_id}"] .label a').click()
    expect(page.locator("#detail h2")).to_be_visible()
    return page


def _nothing_ran(page: Page) -> None:
    """No script ran, and no element or link made of span text is in the pane or in the
    waterfall (where the hostile span name is)."""
    assert page.evaluate("window.pwned") == 0
    for part in ("#detail", "ol.spans"):
        shown = page.locator(part)
        assert shown.locator("script, img, svg, [onerror], [onload]").count() == 0
        assert shown.locator('a[href^="javascript" i]').count() == 0
    expect(page.locator(f'.span-row[data-span-id="{CALL}"] .label a')).to_have_text(
        f"chat {SVG_BREAK}"
    )


def test_messages_are_turns_with_roles_markdown_and_tool_calls(
    browser: Browser, base: str, tmp_path: Path
) -> None:
    """An LLM call reads as role-labelled turns: Markdown rendered, newlines kept, its tool
    call's arguments indented, hostile text shown as text; Raw shows what was sent."""
    page = _open(browser, base, CALL)
    llm = page.get_by_role("region", name="LLM")
    inputs = llm.get_by_role("list", name="Input messages")
    roles = inputs.locator(".message > .role").all_inner_texts()
    assert [r.lower() for r in roles] == ["system", "user", "assistant", "tool"]
    user = inputs.locator(".message.role-user .rendered")
    expect(user).to_contain_text("<script>window.pwned = 1</script>")
    expect(user.locator("br")).to_have_count(2)  # the user's line breaks are kept
    call = inputs.locator(".tool-call")
    expect(call.locator(".tool-name")).to_have_text("→ lookup")
    expect(call.locator("pre.json")).to_contain_text('"order": 7')
    answer = llm.get_by_role("list", name="Output messages").locator(".rendered")
    expect(answer.locator("strong")).to_have_text("ships")
    expect(answer.locator("li")).to_have_count(2)
    expect(answer.get_by_role("link", name="the docs")).to_have_attribute(
        "href", "https://example.com/docs"
    )
    expect(answer).to_contain_text("[click me](javascript:window.pwned=3)")
    _nothing_ran(page)
    shot(llm, tmp_path, "trace-messages")
    page.get_by_role("button", name="Raw").click()
    expect(page.get_by_role("button", name="Raw")).to_have_attribute("aria-pressed", "true")
    expect(answer.first).to_be_hidden()
    raw = llm.get_by_role("list", name="Output messages").locator(".raw .text")
    expect(raw).to_contain_text("It **ships** today.")
    shot(llm, tmp_path, "trace-messages-raw")
    page.close()


def test_long_values_fold_show_once_and_stay_in_the_pane(
    browser: Browser, base: str, tmp_path: Path
) -> None:
    """The system prompt sent four times is shown once, folded; a 20,000-character
    unbroken value wraps inside the pane; the pane scrolls on its own."""
    page = _open(browser, base, CALL)
    detail = page.locator("#detail")
    expect(detail.locator(".same")).to_have_count(3)  # shown as the system message
    expect(detail.locator("tr", has_text="app.prompt")).to_contain_text(
        "Same text as the system message above"
    )
    system = page.get_by_role("list", name="Input messages").locator(".role-system")
    first = system.locator(".rendered button.show-all")
    expect(first).to_have_text("Show all (8,250 characters)")
    folded = system.locator(".rendered .fold")
    short = folded.bounding_box()
    first.click()
    expect(first).to_have_text("Show less")
    tall = folded.bounding_box()
    assert short is not None and tall is not None and tall["height"] > 5 * short["height"]
    shot(detail, tmp_path, "trace-long-call")
    page.locator(f'.span-row[data-span-id="{AGENT}"] .label a').click()
    expect(detail.get_by_role("heading", name="support agent")).to_be_visible()
    pane = detail.bounding_box()
    key = detail.locator("th", has_text="blob").bounding_box()
    assert pane is not None and key is not None
    assert pane["x"] + pane["width"] <= 1400 and key["width"] > 60
    assert page.evaluate("document.documentElement.scrollWidth") <= 1400
    blob = detail.locator("tr", has_text="blob")
    blob.get_by_role("button", name="Show all").click()
    expect(blob).to_contain_text(UNBROKEN[:50])
    height = page.evaluate("document.getElementById('detail').scrollHeight")
    shown = page.evaluate("document.getElementById('detail').clientHeight")
    assert height > shown and shown <= 900  # the pane scrolls; the page does not grow
    stack = detail.locator("tr", has_text="stack").locator(".text")
    assert stack.inner_text().count("\n") == 2
    expect(detail.locator("tr", has_text="input.value").locator("pre.json")).to_contain_text(
        '"order": 7'
    )
    _nothing_ran(page)
    shot(page, tmp_path, "trace-long-agent")
    page.close()


def test_agent_and_tool_input_and_output_read_like_messages(
    browser: Browser, base: str, tmp_path: Path
) -> None:
    """A tool's arguments and result, an agent's input and output: shown as turns, JSON
    indented, text with its newlines, hostile JSON values as text."""
    page = _open(browser, base, TOOL)
    llm = page.get_by_role("region", name="Tool")  # the section names the span's type
    expect(llm.get_by_role("list", name="Input messages").locator("pre.json")).to_contain_text(
        '"order": 7'
    )
    result = llm.get_by_role("list", name="Output messages").locator(".message.role-tool")
    expect(result).to_contain_text("ValueError: bad order")
    expect(result.locator(".rendered br")).to_have_count(2)
    page.locator(f'.span-row[data-span-id="{AGENT}"] .label a').click()
    hostile = page.locator("#detail tr", has_text="hostile.json").locator("pre.json")
    expect(hostile).to_contain_text("<script>window.pwned = 1</script>")
    _nothing_ran(page)
    shot(page, tmp_path, "trace-tool")
    page.close()


def test_a_long_conversation_folds_its_history_and_shows_the_answer(
    browser: Browser, base: str, tmp_path: Path
) -> None:
    """A call that sends 42 messages: its instructions and last turns open, the 35 turns
    between folded (one click opens them); its answer within the first screen."""
    page = browser.new_page(viewport={"width": 1280, "height": 800})
    sign_in(page, base)
    page.goto(f"{base}/projects/read/traces/{LONG_TRACE}?span={LONG_CALL}")
    inputs = page.get_by_role("list", name="Input messages")
    earlier = inputs.locator("li.earlier summary")
    expect(earlier).to_have_text("35 earlier messages")
    expect(inputs.locator(":scope > .message")).to_have_count(7)  # instructions + last six
    expect(inputs.locator(":scope > .message").first).to_contain_text("research agent")
    expect(inputs.locator(":scope > .message").last).to_contain_text("what did you find?")
    first_turn = inputs.locator(".rendered", has_text="turn 1 of the assistant")
    expect(first_turn).to_be_hidden()
    output = page.get_by_role("list", name="Output messages")
    answer = output.locator(".rendered", has_text="The 21st answer.")
    expect(answer).to_be_visible()
    answer.scroll_into_view_if_needed()
    pane = page.locator("#detail")
    assert pane.evaluate("p => p.scrollTop") < 800  # the answer is near the top
    earlier.click()
    expect(first_turn).to_be_visible()
    shot(pane, tmp_path, "trace-long-conversation")
    page.close()
