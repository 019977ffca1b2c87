"""GraphQL type of the scheduler view: ``podWorkload(namespace, name)``.

Wraps :class:`workload_map.service.pods.PodPlacement` (read from the materialized views' pod
index, nothing resolved). Pod phase and node are null where the caller may not get pods.
"""

from __future__ import annotations

import strawberry
from strawberry.types import Info

from workload_map.graphql.context import Context
from workload_map.graphql.types import CLAMPED, GangGroup, GangSubGroup, Workload, int32
from workload_map.service.pods import PodGang, PodPlacement


@strawberry.type(description="A gang naming the pod, with the subgroup holding it (podGroup form). " + CLAMPED)
class PodGangGroup:
    """A gang of the pod's workload and the pod's subgroup in it."""

    gang: GangGroup
    sub_group: GangSubGroup | None

    @classmethod
    def of(cls, g: PodGang) -> PodGangGroup:
        """From the service value."""
        sub = GangSubGroup(name=g.sub_group[0], min_member=int32(g.sub_group[1])) if g.sub_group else None
        return cls(gang=GangGroup.of(g.group), sub_group=sub)


@strawberry.type(description="Where one pod sits: its top-level workload, component, instance, replica key "
                             "and gangs (the scheduler view).")
class PodWorkload:
    """One pod's placement in its workload."""

    placement: strawberry.Private[PodPlacement]
    cluster_name: strawberry.Private[str]

    @strawberry.field(description="The pod's namespace.")
    def namespace(self) -> str:
        """Pod namespace."""
        return self.placement.pod.namespace

    @strawberry.field(description="The pod's name.")
    def name(self) -> str:
        """Pod name."""
        return self.placement.pod.name

    @strawberry.field(description="The pod's phase (null where the caller may not get pods).")
    def phase(self, info: Info[Context, None]) -> str | None:
        """Pod phase."""
        return self.placement.pod.phase if info.context.shows_pods(self.placement.pod.namespace) else None

    @strawberry.field(description="The node the pod is bound to (null when unbound or hidden).")
    def node(self, info: Info[Context, None]) -> str | None:
        """Pod node."""
        return self.placement.pod.node if info.context.shows_pods(self.placement.pod.namespace) else None

    @strawberry.field(description="The top-level workload holding the pod.")
    def workload(self) -> Workload:
        """The workload."""
        return Workload(view=self.placement.view, cluster_name=self.cluster_name)

    @strawberry.field(description="The component the pod is attributed to (null when unattributed).")
    def component(self) -> str | None:
        """Component name."""
        return self.placement.pod.component

    @strawberry.field(description="The instance id of the pod's component (null without one).")
    def instance(self) -> str | None:
        """Instance id."""
        return self.placement.pod.instance

    @strawberry.field(description="The pod's replica key (null without a replica key).")
    def replica_key(self) -> str | None:
        """Replica key."""
        return self.placement.pod.replica_key

    @strawberry.field(description="The gangs naming the pod (empty without gangScheduling instructions).")
    def gang_groups(self, info: Info[Context, None]) -> list[PodGangGroup]:
        """Gangs with the pod's subgroup."""
        groups = [PodGangGroup.of(g) for g in self.placement.gangs]
        if not info.context.shows_pods(self.placement.pod.namespace):
            for group in groups:
                group.gang.pods = []
        return groups
