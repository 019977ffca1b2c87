"""One reflector: list a resource, then watch it from the list's resourceVersion.

Semantics follow kubernetes/client-go ``tools/cache/reflector.go`` and nolar/kopf
``kopf/_cogs/clients/watching.py``:

- **List** in pages (``limit=500`` + ``continue``) without a resourceVersion (a consistent
  read), trim each page's items as it arrives (``Sink.prepare``: no decoded page outlives
  its trimming; an item whose uid and resourceVersion the sink holds already is not
  trimmed again), hand the items to the sink as a replacement (the sink diffs and emits
  synthetic ``DELETED`` for objects that vanished, and nothing for unchanged ones),
  remember the list's resourceVersion. The next page is requested as soon as a page has
  arrived, so the API server prepares it while this one is trimmed (two pages in flight
  at most).
- **Watch** from the last resourceVersion with ``allowWatchBookmarks=true`` and a server
  ``timeoutSeconds`` drawn from [300, 600] (spreads reconnects). Every event, ``BOOKMARK``
  included, advances the last resourceVersion. A stream that ends (server timeout) is
  reopened at once from that resourceVersion, so nothing is lost or replayed twice; the
  store also ignores updates whose resourceVersion it already holds.
- **Inactivity**: no event and no bookmark for ``inactivity_timeout`` (70 s; bookmarks
  come about every 60 s) means the stream is dead (tomplus/kubernetes_asyncio issue 360):
  close it and re-watch. An idle kind does this routinely, so it is logged at DEBUG.
- **410 Gone** / "too large resource version" (a watch ``ERROR`` event or status) ->
  relist at once, this reflector only. **404** -> state ``crd_missing`` and the objects are
  dropped. **403** -> ``forbidden``. **429** (priority and fairness, or a restarted server's
  "storage is (re)initializing") -> retry after ``Retry-After`` (at most
  ``throttle_cap``) or ``throttle_delay``, without growing the backoff. Anything else ->
  ``error``, then ``Backoff`` (0.8 s doubling to 30 s, jitter). The backoff restarts at
  its base on the first success (a list, or a watch the server accepts), and ``wake()``
  (called by the cache once the API server answers its probe again) cuts a pending
  delay short, so a reflector reconnects as soon as the server is back.
- **Recovery order**: after a failure, a reopened watch is "synced again" only once its
  first event arrives or ``resume_grace`` passes without an ``ERROR``: a 410 sent on the
  new stream is relisted first, and "synced again" is logged after that relist.
- **Freshness**: ``last_success`` (wall clock of the last list, accepted watch or event)
  and ``down_since`` (wall clock of the first failure since then; ``None`` while healthy)
  let the cache flag data as stale (``workload_map.kube.freshness``).
- **Supervision**: the loop catches everything but cancellation; if the task still exits
  other than through ``stop()`` it is restarted (tomplus/kubernetes_asyncio issue 325).

Counters (``relists``, ``events``, ``bookmarks``, ``watch_restarts``,
``inactivity_timeouts``, ``throttled``, ``last_event_time``) are plain attributes for
metrics export.
"""

from __future__ import annotations

import asyncio
import random
import time
from collections.abc import Callable, Mapping
from typing import Any, Protocol

from msgspec import Struct

from workload_map.gvk import GVK
from workload_map.kube.backoff import Backoff
from workload_map.kube.errors import NETWORK, KubeApiError
from workload_map.kube.listing import ListWatch as ListWatch, list_all  # ListWatch: re-exported
from workload_map.kube.reader import InformerState
from workload_map.logs import logger

log = logger(__name__)

RELIST_GRACE = 10.0
"""Seconds after a 410-triggered relist during which another 410 backs off first."""


class Sink(Protocol):
    """Where a reflector puts objects (``workload_map.kube.graph.GraphSink`` in production)."""

    async def replace(self, objects: list[dict[str, Any]], namespace: str | None) -> None:
        """The complete current set (of ``namespace`` when given), after a list.

        A coroutine, so a sink may apply a large list in slices and let the event loop
        serve in between (``GraphSink``). A sink that also has ``prepare(obj) -> dict``
        gets every list item passed through it as its page arrives, in a worker thread (so
        only the trimmed copies outlive the page; ``prepare`` must not change the sink's
        state, and may return the object it already holds when the item is unchanged), and
        then ``replace(prepared_objects, namespace, prepared=True)``.
        """
        ...

    def apply(self, event_type: str, obj: Mapping[str, Any]) -> None:
        """One ``ADDED``/``MODIFIED``/``DELETED`` event."""
        ...


class ReflectorOptions(Struct, frozen=True):
    """Tunables; tests shrink the timeouts and delays.

    Attributes:
        page_size: ``limit`` of each list page.
        watch_timeout: inclusive range of the server-side ``timeoutSeconds``.
        inactivity_timeout: seconds without any event or bookmark before re-watching.
        backoff_base, backoff_cap, backoff_jitter, backoff_reset: see ``Backoff``.
        min_watch_seconds: a watch ending sooner than this with no events counts as a
            failure (backs off), so an immediately-closing server cannot cause a hot loop.
        throttle_delay: seconds before retrying a 429 answered without ``Retry-After``.
        throttle_cap: longest ``Retry-After`` honoured, in seconds.
        resume_grace: seconds a watch reopened after a failure waits for its first
            event before it counts as synced again.
    """

    page_size: int = 500
    watch_timeout: tuple[int, int] = (300, 600)
    inactivity_timeout: float = 70.0
    backoff_base: float = 0.8
    backoff_cap: float = 30.0
    backoff_jitter: float = 0.2
    backoff_reset: float = 120.0
    min_watch_seconds: float = 1.0
    throttle_delay: float = 1.0
    throttle_cap: float = 10.0
    resume_grace: float = 1.0


class _StreamEnded(Exception):
    """A watch stream ended without a problem (server timeout or inactivity)."""


class Reflector:
    """Keeps a sink equal to one resource collection (GVK + plural + optional namespace).

    Args:
        gvk: the watched type (for logs and status).
        source: list/watch calls for the resource.
        sink: receives lists and events.
        namespace: watch only this namespace (``None``: all / cluster-scoped).
        options: tunables.
        rng: random source for jitter and ``timeoutSeconds`` (tests seed it).
        on_status: called after ``state``, ``has_synced``, ``last_error`` or the outage
            (``down_since``) change: what the cache's freshness summary reads, apart from
            ``last_success`` (``workload_map.kube.freshness.FreshnessMemo``).
    """

    def __init__(
        self, gvk: GVK, source: ListWatch, sink: Sink, *, namespace: str | None = None,
        options: ReflectorOptions | None = None, rng: random.Random | None = None,
        on_status: Callable[[], None] | None = None,
    ) -> None:
        self.gvk, self.namespace = gvk, namespace
        self._on_status = on_status
        self.options = options or ReflectorOptions()
        self._source, self._sink = source, sink
        self._rng = rng or random.Random()
        o = self.options
        self._backoff = Backoff(base=o.backoff_base, cap=o.backoff_cap, jitter=o.backoff_jitter,
                                reset_after=o.backoff_reset, rng=self._rng)
        self._task: asyncio.Task[None] | None = None
        self._stopping = False
        self.settled = asyncio.Event()
        self.state: InformerState = "syncing"
        self.has_synced = False
        self.last_error = ""
        self.last_rv: str | None = None
        self.relists = self.events = self.bookmarks = 0
        self.watch_restarts = self.inactivity_timeouts = self.task_restarts = self.throttled = 0
        self.last_event_time: float | None = None
        """``time.monotonic()`` of the last watch event or bookmark."""
        self.last_success: float | None = None
        """``time.time()`` of the last completed list, accepted watch or watch event."""
        self.last_success_mono: float | None = None
        """The same instant on ``time.monotonic()`` (for ages)."""
        self.down_since: float | None = None
        """``time.time()`` of the first failure since the last success; ``None`` while healthy."""
        self.down_since_mono: float | None = None
        self._last_gone = float("-inf")
        self._wake: asyncio.Event | None = None

    def __repr__(self) -> str:
        where = f" in {self.namespace}" if self.namespace else ""
        return f"<Reflector {self.gvk}{where} {self.state}>"

    # lifecycle

    def start(self) -> None:
        """Start the supervised task (idempotent)."""
        if self._task is None or self._task.done():
            self._stopping = False
            self._task = asyncio.get_running_loop().create_task(self._run(), name=f"reflector {self.gvk}")
            self._task.add_done_callback(self._on_task_done)

    def cancel(self) -> None:
        """Request cancellation now; no sink call happens after this returns (idempotent)."""
        self._stopping = True
        if self._task is not None and not self._task.done():
            self._task.cancel()

    async def stop(self) -> None:
        """Cancel the task and wait for it to finish (idempotent)."""
        self.cancel()
        task, self._task = self._task, None
        if task is not None:
            await asyncio.gather(task, return_exceptions=True)

    @property
    def is_running(self) -> bool:
        """True while the task is alive."""
        return self._task is not None and not self._task.done()

    def down_for(self, now: float | None = None) -> float:
        """Seconds since the current outage began (``time.monotonic()`` based); 0 while healthy."""
        if self.down_since_mono is None:
            return 0.0
        return max(0.0, (time.monotonic() if now is None else now) - self.down_since_mono)

    def wake(self) -> None:
        """Cut a pending retry delay short and restart the backoff (the server answers again)."""
        self._backoff.reset()
        if self._wake is not None:
            self._wake.set()

    def _on_task_done(self, task: asyncio.Task[None]) -> None:
        if self._stopping or task is not self._task or task.cancelled():
            return
        error = task.exception()
        log.error("reflector %s exited unexpectedly (%r); restarting", self.gvk, error)
        self.task_restarts += 1
        self._task = None
        self.start()

    # main loop

    async def _run(self) -> None:
        while True:
            try:
                if self.last_rv is None:
                    await self._list()
                await self._watch()
                continue
            except _StreamEnded:
                continue
            except KubeApiError as exc:
                delay = await self._on_api_error(exc)
            except Exception as exc:
                log.exception("reflector %s failed; relisting after backoff", self.gvk)
                self._failed()
                self._set_state("error", f"{type(exc).__name__}: {exc}")
                self.last_rv = None
                delay = self._backoff.next_delay()
            if delay > 0:
                await self._sleep(delay)

    async def _sleep(self, delay: float) -> None:
        """Wait ``delay`` seconds, or less when ``wake()`` is called meanwhile."""
        self._wake = wake = asyncio.Event()
        try:
            async with asyncio.timeout(delay):
                await wake.wait()
        except TimeoutError:
            pass
        finally:
            self._wake = None

    async def _list(self) -> None:
        items, resource_version = await list_all(self._source, getattr(self._sink, "prepare", None),
                                                 self.options.page_size)
        await self._sink.replace(items, self.namespace, **({"prepared": True} if items.prepared else {}))
        self.relists += 1
        self.last_rv = resource_version
        first = not self.has_synced
        self.has_synced = True
        self._status_changed()
        log.info("%s %s%s: %d objects at resourceVersion %s", "listed" if first else "relisted",
                 self.gvk, self._where(), len(items), resource_version)
        self._succeeded()
        self._set_state("synced", "")
        self.settled.set()

    async def _watch(self) -> None:
        o = self.options
        opened = time.monotonic()
        received = 0
        stream = self._source.watch(
            resource_version=self.last_rv or "", timeout_seconds=self._rng.randint(*o.watch_timeout),
            read_timeout=o.inactivity_timeout + 30,
        )
        try:
            async with stream as events:
                self._backoff.reset()
                resuming = self.state != "synced"
                if not resuming:
                    self._succeeded()
                while True:
                    wait = min(o.resume_grace, o.inactivity_timeout) if resuming else o.inactivity_timeout
                    try:
                        async with asyncio.timeout(wait):
                            event = await anext(events, None)
                    except TimeoutError:
                        if resuming:  # no ERROR on the new stream: the watch is healthy again
                            resuming = self._resumed()
                            continue
                        self.inactivity_timeouts += 1
                        log.debug("watch %s%s silent for %.0f s; reopening", self.gvk, self._where(), wait)
                        raise _StreamEnded from None
                    if event is None:
                        break
                    received += 1
                    if resuming and event.get("type") != "ERROR":
                        resuming = self._resumed()
                    self._handle(event)
        finally:
            self.watch_restarts += 1
        if received == 0 and time.monotonic() - opened < o.min_watch_seconds:
            raise KubeApiError(NETWORK, "WatchClosed", "watch closed at once without events")

    def _handle(self, event: Mapping[str, Any]) -> None:
        event_type, obj = event.get("type"), event.get("object")
        if not isinstance(obj, dict):
            raise KubeApiError(NETWORK, "InvalidEvent", f"watch event {event_type!r} without an object")
        if event_type == "ERROR":
            raise KubeApiError.from_status(obj)
        self.last_event_time = time.monotonic()
        self.last_success, self.last_success_mono = time.time(), self.last_event_time
        if event_type == "BOOKMARK":
            self.bookmarks += 1
        elif event_type in ("ADDED", "MODIFIED", "DELETED"):
            self._sink.apply(event_type, obj)
            self.events += 1
        else:
            log.warning("watch %s: ignoring event type %r", self.gvk, event_type)
        meta = obj.get("metadata")
        rv = meta.get("resourceVersion") if isinstance(meta, Mapping) else None
        if isinstance(rv, str) and rv:
            self.last_rv = rv

    # failures

    async def _on_api_error(self, exc: KubeApiError) -> float:
        """Record the failure; return the delay before the next attempt."""
        if exc.needs_relist:
            log.info("%s%s: resourceVersion expired (%s); relisting", self.gvk, self._where(), exc)
            now = time.monotonic()
            # From a watch: relist now, unless that already happened moments ago (no hot
            # loop against a server that keeps expiring); from a list page: back off.
            immediate = self.last_rv is not None and now - self._last_gone > RELIST_GRACE
            self._last_gone = now
            self.last_rv = None
            return 0.0 if immediate else self._backoff.next_delay()
        if exc.is_not_found:
            self._succeeded()  # the server answered: nothing is stale, the kind is gone
            self._set_state("crd_missing", exc.message or "resource not served (404)")
            self.last_rv = None
            await self._sink.replace([], self.namespace)
            self.settled.set()
        elif exc.is_forbidden:
            self._succeeded()
            self._set_state("forbidden", exc.message or "forbidden (403)")
            self.settled.set()
        elif exc.status == 429:
            # Throttled ("storage is (re)initializing", priority and fairness): retry soon
            # without growing the backoff or reporting a failed state, as client-go does.
            self._failed()
            self.throttled += 1
            self.last_error = str(exc)
            self._status_changed()
            log.info("reflector %s%s: throttled: %s", self.gvk, self._where(), exc)
            o = self.options
            return min(o.throttle_cap, exc.retry_after) if exc.retry_after else o.throttle_delay
        else:
            self._failed()
            self._set_state("error", str(exc))
        delay = self._backoff.next_delay()
        return max(delay, min(exc.retry_after or 0.0, self._backoff.max_delay))

    def _succeeded(self) -> None:
        """Record contact with the server: the data is current again."""
        self.last_success, self.last_success_mono = time.time(), time.monotonic()
        if self.down_since_mono is not None:
            self.down_since = self.down_since_mono = None
            self._status_changed()

    def _failed(self) -> None:
        """Record a failed request; the first one since the last success starts the outage."""
        if self.down_since_mono is None:
            self.down_since, self.down_since_mono = time.time(), time.monotonic()
            self._status_changed()

    def _resumed(self) -> bool:
        """A watch reopened after a failure is healthy: synced again (returns False: not resuming)."""
        self._succeeded()
        self._set_state("synced", "")
        return False

    def _set_state(self, state: InformerState, error: str) -> None:
        """Enter ``state``; log transitions (and new errors) once, not on every retry."""
        if state != "synced" and (state != self.state or error != self.last_error):
            log.warning("reflector %s%s: %s %s", self.gvk, self._where(), state, error)
        elif state == "synced" and self.state not in ("synced", "syncing"):
            log.info("reflector %s%s: synced again", self.gvk, self._where())
        if state != self.state or (error and error != self.last_error):
            self.state = state
            if error:
                self.last_error = error
            self._status_changed()

    def _status_changed(self) -> None:
        if self._on_status is not None:
            self._on_status()

    def _where(self) -> str:
        return f" in {self.namespace}" if self.namespace else ""

