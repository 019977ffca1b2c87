"""The dirty set: workloads whose view must be re-resolved, oldest change first, coalesced.

An insertion-ordered dict keyed by workload uid: marking a uid that is already dirty keeps
its place (so a workload changing 50 times while it waits is resolved once, at the
position of its oldest pending change), and batches are taken from the front. A uid that
is being resolved when it changes again is held apart (``in_flight``) and re-marked when
its result arrives, so one workload is never resolved twice at once and results cannot
arrive out of order.

Pure data structure; O(1) per mark.
"""

from __future__ import annotations

from collections.abc import Iterable


class DirtySet:
    """Dirty uids in order of their oldest pending change, plus the uids in flight."""

    def __init__(self) -> None:
        self._dirty: dict[str, None] = {}
        self._in_flight: set[str] = set()
        self._again: set[str] = set()

    def __len__(self) -> int:
        return len(self._dirty)

    @property
    def in_flight(self) -> int:
        """Uids handed out and not yet finished."""
        return len(self._in_flight)

    def is_idle(self) -> bool:
        """Nothing dirty and nothing in flight."""
        return not self._dirty and not self._in_flight

    def mark(self, uid: str) -> None:
        """Mark ``uid`` dirty (O(1); a dirty uid keeps its place)."""
        if uid in self._in_flight:
            self._again.add(uid)
        else:
            self._dirty.setdefault(uid, None)

    def mark_all(self, uids: Iterable[str]) -> None:
        """Mark every uid of ``uids``."""
        for uid in uids:
            self.mark(uid)

    def take(self, limit: int) -> list[str]:
        """Up to ``limit`` oldest dirty uids, now in flight."""
        batch: list[str] = []
        dirty = self._dirty
        while dirty and len(batch) < limit:
            uid = next(iter(dirty))
            del dirty[uid]
            self._in_flight.add(uid)
            batch.append(uid)
        return batch

    def done(self, uid: str) -> None:
        """``uid`` finished; marked dirty again when it changed while in flight."""
        self._in_flight.discard(uid)
        if uid in self._again:
            self._again.discard(uid)
            self._dirty.setdefault(uid, None)
