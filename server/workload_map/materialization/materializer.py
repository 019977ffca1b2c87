"""The background resolver: keeps ``ViewStore`` up to date from cache and registry changes.

Data flow: informers -> ``ObjectGraph`` listener (marks workload uids dirty, O(chain)) ->
``DirtySet`` (oldest first, coalesced) -> batches of jobs built on the loop (owner walks
are dict lookups) -> ``ResolverPool`` worker processes (jq runs only there) -> outcomes
posted back to the loop -> ``ViewStore.put`` (aggregates by difference) -> ``ChangeFeed``.

Why a full pass once synced and not per event: the initial list of 100k objects delivers
100k ADDED events; ignoring them until the reader has synced and then walking every
covered object once is one owner walk per object instead of one per event. The same pass
(a *rescan*) runs after every definition change: workloads whose definition in force
changed, that became top-level or stopped being top-level, or whose definition nests a kind
whose definition changed (``workload-map.run.ai/nested``) are marked dirty, so a
registration re-resolves exactly the workloads it affects (and so emits feed events).

Marking: ``workload_map.materialization.marking.EventMarking`` turns each cache event into
marks (owner chain, read sets, shared ResourceClaims); this module runs the passes.

Memory: once ready the first time, ``malloc_trim(0)`` runs in a thread
(``workload_map.kube.memory``): the free memory of the initial lists and resolutions goes back.
Views are compacted as they arrive, in the pool's dispatcher thread
(``workload_map.materialization.compaction``).

Offline (a service never started: the CLI, tests building a service directly): the same
materializer is run to completion on each read (:meth:`Materializer.run_to_completion`):
the first run hooks the reader and registry and does the full pass, later runs resolve only
what events or definition changes marked since, through a :class:`BlockingResolver` (the
same worker code and budget, one forked worker) instead of the background pool.

Timeouts: a resolution over its budget ends the worker (the pool replaces it) and the
workload gets an error view naming the definition and the budget. After
``quarantine_after`` timeouts of one definition within one registry generation the
definition is quarantined: later resolutions of its workloads give an error view without
running (views already materialized are kept), with an error log line and a metric; a new
registration (new generation) lifts it.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Iterator, Mapping
from typing import TYPE_CHECKING, Any, Protocol

from workload_map.definitions.extensions import extensions_of
from workload_map.definitions.registry import Entry
from workload_map.gvk import GVK
from workload_map.kube.memory import release_free_memory
from workload_map.logs import logger
from workload_map.resolution.readsets import ReadSets
from workload_map.resolution.resolver import failed_view
from workload_map.materialization.outcomes import Outcome, definition_key
from workload_map.materialization.scheduler import DirtySet
from workload_map.materialization.compaction import compact_view
from workload_map.materialization.inline import InlineResolver
from workload_map.materialization.marking import EventMarking
from workload_map.materialization.views import holder_key, uid_of_key
from workload_map.materialization.worker import Job
from workload_map.materialization.workset import WorkloadSet

if TYPE_CHECKING:  # asyncio and the pool (multiprocessing) are imported by a background materializer only
    import asyncio

    from workload_map.materialization.pool import ResolverPool

log = logger(__name__)

BATCH = 32
PROGRESS_EVERY_S = 5.0
RESCAN_YIELD_EVERY = 1_000


class _Signal(Protocol):
    """A set/clear flag: an ``asyncio.Event`` in the background, a ``threading.Event`` offline (never awaited)."""

    def set(self) -> None: ...

    def clear(self) -> None: ...

    def wait(self) -> Any: ...


class Materializer:
    """Runs the resolver loop of one workload set (see module docstring).

    Args:
        service: the workload set whose store it fills (shared with the read service).
        workers: worker processes.
        timeout_s: budget of one resolution, seconds.
        quarantine_after: timeouts of one definition (per registry generation) that
            quarantine it.
        resolver: offline: resolve through this blocking resolver in
            :meth:`run_to_completion` (``workers`` is then unused); None: the background pool
            of :meth:`start`, which needs a running event loop.
    """

    def __init__(self, service: WorkloadSet, *, workers: int, timeout_s: float, quarantine_after: int,
                 resolver: InlineResolver | None = None) -> None:
        self.service = service
        self.dirty = DirtySet()
        self.timeout_s = timeout_s
        self.quarantine_after = quarantine_after
        self.timeouts: dict[tuple[str, int], int] = {}
        self.quarantines = 0
        self.known = 0  # top-level workloads found by the last rescan (+ added since)
        self.ready = False
        self._rescan = True
        self._changed_kinds: set[tuple[str, str]] = set()  # registered since the last rescan
        self._jobs: dict[str, Entry] = {}
        self._resolver = resolver
        self._wake: _Signal = threading.Event()
        self._settled: _Signal = threading.Event()
        self._loop: asyncio.AbstractEventLoop | None = None
        self._pool: ResolverPool | None = None
        if resolver is None:
            import asyncio

            from workload_map.materialization.pool import ResolverPool

            self._wake, self._settled = asyncio.Event(), asyncio.Event()
            self._loop = asyncio.get_running_loop()
            self._pool = ResolverPool(workers, timeout_s, self._post, batch=BATCH)
        self._task: asyncio.Task[None] | None = None
        self._last_progress = 0.0
        self.marking = EventMarking(service, self._mark)

    @property
    def skipped(self) -> int:
        """``MODIFIED`` events that changed no field a definition reads (they marked nothing)."""
        return self.marking.skipped

    def read_sets(self) -> ReadSets:
        """The descendant read sets of the definitions in force (``EventMarking.read_sets``)."""
        return self.marking.read_sets()

    @property
    def pool(self) -> ResolverPool:
        """The background worker pool.

        Raises:
            RuntimeError: an offline materializer (it has a blocking resolver instead).
        """
        if self._pool is None:
            raise RuntimeError("an offline materializer has no background pool")
        return self._pool

    def start(self) -> None:
        """Start the workers, hook the reader and registry, and run the loop task."""
        assert self._loop is not None, "an offline materializer is run with run_to_completion()"
        self.pool.start()
        self._hook()
        self._task = self._loop.create_task(self._run(), name="wmap-materializer")

    async def stop(self) -> None:
        """Cancel the loop, unhook, and end the worker processes."""
        import asyncio  # a background materializer only (see the imports)

        self.unhook()
        if self._task is not None:
            self._task.cancel()
            await asyncio.gather(self._task, return_exceptions=True)
        await asyncio.to_thread(self.pool.close)

    def _hook(self) -> None:
        self.service.reader.add_listener(self.marking.on_event)
        self.service.registry.add_listener(self._on_definitions)

    def unhook(self) -> None:
        """Stop following the reader and the registry (idempotent)."""
        self.service.reader.remove_listener(self.marking.on_event)
        self.service.registry.remove_listener(self._on_definitions)

    def run_to_completion(self) -> None:
        """Offline: resolve everything pending now, blocking, through the blocking resolver.

        The first call hooks the reader and registry and does the full pass; later calls
        resolve only what changed since (see module docstring).
        """
        assert self._resolver is not None, "a background materializer runs in its loop task"
        if not self.marking.listening:
            self._hook()
            self.marking.start()
        while True:
            if self._rescan:
                self._rescan = False
                for _ in self._rescan_steps():
                    pass
            jobs = [job for uid in self.dirty.take(len(self.dirty)) if (job := self._job(uid)) is not None]
            if not jobs and not len(self.dirty):
                break
            for outcome in self._resolver.resolve(jobs) if jobs else ():
                self._compact(outcome)
                self._on_outcome(outcome)
        self.ready = True

    async def settled(self, timeout: float | None = None) -> bool:
        """Wait until the first pass is done and nothing is dirty or in flight; False on timeout."""
        import asyncio  # a background materializer only (see the imports)

        try:
            async with asyncio.timeout(timeout):
                await self._settled.wait()
        except TimeoutError:
            return False
        return True

    # hooks (synchronous, O(1)-ish: they only mark)

    def _on_definitions(self, gvks: frozenset[GVK]) -> None:
        self.marking.definitions_changed()
        self._changed_kinds |= {g.group_kind for g in gvks}
        self._rescan = True
        self._settled.clear()
        self._wake.set()

    def _mark(self, uid: str) -> None:
        if uid:
            self.dirty.mark(uid)
            self._settled.clear()
            self._wake.set()

    def _post(self, outcome: Outcome) -> None:  # dispatcher thread
        self._compact(outcome)  # off the loop, before anything else sees the view
        assert self._loop is not None
        try:
            self._loop.call_soon_threadsafe(self._on_outcome, outcome)
        except RuntimeError:  # loop closed during shutdown
            pass

    @staticmethod
    def _compact(outcome: Outcome) -> None:
        if outcome.view is not None:
            try:
                compact_view(outcome.view)
            except Exception:  # noqa: BLE001 - an uncompacted view is still a correct view
                log.debug("compacting the view of %s failed", outcome.uid, exc_info=True)

    # the loop

    async def _run(self) -> None:
        import asyncio  # a background materializer only (see the imports)

        started = time.monotonic()
        while not self.service.reader.is_synced():
            await asyncio.sleep(0.05)
        for _ in self.marking.start_steps():
            await asyncio.sleep(0)
        log.info("informers synced after %.1f s: resolving every workload", time.monotonic() - started)
        while True:
            if self._rescan:
                self._rescan = False
                await self._do_rescan()
            await self._dispatch()
            was_ready = self.ready
            self._check_settled(started)
            if self.ready and not was_ready:  # the initial lists and resolutions are done
                await asyncio.to_thread(release_free_memory, collect=False)
            await self._wake.wait()
            self._wake.clear()

    async def _do_rescan(self) -> None:
        import asyncio  # a background materializer only (see the imports)

        for _ in self._rescan_steps():
            await asyncio.sleep(0)

    def _rescan_steps(self) -> Iterator[None]:
        """The rescan (module docstring), yielding every ``RESCAN_YIELD_EVERY`` objects."""
        service, store = self.service, self.service.store
        found: dict[str, Entry] = {}  # store key (the uid, or a holder key: docs/identity.md) -> entry
        for count, (entry, obj) in enumerate(service.iter_roots()):
            if count % RESCAN_YIELD_EVERY == RESCAN_YIELD_EVERY - 1:
                yield
            if service.is_top_level(obj):
                found[service.key_of(obj)] = entry
        for key in store.uids():
            if key not in found:
                self._mark(uid_of_key(key))
        changed, self._changed_kinds = self._changed_kinds, set()
        nests: dict[int, bool] = {}  # per definition: does it nest a kind whose definition changed
        for key, entry in found.items():
            record = store.get(key)
            if record is None or record.entry.definition is not entry.definition or record.entry.origin != entry.origin:
                self._mark(uid_of_key(key))
            elif changed and nests.setdefault(id(entry.definition),
                                              bool(changed & set(extensions_of(entry.definition).nested))):
                self._mark(uid_of_key(key))  # a nested child's definition changed (docs/definition-format.md section 12)
        self.known = len(found)

    async def _dispatch(self) -> None:
        import asyncio  # a background materializer only (see the imports)

        limit = self.pool.size * BATCH * 2
        while len(self.dirty) and self.dirty.in_flight < limit:
            jobs = [job for uid in self.dirty.take(BATCH) if (job := self._job(uid)) is not None]
            self.pool.submit(jobs)
            await asyncio.sleep(0)

    def _job(self, key: str) -> tuple[Job, Any] | None:
        """The job for store ``key``, or None when it was settled here (removed / quarantined / fanned out).

        A uid marks its workload. A uid two distinct objects hold is fanned out: each holder
        is marked under its holder key, and records of objects no longer holding it are
        dropped. A holder key whose uid is no longer in conflict marks the uid instead
        (docs/identity.md).
        """
        service, uid = self.service, uid_of_key(key)
        holders = service.reader.uid_holders(uid)
        if (key == uid) == bool(holders):
            self.dirty.done(key)
            if holders:
                self._fan_out(uid, [holder_key(uid, shown) for shown in holders])
            else:
                self._mark(uid)
            return None
        obj = service.object_of(key)
        entry = service.entry_for(obj) if obj is not None else None
        if obj is None or entry is None or not service.is_top_level(obj):
            service.forget(key)
            self.dirty.done(key)
            return None
        message = service.quarantined.get((entry.definition.name, service.registry.generation))
        if message is not None:
            service.record(entry, failed_view(entry.definition, obj, message, origin=entry.origin,
                                              policy=service.policy), 0.0, key)
            self.dirty.done(key)
            return None
        self._jobs[key] = entry
        return Job(key, definition_key(entry.definition), service.inputs(obj, entry)), entry.definition

    def _fan_out(self, uid: str, keys: list[str]) -> None:
        """Mark each holder key of conflicting ``uid``; forget its records of objects holding it no more."""
        store = self.service.store
        for stale in store.keys_of(uid):
            record = store.get(stale)
            if stale not in keys and (stale != uid or record is None or not self.service.holds(record, uid)):
                self.service.forget(stale)
        for key in keys:
            self._mark(key)

    def _on_outcome(self, outcome: Outcome) -> None:
        key = outcome.uid  # the job's store key
        entry = self._jobs.pop(key, None)
        self.dirty.done(key)
        obj = self.service.object_of(key)
        if obj is not None and key == uid_of_key(key) and self.service.reader.uid_holders(key):
            obj = None  # the uid came into conflict while in flight: its holders are resolved instead
        if entry is not None and obj is not None:
            view = outcome.view
            if view is None:
                view = failed_view(entry.definition, obj, self._message(entry, obj, outcome), origin=entry.origin,
                                   policy=self.service.policy)
            try:
                self.service.record(entry, view, outcome.seconds, key)
            except Exception as exc:  # noqa: BLE001 - a view the store cannot take must not stall readiness
                log.exception("cannot store the view of %s", key)
                self.service.record(entry, failed_view(entry.definition, obj, f"the view could not be stored: "
                                                       f"{type(exc).__name__}: {exc}", origin=entry.origin,
                                                       policy=self.service.policy), outcome.seconds, key)
        elif obj is None:
            self.dirty.mark(key)  # deleted (or came into conflict) while in flight: the next round settles it
        self._wake.set()

    def _message(self, entry: Entry, obj: Mapping[str, Any], outcome: Outcome) -> str:
        meta = obj.get("metadata", {})
        where = f"{obj.get('kind')} {meta.get('namespace') or ''}/{meta.get('name')}".replace(" /", " ")
        if outcome.status != "timeout":
            return outcome.error or "resolution failed"
        text = (f"definition {entry.definition.name}: resolving {where} exceeded the {self.timeout_s:g} s "
                f"resolution budget; the worker was ended")
        running = (outcome.error or "").partition(" while evaluating ")[2]
        if running:
            text += f" (it was evaluating {running})"
        key = (entry.definition.name, self.service.registry.generation)
        self.timeouts[key] = self.timeouts.get(key, 0) + 1
        if self.timeouts[key] >= self.quarantine_after and key not in self.service.quarantined:
            self.quarantines += 1
            self.service.quarantined[key] = (f"definition {entry.definition.name} quarantined after "
                                             f"{self.timeouts[key]} resolutions exceeded the {self.timeout_s:g} s "
                                             "budget; register it again once fixed")
            log.error("%s", self.service.quarantined[key])
        return text

    def _check_settled(self, started: float) -> None:
        if not self.dirty.is_idle() or self._rescan:
            now = time.monotonic()
            if not self.ready and now - self._last_progress >= PROGRESS_EVERY_S:
                self._last_progress = now
                log.info("resolving workloads: resolved %d of %d", len(self.service.store), self.known)
            return
        if not self.ready:
            self.ready = True
            log.info("resolved %d of %d workloads in %.1f s: ready", len(self.service.store), self.known,
                     time.monotonic() - started)
        self._settled.set()

