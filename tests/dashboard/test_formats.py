"""How amounts read on the pages."""

from __future__ import annotations

import re

import pytest

from dashboard.formats import axis_tick, breakable, millis, model_html, nanos, usd


@pytest.mark.parametrize(
    ("value", "text"),
    [
        (None, "—"),
        (0.0, "$0"),
        (4.725e-05, "$0.00004725"),  # a cheap model call: written out, not 4.725e-05
        (3e-09, "$0.000000003"),
        (0.0123, "$0.0123"),
        (0.5, "$0.50"),
        (0.01, "$0.01"),
        (0.99999, "$1.00"),
        (1234.5, "$1,234.50"),
    ],
)
def test_a_cost_is_written_out_to_four_significant_places(value: float | None, text: str) -> None:
    assert usd(value) == text


def test_a_sum_shows_alike_whatever_order_it_was_added_in() -> None:
    """A trace's total and the root's spans below add the same costs in other orders:
    the last bits differ, the text does not."""
    costs = [0.00060915, 0.0006573, 0.00009105]  # three calls' costs: 0.0013575
    assert sum(costs) != sum(reversed(costs))  # the float sums differ in their last bits
    assert usd(sum(costs)) == usd(sum(reversed(costs)))


@pytest.mark.parametrize(
    ("ms", "text"),
    [
        (None, "not ended"),
        (0, "0 ms"),
        (0.042, "0.042 ms"),
        (12.34, "12.3 ms"),
        (4560, "4.56 s"),
        (59_994, "59.99 s"),
        (122_000, "2 min 2 s"),
        (240_934_730, "2 d 18 h"),  # a session of days, not 240934.73 s
        (3_600_000 * 3 + 12 * 60_000, "3 h 12 min"),
        (-60_000, "ends 1 min 0 s before its start"),  # an end sent earlier than the start
    ],
)
def test_a_duration_reads_in_the_unit_that_suits_it(ms: float | None, text: str) -> None:
    assert millis(ms) == text


#: An axis's length in ms, and its five labels (at 0, 1/4, 1/2, 3/4 and all of it) as the
#: waterfall shows them: in the unit of the last one.
AXIS_LABELS = [
    (0.8, ["0.000 ms", "0.200 ms", "0.400 ms", "0.600 ms", "0.800 ms"]),
    (250, ["0.0 ms", "62.5 ms", "125.0 ms", "187.5 ms", "250.0 ms"]),
    (10_000, ["0.00 s", "2.50 s", "5.00 s", "7.50 s", "10.00 s"]),
    (120_000, ["0 s", "30 s", "1 min 0 s", "1 min 30 s", "2 min 0 s"]),
    (3 * 3_600_000, ["0 min", "45 min", "1 h 30 min", "2 h 15 min", "3 h 0 min"]),
    (2 * 86_400_000, ["0 h", "12 h", "1 d 0 h", "1 d 12 h", "2 d 0 h"]),
    # a length just under a unit's: its last label rounds up into it, and so do the others
    (3_599_999, ["0 min", "15 min", "30 min", "45 min", "1 h 0 min"]),
    (86_399_600, ["0 h", "6 h", "12 h", "18 h", "1 d 0 h"]),
    # halves round up, as the script's Math.round and toFixed do
    (122_000, ["0 s", "31 s", "1 min 1 s", "1 min 32 s", "2 min 2 s"]),
    (4_500, ["0.00 s", "1.13 s", "2.25 s", "3.38 s", "4.50 s"]),
]


@pytest.mark.parametrize(("total", "labels"), AXIS_LABELS)
def test_the_time_axis_labels_read_in_one_unit(total: float, labels: list[str]) -> None:
    """Not 30.00 s beside 1 min 0 s: every label of an axis in its last label's unit."""
    assert [axis_tick(total * i / 4, total) for i in range(5)] == labels


def test_a_models_name_breaks_before_its_date_alone() -> None:
    """A provider's date suffix (2024-08-06 or 20241022) is its own part; a name without
    one is one part; the text is escaped."""
    parts = re.compile(r'<span class="part">([^<]*)</span>')
    assert parts.findall(model_html("gpt-4o-2024-08-06")) == ["gpt-4o", "-2024-08-06"]
    assert parts.findall(model_html("claude-3-5-sonnet-20241022")) == [
        "claude-3-5-sonnet",
        "-20241022",
    ]
    assert parts.findall(model_html("gpt-4o-mini")) == ["gpt-4o-mini"]
    assert parts.findall(model_html("<b>-2024-01-01")) == ["&lt;b&gt;", "-2024-01-01"]
    assert 'title="&lt;b&gt;-2024-01-01"' in model_html("<b>-2024-01-01")


def test_a_time_reads_to_the_second_and_is_exact_on_hover() -> None:
    """Without the page's script a time is UTC to the second (a list's column of them
    stays one line a time); its title keeps the microseconds."""
    html = str(nanos(1_795_000_000_123_456_789))
    assert html == (
        '<time data-ms="1795000000123" title="2026-11-18 11:06:40.123456 UTC">'
        "2026-11-18 11:06:40 UTC</time>"
    )


def test_an_id_breaks_after_its_separators() -> None:
    """A user's or a session's id may break after @ . - _ / : (never at its end), and
    stays escaped."""
    assert breakable("carol@acme.io") == "carol@<wbr>acme.<wbr>io"
    assert breakable("session-7f3a-") == "session-<wbr>7f3a-"
    assert breakable("<b>&x_y") == "&lt;b&gt;&amp;x_<wbr>y"
    assert breakable(None) == ""
