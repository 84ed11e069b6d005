"""Every benchmark command still imports: they run outside the test suite, against the
same code, and a name it uses that the code no longer has would fail only when someone
runs it."""

from __future__ import annotations

import importlib
from pathlib import Path

import pytest

BENCHMARKS = sorted(
    path.stem for path in (Path(__file__).parent.parent / "benchmarks").glob("bench_*.py")
)


def test_every_benchmark_is_found() -> None:
    assert "bench_worker" in BENCHMARKS and "bench_find" in BENCHMARKS


@pytest.mark.parametrize("name", BENCHMARKS)
def test_a_benchmark_imports(name: str) -> None:
    module = importlib.import_module(f"benchmarks.{name}")
    assert callable(module.main)
