"""Act on a workload through its definition: change its pod templates, suspend, resume.

Every front door (REST ``workload_map.api.actions``, GraphQL ``workload_map.graphql.mutation``) calls
:func:`update_pod_templates` or :func:`set_suspended`. Steps: find the workload among
the caller's visible ones (404 otherwise), enter the caller's permission scope (``patch``
on the root resource, checked and impersonated by ``workload_map.auth.writes.patching_as``),
read the object as stored, plan the change off the event loop
(``workload_map.resolution.writes``: pure), then (unless a dry run) send one JSON Patch whose
first op pins the resourceVersion, so a concurrent change gives 409 and nothing is written.

Writers: :class:`~workload_map.kube.patches.ClusterWriter` against a cluster, and
:class:`SnapshotWriter` for snapshots (the bundled sample): the change is applied to the
in-memory object (``SnapshotReader.add``) and the answer says ``"appliedTo": "snapshot"``.

Answer (JSON)::

    {"appliedTo": "cluster" | "snapshot", "dryRun": bool, "changed": bool,
     "resourceVersion": "<version after the write (before it on a dry run)>",
     "patch": [RFC 6902 ops], "targets": [{"component", "instance", "paths": {...}}]}
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import Callable, Mapping
from typing import Any, AsyncContextManager, Protocol

from workload_map.errors import Conflict, InvalidRequest
from workload_map.gvk import GVK
from workload_map.kube.snapshot import SnapshotReader
from workload_map.resolution.changes import parse_change
from workload_map.resolution.paths import thawed
from workload_map.resolution.writes import Plan, plan_pod_change, plan_suspend
from workload_map.service.workloads import WorkloadService

Scope = Callable[[str, str], AsyncContextManager[None]]
"""``scope(group, resource)``: the caller's permission block around the read and the write."""


class ObjectWriter(Protocol):
    """Reads and patches one workload object (cluster or snapshot)."""

    applied_to: str

    async def resource(self, gvk: GVK) -> str:
        """The plural resource name of ``gvk``."""
        ...

    async def read(self, gvk: GVK, namespace: str | None, name: str) -> dict[str, Any]:
        """The object as stored now."""
        ...

    async def patch(self, gvk: GVK, namespace: str | None, name: str, ops: list[dict[str, Any]],
                    updated: dict[str, Any]) -> dict[str, Any]:
        """Write ``ops`` (``updated`` is the object they produce); returns the stored object."""
        ...


class SnapshotWriter:
    """Applies writes to a :class:`~workload_map.kube.snapshot.SnapshotReader`'s objects.

    The resourceVersion precondition is checked here as the API server would (409), and
    every write increments a numeric resourceVersion (``"1"`` when there was none).
    """

    applied_to = "snapshot"

    def __init__(self, reader: SnapshotReader) -> None:
        self._reader = reader

    async def resource(self, gvk: GVK) -> str:
        """A plural for permission checks: the lower-case kind plus ``s`` (snapshots run ``--auth none``)."""
        return gvk.kind.lower() + "s"

    async def read(self, gvk: GVK, namespace: str | None, name: str) -> dict[str, Any]:
        """A copy of the stored object sharing no map or list with the cache (``thawed``)."""
        stored = self._reader.get(gvk, namespace, name)
        if stored is None:
            raise InvalidRequest(f"{gvk.kind} {namespace}/{name} is not in the snapshot")
        return thawed(dict(stored))  # type: ignore[no-any-return]

    async def patch(self, gvk: GVK, namespace: str | None, name: str, ops: list[dict[str, Any]],
                    updated: dict[str, Any]) -> dict[str, Any]:
        """Store ``updated`` when the precondition holds; returns it with its new resourceVersion."""
        current = await self.read(gvk, namespace, name)
        version = str(current.get("metadata", {}).get("resourceVersion") or "")
        expected = next((op["value"] for op in ops if op["path"] == "/metadata/resourceVersion"), version)
        if expected != version:
            raise Conflict(f"cannot patch {gvk.kind} {name}: the object was changed (resourceVersion is stale)")
        stored = {**updated, "metadata": {**updated.get("metadata", {}),
                                          "resourceVersion": str(int(version) + 1 if version.isdigit() else 1)}}
        return dict(self._reader.add(stored))


async def update_pod_templates(service: WorkloadService, writer: ObjectWriter, identity: tuple[str, str, str, str],
                               body: Mapping[str, Any], *, dry_run: bool, scope: Scope | None = None,
                               allow: Any = None) -> dict[str, Any]:
    """Apply a pod change (``workload_map.resolution.changes`` body) to the selected templates.

    Args:
        service: the workload service (finds the workload and its definition).
        writer: cluster or snapshot writer.
        identity: ``(namespace, group, kind, name)``; group ``""`` for core.
        body: the change document.
        dry_run: compute and return the patch, write nothing.
        scope: the caller's permission block (None: no check).
        allow: the caller's visibility filter (``workload_map.auth.scope``).

    Raises:
        InvalidRequest, NotWritable, WorkloadNotFound, Conflict, Forbidden: see the module docstring.
    """
    change = parse_change(body)
    return await _act(service, writer, identity, lambda d, o: plan_pod_change(d, o, change), change.resource_version,
                      dry_run=dry_run, scope=scope, allow=allow)


async def set_suspended(service: WorkloadService, writer: ObjectWriter, identity: tuple[str, str, str, str],
                        suspend: bool, *, resource_version: str | None = None, dry_run: bool = False,
                        scope: Scope | None = None, allow: Any = None) -> dict[str, Any]:
    """Run the root component's ``suspendActions`` (``suspend``) or ``resumeActions``.

    Raises:
        MissingDefinitionField: no suspendDefinition (422); others as :func:`update_pod_templates`.
    """
    return await _act(service, writer, identity, lambda d, o: plan_suspend(d, o, suspend), resource_version,
                      dry_run=dry_run, scope=scope, allow=allow)


async def _act(service: WorkloadService, writer: ObjectWriter, identity: tuple[str, str, str, str],
               planner: Callable[[Any, dict[str, Any]], Plan], resource_version: str | None, *, dry_run: bool,
               scope: Scope | None, allow: Any) -> dict[str, Any]:
    namespace, group, kind, name = identity
    service.workload(namespace, group, kind, name, allow=allow)  # WorkloadNotFound when missing or hidden
    record = service.store.find(group, kind, namespace, name)
    assert record is not None
    gvk, definition = record.gvk, record.entry.definition
    block = scope(gvk.group, await writer.resource(gvk)) if scope is not None else contextlib.nullcontext()
    async with block:
        obj = await writer.read(gvk, namespace or None, name)
        current = str(obj.get("metadata", {}).get("resourceVersion") or "")
        if resource_version is not None and resource_version != current:
            raise Conflict(f"resourceVersion {resource_version} is stale: {kind} {namespace}/{name} is at {current}")
        plan = await asyncio.to_thread(planner, definition, obj)
        answer = {"appliedTo": writer.applied_to, "dryRun": dry_run, "changed": bool(plan.patch),
                  "resourceVersion": current, "patch": plan.patch, "targets": [t.describe() for t in plan.targets]}
        if dry_run or not plan.patch:
            return answer
        stored = await writer.patch(gvk, namespace or None, name, plan.patch, plan.updated)
    answer["resourceVersion"] = str(stored.get("metadata", {}).get("resourceVersion") or "")
    return answer
