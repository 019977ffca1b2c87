"""Small process and port helpers for the test control plane (loopback only)."""

from __future__ import annotations

import os
import signal
import socket
import subprocess
import time
from pathlib import Path


class ControlPlaneError(RuntimeError):
    """A control-plane process failed to start, exited, or did not become ready in time."""


class PortInUse(ControlPlaneError):
    """A process exited because its port was taken meanwhile (caller retries with new ports)."""


def free_ports(n: int) -> list[int]:
    """Return ``n`` distinct TCP ports that were free on 127.0.0.1 a moment ago."""
    socks = []
    try:
        for _ in range(n):
            s = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
            s.bind(("127.0.0.1", 0))
            socks.append(s)
        return [s.getsockname()[1] for s in socks]
    finally:
        for s in socks:
            s.close()


def spawn(argv: list[str], log: Path, cwd: Path) -> subprocess.Popen:
    """Start ``argv`` in its own process group, stdout+stderr appended to ``log``.

    Raises ``OSError`` if the binary cannot be executed.
    """
    with open(log, "ab") as fh:
        fh.write(f"\n=== {time.strftime('%H:%M:%S')} start {Path(argv[0]).name}\n".encode())
        fh.flush()
        return subprocess.Popen(
            argv, stdout=fh, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL,
            cwd=cwd, start_new_session=True,
        )


def terminate(proc: subprocess.Popen | None, grace: float = 10.0) -> int | None:
    """SIGTERM the process group of ``proc``, wait up to ``grace`` s, then SIGKILL.

    Returns the exit status (``None`` if ``proc`` is ``None``). Never raises for a process
    that is already gone.
    """
    if proc is None:
        return None
    if proc.poll() is None:
        _killpg(proc, signal.SIGTERM)
        try:
            proc.wait(grace)
        except subprocess.TimeoutExpired:
            _killpg(proc, signal.SIGKILL)
            proc.wait(5)
    return proc.returncode


def _killpg(proc: subprocess.Popen, sig: int) -> None:
    try:
        os.killpg(proc.pid, sig)
    except ProcessLookupError:
        pass


def tail(path: Path, lines: int = 40) -> str:
    """The last ``lines`` lines of a text file ('' if it does not exist)."""
    try:
        with open(path, "rb") as fh:
            fh.seek(0, os.SEEK_END)
            fh.seek(max(0, fh.tell() - 64 * 1024))
            data = fh.read().decode(errors="replace")
    except FileNotFoundError:
        return ""
    return "\n".join(data.splitlines()[-lines:])


def check_alive(proc: subprocess.Popen, what: str, log: Path) -> None:
    """Raise ``PortInUse`` / ``ControlPlaneError`` (with the log tail) if ``proc`` has exited."""
    if proc.poll() is None:
        return
    last = tail(log)
    if "address already in use" in last:
        raise PortInUse(f"{what}: address already in use\n{last}")
    raise ControlPlaneError(f"{what} exited with status {proc.returncode}; log {log}:\n{last}")


def rss_bytes(proc: subprocess.Popen | None) -> int | None:
    """Resident set size of a running process from /proc (``None`` if unavailable)."""
    if proc is None or proc.poll() is not None:
        return None
    try:
        for line in Path(f"/proc/{proc.pid}/status").read_text().splitlines():
            if line.startswith("VmRSS:"):
                return int(line.split()[1]) * 1024
    except OSError:
        return None
    return None
