"""The hypothesis profile of the suite's generated-input tests.

SPANGATE_FUZZ_EXAMPLES=20000 searches longer than the suite's 200 examples a test.
"""

from __future__ import annotations

import os

from hypothesis import HealthCheck, settings

FUZZ = settings(
    max_examples=int(os.environ.get("SPANGATE_FUZZ_EXAMPLES", "200")),
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow],
)
