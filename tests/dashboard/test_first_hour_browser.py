"""What a first hour with the dashboard found, fixed, in a real browser: the score form
follows the selected span, datasets from an empty form and from a span, the CSV export's
columns, local and relative times, and the API keys page's exporter setup."""

from __future__ import annotations

import csv
import io
import re
import shlex
import subprocess
import sys
from collections.abc import Iterator
from datetime import UTC, datetime
from pathlib import Path

import orjson
import pytest

from storage.database import Database
from storage.identity import IdentityStore
from tests.dashboard.browsing import Browser, Page, expect, launched, serve, shot, sign_in
from tests.dashboard.conftest import store
from tests.dashboard.reading import CALL, TOOL, TRACE, reading_run
from tests.dashboard.served import forget_queue

SENT = "sent by the exporter"


def _fill(db: Database, identity: IdentityStore) -> None:
    store(db, identity.create_project("demo", "acme"), reading_run())


@pytest.fixture(scope="module")
def served(tmp_path_factory: pytest.TempPathFactory, redis_url: str) -> Iterator[dict[str, str]]:
    """The dashboard and collector, with the hard-to-read trace in project `demo`."""
    root = tmp_path_factory.mktemp("first-hour")
    with serve(root, redis_url, _fill) as urls:
        yield urls
    db = Database(f"sqlite:///{root / 'spangate.db'}")
    forget_queue(redis_url, IdentityStore(db).project("demo").id)
    db.close()


@pytest.fixture(scope="module")
def browser() -> Iterator[Browser]:
    """Headless Chromium from the system."""
    with launched() as found:
        yield found


def _page(browser: Browser, base: str, **options: str) -> Page:
    page = browser.new_page(viewport={"width": 1400, "height": 900}, **options)  # type: ignore[arg-type]
    sign_in(page, base)
    return page


def test_the_score_form_follows_the_selected_span(
    browser: Browser, served: dict[str, str], tmp_path: Path
) -> None:
    """Selecting a span without a reload puts it in the score form, and the score given
    is that span's."""
    page = _page(browser, served["app"])
    page.goto(f"{served['app']}/projects/demo/traces/{TRACE}")
    expect(page.get_by_label("Span", exact=True)).to_have_value("")
    page.locator(f'.span-row[data-span-id="{TOOL}"] .label a').click()
    expect(page.get_by_label("Span", exact=True)).to_have_value(TOOL)
    page.get_by_label("Score", exact=True).fill("0.25")
    page.get_by_role("button", name="Add score").click()
    row = page.get_by_role("region", name="Scores").get_by_role("row").filter(has_text="0.250")
    expect(row.get_by_role("cell", name=TOOL)).to_be_visible()
    created = row.locator("time")  # local time, UTC on hover, like every time shown
    expect(created).to_have_attribute("title", re.compile(r"^\d{4}-\d\d-\d\d .* UTC$"))
    expect(created).to_have_text(
        re.compile(r"^\d{4}-\d\d-\d\d \d\d:\d\d:\d\d \(\d+ (s|min|h) ago\)$")
    )
    shot(page.get_by_role("region", name="Scores"), tmp_path, "first-hour-score")
    page.close()


def test_a_new_dataset_starts_empty_and_saves(
    browser: Browser, served: dict[str, str], tmp_path: Path
) -> None:
    """The New dataset form's items box is empty, and the form saves as it is, named."""
    page = _page(browser, served["app"])
    page.goto(f"{served['app']}/projects/demo/datasets")
    page.get_by_role("link", name="New dataset").click()
    expect(page.get_by_label("Items")).to_have_value("")
    page.get_by_label("Name").fill("empty one")
    shot(page, tmp_path, "first-hour-dataset-form")
    page.get_by_role("button", name="Create dataset").click()
    expect(page.get_by_role("heading", name="empty one")).to_be_visible()
    expect(page.get_by_label("Items")).to_have_value("[]")
    page.close()


def test_add_a_span_to_a_dataset(browser: Browser, served: dict[str, str], tmp_path: Path) -> None:
    """ "Add to dataset" on a span makes (or extends) a dataset with its input as
    `input` and its output as `expected`."""
    page = _page(browser, served["app"])
    for _ in range(2):
        page.goto(f"{served['app']}/projects/demo/traces/{TRACE}")
        page.locator(f'.span-row[data-span-id="{TOOL}"] .label a').click()
        page.get_by_label("Dataset").fill("golden")
        page.get_by_role("button", name="Add to dataset").click()
        expect(page.get_by_role("heading", name="golden")).to_be_visible()
    items = orjson.loads(page.get_by_label("Items").input_value())
    assert len(items) == 2
    assert items[0]["input"] == {"order": 7}
    assert items[0]["expected"].endswith("ValueError: bad order")
    page.goto(f"{served['app']}/projects/demo/traces/{TRACE}?span={CALL}")
    expect(page.get_by_label("Dataset")).to_have_value("empty one")  # the first by name
    page.get_by_label("Dataset").fill("chats")
    page.get_by_role("button", name="Add to dataset").click()
    (item,) = orjson.loads(page.get_by_label("Items").input_value())
    assert [m["role"] for m in item["input"]] == ["system", "user", "assistant", "tool"]
    assert item["expected"].startswith("It **ships** today.")
    shot(page, tmp_path, "first-hour-add-to-dataset")
    page.close()


def test_the_csv_export_names_statuses_and_gives_attributes_as_one_object(
    browser: Browser, served: dict[str, str], tmp_path: Path
) -> None:
    """The list's Export CSV: status `error`, not 2; attributes one JSON object a span."""
    page = _page(browser, served["app"])
    page.goto(f"{served['app']}/projects/demo/traces")
    with page.expect_download() as download:
        page.get_by_role("link", name="Export CSV").click()
    saved = tmp_path / "export.csv"
    download.value.save_as(saved)
    rows = {r["spanId"]: r for r in csv.DictReader(io.StringIO(saved.read_text()))}
    assert rows[TOOL]["status"] == "error" and rows[CALL]["status"] == "unset"
    attributes = orjson.loads(rows[TOOL]["attributes"])
    assert attributes["gen_ai.tool.name"] == "lookup"
    page.close()


def test_times_read_local_and_relative_with_utc_on_hover(
    browser: Browser, served: dict[str, str], tmp_path: Path
) -> None:
    """In Tokyo, five minutes after it, a trace's start reads in Tokyo time and "5 min
    ago"; its title is UTC."""
    page = _page(browser, served["app"], timezone_id="Asia/Tokyo")
    page.clock.set_fixed_time(datetime(2026, 11, 22, 10, 5, tzinfo=UTC))
    page.goto(f"{served['app']}/projects/demo/traces/{TRACE}")
    start = page.locator("dl.facts time").first
    expect(start).to_have_attribute("title", "2026-11-22 10:00:00.000000 UTC")
    expect(start).to_have_text("2026-11-22 19:00:00 (5 min ago)")
    page.locator(f'.span-row[data-span-id="{TOOL}"] .label a').click()
    expect(page.locator("#detail dl.facts time")).to_contain_text("2026-11-22 19:00:02")
    shot(page.locator("dl.facts").first, tmp_path, "first-hour-times")
    page.close()


def test_a_time_range_typed_reads_in_local_time(
    browser: Browser, served: dict[str, str], tmp_path: Path
) -> None:
    """In New York, a range typed without an offset around the trace's start as shown
    (05:00, 10:00 UTC) finds it: it is read in local time, as the page shows times;
    without JavaScript the fields say UTC."""
    page = _page(browser, served["app"], timezone_id="America/New_York")
    page.goto(f"{served['app']}/projects/demo/traces")
    expect(page.locator("label[for=from]")).to_have_text("From local time")
    page.get_by_label("From").fill("2026-11-22T04:59")
    page.locator("#to").fill("2026-11-22 05:01")
    page.get_by_label("From").press("Enter")
    expect(page.locator("a.trace-id")).to_have_text([TRACE])
    expect(page.get_by_label("From")).to_have_value("2026-11-22T04:59:00-05:00")
    expect(page.locator("#to")).to_have_value("2026-11-22T05:01:00-05:00")
    shot(page.locator("form").first, tmp_path, "first-hour-local-range")
    page.close()
    bare = browser.new_page(java_script_enabled=False)
    sign_in(bare, served["app"])
    bare.goto(f"{served['app']}/projects/demo/traces")
    expect(bare.locator("label[for=from]")).to_have_text("From UTC")
    bare.close()


@pytest.mark.parametrize(
    ("typed", "sent"),
    [
        ("2026-01-15T10:30", "2026-01-15T10:30:00+01:00"),
        ("2026-01-15 10:30:05,25", "2026-01-15T10:30:05.25+01:00"),
        ("2026-01-15T10", "2026-01-15T10:00:00+01:00"),  # to the hour
        ("20260115T103005", "2026-01-15T10:30:05+01:00"),  # ISO 8601's basic form
        ("2026-07-15", "2026-07-15T00:00:00+02:00"),  # summer time
        ("2026-03-29T02:30", "2026-03-29T03:30:00+02:00"),  # skipped by the change
        ("2026-10-25T02:30", "2026-10-25T02:30:00+02:00"),  # twice: the first
        ("2026-01-15T10:30+05:00", "2026-01-15T10:30+05:00"),  # an offset: as typed
        ("1768469400000", "1768469400000"),  # Unix milliseconds
    ],
)
def test_a_typed_time_is_sent_as_the_browser_reads_it(
    browser: Browser, served: dict[str, str], typed: str, sent: str
) -> None:
    """In Berlin: every form of a time without an offset is sent with the one the
    browser reads it in, a time a clock change skips moved on by it; a time with an
    offset, or Unix milliseconds, is sent as typed."""
    page = _page(browser, served["app"], timezone_id="Europe/Berlin")
    page.goto(f"{served['app']}/projects/demo/traces")
    assert page.evaluate("(typed) => withLocalOffset(typed)", typed) == sent
    page.close()


def _run(code: str, env: dict[str, str] | None = None, command: tuple[str, ...] = ()) -> None:
    """Run `code` (then a span sent, and the provider shut down) in a new Python, under
    `command` when given."""
    script = code + f"\ntrace.get_tracer('setup').start_span({SENT!r}).end()\n"
    script += "trace.get_tracer_provider().shutdown()\n"
    done = subprocess.run(
        [*command, sys.executable, "-c", script],
        env=env,
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert done.returncode == 0 and not done.stderr, done.stderr


def _exported(block: str) -> dict[str, str]:
    """The variables of a block of `export NAME=value` lines, as a shell would set them."""
    found = {}
    for line in block.splitlines():
        name, _, value = line.removeprefix("export ").partition("=")
        found[name] = shlex.split(value)[0]
    return found


def test_the_api_keys_page_gives_a_working_exporter_setup(
    browser: Browser, served: dict[str, str], tmp_path: Path
) -> None:
    """After Create key, the page's environment variables and Python setup name the
    collector and the new key, and each, pasted as it is, sends a span that is accepted."""
    page = _page(browser, served["app"])
    page.goto(f"{served['app']}/projects/demo/settings/api-keys")
    expect(page.locator("#setup-python")).to_contain_text("YOUR_API_KEY")
    page.get_by_role("button", name="Create key").click()
    secret = page.locator("#new-key").inner_text()
    expect(page.locator("#collector-url")).to_have_text(served["ingest"])
    python = page.locator("#setup-python").inner_text()
    assert f"Bearer {secret}" in python and f"{served['ingest']}/v1/traces" in python
    shot(page.get_by_role("region", name="Send traces"), tmp_path, "first-hour-api-keys")
    _run(python)
    env = {"PATH": "/usr/bin:/bin", **_exported(page.locator("#setup-env").inner_text())}
    _run(
        "from opentelemetry import trace\n"
        "from opentelemetry.exporter.otlp.json.http.trace_exporter import OTLPSpanExporter\n"
        "from opentelemetry.sdk.trace import TracerProvider\n"
        "from opentelemetry.sdk.trace.export import BatchSpanProcessor\n"
        "provider = TracerProvider()\n"
        "provider.add_span_processor(BatchSpanProcessor(OTLPSpanExporter()))\n"
        "trace.set_tracer_provider(provider)\n",
        env,
    )
    # the SDK configured by opentelemetry-instrument (opentelemetry-distro), from the
    # variables alone
    env |= _exported(page.locator("#setup-instrument").inner_text())
    instrument = Path(sys.executable).with_name("opentelemetry-instrument")
    _run("from opentelemetry import trace\n", env, (str(instrument),))
    answer = page.request.get(f"{served['app']}/api/v1/projects/demo/ingestion")
    sent = [r for r in answer.json()["requests"] if r["route"] == "/v1/traces"]
    assert [(r["status"], r["accepted"], r["keyPrefix"]) for r in sent] == [
        (200, 1, secret[:12])
    ] * 3
    page.close()
