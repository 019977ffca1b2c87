"""Giving memory back to the system after a large list; pausing the collector for bulk work.

CPython's small-object allocator and glibc's ``malloc`` keep freed memory for reuse: after
the initial list of a large cluster (pages decoded, trimmed, dropped) the heap holds many
free chunks. ``malloc_trim(0)`` (glibc, ``malloc_trim(3)``) returns the free pages at the
top of the heap and, since glibc 2.8, the whole free pages inside it (``madvise``), so
the resident size falls to what is live. Other C libraries (musl, macOS) have no such call:
``release_free_memory`` is then a no-op returning ``False``.
"""

from __future__ import annotations

import gc
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

from workload_map.logs import logger

log = logger(__name__)


_UNLOADED: Any = object()
_MALLOC_TRIM: Any = _UNLOADED


def _load_trim() -> Any:
    """``malloc_trim`` of the C library, or ``None`` when it has none.

    Looked up on the first call, not at import: ``ctypes.util.find_library`` runs
    ``ldconfig -p`` in a subprocess (a fork and several milliseconds), which every command
    importing this module paid, one-shot ones included.
    """
    import ctypes
    import ctypes.util

    name = ctypes.util.find_library("c") or "libc.so.6"
    try:
        trim = ctypes.CDLL(name).malloc_trim
    except (OSError, AttributeError):
        return None
    trim.argtypes, trim.restype = [ctypes.c_size_t], ctypes.c_int
    return trim


def release_free_memory(*, collect: bool = True) -> bool:
    """Run a full GC (unless ``collect`` is false), then ``malloc_trim(0)``.

    Returns ``True`` when the C library had the call. ``malloc_trim`` takes tens of
    milliseconds on a heap of several hundred MB and releases the GIL (ctypes), so the
    server runs it in a thread (``collect=False``: decoded JSON holds no reference cycles,
    its memory is freed by reference counting). Call it after bulk work, not per event.
    """
    global _MALLOC_TRIM
    if collect:
        gc.collect()
    if _MALLOC_TRIM is _UNLOADED:
        _MALLOC_TRIM = _load_trim()
    if _MALLOC_TRIM is None:
        return False
    try:
        _MALLOC_TRIM(0)
    except OSError:  # pragma: no cover - a C library that exports the name but fails
        log.debug("malloc_trim failed", exc_info=True)
        return False
    return True


@contextmanager
def collector_paused() -> Iterator[None]:
    """Pause the cyclic garbage collector for the block (when it was running at the start).

    For bulk building of acyclic values (decoded JSON, trimmed copies): reference counting
    frees them, and the collections their allocations trigger find nothing. Process-wide:
    keep the block short (one decoded body, one list page); collections resume after it.
    """
    if not gc.isenabled():
        yield
        return
    gc.disable()
    try:
        yield
    finally:
        gc.enable()
