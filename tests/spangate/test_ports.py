"""The ports check that runs before serve and each part start anything."""

from __future__ import annotations

import re
import socket

import pytest

from service.settings import Settings
from spangate.cli import main
from spangate.embedded_redis import free_port
from spangate.ports import PORTS, PortTaken, check_ports


def _settings(**given: object) -> Settings:
    ports = {"ingest_port": free_port(), "api_port": free_port(), "app_port": free_port()}
    return Settings(**{**ports, **given})  # type: ignore[arg-type]


def test_free_ports_pass_and_a_listened_one_is_named_with_its_setting() -> None:
    """Free ports pass; a port being listened on names itself, its part and its setting."""
    settings = _settings()
    check_ports(settings, ["collector", "sidecar", "dashboard"])
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", settings.api_port))
        taken.listen()
        with pytest.raises(PortTaken, match=f"port {settings.api_port} .* the sidecar .* "
                                             "SPANGATE_API_PORT"):  # fmt: skip
            check_ports(settings, ["collector", "sidecar", "dashboard"])


def test_a_host_that_is_not_this_machine_names_the_host_setting() -> None:
    """A host name that does not resolve, or an address of another machine, says to
    check SPANGATE_HOST rather than that a port is taken."""
    for host in ("no-such-host.invalid", "192.0.2.1"):
        with pytest.raises(PortTaken, match="check SPANGATE_HOST"):
            check_ports(_settings(host=host), ["dashboard"])


def test_serve_help_names_each_port_and_the_data_directory_with_its_default(
    capsys: pytest.CaptureFixture[str],
) -> None:
    """What a new user moves a first run with, shown with the defaults the parts use and
    read by the settings under the names shown."""
    with pytest.raises(SystemExit):
        main(["serve", "--help"])
    shown = dict(re.findall(r"^  (SPANGATE_\w+) +(\S+)", capsys.readouterr().out, re.M))
    fields = {variable: field for field, variable in PORTS.values()}
    fields |= {
        "SPANGATE_HOST": "host",
        "SPANGATE_DATA_DIR": "data_dir",
        "SPANGATE_WORKER_METRICS_PORT": "worker_metrics_port",
    }
    assert {name: shown.get(name) for name in fields} == {
        name: str(getattr(Settings(), field)) for name, field in fields.items()
    }
    moved = Settings.from_env({name: "4999" for name in fields})
    assert all(str(getattr(moved, field)) == "4999" for field in fields.values())
