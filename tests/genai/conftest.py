from __future__ import annotations

from collections.abc import Iterator

import pytest

from tests.genai.instrumented import Instrumented, every_pair


@pytest.fixture(scope="session")
def instrumented() -> Iterator[Instrumented]:
    """Every (library, scenario) run once per pytest run, all queued at once, read as needed."""
    harness = Instrumented()
    harness.prefetch(every_pair())
    yield harness
    harness.close()
