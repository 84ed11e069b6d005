"""Running spangate commands as real processes in tests."""

from __future__ import annotations

import os
import subprocess
import sys
import time
from pathlib import Path

import httpx


def spawn(
    command: list[str], env: dict[str, str], cwd: Path, stdin: int | None = None
) -> subprocess.Popen[bytes]:
    """`spangate COMMAND...` as a child process with a clean SPANGATE_ environment
    (`stdin=subprocess.PIPE` to write to it)."""
    base = {k: v for k, v in os.environ.items() if not k.startswith("SPANGATE_")}
    return subprocess.Popen(
        [sys.executable, "-m", "spangate.cli", *command],
        cwd=cwd,
        env={**base, **env},
        stdin=stdin,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
    )


def wait_healthy(url: str, process: subprocess.Popen[bytes], timeout: float = 30) -> None:
    """Poll url until it answers 200; fail with the process's output if it dies."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if process.poll() is not None:
            out, err = process.communicate()
            raise AssertionError(f"process exited {process.returncode}: {err.decode()[-2000:]}")
        try:
            if httpx.get(url, timeout=1).status_code == 200:
                return
        except httpx.HTTPError:
            pass
        time.sleep(0.1)
    raise AssertionError(f"{url} did not become healthy")


def stop(process: subprocess.Popen[bytes], timeout: float = 60) -> tuple[bytes, bytes]:
    """SIGTERM, then SIGKILL if it is still running after `timeout`; its output."""
    process.terminate()
    try:
        process.wait(timeout=timeout)
    except subprocess.TimeoutExpired:
        process.kill()
    return process.communicate()
