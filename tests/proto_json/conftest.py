"""Every proto_json test runs twice: with the C fast path (when built) and without it."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from proto_json import fastpath


@pytest.fixture(autouse=True, scope="module", params=["fast path", "pure Python"])
def conversion_path(request: pytest.FixtureRequest) -> Iterator[str]:
    """Runs the module's tests with the C fast path on, then with it off."""
    built = fastpath._module
    if request.param == "fast path" and built is None:
        pytest.skip("the C fast path is not built (test_fastpath checks when it must be)")
    if request.param == "pure Python":
        fastpath._module = None
    try:
        yield request.param
    finally:
        fastpath._module = built
