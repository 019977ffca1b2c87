"""A static ``Reader`` over objects loaded from YAML or JSON files.

Used when no cluster is configured (``wmap serve`` with the bundled sample,
``wmap describe -f FILE``) and by tests. Accepted input, per file:

- one or more YAML documents (``---`` separated; empty documents are skipped);
- a JSON document (JSON is YAML, so the same loader reads it);
- a list dump: a document with an ``items`` array (``kind: List`` from
  ``kubectl get -o yaml``, or a typed list such as ``PodList`` from the raw API, whose
  items lack ``apiVersion``/``kind``: they are taken from the list itself).

A directory is read recursively, files ending in ``.yaml``, ``.yml`` or ``.json``, in
sorted path order. Objects are trimmed like live ones (same ``Store``). An object without
``metadata.uid`` gets a deterministic one (``snapshot-`` + a hash of GVK, namespace and
name) so uid indexes and owner walks work on hand-written manifests.

Errors: ``SnapshotError`` (an ``InvalidRequest``) naming the file and document for
unreadable files, invalid YAML/JSON, or documents that are not Kubernetes objects.

No ``kubernetes_asyncio`` here.
"""

from __future__ import annotations

import hashlib
from collections.abc import Iterable, Iterator, Mapping
from pathlib import Path
from typing import Any

import yaml

from server.errors import InvalidRequest
from server.gvk import GVK
from server.kube.graph import ObjectGraph
from server.kube.reader import InformerStatus, KubeObject
from server.kube.store import object_key

SUFFIXES = (".yaml", ".yml", ".json")

_Loader: Any = getattr(yaml, "CSafeLoader", yaml.SafeLoader)


class SnapshotError(InvalidRequest):
    """A snapshot file cannot be read or holds something that is not an object."""

    code = "invalid_snapshot"


def snapshot_uid(gvk: GVK, namespace: str, name: str) -> str:
    """The deterministic uid given to objects that have none."""
    digest = hashlib.sha256(f"{gvk}|{namespace}|{name}".encode()).hexdigest()
    return f"snapshot-{digest[:24]}"


def _expand(doc: Any, where: str) -> Iterator[dict[str, Any]]:
    """The objects in one document (the document itself, or a list dump's items)."""
    if doc is None:
        return
    if not isinstance(doc, dict):
        raise SnapshotError(f"{where}: expected a Kubernetes object, got {type(doc).__name__}")
    kind, items = doc.get("kind"), doc.get("items")
    if isinstance(items, list) and (not isinstance(kind, str) or kind.endswith("List")):
        item_kind = kind[: -len("List")] if isinstance(kind, str) else ""
        for index, item in enumerate(items):
            if not isinstance(item, dict):
                raise SnapshotError(f"{where}: items[{index}] is not an object")
            if item_kind and "kind" not in item:
                item = {"apiVersion": doc.get("apiVersion"), "kind": item_kind, **item}
            yield item
        return
    yield doc


def load_objects(path: str | Path) -> list[dict[str, Any]]:
    """Every object in a file or, recursively, a directory (see module docstring).

    Raises:
        SnapshotError: unreadable file, invalid YAML/JSON, or a non-object document.
    """
    root = Path(path)
    if root.is_dir():
        files = sorted(p for p in root.rglob("*") if p.is_file() and p.suffix in SUFFIXES)
    else:
        files = [root]
    objects: list[dict[str, Any]] = []
    for file in files:
        try:
            docs = list(yaml.load_all(file.read_text(encoding="utf-8"), Loader=_Loader))
        except (OSError, UnicodeDecodeError, yaml.YAMLError) as exc:
            raise SnapshotError(f"{file}: {exc}") from exc
        for number, doc in enumerate(docs, start=1):
            objects.extend(_expand(doc, f"{file} (document {number})"))
    return objects


class SnapshotReader(ObjectGraph):
    """A ``Reader`` over a fixed set of objects: always synced, never watching.

    Every GVK is "watched": ``state(gvk)`` is ``synced`` with its object count (0 for a
    type with no objects), and ``is_synced()`` is always true.

    Args:
        objects: initial objects (each needs ``apiVersion``, ``kind``, ``metadata.name``).
        full: keep whole objects instead of trimming them.

    Raises:
        SnapshotError: an object without ``apiVersion``/``kind`` or ``metadata.name``.
    """

    def __init__(self, objects: Iterable[Mapping[str, Any]] = (), *, full: bool = False) -> None:
        super().__init__(full=full)
        for obj in objects:
            self.add(obj)

    @classmethod
    def from_paths(cls, *paths: str | Path, full: bool = False) -> SnapshotReader:
        """Load every file or directory in ``paths`` (see ``load_objects``)."""
        return cls([obj for path in paths for obj in load_objects(path)], full=full)

    def add(self, obj: Mapping[str, Any]) -> KubeObject:
        """Insert or replace ``obj``; returns the stored (trimmed) object.

        Raises:
            SnapshotError: no ``apiVersion``/``kind`` or no ``metadata.name``.
        """
        try:
            gvk = GVK.of(obj)
        except ValueError as exc:
            raise SnapshotError(f"object {_describe(obj)}: {exc}") from exc
        key = object_key(obj)
        if key is None:
            raise SnapshotError(f"{gvk.kind} object without metadata.name")
        obj = _with_uid(gvk, key, obj)
        self.apply(gvk, "ADDED", obj)
        stored = self.get(gvk, key[0], key[1])
        assert stored is not None
        return stored

    def remove(self, gvk: GVK, namespace: str | None, name: str) -> KubeObject | None:
        """Delete ``namespace/name`` of ``gvk``; returns the removed object, if any."""
        obj = self.get(gvk, namespace, name)
        if obj is not None:
            self.apply(gvk, "DELETED", obj)
        return obj

    def state(self, gvk: GVK) -> InformerStatus:
        """Always ``synced``, with the object count."""
        return InformerStatus(gvk=gvk, state="synced", count=self.count(gvk), has_synced=True, relists=1)

    def states(self) -> dict[GVK, InformerStatus]:
        """``state`` of every GVK that has objects (or had some)."""
        return {gvk: self.state(gvk) for gvk in self.gvks()}

    def is_synced(self) -> bool:
        """Always true: a snapshot is complete by construction."""
        return True


def _with_uid(gvk: GVK, key: tuple[str, str], obj: Mapping[str, Any]) -> Mapping[str, Any]:
    """``obj`` itself, or a copy with a deterministic ``metadata.uid`` when it has none."""
    meta = obj.get("metadata")
    assert isinstance(meta, Mapping)
    if isinstance(meta.get("uid"), str) and meta["uid"]:
        return obj
    return {**obj, "metadata": {**meta, "uid": snapshot_uid(gvk, *key)}}


def _describe(obj: Mapping[str, Any]) -> str:
    key = object_key(obj)
    return f"{key[0]}/{key[1]}".lstrip("/") if key else "<unnamed>"
