"""GraphQL object types for the workload view: thin adapters over ``workload_map.resolution.view``.

Each type wraps one view record in a ``strawberry.Private`` field and exposes it
through plain ``def`` resolvers, so nothing is computed for fields a query does not ask
for and no resolver awaits (graphql-core's sync path is much cheaper for large lists).

Pod details (pod rows, pod names in gangs, node names) are shown only where the caller may
get pods (``Context.shows_pods``); these resolvers take ``info`` for that.

Units: ``cpuMillis`` millicores, ``memoryBytes`` bytes (both ``Float`` because GraphQL
``Int`` is 32-bit), GPUs whole devices (``Float``: fractional GPU resources exist).

Counts (replicas, gang minimum sizes) stay ``Int``, as in Kubernetes (int32): a count
beyond the ``Int`` range is clamped to it (:func:`int32`) instead of failing the field,
which would null the whole workload; the REST JSON view carries the exact value.
"""

from __future__ import annotations

from decimal import Decimal
from enum import Enum

import strawberry
from strawberry.types import Info

from workload_map.graphql.context import Context
from workload_map.definitions.phases import Phase as PhaseValue
from workload_map.resolution import ComponentView, InstanceView, PodView, RoleView, WorkloadView
from workload_map.resolution.resources import DEFAULT_GPU_POLICY, GpuPolicy, Requests
from workload_map.resolution.view import GangGroup as GangGroupView
from workload_map.resolution.view import GpuFigures
from workload_map.resolution.view import Replicas as ReplicasView
from workload_map.resolution.view import ResolutionError as ResolutionErrorView
from workload_map.resolution.view import resources_dict

INT32_MAX = 2**31 - 1
INT32_MIN = -(2**31)
CLAMPED = f"Counts beyond the GraphQL Int range are clamped to {INT32_MAX} (the REST view has the exact value)."


def int32(value: int) -> int:
    """``value`` clamped to the GraphQL ``Int`` range (32-bit signed)."""
    if INT32_MIN <= value <= INT32_MAX:  # nearly always: one comparison instead of two calls
        return value
    return INT32_MAX if value > INT32_MAX else INT32_MIN


def opt_int32(value: int | None) -> int | None:
    """:func:`int32` keeping None."""
    return None if value is None else int32(value)


Phase = strawberry.enum(PhaseValue, name="Phase", description="A workload phase (Karta status vocabulary).")


@strawberry.enum(description="How gpuSummary groups workloads (NODE groups pods by the node they are bound to).")
class GroupBy(Enum):
    """Grouping key of ``gpuSummary``."""

    NAMESPACE = "NAMESPACE"
    KIND = "KIND"
    NODE = "NODE"
    PHASE = "PHASE"
    CLUSTER = "CLUSTER"


@strawberry.type(description="One resource quantity, as a decimal string (\"500m\" cpu is \"0.5\").")
class ResourceQuantity:
    """``name`` and ``quantity``."""

    name: str
    quantity: str


@strawberry.type(description="Resource requests: summary figures plus every resource by name.")
class Resources:
    """Adapter over a requests map (``resource name -> Decimal``)."""

    requests: strawberry.Private[Requests]
    policy: strawberry.Private[GpuPolicy]

    @strawberry.field(description="Whole GPUs over every GPU resource name.")
    def gpus(self) -> float:
        """Total GPUs."""
        return float(self.policy.total(self.requests))

    @strawberry.field(description="CPU in millicores.")
    def cpu_millis(self) -> float:
        """CPU millicores."""
        return float(self.requests.get("cpu", Decimal(0)) * 1000)

    @strawberry.field(description="Memory in bytes.")
    def memory_bytes(self) -> float:
        """Memory bytes."""
        return float(self.requests.get("memory", Decimal(0)))

    @strawberry.field(description="Every requested resource, sorted by name.")
    def by_resource(self) -> list[ResourceQuantity]:
        """All resources."""
        return [ResourceQuantity(name=k, quantity=v) for k, v in resources_dict(self.requests, self.policy)[
            "byResource"].items()]


@strawberry.type(description="GPU figures of one GPU resource name (whole GPUs, MIG profiles, time-sliced "
                             "replicas such as nvidia.com/gpu.shared, gpu-memory in bytes, DRA devices as "
                             "dra/<device class>); null: not known yet (a DRA allocationMode All request before "
                             "allocation).")
class GpuResource:
    """Per-resource GPU figures."""

    resource: str
    requested_by_spec: float | None
    requested_by_pods: float | None
    allocated: float | None


def _float(value: float | int | None) -> float | None:
    return None if value is None else float(value)


@strawberry.type(description="The three GPU figures, kept apart because they diverge while a workload starts.")
class GpuAggregate:
    """Adapter over :class:`workload_map.resolution.view.GpuFigures`."""

    figures: strawberry.Private[GpuFigures]
    policy: strawberry.Private[GpuPolicy]

    @strawberry.field(description="GPUs the definition's pod specs ask for, times desired replicas.")
    def requested_by_spec(self) -> float:
        """Spec-side GPUs."""
        return float(self.policy.total(self.figures.spec))

    @strawberry.field(description="GPUs requested by existing, non-terminated pods (terminating ones included).")
    def requested_by_pods(self) -> float:
        """Pod-side GPUs."""
        return float(self.policy.total(self.figures.pods))

    @strawberry.field(description="GPUs of pods bound to a node and not terminated.")
    def allocated(self) -> float:
        """Allocated GPUs."""
        return float(self.policy.total(self.figures.allocated))

    @strawberry.field(description="The figures per GPU resource name (MIG profiles, shared GPUs, GPU memory and "
                                  "DRA devices kept apart).")
    def by_resource(self) -> list[GpuResource]:
        """Per-resource figures."""
        rows = self.figures.to_dict(self.policy)["byResource"]
        return [GpuResource(resource=name, requested_by_spec=_float(v["requestedBySpec"]),
                            requested_by_pods=_float(v["requestedByPods"]), allocated=_float(v["allocated"]))
                for name, v in rows.items()]

    @strawberry.field(description="Figures (requestedBySpec, requestedByPods) that are lower bounds: some DRA "
                                  "device count is not known before allocation.")
    def unknown(self) -> list[str]:
        """Names of incomplete figures."""
        return list(self.figures.to_dict(self.policy).get("unknown", []))


def gpu(figures: GpuFigures, policy: GpuPolicy = DEFAULT_GPU_POLICY) -> GpuAggregate:
    """Wrap GPU figures."""
    return GpuAggregate(figures=figures, policy=policy)


@strawberry.type(description="Desired / current / ready pods and the scale bounds when defined. " + CLAMPED)
class Replicas:
    """Copy of :class:`workload_map.resolution.view.Replicas`."""

    desired: int
    current: int
    ready: int
    min: int | None
    max: int | None

    @classmethod
    def of(cls, r: ReplicasView) -> Replicas:
        """From the view value."""
        return cls(desired=int32(r.desired), current=int32(r.current), ready=int32(r.ready), min=opt_int32(r.min),
                   max=opt_int32(r.max))


@strawberry.type(description="A live pod.")
class Pod:
    """Adapter over :class:`workload_map.resolution.view.PodView`."""

    view: strawberry.Private[PodView]
    policy: strawberry.Private[GpuPolicy]

    @strawberry.field
    def name(self) -> str:
        """Pod name."""
        return self.view.name

    @strawberry.field
    def namespace(self) -> str:
        """Pod namespace."""
        return self.view.namespace

    @strawberry.field(description="status.phase of the pod (Pending, Running, Succeeded, Failed, Unknown).")
    def phase(self) -> str:
        """Pod phase."""
        return self.view.phase

    @strawberry.field
    def ready(self) -> bool:
        """Ready condition."""
        return self.view.ready

    @strawberry.field(description="Node the pod is bound to; null when unscheduled.")
    def node(self) -> str | None:
        """Node name."""
        return self.view.node

    @strawberry.field(description="Why the pod is not ready, when it is not.")
    def reason(self) -> str | None:
        """Not-ready reason."""
        return self.view.reason

    @strawberry.field(description="Effective pod request (Kubernetes rule: max(init), sum(app), overhead).")
    def resources(self) -> Resources:
        """Pod requests."""
        return Resources(requests=self.view.requests, policy=self.policy)

    @strawberry.field
    def component(self) -> str | None:
        """Component the pod is attributed to."""
        return self.view.component

    @strawberry.field
    def instance(self) -> str | None:
        """Instance id the pod is attributed to."""
        return self.view.instance

    @strawberry.field
    def replica_key(self) -> str | None:
        """Replica key from the replica selector."""
        return self.view.replica_key

    @strawberry.field(description="For unattributed pods: why no component claimed them.")
    def unattributed_reason(self) -> str | None:
        """Unattributed reason."""
        return self.view.unattributed_reason


def pods(views: list[PodView], policy: GpuPolicy, info: Info[Context, None]) -> list[Pod]:
    """Wrap the pod views the caller may see."""
    ctx = info.context
    return [Pod(view=p, policy=policy) for p in views if ctx.shows_pods(p.namespace)]


@strawberry.type(description="One instance of a component (id empty when the component has no instance ids).")
class Instance:
    """Adapter over :class:`workload_map.resolution.view.InstanceView`."""

    view: strawberry.Private[InstanceView]
    policy: strawberry.Private[GpuPolicy]

    @strawberry.field
    def id(self) -> str:
        """Instance id."""
        return self.view.id

    @strawberry.field
    def replicas(self) -> Replicas:
        """Replica counts."""
        return Replicas.of(self.view.replicas)

    @strawberry.field(description="Request of one pod of this instance.")
    def pod_resources(self) -> Resources:
        """Per-pod request."""
        return Resources(requests=self.view.pod_requests, policy=self.policy)

    @strawberry.field
    def pods(self, info: Info[Context, None]) -> list[Pod]:
        """Pods of this instance."""
        return pods(self.view.pods, self.policy, info)


@strawberry.type(description="A problem met while resolving; the rest of the view is still produced.")
class ResolutionError:
    """Copy of :class:`workload_map.resolution.view.ResolutionError`."""

    component: str
    field: str
    expression: str
    message: str

    @classmethod
    def of(cls, e: ResolutionErrorView) -> ResolutionError:
        """From the view value."""
        return cls(component=e.component, field=e.field, expression=e.expression, message=e.message)


@strawberry.type(description="A component of the definition's structure tree, with its instances and pods.")
class Component:
    """Adapter over :class:`workload_map.resolution.view.ComponentView`."""

    view: strawberry.Private[ComponentView]
    policy: strawberry.Private[GpuPolicy]

    @strawberry.field
    def name(self) -> str:
        """Component name."""
        return self.view.name

    @strawberry.field(description="Kind of the component's objects; empty for a logical component.")
    def kind(self) -> str:
        """Kind."""
        return self.view.kind

    @strawberry.field
    def api_version(self) -> str:
        """The ``apiVersion`` of the component's objects."""
        return self.view.api_version

    @strawberry.field
    def parent(self) -> str | None:
        """Parent component name."""
        return self.view.parent

    @strawberry.field
    def logical(self) -> bool:
        """True for a grouping component without objects of its own."""
        return self.view.logical

    @strawberry.field
    def replicas(self) -> Replicas:
        """Replica counts."""
        return Replicas.of(self.view.replicas)

    @strawberry.field(description="This component's own spec request (per-pod request x desired replicas).")
    def resources(self) -> Resources:
        """Spec request."""
        return Resources(requests=self.view.requests, policy=self.policy)

    @strawberry.field
    def gpu(self) -> GpuAggregate:
        """GPU figures (descendants included for logical components)."""
        return gpu(self.view.gpu, self.policy)

    @strawberry.field
    def nodes(self, info: Info[Context, None]) -> list[str]:
        """Distinct nodes of this component's pods."""
        return sorted({p.view.node for p in pods(self.view.pods, self.policy, info) if p.view.node})

    @strawberry.field
    def instances(self) -> list[Instance]:
        """Instances."""
        return [Instance(view=i, policy=self.policy) for i in self.view.instances]

    @strawberry.field
    def pods(self, info: Info[Context, None]) -> list[Pod]:
        """Pods attributed to this component."""
        return pods(self.view.pods, self.policy, info)

    @strawberry.field
    def children(self) -> list[Component]:
        """Child components."""
        return [Component(view=c, policy=self.policy) for c in self.view.children]

    @strawberry.field
    def errors(self) -> list[ResolutionError]:
        """Resolution problems of this component."""
        return [ResolutionError.of(e) for e in self.view.errors]


@strawberry.type(description="A role as users name it: one per instance of a component with instance ids "
                             "(JobSet replicated job), else the component itself.")
class Role:
    """Adapter over :class:`workload_map.resolution.view.RoleView`."""

    view: strawberry.Private[RoleView]
    policy: strawberry.Private[GpuPolicy]

    @strawberry.field
    def name(self) -> str:
        """Role name."""
        return self.view.name

    @strawberry.field
    def component(self) -> str:
        """Karta component the role comes from."""
        return self.view.component.name

    @strawberry.field(description="Instance id; empty for a component without instance ids.")
    def instance(self) -> str:
        """Instance id."""
        return self.view.instance.id if self.view.instance is not None else ""

    @strawberry.field(description="Name of the definition the role comes from: the workload's, or for a nested "
                                  "child's role (a TrainJob's JobSet, an AppWrapper's PyTorchJob) the child's.")
    def definition(self) -> str:
        """Definition name."""
        return self.view.component.definition

    @strawberry.field
    def kind(self) -> str:
        """Kind of the role's objects."""
        return self.view.component.kind

    @strawberry.field
    def parent(self) -> str | None:
        """Parent component."""
        return self.view.component.parent

    @strawberry.field
    def replicas(self) -> Replicas:
        """Desired/current/ready pods (min/max when defined)."""
        return Replicas.of(self.view.replicas)

    @strawberry.field
    def instances(self) -> list[Instance]:
        """The role's instance, or every instance of its component."""
        chosen = [self.view.instance] if self.view.instance is not None else self.view.component.instances
        return [Instance(view=i, policy=self.policy) for i in chosen]

    @strawberry.field(description="Effective request of one pod of the role (its instance's, else the first "
                                  "instance's; empty when the component has none), as REST roles[].podResources.")
    def pod_resources(self) -> Resources:
        """Per-pod requests."""
        instance = self.view.instance
        if instance is None and self.view.component.instances:
            instance = self.view.component.instances[0]
        return Resources(requests=instance.pod_requests if instance is not None else {}, policy=self.policy)

    @strawberry.field
    def pods(self, info: Info[Context, None]) -> list[Pod]:
        """Pods of the role."""
        return pods(self.view.pods, self.policy, info)

    @strawberry.field(description="Distinct nodes of the role's pods, sorted (as REST roles[].nodes; only where "
                                  "the caller may get pods).")
    def nodes(self, info: Info[Context, None]) -> list[str]:
        """Node names."""
        return sorted({p.view.node for p in pods(self.view.pods, self.policy, info) if p.view.node})

    @strawberry.field
    def gpu(self) -> GpuAggregate:
        """GPU figures of the role."""
        return gpu(self.view.gpu, self.policy)


@strawberry.type(description="A subgroup of a gang. " + CLAMPED)
class GangSubGroup:
    """Name and minimum member count."""

    name: str
    min_member: int


@strawberry.type(description="An expected gang: pods that must be scheduled together. " + CLAMPED)
class GangGroup:
    """Copy of :class:`workload_map.resolution.view.GangGroup`."""

    name: str
    form: str
    min_member: int
    sub_groups: list[GangSubGroup]
    key: list[str] | None
    pods: list[str]

    @classmethod
    def of(cls, g: GangGroupView) -> GangGroup:
        """From the view value."""
        return cls(name=g.name, form=g.form, min_member=int32(g.min_member), key=g.key, pods=list(g.pods),
                   sub_groups=[GangSubGroup(name=n, min_member=int32(m)) for n, m in g.sub_groups])


@strawberry.type(description="A condition extracted by the definition's conditionsDefinition.")
class Condition:
    """type / status / reason / message."""

    type: str
    status: str | None
    reason: str | None
    message: str | None


@strawberry.type(description="One resolved workload.")
class Workload:
    """Adapter over :class:`workload_map.resolution.view.WorkloadView`."""

    view: strawberry.Private[WorkloadView]
    cluster_name: strawberry.Private[str]

    @strawberry.field(description="metadata.uid.")
    def id(self) -> strawberry.ID:
        """The object uid."""
        return strawberry.ID(self.view.uid)

    @strawberry.field
    def name(self) -> str:
        """Object name."""
        return self.view.name

    @strawberry.field
    def namespace(self) -> str | None:
        """Namespace (null for cluster-scoped kinds)."""
        return self.view.namespace

    @strawberry.field
    def kind(self) -> str:
        """Kind."""
        return self.view.kind

    @strawberry.field(description="API group; empty for the core group.")
    def group(self) -> str:
        """Group."""
        return self.view.group

    @strawberry.field
    def version(self) -> str:
        """API version within the group."""
        return self.view.api_version.rpartition("/")[2]

    @strawberry.field
    def api_version(self) -> str:
        """The ``apiVersion``."""
        return self.view.api_version

    @strawberry.field
    def resource_version(self) -> str:
        """metadata.resourceVersion the view was computed from."""
        return self.view.resource_version

    @strawberry.field(description="The cluster the workload was read from: its kubeconfig context name (with one "
                                  "cluster, the name this server reports in cluster { name }).")
    def cluster(self) -> str:
        """Cluster name."""
        return self.view.cluster or self.cluster_name

    @strawberry.field(description="Name of the definition used.")
    def definition(self) -> str:
        """Definition name."""
        return self.view.definition

    @strawberry.field(description="Where the definition comes from: catalog, cluster, state or file.")
    def origin(self) -> str:
        """Definition origin."""
        return self.view.origin

    @strawberry.field(description="Headline phase (terminal states win).")
    def phase(self) -> PhaseValue:
        """Headline phase."""
        return self.view.phase

    @strawberry.field(description="Every matched phase, in upstream Entries order.")
    def phases(self) -> list[PhaseValue]:
        """Matched phases."""
        return list(self.view.phases)

    @strawberry.field(description="Value of the definition's phase path, when it has one.")
    def raw_phase(self) -> str | None:
        """Raw phase."""
        return self.view.raw_phase

    @strawberry.field
    def conditions(self) -> list[Condition]:
        """Conditions extracted by the definition."""
        return [Condition(type=c.get("type", ""), status=c.get("status"), reason=c.get("reason"),
                          message=c.get("message")) for c in self.view.conditions]

    @strawberry.field(description="metadata.creationTimestamp (RFC 3339).")
    def created_at(self) -> str | None:
        """Creation time."""
        return self.view.created_at

    @strawberry.field
    def replicas(self) -> Replicas:
        """Pods desired/current/ready over the whole workload."""
        return Replicas.of(self.view.replicas)

    @strawberry.field(description="Roles as users name them, in definition order.")
    def roles(self) -> list[Role]:
        """Roles."""
        return [Role(view=r, policy=self.view.policy) for r in self.view.roles()]

    @strawberry.field(description="The structure tree (top-level components; children nested).")
    def components(self) -> list[Component]:
        """Top-level components."""
        return [Component(view=c, policy=self.view.policy) for c in self.view.components]

    @strawberry.field(description="Pods owned by the workload that no component claimed.")
    def unattributed_pods(self, info: Info[Context, None]) -> list[Pod]:
        """Unattributed pods."""
        return pods(self.view.unattributed, self.view.policy, info)

    @strawberry.field(description="Every pod of the workload (attributed first).")
    def pods(self, info: Info[Context, None]) -> list[Pod]:
        """All pods."""
        return pods(self.view.all_pods(), self.view.policy, info)

    @strawberry.field
    def gpu(self) -> GpuAggregate:
        """GPU figures of the whole workload."""
        return gpu(self.view.gpu, self.view.policy)

    @strawberry.field(description="Spec-side requests of the whole workload.")
    def resources(self) -> Resources:
        """Spec requests."""
        return Resources(requests=self.view.requests, policy=self.view.policy)

    @strawberry.field(description="Expected gangs (pod names only where the caller may get pods).")
    def gang_groups(self, info: Info[Context, None]) -> list[GangGroup]:
        """Expected gangs."""
        groups = [GangGroup.of(g) for g in self.view.gangs]
        if not info.context.shows_pods(self.view.namespace):
            for group in groups:
                group.pods = []
        return groups

    @strawberry.field(description="Workload-level resolution problems (component ones are on components).")
    def errors(self) -> list[ResolutionError]:
        """Resolution problems."""
        return [ResolutionError.of(e) for e in self.view.errors]

