"""The machine a run happens on: CPU model, cores, memory, Python, date, load."""

from __future__ import annotations

import datetime
import os
import platform
import resource
import sys
from pathlib import Path
from typing import Any


def cpu_model() -> str:
    """The CPU model name from /proc/cpuinfo (platform.processor() as a fallback)."""
    try:
        with open("/proc/cpuinfo", encoding="utf-8") as fh:
            for line in fh:
                if line.startswith("model name"):
                    return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or "unknown"


def cpu_seconds(pid: int | None = None) -> float:
    """User + system CPU seconds of this process, or of ``pid`` (from /proc/PID/stat; 0.0 when gone)."""
    if pid is None:
        usage = resource.getrusage(resource.RUSAGE_SELF)
        return usage.ru_utime + usage.ru_stime
    try:
        fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
        return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")
    except (OSError, IndexError, ValueError):
        return 0.0


class CpuMeter:
    """CPU seconds used between construction and :meth:`used`, per process group.

    Groups: ``"server process"`` (this process), each name of ``pids`` (the sum over its
    process ids, from /proc), and with ``children``, the children this process waited for
    meanwhile under that name (``RUSAGE_CHILDREN``).
    """

    def __init__(self, pids: dict[str, list[int]], *, children: str | None = None) -> None:
        self.pids, self.children = pids, children
        self.start = self._now()

    def _now(self) -> dict[str, float]:
        now = {"server process": cpu_seconds()}
        if self.children is not None:
            usage = resource.getrusage(resource.RUSAGE_CHILDREN)
            now[self.children] = usage.ru_utime + usage.ru_stime
        for name, pids in self.pids.items():
            now[name] = sum(cpu_seconds(pid) for pid in pids)
        return now

    def used(self) -> dict[str, float]:
        """Seconds per group since construction."""
        end = self._now()
        return {name: max(0.0, end[name] - self.start[name]) for name in end}


def mem_total_bytes() -> int | None:
    """Physical memory from /proc/meminfo."""
    try:
        with open("/proc/meminfo", encoding="utf-8") as fh:
            for line in fh:
                if line.startswith("MemTotal:"):
                    return int(line.split()[1]) * 1024
    except OSError:
        pass
    return None


def load_average() -> list[float]:
    """1, 5 and 15 minute load averages."""
    try:
        return [round(x, 2) for x in os.getloadavg()]
    except OSError:
        return []


def rss_bytes() -> int:
    """Current resident set size of this process (from /proc/self/statm)."""
    try:
        with open("/proc/self/statm", encoding="utf-8") as fh:
            return int(fh.read().split()[1]) * os.sysconf("SC_PAGE_SIZE")
    except OSError:
        return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024


def describe() -> dict[str, Any]:
    """Everything printed in the run header and stored under ``machine`` in the JSON."""
    affinity = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count()
    return {
        "cpu_model": cpu_model(),
        "cores": os.cpu_count(),
        "usable_cores": affinity,
        "memory_bytes": mem_total_bytes(),
        "python": sys.version.split()[0],
        "implementation": platform.python_implementation(),
        "platform": platform.platform(),
        "date": datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ"),
        "load_average_start": load_average(),
    }
