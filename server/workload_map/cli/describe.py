"""``wmap describe -f``: resolve the workloads of files offline, namespace group by group.

A small input is read once and resolved whole. A big one (more than :data:`GROUP_OBJECTS`
namespaced objects) is not held at once: the first pass reads every document (and reports
the broken ones), keeps the cluster-scoped objects and sets the namespaced ones aside in a
temporary file (:class:`Spill`), counting them per namespace; then the namespaces, in
sorted order, are cut into groups of at most :data:`GROUP_OBJECTS` objects (a bigger
namespace is a group of its own), and each group's objects are read back into a new
reader (the first group's also holds the cluster-scoped objects), resolved by a new
service, printed and dropped. Peak memory is then one group's objects and views plus the
cluster-scoped objects and a small index, whatever the input's size.

Why a group resolves as the whole input would: a workload's inputs are its owner-reference
descendants, the pods among them and the ResourceClaims of its namespace
(``materialization.workset.WorkloadSet.inputs``); a namespaced object can only be owned by
an object of its own namespace or a cluster-scoped one (Kubernetes "Owners and dependents":
cross-namespace owner references are disallowed, ``workload_map.owners.may_own``). So the
input is resolved whole (one group) when a namespaced object names a cluster-scoped object
of the input as its owner, or when a uid is held by two objects (``Reader.uid_conflicts``
compares holders across namespaces). Output order is unchanged: views are listed by
namespace, kind, name (``materialization.views.sort_key``), the cluster-scoped ones first,
and groups follow the namespaces' order. Tree and JSON are written as each group is done
(the same bytes as rendering every view at once); YAML keeps the views and renders them at
the end (PyYAML may share anchors across items).
"""

from __future__ import annotations

import argparse
import pickle
import sys
from collections.abc import Iterator, Sequence
from typing import TYPE_CHECKING, Any

from msgspec import Struct, field

from workload_map.logs import printable
from workload_map.cli.inputs import EXIT_NO_DEFINITION, EXIT_NOT_FOUND, EXIT_USAGE, STDIN, STDIN_NAME, shown

if TYPE_CHECKING:
    from workload_map.definitions.registry import DefinitionRegistry
    from workload_map.kube.snapshot import SnapshotReader

GROUP_OBJECTS = 20_000
"""Namespaced objects resolved together at most (a namespace holding more is one group)."""


class Plan(Struct):
    """What the first pass learned: objects per namespace and whether groups may be cut.

    Attributes:
        counts: namespace -> namespaced objects kept ("" is never a key).
        kinds: (group, kind) of every object kept.
        shared_uid: a uid is held by objects of two namespaces (or of one and the cluster scope).
    """

    counts: dict[str, int] = field(default_factory=dict)
    kinds: set[tuple[str, str]] = field(default_factory=set)
    shared_uid: bool = False
    _holders: dict[str, str] = field(default_factory=dict)  # uid -> namespace ("" cluster-scoped)
    _owners: set[str] = field(default_factory=set)  # owner uids named by namespaced objects

    def note(self, obj: dict[str, Any]) -> str:
        """Count ``obj`` (a kept document: ``apiVersion``, ``kind`` and a name checked); its namespace or ""."""
        from workload_map.gvk import GVK

        meta = obj.get("metadata") or {}
        namespace = _namespace(obj)
        self.kinds.add(GVK.of(obj).group_kind)
        uid = meta.get("uid")
        if isinstance(uid, str) and uid and self._holders.setdefault(uid, namespace) != namespace:
            self.shared_uid = True
        if namespace:
            self.counts[namespace] = self.counts.get(namespace, 0) + 1
            for ref in meta.get("ownerReferences") or ():
                if isinstance(ref, dict) and isinstance(ref.get("uid"), str):
                    self._owners.add(ref["uid"])
        return namespace

    def groups(self) -> list[set[str]]:
        """The namespace groups in namespace order: one when the input must stay whole (module docstring)."""
        if self.shared_uid or any(self._holders.get(uid) == "" for uid in self._owners):
            return [set(self.counts)]
        out: list[set[str]] = []
        size = GROUP_OBJECTS
        for namespace in sorted(self.counts):
            if size + self.counts[namespace] > GROUP_OBJECTS:
                out.append(set())
                size = 0
            out[-1].add(namespace)
            size += self.counts[namespace]
        return out or [set()]


class Spill:
    """Namespaced objects set aside in an unlinked temporary file, read back a group at a time.

    Each object is pickled (an exact copy of the decoded document: ``NaN``, big integers and
    YAML timestamps included) at the end of the file; :meth:`objects` gives a group's
    objects back in input order, so each is decoded from the input once (twice for the
    objects read before the input was found too big) instead of once per group.
    """

    def __init__(self) -> None:
        import tempfile  # here: only a big input needs it

        self._file = tempfile.TemporaryFile(prefix="wmap-describe-")
        self._size = 0
        self._at: dict[str, list[tuple[int, int, int]]] = {}  # namespace -> (position in input, offset, size)

    def put(self, namespace: str, position: int, obj: dict[str, Any]) -> None:
        """Keep ``obj``, the ``position``-th namespaced object of the input."""
        data = pickle.dumps(obj, protocol=pickle.HIGHEST_PROTOCOL)
        self._at.setdefault(namespace, []).append((position, self._size, len(data)))
        self._file.write(data)
        self._size += len(data)

    def objects(self, group: set[str]) -> Iterator[dict[str, Any]]:
        """The objects of the namespaces in ``group``, in input order."""
        self._file.flush()
        for _, offset, size in sorted(at for namespace in group for at in self._at.get(namespace, ())):
            self._file.seek(offset)
            yield pickle.loads(self._file.read(size))

    def close(self) -> None:
        """Remove the file (it has no name: closing it frees the space)."""
        self._file.close()


def describe_files(args: argparse.Namespace, registry: DefinitionRegistry) -> int:
    """Resolve and print the workloads of ``args.file`` (see the module docstring); the exit code.

    Multi-document input is read leniently (``workload_map.kube.documents``): each broken
    document is a ``warning:`` line on stderr naming its position, the others are resolved
    and the exit code stays 0; 2 only when no document at all could be read, or the input
    holds none (an empty file). 4 when no workload is covered by a definition, 3 when
    ``TYPE[/NAME]`` matches none.

    Raises:
        SnapshotError: a file cannot be read at all.
        DefinitionError: a needed catalog entry has an invalid jq expression.
    """
    from workload_map.cli.render import Printer
    from workload_map.kube.snapshot import SnapshotReader
    from workload_map.service.workloads import WorkloadService

    wanted = _wanted(registry, args)
    if isinstance(wanted, int):
        return wanted
    plan = Plan()
    problems: list[str] = []
    reader, spill = _first_pass(_sources(args.file), plan, problems)
    nothing = bool(problems) and not plan.kinds
    for problem in problems:
        print(f"{'error' if nothing else 'warning'}: {printable(problem)}", file=sys.stderr)
    if nothing:
        return EXIT_USAGE
    if not plan.kinds:  # an empty file, or only comments and document separators
        print(f"error: no Kubernetes object in {printable(shown(args.file))}", file=sys.stderr)
        return EXIT_USAGE
    registry.catalog.narrow(plan.kinds)  # a one-shot run: only the input's kinds are ever needed
    registry.catalog.check(plan.kinds)
    printer = Printer(args.output, pod_limit=args.pod_limit)
    seen = 0
    for index, group in enumerate(plan.groups() if spill is not None else [set(plan.counts)]):
        if spill is not None:
            if args.namespace and args.namespace not in group:
                continue  # ``-n``: only the namespace's group is resolved
            reader = reader if index == 0 else SnapshotReader()  # cluster-scoped objects: with the first
            for obj in spill.objects(group):
                reader.add(obj)
        service = WorkloadService(registry, reader)
        views = [v for v in service.workloads(namespace=args.namespace or None)
                 if (v.namespace or "") in group or (index == 0 and not v.namespace)]
        service.unhook()  # the registry lives on: the group's objects and views must not
        seen += len(views)
        for view in views:
            if wanted is None or (view.group, view.kind) == wanted[0] and (not wanted[1] or view.name == wanted[1]):
                printer.add(view)
    if spill is not None:
        spill.close()
    return printer.close() if printer.count else _nothing_printed(args, seen, wanted)


def _first_pass(sources: list[tuple[str, str | None]], plan: Plan,
                problems: list[str]) -> tuple[SnapshotReader, Spill | None]:
    """Read every document into ``plan`` and ``problems``; returns the reader and the spill (big input).

    Until :data:`GROUP_OBJECTS` namespaced objects are seen every object goes to the
    reader; past that the reader is dropped for a new one that gets the cluster-scoped
    objects only, and every namespaced object goes to a :class:`Spill` (those read before,
    by reading the input's start again).
    """
    from workload_map.kube.snapshot import SnapshotReader

    reader = SnapshotReader()
    spill: Spill | None = None
    position = prefix = 0  # namespaced objects seen; all objects read before the spill began
    for read, obj in enumerate(_objects(sources, problems)):
        namespace = plan.note(obj)
        if spill is None and namespace and position >= GROUP_OBJECTS:
            spill, reader, prefix = Spill(), SnapshotReader(), read
        if not namespace or spill is None:
            reader.add(obj)
        else:
            spill.put(namespace, position, obj)
        position += bool(namespace)
    if spill is not None:
        position = 0
        for read, obj in enumerate(_objects(sources, None)):
            if read == prefix:
                break
            if namespace := _namespace(obj):
                spill.put(namespace, position, obj)
                position += 1
            else:
                reader.add(obj)
    return reader, spill


def _namespace(obj: dict[str, Any]) -> str:
    return str((obj.get("metadata") or {}).get("namespace") or "")


def _wanted(registry: DefinitionRegistry, args: argparse.Namespace) -> tuple[tuple[str, str], str] | int | None:
    """``((group, kind), name or "")`` of ``describe -f TYPE[/NAME]``, None without a TYPE, or an exit code."""
    if not args.target:
        return None
    from workload_map.cli.kinds import resolve_kind

    kind, _, slash_name = args.target.partition("/")
    entries = resolve_kind(registry, kind, output=args.output)
    if isinstance(entries, int):
        return entries
    return entries[0].gvk.group_kind, args.name or slash_name


def _nothing_printed(args: argparse.Namespace, seen: int, wanted: tuple[tuple[str, str], str] | None) -> int:
    """The exit code of a run that printed no workload (the message on stderr)."""
    if not seen or wanted is None:
        print(f"error: no workload in {shown(args.file)} is covered by a definition "
              "(`wmap catalog` lists the covered types)", file=sys.stderr)
        return EXIT_NO_DEFINITION
    named = f" named {wanted[1]!r}" if wanted[1] else ""
    print(f"error: no {wanted[0][1]}{named} in the files", file=sys.stderr)
    return EXIT_NOT_FOUND


def _sources(paths: Sequence[str]) -> list[tuple[str, str | None]]:
    """``(path, name shown in messages)`` per file argument; stdin is saved to a file (read twice)."""
    from workload_map.cli.inputs import snapshot_paths

    saved = snapshot_paths(paths)
    return [(path, STDIN_NAME if given == STDIN else None) for path, given in zip(saved, paths)]


def _objects(sources: list[tuple[str, str | None]], problems: list[str] | None) -> Iterator[dict[str, Any]]:
    """Every readable document of ``sources``; broken ones reported in ``problems`` (None: dropped)."""
    from workload_map.kube.documents import iter_documents

    for path, name in sources:
        yield from iter_documents(path, [] if problems is None else problems, shown=name)
