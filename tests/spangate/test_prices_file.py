"""SPANGATE_PRICES_FILE: a bad file stops the commands that price model calls."""

from __future__ import annotations

from pathlib import Path

import pytest

from spangate.cli import main


@pytest.mark.parametrize("command", [["worker", "--burst"], ["serve"]])
def test_a_bad_price_file_stops_start_up_naming_its_line(
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
    command: list[str],
) -> None:
    """`spangate worker` and `spangate serve` refuse a price file with a mistake, in
    one line that names the file and the line, before starting anything."""
    prices = tmp_path / "prices.toml"
    prices.write_text("[[model]]\nmatch = 'm'\ninput_per_mtok = 1\noutput_per_mtok = 'x'\n")
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("SPANGATE_DATA_DIR", str(tmp_path / "data"))
    monkeypatch.setenv("SPANGATE_PRICES_FILE", str(prices))
    monkeypatch.delenv("SPANGATE_DATABASE_URL", raising=False)
    assert main(command) == 2
    err = capsys.readouterr().err.strip()
    assert err == (
        f"spangate: error: SPANGATE_PRICES_FILE: {prices}: line 4: output_per_mtok must be a number"
    )
    assert not (tmp_path / "data").exists()  # nothing started, nothing made


def test_a_missing_price_file_is_named(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """A price file that is not there is named in the error, with the setting."""
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("SPANGATE_DATA_DIR", str(tmp_path / "data"))
    monkeypatch.setenv("SPANGATE_PRICES_FILE", str(tmp_path / "nowhere.toml"))
    assert main(["worker", "--burst"]) == 2
    assert "error: SPANGATE_PRICES_FILE: " in (err := capsys.readouterr().err)
    assert "nowhere.toml: cannot be read" in err
