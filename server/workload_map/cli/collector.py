"""When a command-line run turns the cyclic garbage collector on again.

:func:`workload_map.cli.entry.run` starts every run with the collector off (start-up makes
no cyclic garbage, only long-lived objects a collection would walk again and again).
A command turns it on with :func:`resume` before its work: the objects alive then are
frozen first (``gc.freeze``: later collections never walk the modules and the catalog
again; https://docs.python.org/3/library/gc.html#gc.freeze).

``describe -f`` of a small input runs to the end with the collector off
(:func:`resume_unless_small`): what it resolves becomes garbage only when the process
ends, and the cycles it makes (each workload service's view store and hooks, about 25 KB
per workload; measured with ``gc.DEBUG_SAVEALL``) are bounded by its input. A big input
needs the collector: 10,000 workloads (a 1 GB file) peak at 471 MB without it, 223 MB with it.

When the collector was on from the start (the process was not started by
:mod:`~workload_map.cli.entry`: tests calling :func:`workload_map.cli.main.main`) these
functions change nothing.
"""

from __future__ import annotations

import gc
import os
import stat
from collections.abc import Sequence

from workload_map.cli.inputs import STDIN

SMALL_INPUT_BYTES = 1 << 20
"""The most bytes of regular files ``describe -f`` reads with the collector off (1 MiB).

The collector costs a one-shot run about 5 ms, which matters only to inputs read in tens of
milliseconds. The cycles grow with the input: about 0.25 MB for the ten workloads of the
benchmark's mix 1 MiB holds; the worst measured, a file of nothing but tiny pods, peaked
10% higher with the collector off (330 against 300 MB at 4 MB; about 8 MB more at 1 MiB)."""


def resume() -> None:
    """Freeze what is alive and turn the collector on, unless it is on already."""
    if not gc.isenabled():
        gc.freeze()
        gc.enable()


def resume_unless_small(paths: Sequence[str]) -> None:
    """:func:`resume` unless ``paths`` are regular files of at most :data:`SMALL_INPUT_BYTES` together.

    Standard input (``-``), a directory, a pipe or a path that cannot be read all resume
    the collector (their size is not known before they are read).
    """
    total = 0
    for path in paths:
        try:
            info = os.stat(path) if path != STDIN else None
        except (OSError, ValueError):  # missing, unreadable, a NUL in the name: describe reports it
            info = None
        if info is None or not stat.S_ISREG(info.st_mode):
            resume()
            return
        total += info.st_size
    if total > SMALL_INPUT_BYTES:
        resume()
