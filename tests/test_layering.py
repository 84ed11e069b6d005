"""The packages' imports point one way: shared parts below, apps above, the CLI on top."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
SHARED = {"proto_json", "genai", "spanqueue", "storage", "service"}
APPS = {"collector", "scores_sidecar", "dashboard", "worker"}
#: What each package may import of the project's packages (besides itself).
ALLOWED = {
    "proto_json": set(),
    "genai": set(),
    "spanqueue": set(),
    "storage": {"proto_json", "genai"},  # no queue: the worker (worker/) reads it
    "service": {"proto_json", "storage"},
    **{app: SHARED for app in APPS},
    "spangate": SHARED | APPS,
}


def imported_packages(path: Path) -> set[str]:
    """The top-level packages a module imports, anywhere in it (functions included)."""
    found: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text(), str(path))):
        if isinstance(node, ast.Import):
            found.update(alias.name.split(".")[0] for alias in node.names)
        elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
            found.add(node.module.split(".")[0])
    return found & set(ALLOWED)


@pytest.mark.parametrize("package", sorted(ALLOWED))
def test_a_package_imports_only_what_is_below_it(package: str) -> None:
    """No shared package imports an app or the CLI, and no app imports another app."""
    wrong = {
        f"{path.relative_to(ROOT)} imports {name}"
        for path in (ROOT / package).rglob("*.py")
        for name in imported_packages(path) - ALLOWED[package] - {package}
    }
    assert not wrong, sorted(wrong)


def test_every_package_is_placed() -> None:
    """A new top-level package gets a place in ALLOWED (setuptools lists them all)."""
    listed = (ROOT / "pyproject.toml").read_text().split("[tool.setuptools]")[1]
    packages = ast.literal_eval(listed.split("packages = ", 1)[1].split("\n", 1)[0])
    assert set(packages) == set(ALLOWED)
