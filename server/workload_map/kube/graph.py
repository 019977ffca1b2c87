"""Objects of every cached GVK as one owner graph: the shared half of a ``Reader``.

``ObjectGraph`` holds one ``Store`` per GVK and implements the read methods of
``workload_map.kube.reader.Reader`` that do not depend on where objects come from (``get``,
``list``, ``by_uid``, ``owned_by``, ``descendants``, ``root_of``, ``version``,
``subscribe``). ``InformerCache`` (live) and ``SnapshotReader`` (files) both build on it,
so indexing, owner-chain walks and change events behave the same offline and live.

Writes (``apply``, ``replace``, ``clear``) update one store, then for each change bump the
version of the object and of every controller ancestor found in the cache
(ownerReferences with ``controller: true``, as the garbage collector follows them:
https://kubernetes.io/docs/concepts/overview/working-with-objects/owners-dependents/), and
deliver a ``ChangeEvent`` to every subscriber queue. Queues are bounded; when one is full
its oldest event is dropped (``dropped_events`` counts them) so a stalled subscriber cannot
grow memory without bound. Listeners (``add_listener``) are called synchronously with every
event instead, losslessly: the materialized views of ``workload_map.service`` use one to mark
workloads dirty (a listener must be O(1) and must not raise).

No I/O and no ``kubernetes_asyncio`` here. Single event loop, no locking.
"""

from __future__ import annotations

import builtins
import itertools
from collections.abc import Callable, Iterable, Mapping
from typing import TYPE_CHECKING, Any

from workload_map.gvk import GVK
from workload_map.kube.reader import ChangeEvent, KubeObject, KubeObjects
from workload_map.kube.store import Changes, Store, controller_uid, meta_of, object_key
from workload_map.kube.trim import trim
from workload_map.logs import logger
from workload_map.owners import MAX_OWNER_DEPTH, may_own, owner_chain

if TYPE_CHECKING:  # imported where a queue is made or a list applied (one-shot commands do neither)
    import asyncio

log = logger(__name__)

DEFAULT_QUEUE_SIZE = 10_000
DEFAULT_MAX_DEPTH = MAX_OWNER_DEPTH
APPLY_SLICE = 500
"""Listed objects ``GraphSink.replace`` applies between two yields to the event loop."""


class ObjectGraph:
    """Per-GVK stores, cross-type owner walks, per-uid versions and change fan-out.

    Args:
        full: keep whole objects instead of trimming them (see ``workload_map.kube.trim``).
        queue_size: capacity of each subscriber queue.
    """

    def __init__(self, *, full: bool = False, queue_size: int = DEFAULT_QUEUE_SIZE) -> None:
        self._full = full
        self._queue_size = queue_size
        self._stores: dict[GVK, Store] = {}
        self._versions: dict[str, int] = {}
        self._counter = itertools.count(1)
        self._queues: list[asyncio.Queue[ChangeEvent]] = []
        self._listeners: list[Callable[[ChangeEvent], None]] = []
        self.dropped_events = 0
        self._uid_gvk: dict[str, GVK] = {}
        #: uid -> the distinct objects holding it, only for uids seen on two or more (identity conflicts).
        self._uid_holders: dict[str, builtins.list[Identity]] = {}
        self._sorted_gvks: builtins.list[GVK] | None = None
        self._sorted_stores: builtins.list[Store] = []
        self._owning_stores: builtins.list[Store] = []
        self._owning_at = -1  # the generation _owning_stores was taken at
        #: Bumped on every change of any cached object: readers above memoize per generation.
        self.generation = 0
        #: True while a reader is being filled before anyone can observe it (``SnapshotReader``'s
        #: construction): an added object then bumps its own version only (``_publish``).
        self._building = False

    # stores

    def store(self, gvk: GVK) -> Store:
        """The store of ``gvk``, created empty on first use."""
        store = self._stores.get(gvk)
        if store is None:
            store = self._stores[gvk] = Store(gvk, full=self._full)
            self._sorted_gvks = None
            self.generation += 1
        return store

    def trim(self, gvk: GVK, obj: Mapping[str, Any]) -> KubeObject:
        """The copy of ``obj`` the store of ``gvk`` holds (``workload_map.kube.trim``); changes nothing."""
        return trim(gvk, obj, full=self._full)

    def gvks(self) -> builtins.list[GVK]:
        """GVKs that have a store, sorted."""
        return sorted(self._stores)

    def count(self, gvk: GVK) -> int:
        """Objects cached for ``gvk``."""
        store = self._stores.get(gvk)
        return len(store) if store is not None else 0

    # reads (Reader)

    def get(self, gvk: GVK, namespace: str | None, name: str) -> KubeObject | None:
        """See ``Reader.get``."""
        store = self._stores.get(gvk)
        return store.get(namespace, name) if store is not None else None

    def list(
        self, gvk: GVK, namespace: str | None = None, labels: Mapping[str, str] | None = None
    ) -> KubeObjects:
        """See ``Reader.list``."""
        store = self._stores.get(gvk)
        return store.list(namespace, labels) if store is not None else []

    def by_uid(self, uid: str) -> KubeObject | None:
        """See ``Reader.by_uid`` (one dict lookup through the uid -> GVK index).

        For a uid two distinct objects hold (:meth:`uid_conflicts`), the one stored last.
        """
        gvk = self._uid_gvk.get(uid)
        store = self._stores.get(gvk) if gvk is not None else None
        return store.by_uid(uid) if store is not None else None

    def owned_by(self, uid: str) -> KubeObjects:
        """See ``Reader.owned_by``; ordered by GVK, then namespace and name."""
        if self._sorted_gvks is None or self._owning_at != self.generation:
            if self._sorted_gvks is None:
                self._sorted_gvks = sorted(self._stores)
                self._sorted_stores = [self._stores[gvk] for gvk in self._sorted_gvks]  # no GVK hash per call
            # the stores holding any owned object, kept while nothing changes (a cold pass asks
            # for every workload's subtree; most types, the workloads' own among them, own nothing)
            self._owning_stores = [store for store in self._sorted_stores if store.owner_index]
            self._owning_at = self.generation
        return [obj for store in self._owning_stores if uid in store.owner_index for obj in store.owned_by(uid)]

    def uid_conflicts(self, uid: str) -> builtins.list[str]:
        """The objects holding ``uid`` when two or more distinct ones do, as ``group/Kind ns/name``, sorted.

        Identity is group/kind/namespace/name (the API server's key): a uid seen on two of
        them (a copied manifest, a restore into another name) is a conflict, not one object.
        ``[]`` when the uid is held by one object or none.
        """
        held = self._uid_holders.get(uid)  # None for nearly every uid: asked for each input of each job
        return sorted(_shown(i) for i in held) if held else []

    def uid_holders(self, uid: str) -> dict[str, KubeObject]:
        """See ``Reader.uid_holders``: ``{shown identity: object}`` in :meth:`uid_conflicts` order."""
        held = ((_shown(i), self.get(*i)) for i in self._uid_holders.get(uid, ()))
        return {shown: obj for shown, obj in sorted(held, key=lambda pair: pair[0]) if obj is not None}

    def descendants(self, uid: str, max_depth: int = DEFAULT_MAX_DEPTH) -> KubeObjects:
        """See ``Reader.descendants``; breadth first, each object once.

        None for a uid two distinct objects hold (:meth:`uid_conflicts`): whose children they
        are cannot be told from the uid, so no pod is attached to the wrong one.

        A child counts only when its controller reference names its parent and the parent
        may own it by the namespace rule (``workload_map.owners.may_own``): an object in another
        namespace whose reference carries the same uid is not a descendant.

        Two children holding one uid (a copied manifest whose uid was kept) are both
        descendants: the stores index children by uid, which names only one holder, so every
        holder of a conflicted child uid is asked (:meth:`uid_holders`). Below them the walk
        goes on once per uid.
        """
        if uid in self._uid_holders:  # whose children they are is unknown: nobody's
            return []
        found: KubeObjects = []
        seen = {uid}
        held: set[int] = set()  # ids of the holders of conflicted uids found (each once)
        frontier = [uid]
        for _ in range(max_depth):
            children = [c for u in frontier for c in self._children(u)]
            frontier = []
            for child in children:
                child_uid = meta_of(child).get("uid")
                if not isinstance(child_uid, str):
                    continue
                if child_uid in self._uid_holders:  # each holder once; the walk below them once
                    if id(child) in held or child_uid == uid:
                        continue
                    held.add(id(child))
                elif child_uid in seen:
                    continue
                found.append(child)
                if child_uid not in seen:
                    seen.add(child_uid)
                    frontier.append(child_uid)
            if not frontier:
                break
        return found

    def _children(self, uid: str) -> KubeObjects:
        """Objects whose controller reference is ``uid``, by the namespace rule when it is cached.

        A conflicted child uid (:meth:`uid_conflicts`) stands for every object holding it.
        """
        parent = self.by_uid(uid)
        owned = self.owned_by(uid)
        if self._uid_holders and any(meta_of(c).get("uid") in self._uid_holders for c in owned):
            owned = list({id(o): o for c in owned for o in self._holders_of(c)}.values())
        return [c for c in owned if controller_uid(c) == uid and (parent is None or may_own(parent, c))]

    def _holders_of(self, obj: KubeObject) -> KubeObjects:
        """``obj``, or every holder of its uid when that uid is conflicted."""
        child_uid = meta_of(obj).get("uid")
        if isinstance(child_uid, str) and child_uid in self._uid_holders:
            return list(self.uid_holders(child_uid).values())
        return [obj]

    def root_of(self, obj: Mapping[str, Any], max_depth: int = DEFAULT_MAX_DEPTH) -> KubeObject | None:
        """See ``Reader.root_of`` (``workload_map.owners.owner_chain``: namespace rule, cycles cut)."""
        top = owner_chain(obj, self.by_uid, max_depth).top
        return top if isinstance(top, dict) else None  # the chain holds what by_uid returned: cached dicts

    def version(self, uid: str) -> int:
        """See ``Reader.version``."""
        return self._versions.get(uid, 0)

    def subscribe(self) -> asyncio.Queue[ChangeEvent]:
        """See ``Reader.subscribe``."""
        import asyncio

        queue: asyncio.Queue[ChangeEvent] = asyncio.Queue(maxsize=self._queue_size)
        self._queues.append(queue)
        return queue

    def unsubscribe(self, queue: asyncio.Queue[ChangeEvent]) -> None:
        """See ``Reader.unsubscribe``."""
        if queue in self._queues:
            self._queues.remove(queue)

    def subscriber_depths(self) -> builtins.list[int]:
        """See ``Reader.subscriber_depths``."""
        return [queue.qsize() for queue in self._queues]

    def add_listener(self, listener: Callable[[ChangeEvent], None]) -> None:
        """Call ``listener(event)`` synchronously for every change from now on (lossless)."""
        self._listeners.append(listener)

    def remove_listener(self, listener: Callable[[ChangeEvent], None]) -> None:
        """Stop calling ``listener`` (no error when it is not registered)."""
        if listener in self._listeners:
            self._listeners.remove(listener)

    # writes

    def apply(self, gvk: GVK, event_type: str, obj: Mapping[str, Any]) -> None:
        """Apply one watch event (``ADDED``/``MODIFIED`` upsert, ``DELETED`` remove)."""
        store = self.store(gvk)
        gvk = store.gvk  # one GVK object per type in the uid index, not one per event's caller
        if event_type == "DELETED":
            key = object_key(obj)
            self._publish(gvk, store.delete(*key) if key is not None else [])
        else:
            self._note_uid(gvk, obj)
            key = object_key(obj)
            old = store.get(*key) if key is not None else None
            self._publish(gvk, store.upsert(obj), {key: old} if key is not None and old is not None else None)

    def replace(self, gvk: GVK, objects: Iterable[Mapping[str, Any]], *, namespace: str | None = None,
                trimmed: bool = False) -> None:
        """Replace the objects of ``gvk`` (within ``namespace``) after a list.

        ``trimmed``: the objects come from ``Store.trim`` of this GVK's store already. The
        same as ``upsert_listed`` of all of them, then ``prune`` of the keys not listed
        (``GraphSink`` does the two in slices).
        """
        keep: set[tuple[str, str]] = set()
        self.upsert_listed(gvk, objects, keep, trimmed=trimmed)
        self.prune(gvk, keep, namespace=namespace)

    def upsert_listed(self, gvk: GVK, objects: Iterable[Mapping[str, Any]], keep: set[tuple[str, str]], *,
                      trimmed: bool = False) -> None:
        """Store listed ``objects`` of ``gvk`` (``ADDED``/``MODIFIED``; nothing for a held resourceVersion).

        Adds each object's ``(namespace, name)`` to ``keep`` (for ``prune``).
        """
        store = self.store(gvk)
        gvk = store.gvk
        changes: Changes = []
        previous: dict[tuple[str, str], KubeObject] = {}
        for obj in objects:
            key = object_key(obj)
            if key is None:
                continue
            keep.add(key)
            old = store.get(*key)
            if old is obj:  # prepared from the object held (same uid and resourceVersion)
                continue
            self._note_uid(gvk, obj)
            if old is not None:
                previous[key] = old
            changes.extend(store.upsert(obj, trimmed=trimmed))
        self._publish(gvk, changes, previous)

    def prune(self, gvk: GVK, keep: set[tuple[str, str]], *, namespace: str | None = None) -> None:
        """Delete the objects of ``gvk`` (within ``namespace``) whose key is not in ``keep`` (after a list)."""
        store = self.store(gvk)
        self._publish(store.gvk, store.prune(keep, namespace))

    def clear(self, gvk: GVK, *, drop: bool = False) -> None:
        """Delete every object of ``gvk`` (events included); ``drop`` forgets the store."""
        store = self._stores.get(gvk)
        if store is not None:
            self._publish(gvk, store.clear())
            if drop:
                del self._stores[gvk]
                self._sorted_gvks = None
                self.generation += 1

    # change fan-out

    # identity conflicts

    def _note_uid(self, gvk: GVK, obj: Mapping[str, Any]) -> None:
        """Record a conflict when ``obj``'s uid is held by another cached object (before storing it)."""
        uid, key = meta_of(obj).get("uid"), object_key(obj)
        holder_gvk = self._uid_gvk.get(uid) if isinstance(uid, str) and key is not None else None
        if holder_gvk is None or key is None or not isinstance(uid, str):
            return
        holders = self._uid_holders.get(uid)
        if holders is None:
            held = self._stores[holder_gvk].by_uid(uid)
            held_key = object_key(held) if held is not None else None
            if held_key is None or (holder_gvk, *held_key) == (gvk, *key):
                return
            holders = self._uid_holders[uid] = [(holder_gvk, *held_key)]
            log.warning("uid %s is held by two objects: %s and %s", uid, _shown(holders[0]), _shown((gvk, *key)))
        if (gvk, *key) not in holders:
            holders.append((gvk, *key))

    def _forget_holder(self, gvk: GVK, obj: KubeObject, uid: str) -> None:
        """A holder of a conflicted uid is gone: with one left, that one owns the uid again."""
        holders = self._uid_holders[uid]
        key = object_key(obj)
        if key is not None and (gvk, *key) in holders:
            holders.remove((gvk, *key))
        if len(holders) > 1:
            return
        del self._uid_holders[uid]
        self._uid_gvk.pop(uid, None)
        for left_gvk, namespace, name in holders:
            left = self.get(left_gvk, namespace, name)
            if left is not None:
                self._stores[left_gvk].reindex_uid(uid, left)
                self._uid_gvk[uid] = left_gvk

    def _publish(self, gvk: GVK, changes: Changes,
                 previous: Mapping[tuple[str, str], KubeObject] | None = None) -> None:
        """Deliver ``changes``; ``previous``: (namespace, name) -> object before them (``ChangeEvent.old``).

        While ``_building`` (no subscriber, no listener, no view yet), an ``ADDED`` object
        only enters the uid index and gets its own version: its ancestors' versions and the
        event's chain exist for observers, and there are none (the owner-chain walk was
        about a tenth of loading a snapshot: 27,249 walks for the benchmark dump). Every
        other change takes the full path.
        """
        if self._building and not self._queues and not self._listeners and all(
                event_type == "ADDED" for event_type, _ in changes):
            for _, obj in changes:
                self.generation += 1
                uid = meta_of(obj).get("uid")
                if isinstance(uid, str):
                    self._uid_gvk[uid] = gvk
                    self._versions[uid] = next(self._counter)
            return
        for event_type, obj in changes:
            self.generation += 1
            uid = meta_of(obj).get("uid")
            if isinstance(uid, str) and uid in self._uid_holders and event_type == "DELETED":
                self._forget_holder(gvk, obj, uid)
                uid = None  # the uid index was settled above
            if isinstance(uid, str):
                if event_type != "DELETED":
                    self._uid_gvk[uid] = gvk
                elif self._uid_gvk.get(uid) == gvk:
                    del self._uid_gvk[uid]
            chain = self._bump_chain(obj)
            if event_type == "DELETED":
                for uid in chain:
                    self._forget_if_unknown(uid)
            old = None
            if previous and event_type == "MODIFIED":
                key = object_key(obj)
                old = previous.get(key) if key is not None else None
            self._deliver(ChangeEvent(event_type, gvk, obj, chain, old))

    def _bump_chain(self, obj: Mapping[str, Any]) -> tuple[str, ...]:
        """Bump ``obj``'s uid and its controller ancestors; return those uids.

        The ancestors come from ``workload_map.owners.owner_chain``: the namespace rule and cycle
        cut apply; an owner not cached yet is bumped too, so its view is fresh when it
        arrives.
        """
        uid = meta_of(obj).get("uid")
        walk = owner_chain(obj, self.by_uid, DEFAULT_MAX_DEPTH)
        chain = ([uid] if isinstance(uid, str) else []) + [u for u in walk.uids() if u]
        if walk.dangling is not None and walk.dangling not in chain:
            chain.append(walk.dangling)
        for link in chain:
            self._versions[link] = next(self._counter)
        return tuple(chain)

    def _forget_if_unknown(self, uid: str) -> None:
        """Drop the version of a uid nothing cached is or refers to."""
        if self.by_uid(uid) is None and not self.owned_by(uid):
            self._versions.pop(uid, None)

    def _deliver(self, event: ChangeEvent) -> None:
        for listener in self._listeners:
            try:
                listener(event)
            except Exception:  # noqa: BLE001 - a broken listener must not stop the cache
                log.exception("change listener %r failed", listener)
        if event.old is not None and self._queues:  # queued events do not keep the previous object alive
            event = ChangeEvent(event.type, event.gvk, event.obj, event.root_uids)
        for queue in self._queues:
            if queue.full():
                queue.get_nowait()
                self.dropped_events += 1
            queue.put_nowait(event)


Identity = tuple[GVK, str, str]
"""``(GVK, namespace or "", name)``: what tells two objects apart."""


def _shown(identity: Identity) -> str:
    gvk, namespace, name = identity
    kind = f"{gvk.group}/{gvk.kind}" if gvk.group else gvk.kind
    return f"{kind} {namespace}/{name}" if namespace else f"{kind} {name}"


class GraphSink:
    """Feeds one GVK of an ``ObjectGraph`` from a reflector (``workload_map.kube.reflector.Sink``).

    Args:
        graph: the graph fed.
        gvk: the type.
        slice_size: listed objects applied between two yields to the event loop.
    """

    def __init__(self, graph: ObjectGraph, gvk: GVK, *, slice_size: int = APPLY_SLICE) -> None:
        self.graph, self.gvk = graph, gvk
        self.slice_size = max(1, slice_size)

    def prepare(self, obj: Mapping[str, Any]) -> dict[str, Any]:
        """The trimmed, compact copy the store will hold (per list item, in a worker thread).

        An item whose uid and resourceVersion the store holds already is that stored object
        (a relist of unchanged objects trims nothing; ``ObjectGraph.upsert_listed`` then
        skips it by identity). Reads the store from the worker thread: single dict lookups,
        atomic under the GIL; the store's own change rule decides again on the loop.
        """
        key = object_key(obj)
        held = self.graph.get(self.gvk, *key) if key is not None else None
        if held is not None:
            meta, held_meta = meta_of(obj), meta_of(held)
            rv = meta.get("resourceVersion")
            if rv and rv == held_meta.get("resourceVersion") and meta.get("uid") == held_meta.get("uid"):
                return held
        return self.graph.trim(self.gvk, obj)

    async def replace(self, objects: list[dict[str, Any]], namespace: str | None, *, prepared: bool = False) -> None:
        """Replace the objects of the GVK (within ``namespace``); ``prepared``: from ``prepare``.

        Applied ``slice_size`` objects at a time with a yield to the event loop in between
        (20,000 listed pods in one go held the loop for half a second), then the objects not
        listed are deleted. Cancelled in between, what was applied stays (the next list
        completes it).
        """
        import asyncio

        keep: set[tuple[str, str]] = set()
        for start in range(0, len(objects), self.slice_size):
            if start:
                await asyncio.sleep(0)
            self.graph.upsert_listed(self.gvk, objects[start:start + self.slice_size], keep, trimmed=prepared)
        self.graph.prune(self.gvk, keep, namespace=namespace)

    def apply(self, event_type: str, obj: Mapping[str, Any]) -> None:
        """Apply one watch event."""
        self.graph.apply(self.gvk, event_type, obj)
