"""Reading snapshot files off the event loop, so the server answers while a dump is parsed.

``wmap serve --snapshot DUMP`` used to parse the dump inside the application's lifespan:
nothing answered (not even ``/livez``) until the last object was stored, 5 s for a
54 MB dump. ``load_snapshot`` reads the files in a worker thread instead; the event loop
keeps serving (the thread hands the interpreter back at least every
``sys.getswitchinterval()`` seconds, 5 ms by default, and the JSON reader decodes one
object per call). Cancelling the awaiting task stops the thread at the next object.

Collector pauses: the stored objects are millions of long-lived containers, and a full
collection walks them all with the interpreter held (about a second per 27,000 objects,
a ``/livez`` stall). The reader moves what it has read so far out of the collector's
reach every ``FREEZE_EVERY`` objects (``gc.freeze``, as the lifespan does for everything
at the end of the start-up: https://docs.python.org/3/library/gc.html#gc.freeze); the
parsed JSON is acyclic, so nothing that would need the collector is kept by it.

``check_paths`` is the part that stays synchronous: a path that does not exist fails the
start-up at once, as before.
"""

from __future__ import annotations

import asyncio
import gc
import threading
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import Any

from workload_map.kube.snapshot import SnapshotError, SnapshotReader, iter_objects


FREEZE_EVERY = 2000
"""Objects read between two ``gc.freeze()`` calls (see the module docstring)."""


class _Stopped(Exception):
    """The load was cancelled; raised inside the reading thread."""


def check_paths(paths: Sequence[str]) -> None:
    """Raise ``SnapshotError`` for the first path that does not exist.

    Raises:
        SnapshotError: ``PATH: no such file or directory``.
    """
    for path in paths:
        if not Path(path).exists():
            raise SnapshotError(f"{path}: no such file or directory")


def _objects(paths: Sequence[str], stop: threading.Event) -> Iterator[dict[str, Any]]:
    for count, obj in enumerate((obj for path in paths for obj in iter_objects(path)), start=1):
        if stop.is_set():
            raise _Stopped
        if count % FREEZE_EVERY == 0:
            gc.freeze()
        yield obj


async def load_snapshot(paths: Sequence[str]) -> SnapshotReader:
    """A ``SnapshotReader`` over ``paths``, read in a worker thread.

    Raises:
        SnapshotError: as ``SnapshotReader.from_paths``.
        asyncio.CancelledError: the awaiting task was cancelled (the thread stops at its
            next object and the partial reader is dropped).
    """
    stop = threading.Event()
    loop = asyncio.get_running_loop()
    future = loop.run_in_executor(None, lambda: SnapshotReader(_objects(paths, stop)))
    try:
        return await asyncio.shield(future)
    except asyncio.CancelledError:
        stop.set()
        try:
            await future
        except _Stopped:
            pass
        raise
