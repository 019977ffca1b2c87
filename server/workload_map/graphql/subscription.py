"""The Subscription root: phase changes, read from the service's change feed.

Each subscriber gets its own bounded subscriber of ``WorkloadService.feed`` (filtered by
namespace and kind there, released in ``finally`` when the client goes away); the feed
carries materialized views, so nothing is resolved here. A change is sent when a
workload's headline phase or its list of matched phases differs from the last one sent
(or it is new); a definition registration that changes phases is delivered too, as the
service re-resolves the workloads of its kind.

Only workloads the caller may list are sent (``workload_map.auth.scope.may_see``, decisions
cached), with pod details where the caller may get pods.
"""

from __future__ import annotations

from collections.abc import AsyncGenerator

import strawberry
from strawberry.types import Info

from workload_map.graphql.context import Context
from workload_map.graphql.types import Workload
from workload_map.auth.scope import may_see
from workload_map.definitions.phases import Phase
from workload_map.resolution import WorkloadView


@strawberry.type(description="A workload whose phase changed (previousPhase null when first seen).")
class WorkloadPhaseChange:
    """The workload after the change, with old and new headline phases."""

    workload: Workload
    phase: Phase
    previous_phase: Phase | None
    phases: list[Phase]


@strawberry.type
class Subscription:
    """Live updates."""

    @strawberry.subscription(description="Phase changes of top-level workloads, optionally in one namespace, "
                                         "of one kind (case-insensitive) and of one cluster (context).")
    async def workload_phase_changed(self, info: Info[Context, None], namespace: str | None = None,
                                     kind: str | None = None,
                                     cluster: str | None = None) -> AsyncGenerator[WorkloadPhaseChange, None]:
        """Stream of phase changes."""
        ctx = info.context
        subscriber = ctx.service.feed.subscribe(namespace=namespace, kind=kind)
        try:
            # the states before any change, taken with no await after subscribing (so no change is
            # missed); hidden workloads may be in it: only visible ones are ever sent. Keyed by
            # cluster, uid and identity: uids are unique per cluster only, and two objects
            # holding one uid are two workloads (docs/identity.md).
            known = {_key(v): (v.phase, tuple(v.phases))
                     for v in ctx.service.workloads(namespace=namespace, kind=kind)} if ctx.is_ready() else {}
            async for change in subscriber:  # ends when the feed ends (the server stops): the stream completes
                view = change.view
                if view is None:
                    if change.previous is not None:
                        known.pop(_key(change.previous), None)
                    continue
                if cluster is not None and (view.cluster or ctx.cluster) != cluster:
                    continue
                if not await may_see(ctx.guard, ctx.service.reader, view):
                    continue
                await ctx.learn_pod_access([view.namespace])
                state = (view.phase, tuple(view.phases))
                previous = known.get(_key(view))
                if previous == state:
                    continue
                known[_key(view)] = state
                yield WorkloadPhaseChange(workload=Workload(view=view, cluster_name=ctx.cluster),
                                          phase=view.phase, phases=list(view.phases),
                                          previous_phase=previous[0] if previous else None)
        finally:
            subscriber.close()


def _key(view: WorkloadView) -> tuple[str, str, str, str | None, str]:
    """What tells one workload's last sent phase apart: cluster, uid, kind, namespace, name."""
    return view.cluster, view.uid, view.kind, view.namespace, view.name
