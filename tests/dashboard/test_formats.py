"""How amounts read on the pages."""

from __future__ import annotations

import pytest

from dashboard.formats import usd


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
