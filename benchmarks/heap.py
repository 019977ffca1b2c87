"""Where a process's memory is: RSS, glibc heap statistics, GC counts, tracemalloc by file.

Used by the memory benchmarks (``benchmarks.memory_live`` phases, ``benchmarks.memory``).
glibc figures come from ``mallinfo2(3)`` (glibc >= 2.33) through ctypes: ``arena`` is the
bytes the main heap took from the system with ``brk``, ``hblkhd`` the bytes in ``mmap``-ed
blocks, ``uordblks`` the bytes in use, ``fordblks`` the free bytes still held (fragmentation:
free chunks between live ones cannot be handed back). Other C libraries report ``None``. Objects of at most 512 bytes live in CPython's own arenas
(1 MiB ``mmap`` blocks, outside ``mallinfo``): ``pymalloc`` reads them from
``sys._debugmallocstats`` (arenas held, bytes in use, bytes free in partly used pools).
"""

from __future__ import annotations

import ctypes
import gc
import os
import sys
import tempfile
import tracemalloc
from pathlib import Path
from typing import Any

from benchmarks.machine import rss_bytes

MB = 1024 * 1024


class _MallInfo2(ctypes.Structure):
    _fields_ = [(name, ctypes.c_size_t) for name in (
        "arena", "ordblks", "smblks", "hblks", "hblkhd", "usmblks", "fsmblks", "uordblks", "fordblks",
        "keepcost")]


def _libc() -> Any:
    try:
        libc = ctypes.CDLL("libc.so.6")
        libc.mallinfo2.restype = _MallInfo2
        return libc
    except (OSError, AttributeError):
        return None


_LIBC = _libc()


def mallinfo() -> dict[str, int] | None:
    """glibc heap figures in bytes (see module docstring); ``None`` off glibc."""
    if _LIBC is None:
        return None
    info = _LIBC.mallinfo2()
    return {"heap_from_system": info.arena + info.hblkhd, "in_use": info.uordblks + info.hblkhd,
            "free_held": info.fordblks, "mmap_blocks": info.hblkhd}


def pymalloc() -> dict[str, float] | None:
    """CPython's small-object arenas in MB (``sys._debugmallocstats``): held, in use, free."""
    debug = getattr(sys, "_debugmallocstats", None)
    if debug is None:
        return None
    saved = os.dup(2)
    with tempfile.TemporaryFile() as tmp:
        os.dup2(tmp.fileno(), 2)
        try:
            debug()
        finally:
            os.dup2(saved, 2)
            os.close(saved)
        tmp.seek(0)
        text = tmp.read().decode(errors="replace")
    figures: dict[str, float] = {}
    for line in text.splitlines():
        label, _, value = line.rpartition("=")
        for key, marker in (("arenas", "arenas *"), ("in_use", "bytes in allocated blocks"),
                            ("free_in_pools", "bytes in available blocks"), ("unused_pools", "unused pools")):
            if marker in label and key not in figures:
                figures[key] = round(int(value.strip().replace(",", "")) / MB, 1)
    return figures or None


def children_rss() -> dict[int, int]:
    """RSS in bytes of every child process of this one (``/proc/<pid>/task/*/children``)."""
    out: dict[int, int] = {}
    try:
        tasks = list(Path(f"/proc/{os.getpid()}/task").iterdir())
    except OSError:
        return out
    for task in tasks:
        try:
            pids = (task / "children").read_text().split()
        except OSError:
            continue
        for pid in pids:
            try:
                pages = int(Path(f"/proc/{pid}/statm").read_text().split()[1])
            except (OSError, ValueError, IndexError):
                continue
            out[int(pid)] = pages * os.sysconf("SC_PAGE_SIZE")
    return out


def phase(name: str, **extra: Any) -> dict[str, Any]:
    """One measurement point: RSS (this process and children), heap, GC-tracked objects."""
    gc.collect()
    heap = mallinfo()
    workers = children_rss()
    return {"phase": name, "rss_mb": round(rss_bytes() / MB, 1),
            "workers_rss_mb": [round(v / MB, 1) for v in sorted(workers.values())],
            "malloc_mb": {k: round(v / MB, 1) for k, v in heap.items()} if heap else None,
            "pymalloc_mb": pymalloc(),
            "gc_tracked_objects": len(gc.get_objects()), **extra}


def top_files(snapshot: tracemalloc.Snapshot, limit: int = 14) -> list[dict[str, Any]]:
    """The ``limit`` source files holding the most traced bytes (path relative to site/project)."""
    stats = snapshot.statistics("filename")
    total = sum(s.size for s in stats)
    rows = [{"file": _short(s.traceback[0].filename), "mb": round(s.size / MB, 2), "blocks": s.count}
            for s in stats[:limit]]
    return [{"total_traced_mb": round(total / MB, 1)}, *rows]


def _short(path: str) -> str:
    for marker in ("site-packages/", "/server/", "/benchmarks/", "/lib/python"):
        if marker in path:
            head, _, tail = path.partition(marker)
            return (marker.strip("/") + "/" + tail) if marker != "site-packages/" else tail
    return os.path.basename(path)
