"""One change feed: "view changed" events published by the materialized store.

Every consumer of changes (the GraphQL subscription, SSE, ``?wait=``) reads this feed
instead of the cache's raw object events, so each sees the same resolved views and none
runs jq. Subscribers are indexed by the namespace they asked for (None = every
namespace) and filtered by kind and uid on publish, so a subscriber costs O(its changes),
not O(all changes). Each has a bounded queue; when it is full the oldest event is dropped
and counted (a stalled client cannot grow memory), and the consumer can tell from
:attr:`Subscriber.dropped` that it lost some.

When the server stops, :meth:`ChangeFeed.end` ends every subscriber at once: ``get`` raises
:class:`~workload_map.errors.ServerStopping` and ``async for`` stops, so a held ``?wait=``
answers 503 and a stream ends as the stop begins, instead of being cut by uvicorn after its
grace period.

Single event loop: ``publish`` is called from the loop, never from a worker thread.
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from typing import TYPE_CHECKING, Literal

from msgspec import Struct

from workload_map.definitions.phases import Phase
from workload_map.errors import ServerStopping
from workload_map.resolution import WorkloadView
from workload_map.resolution.view import GpuFigures

if TYPE_CHECKING:
    import asyncio

ChangeType = Literal["added", "modified", "removed"]
DEFAULT_QUEUE_SIZE = 1_000


class ViewChange(Struct, frozen=True):
    """One workload's view changed.

    Attributes:
        type: ``added`` (first view), ``modified`` or ``removed`` (gone, or no longer a
            top-level workload).
        uid / namespace / kind / name: identity of the workload.
        previous / view: the views before and after (None for added / removed).
    """

    type: ChangeType
    uid: str
    namespace: str | None
    kind: str
    name: str
    previous: WorkloadView | None
    view: WorkloadView | None

    @property
    def previous_phase(self) -> Phase | None:
        """Headline phase before the change (None when added)."""
        return self.previous.phase if self.previous is not None else None

    @property
    def phase(self) -> Phase | None:
        """Headline phase after the change (None when removed)."""
        return self.view.phase if self.view is not None else None

    @property
    def previous_phases(self) -> tuple[Phase, ...]:
        """Every matched phase before the change."""
        return tuple(self.previous.phases) if self.previous is not None else ()

    @property
    def phases(self) -> tuple[Phase, ...]:
        """Every matched phase after the change."""
        return tuple(self.view.phases) if self.view is not None else ()

    @property
    def previous_gpu(self) -> GpuFigures | None:
        """GPU figures before the change."""
        return self.previous.gpu if self.previous is not None else None

    @property
    def gpu(self) -> GpuFigures | None:
        """GPU figures after the change."""
        return self.view.gpu if self.view is not None else None


class Subscriber:
    """A bounded queue of the changes one consumer asked for; use ``async with``/``async for``.

    Args:
        feed: the feed it is attached to.
        namespace / kind / uid: only changes of this namespace / kind (case-insensitive) / uid.
        maxsize: queue capacity.
    """

    def __init__(self, feed: ChangeFeed, namespace: str | None, kind: str | None, uid: str | None,
                 maxsize: int) -> None:
        self.feed, self.namespace, self.uid = feed, namespace, uid
        self.kind = kind.lower() if kind else None
        import asyncio  # here: one-shot commands import this module and never subscribe

        self.queue: asyncio.Queue[ViewChange | None] = asyncio.Queue(maxsize)  # None: the feed ended
        self.dropped = 0
        self.ended = False

    def wants(self, change: ViewChange) -> bool:
        """True when ``change`` passes this subscriber's filters (namespace is indexed)."""
        return (self.kind is None or change.kind.lower() == self.kind) and (self.uid is None or change.uid == self.uid)

    def offer(self, change: ViewChange | None) -> None:
        """Queue ``change`` (None: the end), dropping the oldest one when full; nothing after the end.

        A change published after the end is dropped: queued behind it, it could have pushed
        the end itself out of a full queue, and the subscriber would then wait on for good.
        """
        if self.ended and change is not None:
            return
        if self.queue.full():
            self.queue.get_nowait()
            self.dropped += 1
        self.queue.put_nowait(change)

    def end(self) -> None:
        """No change comes after those queued: the next ``get`` past them raises (idempotent)."""
        if not self.ended:
            self.ended = True
            self.offer(None)

    async def get(self) -> ViewChange:
        """The next change (waits).

        Raises:
            ServerStopping: the feed ended (every later call raises too).
        """
        change = await self.queue.get()
        if change is None:
            self.queue.put_nowait(None)  # for the next call
            raise ServerStopping("the server is stopping: ask again (another replica, or this one once restarted)")
        return change

    def close(self) -> None:
        """Detach from the feed (idempotent)."""
        self.feed.unsubscribe(self)

    async def __aenter__(self) -> Subscriber:
        return self

    async def __aexit__(self, *exc: object) -> None:
        self.close()

    async def __aiter__(self) -> AsyncIterator[ViewChange]:
        """Every change until the feed ends."""
        while True:
            try:
                yield await self.get()
            except ServerStopping:
                return


class ChangeFeed:
    """Fan-out of :class:`ViewChange` events to subscribers indexed by namespace."""

    def __init__(self, *, queue_size: int = DEFAULT_QUEUE_SIZE) -> None:
        self._queue_size = queue_size
        self._by_namespace: dict[str | None, list[Subscriber]] = {}
        self.published = 0
        self.ended = False

    def subscribe(self, *, namespace: str | None = None, kind: str | None = None, uid: str | None = None,
                  maxsize: int | None = None) -> Subscriber:
        """A new subscriber for the changes matching the filters (None = any); ended at once after :meth:`end`."""
        subscriber = Subscriber(self, namespace or None, kind, uid, maxsize or self._queue_size)
        self._by_namespace.setdefault(subscriber.namespace, []).append(subscriber)
        if self.ended:
            subscriber.end()
        return subscriber

    def end(self) -> None:
        """End every subscriber, now and to come (the server is stopping; idempotent)."""
        self.ended = True
        for group in list(self._by_namespace.values()):
            for subscriber in list(group):
                subscriber.end()

    def unsubscribe(self, subscriber: Subscriber) -> None:
        """Detach ``subscriber`` (no error when already detached)."""
        group = self._by_namespace.get(subscriber.namespace)
        if group is not None and subscriber in group:
            group.remove(subscriber)
            if not group:
                del self._by_namespace[subscriber.namespace]

    @property
    def subscribers(self) -> int:
        """Subscribers attached."""
        return sum(len(group) for group in self._by_namespace.values())

    def publish(self, change: ViewChange) -> None:
        """Deliver ``change`` to every subscriber that asked for it."""
        self.published += 1
        for key in (change.namespace or None, None) if change.namespace else (None,):
            for subscriber in self._by_namespace.get(key, ()):
                if subscriber.wants(change):
                    subscriber.offer(change)
