"""The Subscription root: phase changes, driven by the cache's change queue.

Each subscriber gets its own bounded queue from ``Reader.subscribe()`` (released in
``finally`` when the client goes away). Events are coalesced: everything already queued
is drained before views are recomputed, and each affected top-level workload is resolved
once (memoized by the service). A change is sent when a workload's headline phase or its
list of matched phases differs from the last one sent (or it is new).

Only workloads the caller may list are sent (``server.auth.scope.may_see``, decisions
cached), with pod details where the caller may get pods.
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncGenerator

import strawberry
from strawberry.types import Info

from schema.context import Context
from schema.types import Workload
from server.auth.scope import may_see
from server.definitions.phases import Phase
from server.gvk import GVK
from server.kube.reader import ChangeEvent
from server.resolution import WorkloadView


@strawberry.type(description="A workload whose phase changed (previousPhase null when first seen).")
class WorkloadPhaseChange:
    """The workload after the change, with old and new headline phases."""

    workload: Workload
    phase: Phase
    previous_phase: Phase | None
    phases: list[Phase]


def _roots(first: ChangeEvent, queue: asyncio.Queue[ChangeEvent]) -> list[str]:
    """Topmost uids of ``first`` and every event already queued, in arrival order."""
    events = [first]
    while not queue.empty():
        events.append(queue.get_nowait())
    return list(dict.fromkeys(e.root_uids[-1] for e in events if e.root_uids))


def _view(ctx: Context, uid: str, namespace: str | None, kind: str | None) -> WorkloadView | None:
    """The view of the top-level workload ``uid`` when it matches the filters."""
    obj = ctx.reader.by_uid(uid)
    if obj is None or (namespace and obj.get("metadata", {}).get("namespace") != namespace):
        return None
    if kind and str(obj.get("kind", "")).lower() != kind.lower():
        return None
    try:
        entry = ctx.registry.lookup(GVK.of(obj))
    except ValueError:
        return None
    if entry is None or not ctx.service.is_top_level(obj, {e.gvk for e in ctx.registry.entries()}):
        return None
    return ctx.service.view(obj, entry)


@strawberry.type
class Subscription:
    """Live updates."""

    @strawberry.subscription(description="Phase changes of top-level workloads, optionally in one namespace "
                                         "and of one kind (case-insensitive).")
    async def workload_phase_changed(self, info: Info[Context, None], namespace: str | None = None,
                                     kind: str | None = None) -> AsyncGenerator[WorkloadPhaseChange, None]:
        """Stream of phase changes."""
        ctx = info.context
        queue = ctx.reader.subscribe()
        try:
            # the states before any change, taken with no await after subscribing (so no change is
            # missed); hidden workloads may be in it: only visible ones are ever sent
            known = {v.uid: (v.phase, tuple(v.phases))
                     for v in ctx.service.workloads(namespace=namespace, kind=kind)} if ctx.is_ready() else {}
            while True:
                for uid in _roots(await queue.get(), queue):
                    view = _view(ctx, uid, namespace, kind)
                    if view is None or not await may_see(ctx.guard, ctx.reader, view):
                        continue
                    await ctx.learn_pod_access([view.namespace])
                    state = (view.phase, tuple(view.phases))
                    previous = known.get(uid)
                    if previous == state:
                        continue
                    known[uid] = state
                    yield WorkloadPhaseChange(workload=Workload(view=view, cluster_name=ctx.cluster),
                                              phase=view.phase, phases=list(view.phases),
                                              previous_phase=previous[0] if previous else None)
        finally:
            ctx.reader.unsubscribe(queue)
