"""A static ``Reader`` over objects loaded from YAML or JSON files.

Used when no cluster is configured (``wmap serve`` with the bundled sample,
``wmap describe -f FILE``) and by tests. Accepted input, per file:

- ``.json`` files, and other files whose first character is ``{`` or ``[`` (a JSON dump
  saved as ``.yaml``, standard input), unless they turn out not to be JSON before any
  object was read (then YAML): one or more JSON values, read incrementally with the standard library's
  JSON scanner (``workload_map.kube.jsonstream``): an object, an array of objects, or a list
  dump whose ``items`` array is streamed one object at a time, so a ``kubectl get -o json``
  dump of a large cluster never sits in memory decoded whole (keys and short strings are
  interned as they are decoded: see ``jsonstream.interning_decoder``);
- other files: one or more YAML documents (``---`` separated; empty documents are skipped),
  parsed with libyaml's ``CSafeLoader`` when PyYAML was built with it;
- in both, a list dump: a document with an ``items`` array (``kind: List`` from
  ``kubectl get -o yaml|json``, or a typed list such as ``PodList`` from the raw API, whose
  items lack ``apiVersion``/``kind``: they are taken from the list itself).

A directory is read recursively, files ending in ``.yaml``, ``.yml`` or ``.json``, in
sorted path order. Objects are trimmed as they are read, like live ones (same ``Store``
and ``workload_map.kube.trim``): ``SnapshotReader.from_paths`` consumes ``iter_objects`` one
object at a time, so only the trimmed copies stay. An object without ``metadata.uid`` gets
a deterministic one (``snapshot-`` + a hash of GVK, namespace and name) so uid indexes and
owner walks work on hand-written manifests.

Errors: ``SnapshotError`` (an ``InvalidRequest``) naming the file and document for
unreadable files, invalid YAML/JSON (JSON errors give line, column and character offset),
or documents that are not Kubernetes objects. No ``kubernetes_asyncio`` here.
"""

from __future__ import annotations

import itertools
import stat
from collections.abc import Iterable, Iterator, Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Any

import yaml

from workload_map.digests import sha256
from workload_map.errors import InvalidRequest
from workload_map.gvk import GVK
from workload_map.kube.graph import ObjectGraph
from workload_map.kube.reader import FRESH, Freshness, InformerStatus, KubeObject, Reader
from workload_map.kube.store import object_key, shape_problem
from workload_map.kube.yamljson import JSONLoader, whole_or_stream

if TYPE_CHECKING:  # the JSON stream reader and mmap: imported when a JSON file is read
    from workload_map.kube.jsonstream import JSONStream

SUFFIXES = (".yaml", ".yml", ".json")


class SnapshotError(InvalidRequest):
    """A snapshot file cannot be read or holds something that is not an object."""

    code = "invalid_snapshot"


def snapshot_uid(gvk: GVK, namespace: str, name: str) -> str:
    """The deterministic uid given to objects that have none."""
    digest = sha256(f"{gvk}|{namespace}|{name}".encode()).hexdigest()
    return f"snapshot-{digest[:24]}"


def _with_kind(item: dict[str, Any], api_version: Any, item_kind: str) -> dict[str, Any]:
    """``item`` itself, or a copy carrying the list's ``apiVersion`` and item kind."""
    if item_kind and "kind" not in item:
        return {"apiVersion": api_version, "kind": item_kind, **item}
    return item


def _list_kind(kind: Any) -> str:
    """The item kind of a typed list (``PodList`` -> ``Pod``); ``""`` for ``List`` or none."""
    return kind[: -len("List")] if isinstance(kind, str) and kind.endswith("List") else ""


def _refuse(message: str, problems: list[str] | None) -> None:
    """Raise ``SnapshotError(message)``, or append ``message`` to ``problems`` when it is a list.

    The strict readers (``iter_objects``, ``wmap serve --snapshot``) fail on the first
    refused document; the lenient one (``workload_map.kube.documents``) reports it and
    goes on.
    """
    if problems is None:
        raise SnapshotError(message)
    problems.append(message)


def _expand(doc: Any, where: str, problems: list[str] | None = None) -> Iterator[dict[str, Any]]:
    """The objects in one document (the document itself, or a list dump's items).

    Raises:
        SnapshotError: a document or list item that is not an object (``problems`` None).
    """
    if doc is None:
        return
    if not isinstance(doc, dict):
        _refuse(f"{where}: expected a Kubernetes object, got {type(doc).__name__}", problems)
        return
    kind, items = doc.get("kind"), doc.get("items")
    if isinstance(items, list) and (not isinstance(kind, str) or kind.endswith("List")):
        for index, item in enumerate(items):
            if isinstance(item, dict):
                yield _with_kind(item, doc.get("apiVersion"), _list_kind(kind))
            else:
                _refuse(f"{where}: items[{index}] is not an object", problems)
        return
    yield doc


def _yaml_objects(file: Path) -> Iterator[dict[str, Any]]:
    """The objects of a YAML file, one document at a time."""
    try:
        with file.open(encoding="utf-8") as handle:
            for number, doc in enumerate(yaml.load_all(whole_or_stream(handle), Loader=JSONLoader), start=1):
                yield from _expand(doc, f"{file} (document {number})")
    except yaml.YAMLError as exc:
        raise SnapshotError(f"{file}: {yaml_reason(exc)}") from exc
    except (OSError, UnicodeDecodeError) as exc:
        raise SnapshotError(f"{file}: {exc}") from exc


def yaml_reason(exc: yaml.YAMLError) -> str:
    """``line L column C: <problem> (<context>)`` of a YAML error, on one line."""
    mark = getattr(exc, "problem_mark", None)
    where = f"line {mark.line + 1} column {mark.column + 1}: " if mark is not None else ""
    problem = getattr(exc, "problem", None) or " ".join(str(exc).split())
    context = getattr(exc, "context", None)
    return f"not valid YAML at {where}{problem}" + (f" ({context})" if context else "")


def _json_list(stream: JSONStream, where: str, problems: list[str] | None) -> Iterator[dict[str, Any]]:
    """One top-level JSON object: its streamed ``items`` when it is a list, else itself.

    Members other than ``items`` are decoded whole; items without ``kind`` wait for the
    list's ``kind`` when it comes after them (``kubectl`` writes ``items`` before ``kind``).
    A member or item that cannot be decoded (``JSONValueError``) refuses that item, or the
    object when it is a member (see ``_refuse``).
    """
    from workload_map.kube.jsonstream import JSONValueError

    head: dict[str, Any] = {}
    pending: list[dict[str, Any]] = []
    streamed, refused = False, ""
    for key in stream.members():
        kind = head.get("kind")
        if key != "items" or stream.peek() != "[" or (isinstance(kind, str) and not kind.endswith("List")):
            try:
                head[key] = stream.value()
            except JSONValueError as exc:
                refused = refused or f"{where}: {key}: {exc}"
            continue
        streamed = True
        for index, item in _elements(stream, where, "items[{}]", problems):
            if not isinstance(item, dict):
                _refuse(f"{where}: items[{index}] is not an object", problems)
            elif "kind" in item or "kind" in head:
                yield _with_kind(item, head.get("apiVersion"), _list_kind(head.get("kind")))
            else:
                pending.append(item)
    if refused:
        _refuse(refused, problems)
        if not streamed:
            return
    if not streamed:
        yield from _expand(head, where, problems)
        return
    if isinstance(head.get("kind"), str) and not head["kind"].endswith("List"):
        raise SnapshotError(f"{where}: an items array before kind {head['kind']!r}, which is not a list")
    for item in pending:
        yield _with_kind(item, head.get("apiVersion"), _list_kind(head.get("kind")))


def _json_objects(file: Path, *, fallback: bool = False, problems: list[str] | None = None,
                  name: str | None = None) -> Iterator[dict[str, Any]]:
    """The objects of a JSON file: every top-level object, array element or list item.

    Args:
        file: the file.
        fallback: the file is not named ``.json`` but starts like JSON; when it is not JSON
            after all (a YAML flow mapping such as ``{a: 1}``), and nothing was yielded
            yet, read it as YAML instead.
        problems: a list: refused documents and items are reported in it and skipped
            (``_refuse``); None: the first one raises.
        name: the file's name in messages (default: its path).

    Raises:
        SnapshotError: unreadable or malformed JSON (with ``problems``, the objects read
            before it were yielded), or a refused document or item when ``problems`` is None.
    """
    from workload_map.kube.jsonstream import JSONStream, JSONStreamError, JSONValueError

    yielded, label = 0, name or str(file)
    try:
        with JSONStream(file) as stream:
            for number in itertools.count(1):
                where, first = f"{label} (document {number})", stream.peek()
                if not first:
                    return
                try:
                    for obj in _json_document(stream, first, where, problems):
                        yielded += 1
                        yield obj
                except JSONValueError as exc:  # a whole top-level value: the stream is past it
                    _refuse(f"{where}: {exc}", problems)
    except JSONStreamError as exc:
        if fallback and not yielded:
            yield from _yaml_objects(file)
            return
        raise SnapshotError(f"{label}: {exc}") from None
    except (OSError, UnicodeDecodeError) as exc:
        raise SnapshotError(f"{label}: {exc}") from exc


def _elements(stream: JSONStream, where: str, place: str,
              problems: list[str] | None) -> Iterator[tuple[int, Any]]:
    """``(index, value)`` of each element of the array at the stream's position.

    An element that cannot be decoded (``JSONValueError``) is refused (``_refuse``, named
    ``where`` and ``place`` with the index filled in, e.g. ``items[3]``) and the next one read.
    """
    from workload_map.kube.jsonstream import JSONValueError

    for index, _ in enumerate(stream.elements()):
        try:
            yield index, stream.value()
        except JSONValueError as exc:
            _refuse(f"{where}: {place.format(index)}: {exc}", problems)


def _json_document(stream: JSONStream, first: str, where: str,
                   problems: list[str] | None) -> Iterator[dict[str, Any]]:
    """The objects of the top-level value starting with ``first`` (see ``_json_objects``).

    Raises:
        JSONValueError: the value is not an array or object and cannot be decoded.
    """
    if first == "{":
        yield from _json_list(stream, where, problems)
    elif first == "[":
        for _, element in _elements(stream, where, "element {}", problems):
            yield from _expand(element, where, problems)
    else:
        yield from _expand(stream.value(), where, problems)


def _looks_like_json(file: Path) -> bool:
    """True when the first non-blank character of ``file`` is ``{`` or ``[``."""
    try:
        with file.open(encoding="utf-8") as handle:
            head = handle.read(4096).lstrip()
    except (OSError, UnicodeDecodeError):
        return False  # the YAML reader reports it
    return head[:1] in ("{", "[")


def _file_objects(file: Path) -> Iterator[dict[str, Any]]:
    """``.json`` files through the JSON reader; other files too when they start like JSON, else YAML.

    Files that start like JSON: ``kubectl get -o json`` saved under another name, standard
    input.
    """
    if file.suffix.lower() == ".json":
        return _json_objects(file)
    if _looks_like_json(file):
        return _json_objects(file, fallback=True)
    return _yaml_objects(file)


def _files(root: Path) -> list[Path]:
    """``root`` itself, or the snapshot files under it in sorted path order.

    Raises:
        SnapshotError: ``root`` is a device or a socket (``/dev/zero`` would be read without
            end: 4 GB in 10 s); a regular file or a pipe (``<(kubectl get ...)``) is read.
    """
    if root.is_dir():
        return sorted(p for p in root.rglob("*") if p.is_file() and p.suffix in SUFFIXES)
    try:
        mode = root.stat().st_mode
    except OSError:
        return [root]  # the reader reports the missing or unreadable file
    if not (stat.S_ISREG(mode) or stat.S_ISFIFO(mode)):
        raise SnapshotError(f"{root}: not a regular file or a pipe")
    return [root]


def iter_objects(path: str | Path) -> Iterator[dict[str, Any]]:
    """Every object in a file or, recursively, a directory, read as it is consumed.

    Raises:
        SnapshotError: unreadable file, invalid YAML/JSON, or a non-object document
            (raised when the iteration reaches it).
    """
    for file in _files(Path(path)):
        yield from _file_objects(file)


def load_objects(path: str | Path) -> list[dict[str, Any]]:
    """Every object in a file or, recursively, a directory (see module docstring).

    Raises:
        SnapshotError: unreadable file, invalid YAML/JSON, or a non-object document.
    """
    return list(iter_objects(path))


class SnapshotReader(ObjectGraph, Reader):
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
        self._building = True  # nobody observes the reader yet (ObjectGraph._publish)
        try:
            for obj in objects:
                self.add(obj)
        finally:
            self._building = False

    @classmethod
    def from_paths(cls, *paths: str | Path, full: bool = False) -> SnapshotReader:
        """Load every file or directory in ``paths``, trimming each object as it is read.

        Raises:
            SnapshotError: see ``iter_objects`` and ``add``.
        """
        return cls(itertools.chain.from_iterable(iter_objects(path) for path in paths), full=full)

    def add(self, obj: Mapping[str, Any]) -> KubeObject:
        """Insert or replace ``obj``; returns the stored (trimmed) object.

        Raises:
            SnapshotError: no ``apiVersion``/``kind``, no ``metadata.name``, or another
                malformed shape (``kube.store.shape_problem``), naming the object and field.
        """
        try:
            gvk = GVK.of(obj)
        except ValueError as exc:
            raise SnapshotError(f"object {_describe(obj)}: {exc}") from exc
        problem, key = shape_problem(obj), object_key(obj)
        if problem == "no metadata.name":
            raise SnapshotError(f"{gvk.kind} object without metadata.name")
        if problem is not None or key is None:
            raise SnapshotError(f"{gvk.kind} {_describe(obj)}: {problem}")
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

    def freshness(self) -> Freshness:
        """Always ``FRESH``, the summary of statuses all ``synced`` without error, outage or contact."""
        return FRESH


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
