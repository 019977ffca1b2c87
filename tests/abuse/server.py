"""A real ``wmap serve`` subprocess over the bundled sample, on 127.0.0.1, for the abuse
suite: attacks go over real sockets to a server process of its own (a CPU-bound attack
cannot stall the test's own event loop)."""

from __future__ import annotations

import contextlib
import os
import socket
import subprocess
import sys
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import httpx

REPO = Path(__file__).resolve().parent.parent.parent
SAMPLE = REPO / "server" / "workload_map" / "sample"
START_TIMEOUT_S = 60.0


@dataclass
class Served:
    """A running server: its base URL, port, state directory and process."""

    base: str
    port: int
    state_dir: Path
    process: subprocess.Popen[bytes]
    log: Path

    def log_text(self) -> str:
        """What the server logged so far."""
        return self.log.read_text(encoding="utf-8", errors="replace")


def free_port() -> int:
    """A TCP port free on 127.0.0.1 right now."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


@contextlib.contextmanager
def serve(tmp: Path, *flags: str) -> Iterator[Served]:
    """Run ``wmap serve --snapshot server/workload_map/sample`` with ``flags`` until the block ends.

    Raises:
        RuntimeError: the server did not answer /readyz 200 within 60 s (its log is in the
            message).
    """
    port = free_port()
    state, log = tmp / "state", tmp / "server.log"
    env = {k: v for k, v in os.environ.items() if not k.startswith("WMAP_")}
    env["KUBECONFIG"] = str(tmp / "no-kubeconfig")
    command = [sys.executable, "-m", "workload_map", "serve", "--host", "127.0.0.1", "--port", str(port),
               "--snapshot", str(SAMPLE), "--state-dir", str(state), *flags]
    with open(log, "wb") as out:
        process = subprocess.Popen(command, cwd=REPO, env=env, stdout=out, stderr=subprocess.STDOUT)
    served = Served(f"http://127.0.0.1:{port}", port, state, process, log)
    try:
        _wait_ready(served)
        yield served
    finally:
        process.terminate()
        try:
            process.wait(10)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait(10)


def _wait_ready(served: Served) -> None:
    deadline = time.monotonic() + START_TIMEOUT_S
    while time.monotonic() < deadline:
        if served.process.poll() is not None:
            break
        try:
            if httpx.get(f"{served.base}/readyz", timeout=2).status_code == 200:
                return
        except httpx.HTTPError:
            pass
        time.sleep(0.2)
    raise RuntimeError(f"the server did not become ready:\n{served.log_text()[-4000:]}")
