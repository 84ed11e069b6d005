"""Ratios that survive a noisy shared machine: paired, interleaved, median of many rounds."""

from __future__ import annotations

import statistics
import time
from collections.abc import Callable


def seconds_per_call(fn: Callable[[], object], budget: float) -> float:
    """Mean seconds per call of fn over about `budget` seconds (at least one call)."""
    calls = 0
    start = time.perf_counter()
    while True:
        fn()
        calls += 1
        elapsed = time.perf_counter() - start
        if elapsed >= budget:
            return elapsed / calls


def paired_ratio(
    baseline: Callable[[], object], subject: Callable[[], object], seconds: float, rounds: int = 15
) -> tuple[float, float, float]:
    """(median subject/baseline cost ratio, best baseline s/call, best subject s/call).

    Each round times the baseline and the subject back to back, alternating which goes
    first, so a slow spell of the host hits both sides of a ratio alike.
    """
    ratios: list[float] = []
    best_base = best_subject = float("inf")
    budget = seconds / (2 * rounds)
    for round_no in range(rounds):
        if round_no % 2:
            sub = seconds_per_call(subject, budget)
            base = seconds_per_call(baseline, budget)
        else:
            base = seconds_per_call(baseline, budget)
            sub = seconds_per_call(subject, budget)
        ratios.append(sub / base)
        best_base, best_subject = min(best_base, base), min(best_subject, sub)
    return statistics.median(ratios), best_base, best_subject
