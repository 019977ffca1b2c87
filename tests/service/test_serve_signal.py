"""``wmap serve`` as a subprocess: SIGTERM stops it within its grace period even while a
worker is stuck in a looping definition, and no worker process outlives it."""

from __future__ import annotations

import os
import signal
import socket
import subprocess
import sys
import time
from pathlib import Path

import httpx
import yaml

from tests.service.support import LOOP_PATH, demo

GRACE_S = 10.0  # uvicorn's graceful shutdown is 5 s; the lifespan then kills the workers


def _karta() -> dict:
    return {"apiVersion": "run.ai/v1alpha1", "kind": "Karta", "metadata": {"name": "demo"},
            "spec": {"structureDefinition": {"rootComponent": {
                "name": "r", "kind": {"group": "example.com", "version": "v1", "kind": "Demo"},
                "statusDefinition": {"phaseDefinition": {"path": LOOP_PATH},
                                     "statusMappings": {"running": [{"byPhase": "up"}]}}}}}}


def _descendants(pid: int) -> set[int]:
    """Every live process below ``pid`` (from /proc: ppid links)."""
    parents: dict[int, int] = {}
    for entry in os.listdir("/proc"):
        if entry.isdigit():
            try:
                stat = Path(f"/proc/{entry}/stat").read_text()
            except OSError:
                continue
            parents[int(entry)] = int(stat.rpartition(")")[2].split()[1])
    found: set[int] = set()
    frontier = {pid}
    while frontier:
        frontier = {child for child, parent in parents.items() if parent in frontier} - found
        found |= frontier
    return found


def _alive(pid: int) -> bool:
    try:
        state = Path(f"/proc/{pid}/stat").read_text().rpartition(")")[2].split()[0]
    except OSError:
        return False
    return state != "Z"


def test_sigterm_stops_the_server_while_a_worker_loops(tmp_path: Path) -> None:
    (tmp_path / "defs").mkdir()
    (tmp_path / "defs" / "demo.yaml").write_text(yaml.safe_dump(_karta()))
    (tmp_path / "objects.yaml").write_text(yaml.safe_dump_all([demo("a", loop=True), demo("b")]))
    sock = socket.socket()
    sock.bind(("127.0.0.1", 0))
    port = sock.getsockname()[1]
    sock.close()
    env = {**os.environ, "WMAP_DEFINITIONS_DIR": str(tmp_path / "defs")}
    process = subprocess.Popen([sys.executable, "-m", "workload_map", "serve", "--snapshot", str(tmp_path / "objects.yaml"),
                                "--port", str(port), "--state-dir", str(tmp_path / "state"),
                                "--resolution-timeout", "60", "--resolver-workers", "2"],
                               env=env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    try:
        deadline = time.monotonic() + 30
        while time.monotonic() < deadline:
            try:
                if httpx.get(f"http://127.0.0.1:{port}/livez", timeout=1).status_code == 200:
                    break
            except httpx.HTTPError:
                time.sleep(0.1)
        # /livez answers while the snapshot loads and b resolves: wait (bounded) until b is done
        deadline = time.monotonic() + 30
        ready = httpx.get(f"http://127.0.0.1:{port}/readyz?verbose", timeout=2)
        while "[-]views resolved 1 of 2" not in ready.text and time.monotonic() < deadline:
            time.sleep(0.1)
            ready = httpx.get(f"http://127.0.0.1:{port}/readyz?verbose", timeout=2)
        assert ready.status_code == 503 and "[-]views resolved 1 of 2" in ready.text  # b done, a looping (60 s)
        children = _descendants(process.pid)
        assert len(children) >= 3  # the fork server and 2 workers at least
        started = time.monotonic()
        process.send_signal(signal.SIGTERM)
        process.wait(timeout=GRACE_S)
        assert time.monotonic() - started < GRACE_S
        deadline = time.monotonic() + 5
        while any(_alive(pid) for pid in children) and time.monotonic() < deadline:
            time.sleep(0.05)
        assert not [pid for pid in children if _alive(pid)]  # no worker or fork server left behind
    finally:
        if process.poll() is None:
            process.kill()
            process.wait()
