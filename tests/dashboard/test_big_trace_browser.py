"""A big trace's waterfall in a real browser: per-subtree totals, zoom on the time axis,
collapse to a depth, previous/next error and find in the trace, across pages."""

from __future__ import annotations

import itertools
import re
from collections.abc import Iterator
from pathlib import Path

import pytest

from dashboard.waterfall import PAGE_ROWS
from storage.database import Database
from storage.identity import IdentityStore
from tests.dashboard.big import FANOUT, NEEDLE, big_run, is_error, is_model_call, span_id
from tests.dashboard.browsing import Browser, Page, expect, launched, serve, shot, sign_in
from tests.dashboard.conftest import store
from tests.dashboard.test_formats import AXIS_LABELS

TRACE = "b1" * 16
COUNT = 2500
NEEDLE_AT = 2345


def _preorder() -> list[int]:
    """The spans' indexes in the waterfall's order (depth first, children by start)."""
    order, stack = [], [0]
    while stack:
        at = stack.pop()
        order.append(at)
        children = [c for c in range(at * FANOUT + 1, at * FANOUT + FANOUT + 1) if c < COUNT]
        stack.extend(reversed(children))
    return order


def _depth(at: int) -> int:
    return 0 if at == 0 else 1 + _depth((at - 1) // FANOUT)


def _page_of(at: int) -> int:
    return POSITION[at] // PAGE_ROWS + 1


def _below(at: int) -> int:
    """How many spans are below the span at `at`."""
    children = [c for c in range(at * FANOUT + 1, at * FANOUT + FANOUT + 1) if c < COUNT]
    return sum(1 + _below(c) for c in children)


ORDER = _preorder()
POSITION = {at: position for position, at in enumerate(ORDER)}
ERRORS = [at for at in ORDER if is_error(at)]


def _fill(db: Database, identity: IdentityStore) -> None:
    store(db, identity.create_project("big", "acme"), big_run(TRACE, COUNT, NEEDLE_AT))


@pytest.fixture(scope="module")
def base(tmp_path_factory: pytest.TempPathFactory, redis_url: str) -> Iterator[str]:
    """The dashboard's base URL, with a 2,500-span trace in project `big`."""
    with serve(tmp_path_factory.mktemp("big"), redis_url, _fill) as urls:
        yield urls["app"]


@pytest.fixture(scope="module")
def browser() -> Iterator[Browser]:
    """Headless Chromium from the system."""
    with launched() as found:
        yield found


def _open(browser: Browser, base: str, query: str = "") -> Page:
    page = browser.new_page(viewport={"width": 1400, "height": 900})
    sign_in(page, base)
    page.goto(f"{base}/projects/big/traces/{TRACE}{query}")
    return page


def _row(page: Page, at: int) -> object:
    return page.locator(f'.span-row[data-span-id="{span_id(at)}"]')


def test_rows_show_what_is_below_them(browser: Browser, base: str, tmp_path: Path) -> None:
    """A span with children shows how many spans, errors and model tokens are below it."""
    page = _open(browser, base)
    below = range(1, COUNT)
    errors = sum(1 for at in below if is_error(at))
    tokens = 15 * sum(1 for at in below if is_model_call(at))
    text = f"{COUNT - 1:,} below · {errors} errors · {tokens:,} tok · "
    # 417 calls of 10 + 5 tokens at gpt-4o's $2.50 and $10 a million: $0.031275
    expect(_row(page, 0).locator(".subtree")).to_have_text(re.compile(rf"^{text}\$0\.0312\d+$"))
    expect(_row(page, 1).locator(".subtree")).to_have_text(re.compile(f"^{_below(1):,} below · "))
    shot(page, tmp_path, "big-trace")
    page.close()


def test_zoom_by_buttons_and_drag_is_kept_in_the_url(
    browser: Browser, base: str, tmp_path: Path
) -> None:
    """Zoom in doubles the bars and the URL keeps the window (a reload too); a drag
    across the axis zooms to that range; Reset zoom undoes it."""
    page = _open(browser, base)
    root_bar = _row(page, 0).locator(".bar")
    track = _row(page, 0).locator(".track").bounding_box()
    assert track is not None
    page.get_by_role("button", name="Zoom in").click()
    expect(page).to_have_url(re.compile(r"zoom=0\.2500-0\.7500"))
    pager = page.get_by_role("navigation", name="Waterfall pages")
    pager.get_by_role("link", name="2").click()  # another page keeps the zoom
    expect(page).to_have_url(re.compile(r"page=2&zoom=0\.2500-0\.7500"))
    pager.get_by_role("link", name="1").click()
    expect(page).to_have_url(re.compile(r"page=1&zoom=0\.2500-0\.7500"))
    page.reload()
    ticks = page.locator(".axis .tick")
    expect(ticks.first).to_have_text("2.50 s")
    expect(ticks.last).to_have_text("7.50 s")
    box = root_bar.bounding_box()
    assert box is not None and box["width"] > 1.9 * track["width"]  # clipped by the track
    page.get_by_role("button", name="Reset zoom").click()
    expect(page).not_to_have_url(re.compile("zoom="))
    axis = page.locator(".axis").bounding_box()
    assert axis is not None
    page.mouse.move(axis["x"] + axis["width"] * 0.5, axis["y"] + 5)
    page.mouse.down()
    page.mouse.move(axis["x"] + axis["width"] * 0.6, axis["y"] + 5, steps=4)
    shot(page, tmp_path, "big-trace-dragging")
    page.mouse.up()
    expect(page).to_have_url(re.compile(r"zoom=0\.\d{4}-0\.\d{4}"))
    window = [float(n) for n in page.url.split("zoom=")[1].split("-")]
    assert abs(window[0] - 0.5) < 0.01 and abs(window[1] - 0.6) < 0.01
    expect(ticks.first).to_have_text(re.compile(r"^(4\.9\d|5\.0\d) s$"))
    shot(page, tmp_path, "big-trace-zoomed")
    page.close()


def test_the_script_labels_the_axis_as_the_server_does(browser: Browser, base: str) -> None:
    """A zoomed axis's labels are the script's: in one unit, as the page's first are."""
    page = _open(browser, base)
    for total, labels in AXIS_LABELS:
        shown = [
            page.evaluate("(a) => tickText(a[0], a[1])", [total * i / 4, total]) for i in range(5)
        ]
        assert shown == labels, total
    page.close()


def test_the_details_pane_stays_in_view(browser: Browser, base: str) -> None:
    """A span selected far down the waterfall shows its details in view, beside it."""
    page = _open(browser, base)
    deep = ORDER[PAGE_ROWS - 5 if COUNT > PAGE_ROWS else -5]
    _row(page, deep).locator(".label a").click()
    expect(page.locator("#detail h2")).to_have_text(f"task {deep}")
    pane = page.locator("#detail").bounding_box()
    row = _row(page, deep).bounding_box()
    assert pane is not None and row is not None
    assert 0 <= pane["y"] <= row["y"] <= 900 and pane["y"] + pane["height"] <= 900 + 1
    page.close()


def test_collapse_to_depth(browser: Browser, base: str) -> None:
    """Depth 1 leaves the root; depth 2 the root and its children (those the page
    shows); all open again."""
    page = _open(browser, base)
    shown = ORDER[:PAGE_ROWS]
    visible = page.locator(".span-row[data-span-id]:visible")
    page.get_by_label("Collapse to depth").select_option("1")
    expect(visible).to_have_count(1)
    page.get_by_label("Collapse to depth").select_option("2")
    expect(visible).to_have_count(sum(1 for at in shown if _depth(at) < 2))
    expect(page.get_by_role("button", name="Expand task 1", exact=True)).to_be_visible()
    page.get_by_label("Collapse to depth").select_option("")
    expect(visible).to_have_count(len(shown))
    page.close()


def test_next_and_previous_error_cross_pages(browser: Browser, base: str) -> None:
    """Next error selects the first error span; Previous error from there wraps to the
    last, on the waterfall's last page, and shows it."""
    page = _open(browser, base)
    page.get_by_role("button", name="Next error").click()
    first = ERRORS[0]
    expect(_row(page, first)).to_have_class(re.compile("selected"))
    expect(page.locator("#detail h2")).to_have_text(f"task {first}")
    page.get_by_role("button", name="Previous error").click()
    last = ERRORS[-1]
    if _page_of(last) > 1:
        expect(page).to_have_url(re.compile(f"page={_page_of(last)}"))
    expect(page.locator("#detail h2")).to_have_text(f"task {last}")
    expect(_row(page, last)).to_have_class(re.compile("selected"))
    expect(_row(page, last)).to_be_in_viewport()  # the row gone to, not the page's top
    page.close()


def test_find_in_the_trace_goes_to_an_attribute_match(
    browser: Browser, base: str, tmp_path: Path
) -> None:
    """Find looks in attributes too: the one span holding the needle, on another page, is
    gone to and shown; the model's name matches every model call, those of the page
    marked."""
    page = _open(browser, base)
    page.get_by_label("Find in trace").fill(NEEDLE.upper())
    page.get_by_role("button", name="Next match").click()
    if _page_of(NEEDLE_AT) > 1:
        expect(page).to_have_url(re.compile(f"page={_page_of(NEEDLE_AT)}"))
    expect(page.locator("#detail h2")).to_have_text(f"task {NEEDLE_AT}")
    expect(page.locator("#find-count")).to_have_text("1 of 1")
    page.get_by_label("Find in trace").fill("gpt-4o")
    page.get_by_role("button", name="Next match").click()
    calls = [at for at in ORDER if is_model_call(at)]
    here = _page_of(NEEDLE_AT)
    after = next(n for n, at in enumerate(calls) if POSITION[at] > POSITION[NEEDLE_AT])
    expect(page.locator("#find-count")).to_have_text(f"{after + 1} of {len(calls)}")
    on_page = [at for at in calls if _page_of(at) == here]
    expect(page.locator(".span-row.match")).to_have_count(len(on_page))
    shot(page, tmp_path, "big-trace-find")
    # a refusal (the store not answering, say) says its reason
    refusal = '{"error": {"code": "STORAGE_ERROR", "message": "the database is not answering"}}'
    page.route("**/find?*", lambda route: route.fulfill(status=503, body=refusal))
    page.get_by_label("Find in trace").fill("another")
    page.get_by_role("button", name="Next match").click()
    expect(page.locator("#find-count")).to_have_text("cannot search: the database is not answering")
    page.close()


@pytest.mark.parametrize("javascript", [True, False])
def test_the_time_axis_labels_never_run_together(
    browser: Browser, base: str, tmp_path: Path, javascript: bool
) -> None:
    """At any width, with a span selected or not, with JavaScript or without, each
    label of the time axis ends before the next begins (a narrow axis shows three, or
    its two ends)."""
    context = browser.new_context(java_script_enabled=javascript)
    page = context.new_page()
    sign_in(page, base)
    for width in (1400, 1024, 800):
        page.set_viewport_size({"width": width, "height": 900})
        for query in ("", f"?span={span_id(1)}"):
            page.goto(f"{base}/projects/big/traces/{TRACE}{query}")
            boxes = [
                box
                for tick in page.locator(".axis .tick").all()
                if tick.is_visible() and (box := tick.bounding_box()) is not None
            ]
            assert len(boxes) in (2, 3, 5), (width, query)
            ends = [(b["x"], b["x"] + b["width"]) for b in sorted(boxes, key=lambda b: b["x"])]
            gaps = [start - end for (_, end), (start, _) in itertools.pairwise(ends)]
            assert min(gaps) >= 4, (width, query, ends)
    shot(page, tmp_path, f"big-trace-axis-{'js' if javascript else 'no-js'}")
    context.close()
