"""`spangate alerts|webhooks add|list`, as an operator types them."""

from __future__ import annotations

from pathlib import Path

import orjson
import pytest

from spangate.cli import main


@pytest.fixture(autouse=True)
def data_dir(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("SPANGATE_DATA_DIR", str(tmp_path / "data"))
    monkeypatch.delenv("SPANGATE_DATABASE_URL", raising=False)
    assert main(["projects", "create", "demo"]) == 0


def test_alert_rules(capsys: pytest.CaptureFixture[str]) -> None:
    """alerts add stores an active rule; alerts list --json shows it."""
    assert (
        main(["alerts", "add", "--project", "demo", "--name", "errors", "--condition", "e>1"]) == 0
    )
    capsys.readouterr()
    assert main(["alerts", "list", "--project", "demo", "--json"]) == 0
    (rule,) = orjson.loads(capsys.readouterr().out)
    assert (rule["name"], rule["condition"], rule["status"]) == ("errors", "e>1", "active")
    assert main(["alerts", "add", "--project", "nope", "--name", "x", "--condition", "y"]) == 1


def test_webhooks(capsys: pytest.CaptureFixture[str]) -> None:
    """webhooks add takes http(s) URLs only; webhooks list --json shows them."""
    assert main(["webhooks", "add", "--project", "demo", "--url", "https://h.example/x"]) == 0
    assert main(["webhooks", "add", "--project", "demo", "--url", "ftp://h.example/x"]) == 1
    assert "http:// or https://" in capsys.readouterr().err
    assert main(["webhooks", "list", "--project", "demo", "--json"]) == 0
    (hook,) = orjson.loads(capsys.readouterr().out)
    assert hook["url"] == "https://h.example/x" and hook["events"] == ["alert.triggered"]
