"""The playground as a coach's browser meets it: `streamlit run app.py` headless on a free
127.0.0.1 port, with no model configured and a policy store of its own. Shared by the rerun
benchmark (`bench.server_rerun`) and the browser tests (tests/playground/conftest.py)."""

from __future__ import annotations

import os
import socket
import subprocess
import sys
import time
import urllib.request
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Final

from coachctx.model import SETTING_KEYS

ROOT: Final = Path(__file__).resolve().parents[1]
APP: Final = ROOT / "app.py"
START_TIMEOUT_S: Final = 60
CHROMIUM: Final = os.environ.get("COACHCTX_CHROMIUM", "/usr/bin/chromium")  # Debian's package
CHROMIUM_ARGS: Final = ["--no-sandbox", "--disable-gpu", "--disable-background-networking",
                        "--disable-component-update", "--disable-sync"]


def free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind(("127.0.0.1", 0))
        port: int = s.getsockname()[1]
        return port


def start_server(port: int, workdir: Path) -> subprocess.Popen[bytes]:
    """The server, its output in `workdir`/server.log and its policy store in `workdir`: no model
    setting of the caller's environment reaches it, so the page never reaches the network."""
    env = {k: v for k, v in os.environ.items() if k not in SETTING_KEYS}
    env["COACHCTX_STORE"] = f"sqlite:///{workdir / 'store.sqlite'}"
    with (workdir / "server.log").open("wb") as log:
        return subprocess.Popen(
            [sys.executable, "-m", "streamlit", "run", str(APP), "--server.headless", "true",
             "--server.port", str(port), "--server.address", "127.0.0.1", "--browser.gatherUsageStats", "false",
             "--server.fileWatcherType", "none"],
            cwd=ROOT, stdout=log, stderr=subprocess.STDOUT, env=env)


def wait_healthy(url: str, proc: subprocess.Popen[bytes], timeout_s: float = START_TIMEOUT_S) -> str | None:
    """None once the server answers its health check, else why it did not."""
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            return f"streamlit exited with {proc.returncode}"
        try:
            with urllib.request.urlopen(f"{url}/_stcore/health", timeout=2) as response:
                if response.read().strip() == b"ok":
                    return None
        except OSError:
            pass
        time.sleep(0.25)
    return f"streamlit was not healthy after {timeout_s:g} s"


def stop_server(proc: subprocess.Popen[bytes]) -> None:
    proc.terminate()
    try:
        proc.wait(timeout=10)
    except subprocess.TimeoutExpired:
        proc.kill()
        proc.wait(timeout=10)


@contextmanager
def running_server(workdir: Path) -> Iterator[tuple[str, subprocess.Popen[bytes]]]:
    """(its address, the process) of a server started in `workdir`, stopped on the way out; the
    caller waits for it (`wait_healthy`) and decides what an unhealthy one means."""
    port = free_port()
    proc = start_server(port, workdir)
    try:
        yield f"http://127.0.0.1:{port}", proc
    finally:
        stop_server(proc)
