"""The object store of one GVK: trimmed dicts plus indexes.

A ``Store`` keeps the objects of one type keyed by ``(namespace, name)`` (``""`` for the
namespace of cluster-scoped objects) and indexes them by uid, namespace and owner uid (every
ownerReference, controller or not). Label selection (``list(labels=...)``, used by no
server path today) scans the namespace's objects instead of keeping a per-label index (a
set entry per label of every object). Objects are held as
``workload_map.kube.trim`` leaves them, compacted (``workload_map.kube.compact``: interned strings,
shared small maps). It is the single store implementation
behind both the live informers and the static snapshot reader; the cross-type owner graph
lives in ``workload_map.kube.graph``.

Mutations return the changes they made as ``(type, object)`` pairs so callers can fan out
events; an update whose resourceVersion equals the stored one is no change (this keeps
reconnects and relists from duplicating events). Stored dicts are never mutated: an update
replaces the dict.

No I/O and no ``kubernetes_asyncio`` here.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator, Mapping
from typing import Any, cast

from workload_map.gvk import GVK
from workload_map.kube.reader import EventType, KubeObject, KubeObjects
from workload_map.kube.trim import trim
from workload_map.owners import controller_uid as controller_uid  # re-exported: graph, tests

Key = tuple[str, str]
"""``(namespace or "", name)``."""

Change = tuple[EventType, KubeObject]
"""One applied change: the new object (ADDED/MODIFIED) or the removed one (DELETED)."""

Changes = list[Change]


def object_key(obj: Mapping[str, Any]) -> Key | None:
    """``(namespace or "", name)`` of an object, ``None`` without a string name."""
    meta = obj.get("metadata")
    if not isinstance(meta, Mapping) or not isinstance(meta.get("name"), str):
        return None
    namespace = meta.get("namespace")
    return (namespace if isinstance(namespace, str) else "", meta["name"])


def meta_of(obj: Mapping[str, Any]) -> Mapping[str, Any]:
    """``obj["metadata"]`` or an empty mapping."""
    meta = obj.get("metadata")
    return meta if isinstance(meta, Mapping) else {}


def owner_refs(obj: Mapping[str, Any]) -> list[Mapping[str, Any]]:
    """The well-formed ownerReferences of ``obj`` (each with a string uid)."""
    refs = meta_of(obj).get("ownerReferences")
    if not isinstance(refs, list):
        return []
    return [r for r in refs if isinstance(r, Mapping) and isinstance(r.get("uid"), str)]




def _has_labels(obj: Mapping[str, Any], wanted: list[tuple[str, str]]) -> bool:
    """True when ``obj`` carries every ``(key, value)`` label of ``wanted``."""
    labels = meta_of(obj).get("labels")
    if not isinstance(labels, Mapping):
        return False
    return all(k in labels and str(labels[k]) == v for k, v in wanted)


class Store:
    """Objects of one GVK with uid, namespace, owner and label indexes.

    Args:
        gvk: the type held (sets ``apiVersion``/``kind`` and picks the trimmer).
        full: keep whole objects (minus managedFields / last-applied) instead of trimming.
    """

    def __init__(self, gvk: GVK, *, full: bool = False) -> None:
        self.gvk = gvk
        self._full = full
        self._objects: dict[Key, KubeObject] = {}
        self._by_uid: dict[str, Key] = {}
        self._by_ns: dict[str, set[Key]] = {}
        self._by_owner: dict[str, set[Key]] = {}

    def __len__(self) -> int:
        return len(self._objects)

    def __iter__(self) -> Iterator[KubeObject]:
        return iter(list(self._objects.values()))

    # reads

    def get(self, namespace: str | None, name: str) -> KubeObject | None:
        """The object ``namespace/name``; ``None``/``""`` namespace for cluster-scoped."""
        return self._objects.get((namespace or "", name))

    def by_uid(self, uid: str) -> KubeObject | None:
        """The object with ``metadata.uid == uid``."""
        key = self._by_uid.get(uid)
        return self._objects[key] if key is not None else None

    def owned_by(self, uid: str) -> KubeObjects:
        """Objects with any ownerReference to ``uid``, sorted by key."""
        return [self._objects[k] for k in sorted(self._by_owner.get(uid, ()))]

    def list(
        self, namespace: str | None = None, labels: Mapping[str, str] | None = None
    ) -> KubeObjects:
        """Objects in ``namespace`` (all when None or "") carrying every label pair, sorted by key."""
        keys: Iterable[Key] = self._by_ns.get(namespace, ()) if namespace else self._objects.keys()
        found = [self._objects[k] for k in sorted(keys)]
        if labels:
            wanted = [(str(k), str(v)) for k, v in labels.items()]
            found = [o for o in found if _has_labels(o, wanted)]
        return found

    def resource_versions(self, namespace: str | None = None) -> dict[Key, str]:
        """``key -> metadata.resourceVersion`` (all namespaces when None)."""
        keys = self._by_ns.get(namespace, set()) if namespace else self._objects.keys()
        return {k: str(meta_of(self._objects[k]).get("resourceVersion", "")) for k in keys}

    # writes

    def trim(self, obj: Mapping[str, Any]) -> KubeObject:
        """The copy of ``obj`` this store holds (``workload_map.kube.trim``, compacted)."""
        return trim(self.gvk, obj, full=self._full)

    def upsert(self, obj: Mapping[str, Any], *, trimmed: bool = False) -> Changes:
        """Insert or replace ``obj`` (trimmed). ``[]`` when unchanged or nameless.

        A different uid under the same key counts as a delete plus an add. ``trimmed``:
        ``obj`` comes from ``self.trim`` already (the reflector trims list pages as they
        arrive); it is then stored as it is.
        """
        key = object_key(obj)
        if key is None:
            return []
        new: KubeObject = cast("KubeObject", obj) if trimmed else trim(self.gvk, obj, full=self._full)
        old = self._objects.get(key)
        if old is None:
            self._insert(key, new)
            return [("ADDED", new)]
        old_meta, new_meta = meta_of(old), meta_of(new)
        if old_meta.get("uid") != new_meta.get("uid"):
            self._remove(key)
            self._insert(key, new)
            return [("DELETED", old), ("ADDED", new)]
        rv = new_meta.get("resourceVersion")
        if rv and rv == old_meta.get("resourceVersion"):
            return []
        self._remove(key)
        self._insert(key, new)
        return [("MODIFIED", new)]

    def delete(self, namespace: str | None, name: str) -> Changes:
        """Remove ``namespace/name``; ``[]`` when absent."""
        key = (namespace or "", name)
        old = self._remove(key)
        return [("DELETED", old)] if old is not None else []

    def replace(self, objects: Iterable[Mapping[str, Any]], *, namespace: str | None = None,
                trimmed: bool = False) -> Changes:
        """Make the store equal ``objects`` (within ``namespace`` when given).

        Objects that vanished yield synthetic ``DELETED`` changes; others as ``upsert``
        (``trimmed`` as there).
        """
        seen: set[Key] = set()
        changes: Changes = []
        for obj in objects:
            key = object_key(obj)
            if key is not None:
                seen.add(key)
                changes.extend(self.upsert(obj, trimmed=trimmed))
        scope = self._by_ns.get(namespace, set()) if namespace else self._objects.keys()
        for key in sorted(set(scope) - seen):
            changes.extend(self.delete(*key))
        return changes

    def clear(self) -> Changes:
        """Remove everything; one ``DELETED`` change per object."""
        return [change for key in sorted(self._objects) for change in self.delete(*key)]

    # index maintenance

    def _insert(self, key: Key, obj: KubeObject) -> None:
        self._objects[key] = obj
        uid = meta_of(obj).get("uid")
        if isinstance(uid, str):
            self._by_uid[uid] = key
        self._by_ns.setdefault(key[0], set()).add(key)
        for ref in owner_refs(obj):
            self._by_owner.setdefault(str(ref["uid"]), set()).add(key)

    def _remove(self, key: Key) -> KubeObject | None:
        obj = self._objects.pop(key, None)
        if obj is None:
            return None
        uid = meta_of(obj).get("uid")
        if isinstance(uid, str) and self._by_uid.get(uid) == key:
            del self._by_uid[uid]
        _discard(self._by_ns, key[0], key)
        for ref in owner_refs(obj):
            _discard(self._by_owner, str(ref["uid"]), key)
        return obj


def _discard(index: dict[Any, set[Key]], entry: Any, key: Key) -> None:
    """Remove ``key`` from ``index[entry]``, dropping the entry when it empties."""
    keys = index.get(entry)
    if keys is not None:
        keys.discard(key)
        if not keys:
            del index[entry]
