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
    for bad, says in (
        ("https://h example/x", "no space"),
        ("https://h.example/a b", "no space"),
        ("https://h.example\t/x", "no space"),
        ("https://h!.example/x", "not a host name"),
        ("https://h.example:99999/x", "port"),
        ("https://h.example:port/x", "port"),
        ("http://example.com/a\u0085b", "no space"),
        ("http://example.com/a\u00a0b", "no space"),
        ("http://example.com/a\u2028b", "no space"),
        ("http://999.999.999.999/", "not a host name"),
        ("http://1.2.3/", "not a host name"),
        ("http://example.com\\@evil.com/", "backslash"),
    ):
        assert main(["webhooks", "add", "--project", "demo", "--url", bad]) == 1
        assert says in capsys.readouterr().err
    for good in ("http://[::1]:8080/hook", "https://10.0.0.2/x", "https://bücher.example/x"):
        assert main(["webhooks", "add", "--project", "demo", "--url", good]) == 0
    capsys.readouterr()
    assert main(["webhooks", "list", "--project", "demo", "--json"]) == 0
    hooks = orjson.loads(capsys.readouterr().out)
    assert sorted(hook["url"] for hook in hooks) == sorted(
        (
            "https://h.example/x",
            "http://[::1]:8080/hook",
            "https://10.0.0.2/x",
            "https://bücher.example/x",
        )
    )
    assert all(hook["events"] == ["alert.triggered"] for hook in hooks)
