"""The hypothesis profile of the suite's generated-input tests.

SPANGATE_FUZZ_EXAMPLES=20000 searches longer than the suite's 200 examples a test (and
the tests of transactions at once run a round for each 50: ROUNDS).
"""

from __future__ import annotations

import os

from hypothesis import HealthCheck, settings

EXAMPLES = int(os.environ.get("SPANGATE_FUZZ_EXAMPLES", "200"))
FUZZ = settings(
    max_examples=EXAMPLES,
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow],
)
#: Rounds of a test of transactions at once (threads: no example to shrink).
ROUNDS = max(1, EXAMPLES // 50)
