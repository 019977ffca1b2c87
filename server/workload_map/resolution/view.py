"""The resolved view of one workload: workload -> components -> instances -> pods.

Plain records (``msgspec.Struct``) built by :func:`workload_map.resolution.resolver.resolve` and rendered by
``to_dict`` into the JSON view that ``wmap describe -o json``, REST and the snapshot tests
share. The JSON is a superset of upstream ``kli describe`` (docs/definition-format.md section 11).

Units: ``cpuMillis`` millicores, ``memoryBytes`` bytes, ``gpus`` whole devices;
``byResource`` maps every resource name to a decimal string.
"""

from __future__ import annotations

from decimal import Decimal
from typing import Any

from msgspec import Struct, field

from workload_map.definitions.phases import Phase
from workload_map.resolution.frozen import EMPTY_MAP
from workload_map.resolution.gpu_figures import GpuFigures, resources_dict
from workload_map.resolution.resources import DEFAULT_GPU_POLICY, GpuPolicy, Requests

__all__ = ["ComponentView", "GangGroup", "GpuFigures", "InstanceView", "PodClaimFigures", "PodView", "Replicas",
           "ResolutionError", "RoleView", "WorkloadView", "resources_dict"]


class ResolutionError(Struct):
    """One problem met while resolving; the rest of the view is still produced."""

    message: str
    component: str = ""
    field: str = ""
    expression: str = ""

    def to_dict(self) -> dict[str, str]:
        """JSON shape ``{component, field, expression, message}``."""
        return {"component": self.component, "field": self.field, "expression": self.expression,
                "message": self.message}


_NO_NAMES: frozenset[str] = frozenset()


class PodClaimFigures(Struct):
    """What a pod's DRA ResourceClaims add to its row.

    Attributes:
        allocatable: what the pod holds once bound when it differs from its requests (DRA
            claims not allocated yet hold nothing); None = the requests.
        unknown: ``dra/<class>`` keys whose device count is unknown (``allocationMode: All``
            not allocated yet).
        shared: shared ResourceClaims the pod names: (namespace, name) -> (demand now,
            allocated devices or None).
    """

    allocatable: Requests | None = None
    unknown: frozenset[str] = _NO_NAMES
    shared: dict[tuple[str, str], Any] = EMPTY_MAP


class PodView(Struct):
    """One live pod as the view shows it.

    ``terminated``: phase Succeeded or Failed, holds nothing. ``terminating``: deleted
    (``deletionTimestamp`` set) but not terminated: not a current replica, still holds its
    requests (counted in requested-by-pods and allocated).
    """

    name: str
    namespace: str
    uid: str
    phase: str
    ready: bool
    node: str | None
    reason: str | None
    requests: Requests
    terminated: bool
    terminating: bool = False
    component: str | None = None
    instance: str | None = None
    replica_key: str | None = None
    unattributed_reason: str | None = None
    #: What DRA adds to the row (None for the many pods without a ResourceClaim: one slot
    #: per pod instead of three).
    claims: PodClaimFigures | None = None

    @property
    def allocatable(self) -> Requests | None:
        """What the pod holds once bound when it differs from ``requests``; None = ``requests``."""
        return self.claims.allocatable if self.claims is not None else None

    @property
    def unknown(self) -> frozenset[str]:
        """``dra/<class>`` keys whose device count is unknown."""
        return self.claims.unknown if self.claims is not None else _NO_NAMES

    @property
    def shared_claims(self) -> dict[tuple[str, str], Any]:
        """Shared ResourceClaims the pod names: (namespace, name) -> (demand now, allocated or None)."""
        return self.claims.shared if self.claims is not None else EMPTY_MAP

    def held(self) -> Requests:
        """What the pod holds when bound to a node (allocated figure)."""
        allocatable = self.allocatable
        return self.requests if allocatable is None else allocatable

    def to_dict(self, policy: GpuPolicy = DEFAULT_GPU_POLICY) -> dict[str, Any]:
        """JSON shape of a pod row."""
        out: dict[str, Any] = {"name": self.name, "namespace": self.namespace, "phase": self.phase,
                               "ready": self.ready, "node": self.node, "resources": resources_dict(self.requests,
                                                                                                  policy)}
        if self.reason is not None:
            out["reason"] = self.reason
        if self.terminating:
            out["terminating"] = True
        if self.component is not None:
            out["component"] = self.component
        if self.instance is not None:
            out["instance"] = self.instance
        if self.replica_key is not None:
            out["replicaKey"] = self.replica_key
        if self.unattributed_reason is not None:
            out["unattributedReason"] = self.unattributed_reason
        return out


class Replicas(Struct, frozen=True):
    """Desired / current / ready pods, and the scale bounds when defined.

    Frozen: equal figures are one shared object across stored views
    (``workload_map.materialization.compaction``); build a new one (``msgspec.structs.replace``) to change.
    """

    desired: int = 0
    current: int = 0
    ready: int = 0
    min: int | None = None
    max: int | None = None

    def to_dict(self) -> dict[str, Any]:
        """JSON shape ``{desired, current, ready, min?, max?}``."""
        out: dict[str, Any] = {"desired": self.desired, "current": self.current, "ready": self.ready}
        if self.min is not None:
            out["min"] = self.min
        if self.max is not None:
            out["max"] = self.max
        return out


class InstanceView(Struct):
    """One instance of a component (``id`` "" when the component has no instance ids)."""

    id: str
    replicas: Replicas
    pod_requests: Requests
    pods: list[PodView] = field(default_factory=list)
    has_pod_spec: bool = False

    def to_dict(self, policy: GpuPolicy = DEFAULT_GPU_POLICY) -> dict[str, Any]:
        """JSON shape ``{id, replicas, podResources, pods}``."""
        return {"id": self.id, "replicas": self.replicas.to_dict(),
                "podResources": resources_dict(self.pod_requests, policy),
                "pods": [p.name for p in self.pods]}


class ComponentView(Struct):
    """One component (role) with its instances, pods and totals.

    ``requests`` is this component's own spec request (per-pod request x desired
    replicas, summed over instances); ``gpu`` adds descendants for logical components.
    """

    name: str
    kind: str
    api_version: str
    parent: str | None
    logical: bool
    has_pod_definition: bool
    replicas: Replicas
    instances: list[InstanceView]
    requests: Requests
    gpu: GpuFigures
    pods: list[PodView] = field(default_factory=list)
    children: list["ComponentView"] = field(default_factory=list)
    errors: list[ResolutionError] = field(default_factory=list)
    #: Shared ResourceClaims the pod templates name: (namespace, name) -> (demand, None);
    #: added once to ``requests`` here and once per workload.
    shared_claims: dict[tuple[str, str], Any] = field(default_factory=dict)
    #: Name of the definition the component comes from (the workload's, or a nested child's).
    definition: str = ""

    @property
    def nodes(self) -> list[str]:
        """Distinct node names of this component's pods, sorted."""
        return sorted({p.node for p in self.pods if p.node})

    def to_dict(self, policy: GpuPolicy = DEFAULT_GPU_POLICY) -> dict[str, Any]:
        """JSON shape of a component row (children nested)."""
        return {
            "name": self.name, "kind": self.kind, "apiVersion": self.api_version, "parent": self.parent,
            "replicas": self.replicas.to_dict(), "resources": resources_dict(self.requests, policy),
            "gpu": self.gpu.to_dict(policy), "nodes": self.nodes,
            "instances": [i.to_dict(policy) for i in self.instances],
            "pods": [p.to_dict(policy) for p in self.pods],
            "children": [c.to_dict(policy) for c in self.children],
            "errors": [e.to_dict() for e in self.errors],
        }


class RoleView(Struct):
    """A role as users name it.

    One per instance of a component with instance ids (JobSet replicated job ``leader``,
    Ray worker group ``gpu-group``), else the component itself (PyTorchJob ``master``, LWS
    ``worker``).

    Attributes:
        name: the instance id, or the component name.
        component: the Karta component the role comes from.
        instance: the instance id ("" for a component without instance ids).
    """

    name: str
    component: ComponentView
    instance: InstanceView | None

    @property
    def replicas(self) -> Replicas:
        """Desired/current/ready pods of this role."""
        return self.instance.replicas if self.instance is not None else self.component.replicas

    @property
    def pods(self) -> list[PodView]:
        """Pods attributed to this role."""
        return self.instance.pods if self.instance is not None else self.component.pods

    @property
    def gpu(self) -> GpuFigures:
        """GPU figures of this role."""
        if self.instance is None:
            return self.component.gpu
        spec = {k: v * self.instance.replicas.desired for k, v in self.instance.pod_requests.items()}
        pods: Requests = {}
        allocated: Requests = {}
        for pod in self.instance.pods:
            if pod.terminated:
                continue
            for k, v in pod.requests.items():
                pods[k] = pods.get(k, Decimal(0)) + v
            if pod.node:
                for k, v in pod.held().items():
                    allocated[k] = allocated.get(k, Decimal(0)) + v
        return GpuFigures(spec, pods, allocated)

    def to_dict(self, policy: GpuPolicy = DEFAULT_GPU_POLICY) -> dict[str, Any]:
        """JSON shape of a role (``definition``: a nested child's for folded roles).

        Keys: ``{name, component, instance, definition, kind, parent, replicas, podResources, gpu, pods, nodes}``.
        """
        per_pod = self.instance.pod_requests if self.instance is not None else (
            self.component.instances[0].pod_requests if self.component.instances else {})
        return {"name": self.name, "component": self.component.name,
                "instance": self.instance.id if self.instance is not None else "",
                "definition": self.component.definition,
                "kind": self.component.kind, "parent": self.component.parent,
                "replicas": self.replicas.to_dict(), "podResources": resources_dict(per_pod, policy),
                "gpu": self.gpu.to_dict(policy), "pods": [p.name for p in self.pods],
                "nodes": sorted({p.node for p in self.pods if p.node})}


class GangGroup(Struct):
    """An expected gang: pods that must be scheduled together and its minimum size."""

    name: str
    form: str
    min_member: int
    sub_groups: list[tuple[str, int]] = field(default_factory=list)
    key: list[str] | None = None
    pods: list[str] = field(default_factory=list)

    def to_dict(self) -> dict[str, Any]:
        """JSON shape ``{name, form, minMember, subGroups[{name, minMember}], key?, pods}``."""
        out: dict[str, Any] = {"name": self.name, "form": self.form, "minMember": self.min_member,
                               "subGroups": [{"name": n, "minMember": m} for n, m in self.sub_groups],
                               "pods": list(self.pods)}
        if self.key is not None:
            out["key"] = list(self.key)
        return out


class WorkloadView(Struct):
    """The whole resolved workload."""

    name: str
    namespace: str | None
    kind: str
    api_version: str
    uid: str
    resource_version: str
    created_at: str | None
    definition: str
    origin: str
    phase: Phase
    phases: list[Phase]
    raw_phase: str | None
    conditions: list[dict[str, str]]
    components: list[ComponentView]
    unattributed: list[PodView]
    replicas: Replicas
    requests: Requests
    gpu: GpuFigures
    gangs: list[GangGroup]
    errors: list[ResolutionError]
    policy: GpuPolicy = DEFAULT_GPU_POLICY
    cluster: str = ""
    """The cluster (kubeconfig context name) the workload was read from; stamped by the
    service that stores the view ("" offline)."""

    @property
    def group(self) -> str:
        """API group of the workload ("" for core)."""
        return self.api_version.rpartition("/")[0]

    def all_components(self) -> list[ComponentView]:
        """Components flattened depth-first (parents before children)."""
        out: list[ComponentView] = []
        stack = list(reversed(self.components))
        while stack:
            c = stack.pop()
            out.append(c)
            stack.extend(reversed(c.children))
        return out

    def roles(self) -> list[RoleView]:
        """Roles as users name them, over every pod-bearing component (definition order)."""
        out: list[RoleView] = []
        for component in self.all_components():
            if not component.has_pod_definition:
                continue
            if any(i.id for i in component.instances):
                out.extend(RoleView(i.id, component, i) for i in component.instances)
            else:
                out.append(RoleView(component.name, component, None))
        return out

    def all_pods(self) -> list[PodView]:
        """Every pod of the workload, attributed first, then unattributed."""
        return [p for c in self.all_components() for p in c.pods] + self.unattributed

    def to_dict(self) -> dict[str, Any]:
        """The JSON view (documented in docs/api.md, "JSON view reference")."""
        return {
            "name": self.name, "namespace": self.namespace, "kind": self.kind, "apiVersion": self.api_version,
            "group": self.group, "uid": self.uid, "resourceVersion": self.resource_version,
            **({"cluster": self.cluster} if self.cluster else {}),
            "createdAt": self.created_at, "definition": self.definition, "origin": self.origin,
            "phase": self.phase.value, "phases": [p.value for p in self.phases], "rawPhase": self.raw_phase,
            "conditions": [dict(c) for c in self.conditions], "replicas": self.replicas.to_dict(),
            "resources": resources_dict(self.requests, self.policy), "gpu": self.gpu.to_dict(self.policy),
            "roles": [r.to_dict(self.policy) for r in self.roles()],
            "components": [c.to_dict(self.policy) for c in self.components],
            "unattributedPods": [p.to_dict(self.policy) for p in self.unattributed],
            "gangGroups": [g.to_dict() for g in self.gangs],
            "errors": [e.to_dict() for e in self.errors],
        }
