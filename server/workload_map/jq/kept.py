"""A bounded table of compiled programs: two generations weighed in characters.

Used by :mod:`workload_map.jq.engine` for its compiled programs and batches, whose memory
grows with the length of their expressions (about 70 bytes a character), so the bound is
on characters as well as on entries.
"""

from __future__ import annotations

from typing import Any


class Kept:
    """Values kept by a key, in two generations weighed in characters (a bounded LRU approximation).

    :meth:`get` reads the young generation, then the old one (a hit there moves to the
    young one); :meth:`put` adds to the young one, which becomes the old one (the old one
    dropped) once its weights add up to half of ``chars`` or it holds half of ``count``
    entries. So at most ``count`` entries and ``chars`` characters are kept (each generation
    may go one entry over its half), and what is used again survives. Lock-free: every step
    is one dictionary operation under the GIL; two threads racing can only lose an entry,
    which is then compiled again. (``workload_map.kube.compact.SharedValues`` is the same
    two generations, by count only and on the view compaction's hot path; ``jq`` sits below
    ``kube`` in the layers, so it cannot use that one.)
    """

    __slots__ = ("count", "chars", "_young", "_old", "_weight")

    def __init__(self, count: int, chars: int) -> None:
        self.count, self.chars = count, chars
        self._young: dict[Any, tuple[Any, int]] = {}  # key -> (value, weight)
        self._old: dict[Any, tuple[Any, int]] = {}
        self._weight = 0

    def get(self, key: Any) -> Any:
        """The value kept for ``key``, else None."""
        entry = self._young.get(key)
        if entry is None:
            entry = self._old.pop(key, None)
            if entry is None:
                return None
            self._add(key, entry)
        return entry[0]

    def put(self, key: Any, value: Any, weight: int) -> None:
        """Keep ``value`` (not None) for ``key``, weighing ``weight`` characters."""
        self._add(key, (value, weight))

    def _add(self, key: Any, entry: tuple[Any, int]) -> None:
        self._young[key] = entry
        self._weight += entry[1]
        if self._weight * 2 > self.chars or len(self._young) * 2 > self.count:
            self._old, self._young, self._weight = self._young, {}, 0

    def __len__(self) -> int:
        return len(self._young) + len(self._old)

    def weight(self) -> int:
        """Characters of everything kept (a test's view of the bound)."""
        return sum(w for _, w in self._young.values()) + sum(w for _, w in self._old.values())

    def clear(self) -> None:
        """Drop everything (benchmarks, tests)."""
        self._young, self._old, self._weight = {}, {}, 0
