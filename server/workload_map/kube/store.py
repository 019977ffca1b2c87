"""The object store of one GVK: trimmed dicts plus indexes.

A ``Store`` keeps the objects of one type by namespace and name (``""`` for the namespace of
cluster-scoped objects) and indexes them by uid and owner uid (every ownerReference,
controller or not). Label selection (``list(labels=...)``, used by no
server path today) scans the namespace's objects instead of keeping a per-label index (a
set entry per label of every object). Objects are held as
``workload_map.kube.trim`` leaves them, compacted (``workload_map.kube.compact``: interned strings,
shared sub-trees). It is the single store implementation
behind both the live informers and the static snapshot reader; the cross-type owner graph
lives in ``workload_map.kube.graph``.

Every object is checked for the shape the readers above rely on (``shape_problem``): an
object failing it is not stored, and the first time per key a warning names it.

Mutations return the changes they made as ``(type, object)`` pairs so callers can fan out
events; an update whose resourceVersion equals the stored one is no change (this keeps
reconnects and relists from duplicating events). Stored dicts are never mutated: an update
replaces the dict.

No I/O and no ``kubernetes_asyncio`` here.
"""

from __future__ import annotations

import builtins
from collections.abc import Iterable, Iterator, Mapping
from typing import Any, cast

from workload_map.gvk import GVK
from workload_map.kube.reader import EventType, KubeObject, KubeObjects
from workload_map.kube.trim import trim
from workload_map.logs import logger
from workload_map.owners import controller_uid as controller_uid  # re-exported: graph, tests

log = logger(__name__)

Key = tuple[str, str]
"""``(namespace or "", name)``."""

WARNED_KEPT = 1024
"""Keys per store whose malformed shape was logged already (one warning per key, bounded)."""

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


def _kind_of(value: Any) -> str:
    return "null" if value is None else type(value).__name__


def shape_problem(obj: Mapping[str, Any]) -> str | None:
    """Why ``obj`` lacks the shape every reader relies on, or None.

    The API conventions give every object a ``metadata`` object with a string ``name``,
    and ``namespace``, ``uid`` strings when present, ``ownerReferences`` a list, and
    ``spec`` and ``status`` objects ("Kubernetes API Conventions", "Objects"; the API server
    validates the built-in kinds so). A file or a CRD without a structural schema can
    break it: a namespace ``5`` sorted among strings, a ``spec: "x"`` read with ``.get``,
    ``ownerReferences: 5`` iterated, each raised inside a reader and lost the rest of a
    file or stalled the views. Returns the first problem, naming the field, e.g.
    ``metadata.namespace is int, not a string``.
    """
    meta = obj.get("metadata")
    if not isinstance(meta, Mapping):
        return f"metadata is {_kind_of(meta)}, not an object"
    name = meta.get("name")
    if not isinstance(name, str) or not name:
        return "no metadata.name" if name is None or name == "" else f"metadata.name is {_kind_of(name)}, not a string"
    for field in ("namespace", "uid"):
        value = meta.get(field)
        if value is not None and not isinstance(value, str):
            return f"metadata.{field} is {_kind_of(value)}, not a string"
    refs = meta.get("ownerReferences")
    if refs is not None and not isinstance(refs, list):
        return f"metadata.ownerReferences is {_kind_of(refs)}, not a list"
    for field in ("spec", "status"):
        value = obj.get(field)
        if value is not None and not isinstance(value, Mapping):
            return f"{field} is {_kind_of(value)}, not an object"
    return None


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
    """Objects of one GVK with uid, namespace and owner indexes.

    Layout (memory: no per-object key tuple, and every string is the object's own, shared):
    ``namespace -> name -> object`` holds the objects, ``uid -> object`` and ``owner uid ->
    [child uid, or NUL + "namespace/name" for an object without a uid]`` index them. Reads that
    promise key order sort on ``(namespace, name)`` when they are made.

    Args:
        gvk: the type held (sets ``apiVersion``/``kind`` and picks the trimmer).
        full: keep whole objects (minus managedFields / last-applied) instead of trimming.
    """

    def __init__(self, gvk: GVK, *, full: bool = False) -> None:
        self.gvk = gvk
        self._full = full
        self._by_ns: dict[str, dict[str, KubeObject]] = {}
        self._by_uid: dict[str, KubeObject] = {}
        self._by_owner: dict[str, builtins.list[str]] = {}
        #: Read-only view of the owner index (owner uid -> refs): a membership test without a call.
        self.owner_index: Mapping[str, builtins.list[str]] = self._by_owner
        self._size = 0
        self._warned: set[Key] = set()  # keys whose malformed shape was logged (``_warn``)

    def __len__(self) -> int:
        return self._size

    def __iter__(self) -> Iterator[KubeObject]:
        return iter([obj for names in self._by_ns.values() for obj in names.values()])

    # reads

    def get(self, namespace: str | None, name: str) -> KubeObject | None:
        """The object ``namespace/name``; ``None``/``""`` namespace for cluster-scoped."""
        names = self._by_ns.get(namespace or "")
        return names.get(name) if names is not None else None

    def by_uid(self, uid: str) -> KubeObject | None:
        """The object with ``metadata.uid == uid``."""
        return self._by_uid.get(uid)

    def owned_by(self, uid: str) -> KubeObjects:
        """Objects with any ownerReference to ``uid``, sorted by key."""
        children = self._by_owner.get(uid)
        if not children:
            return []
        found = [obj for ref in children if (obj := self._by_ref(ref)) is not None]
        if len(found) > 1:
            found.sort(key=_sort_key)
        return found

    def list(
        self, namespace: str | None = None, labels: Mapping[str, str] | None = None
    ) -> KubeObjects:
        """Objects in ``namespace`` (all when None or "") carrying every label pair, sorted by key."""
        found = [obj for _, obj in self._items(namespace)]
        if labels:
            wanted = [(str(k), str(v)) for k, v in labels.items()]
            found = [o for o in found if _has_labels(o, wanted)]
        return found

    def resource_versions(self, namespace: str | None = None) -> dict[Key, str]:
        """``key -> metadata.resourceVersion`` (all namespaces when None)."""
        return {key: str(meta_of(obj).get("resourceVersion", "")) for key, obj in self._items(namespace)}

    def _items(self, namespace: str | None) -> builtins.list[tuple[Key, KubeObject]]:
        """``(key, object)`` in key order, within ``namespace`` when given."""
        spaces = [namespace] if namespace else sorted(self._by_ns)
        out: builtins.list[tuple[Key, KubeObject]] = []
        for ns in spaces:
            names = self._by_ns.get(ns)
            if names:
                out.extend(((ns, name), names[name]) for name in sorted(names))
        return out

    def reindex_uid(self, uid: str, obj: KubeObject) -> None:
        """Point the uid index at ``obj`` (a stored object) again, after another holder of ``uid`` left."""
        self._by_uid[uid] = obj

    def _by_ref(self, ref: str) -> KubeObject | None:
        """The object an owner-index entry names: a uid, or NUL + ``namespace/name`` (no uid)."""
        if ref.startswith("\0"):
            namespace, _, name = ref[1:].partition("/")
            return self.get(namespace, name)
        return self._by_uid.get(ref)

    # writes

    def trim(self, obj: Mapping[str, Any]) -> KubeObject:
        """The copy of ``obj`` this store holds (``workload_map.kube.trim``, compacted)."""
        return trim(self.gvk, obj, full=self._full)

    def upsert(self, obj: Mapping[str, Any], *, trimmed: bool = False) -> Changes:
        """Insert or replace ``obj`` (trimmed). ``[]`` when unchanged, nameless or malformed.

        A malformed object (``shape_problem``) is not stored and any version stored before
        is kept; the first time per key a warning names it.

        A different uid under the same key counts as a delete plus an add. ``trimmed``:
        ``obj`` comes from ``self.trim`` already (the reflector trims list pages as they
        arrive); it is then stored as it is.
        """
        key = object_key(obj)
        if key is None:
            return []
        problem = shape_problem(obj)
        if problem is not None:
            self._warn(key, problem)
            return []
        new: KubeObject = cast("KubeObject", obj) if trimmed else trim(self.gvk, obj, full=self._full)
        old = self.get(*key)
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
        old = self._remove((namespace or "", name))
        return [("DELETED", old)] if old is not None else []

    def replace(self, objects: Iterable[Mapping[str, Any]], *, namespace: str | None = None,
                trimmed: bool = False) -> Changes:
        """Make the store equal ``objects`` (within ``namespace`` when given).

        Objects that vanished yield synthetic ``DELETED`` changes; others as ``upsert``
        (``trimmed`` as there). The same as ``upsert`` of each object, then ``prune``.
        """
        seen: set[Key] = set()
        changes: Changes = []
        for obj in objects:
            key = object_key(obj)
            if key is not None:
                seen.add(key)
                changes.extend(self.upsert(obj, trimmed=trimmed))
        return changes + self.prune(seen, namespace)

    def prune(self, keep: set[Key], namespace: str | None = None) -> Changes:
        """Delete every object (within ``namespace`` when given) whose key is not in ``keep``."""
        spaces = [namespace or ""] if namespace else list(self._by_ns)
        gone = [(ns, name) for ns in spaces for name in self._by_ns.get(ns, ()) if (ns, name) not in keep]
        gone.sort()
        return [change for key in gone for change in self.delete(*key)]

    def clear(self) -> Changes:
        """Remove everything; one ``DELETED`` change per object."""
        return [change for key, _ in self._items(None) for change in self.delete(*key)]

    def _warn(self, key: Key, problem: str) -> None:
        if key in self._warned or len(self._warned) >= WARNED_KEPT:
            return
        self._warned.add(key)
        namespace, name = key
        log.warning("%s %s%s not cached: %s", self.gvk.kind, f"{namespace}/" if namespace else "", name, problem)

    # index maintenance

    def _insert(self, key: Key, obj: KubeObject) -> None:
        meta = meta_of(obj)
        namespace, name = key
        if meta.get("name") == name:  # the stored object's strings (interned), not the input's
            name = meta["name"]
            if meta.get("namespace") == namespace:
                namespace = meta["namespace"]
        self._by_ns.setdefault(namespace, {})[name] = obj
        self._size += 1
        uid = meta.get("uid")
        ref = uid if isinstance(uid, str) else f"\0{namespace}/{name}"
        if isinstance(uid, str):
            self._by_uid[uid] = obj
        for owner_uid in _owner_uids(obj):
            self._by_owner.setdefault(owner_uid, []).append(ref)

    def _remove(self, key: Key) -> KubeObject | None:
        names = self._by_ns.get(key[0])
        obj = names.pop(key[1], None) if names is not None else None
        if obj is None:
            return None
        if not names:
            del self._by_ns[key[0]]
        self._size -= 1
        uid = meta_of(obj).get("uid")
        if isinstance(uid, str) and self._by_uid.get(uid) is obj:
            del self._by_uid[uid]
        ref = uid if isinstance(uid, str) else f"\0{key[0]}/{key[1]}"
        for owner_uid in _owner_uids(obj):
            _discard(self._by_owner, owner_uid, ref)
        return obj


def _owner_uids(obj: KubeObject) -> builtins.list[str]:
    """The distinct owner uids of ``obj``, in reference order (two references index once)."""
    return list(dict.fromkeys(str(ref["uid"]) for ref in owner_refs(obj)))


def _sort_key(obj: KubeObject) -> Key:
    meta = meta_of(obj)
    return (meta.get("namespace") or "", meta.get("name") or "")


def _discard(index: dict[str, builtins.list[str]], entry: str, key: str) -> None:
    """Remove ``key`` from ``index[entry]``, dropping the entry when it empties.

    A list, not a set: an owner has few children as a rule and a set costs about four times
    the memory; removal is a linear scan by identity first (the same interned string).
    """
    keys = index.get(entry)
    if keys is not None and key in keys:
        keys.remove(key)
        if not keys:
            del index[entry]
