"""The Query root: workloads (cursor-paginated), one workload, definitions, GPU summary, cluster.

Visibility (``workload_map.auth.scope``): ``workloads`` and ``gpuSummary`` hold only what the
caller may list; ``workload`` is null for one the caller may not list, exactly as for a
missing one; pod details are shown only where the caller may get pods. The three
resolvers are ``async`` for the (cached) permission reviews, which run on the server's loop
(``Context.review``: queries execute in the query thread); nested fields stay plain ``def``s
over the precomputed views.
"""

from __future__ import annotations

import strawberry
from strawberry.types import Info

from workload_map.graphql.cluster import Cluster, clusters_of, freshness_of
from workload_map.graphql.context import Context
from workload_map.graphql.definitions import Definition, SkippedDefinition
from workload_map.graphql.pods import PodWorkload
from workload_map.service.lookup import definition_for, definitions_in_force
from workload_map.service.pagination import DEFAULT_PAGE_SIZE, check_page_size, encode_cursor, paginate, sort_key
from workload_map.graphql.types import GpuAggregate, GroupBy, Workload
from workload_map.auth.scope import list_scope, may_see, workload_scope
from workload_map.definitions.phases import Phase
from workload_map.errors import WorkloadNotFound
from workload_map.resolution import WorkloadView
from workload_map.resolution.view import GpuFigures


@strawberry.type(description="A workload and its cursor.")
class WorkloadEdge:
    """Relay-style edge."""

    cursor: str
    node: Workload


@strawberry.type(description="Paging state of a connection.")
class PageInfo:
    """Relay-style page info."""

    has_next_page: bool
    has_previous_page: bool
    start_cursor: str | None
    end_cursor: str | None


@strawberry.type(description="One page of workloads; totalCount counts every match before paging.")
class WorkloadConnection:
    """Relay-style connection."""

    total_count: int
    edges: list[WorkloadEdge]
    nodes: list[Workload]
    page_info: PageInfo


@strawberry.type(description="GPU totals of one group.")
class GpuSummaryBucket:
    """Key, workload count (for NODE: workloads with a pod there, so one may count on several nodes) and GPU figures."""

    key: str
    workloads: int
    gpu: GpuAggregate


def _workload(view: WorkloadView, ctx: Context) -> Workload:
    return Workload(view=view, cluster_name=ctx.cluster)


def _core(group: str) -> str:
    return "" if group == "core" else group


def _cluster_filter(ctx: Context, cluster: str | None) -> tuple[bool, str | None]:
    """(any workload can match, the ``cluster`` argument for the service).

    The service filters by cluster (``WorkloadReads.serves``): a name it does not serve
    matches nothing.
    """
    return ctx.service.serves(cluster), cluster


@strawberry.type
class Query:
    """Read operations."""

    @strawberry.field(description="Top-level workloads matching every given filter, sorted by namespace, kind, "
                                  "group, name. first: 1..500 (default 100). Only workloads the caller may list.")
    async def workloads(self, info: Info[Context, None], namespace: str | None = None, kind: str | None = None,
                        group: str | None = None, phase: Phase | None = None, definition: str | None = None,
                        cluster: str | None = None, first: int | None = DEFAULT_PAGE_SIZE,
                        after: str | None = None) -> WorkloadConnection:
        """Filtered, paginated workloads."""
        ctx = info.context
        ctx.require_ready()
        check_page_size(first)
        views: list[WorkloadView] = []
        matches, only = _cluster_filter(ctx, cluster)
        if matches:
            filters = {"namespace": namespace, "kind": kind, "group": _core(group) if group is not None else None,
                       "definition": definition}
            allow = await ctx.review(list_scope(ctx.guard, ctx.service, **filters))
            views = ctx.service.workloads(**filters, phase=phase.value if phase is not None else None, allow=allow,
                                          cluster=only)
        page = paginate(views, first=first, after=after)
        await ctx.learn_pod_access(v.namespace for v in page.items)
        nodes = [_workload(v, ctx) for v in page.items]
        edges = [WorkloadEdge(cursor=encode_cursor(sort_key(n.view)), node=n) for n in nodes]
        return WorkloadConnection(total_count=page.total, edges=edges, nodes=nodes, page_info=PageInfo(
            has_next_page=page.has_next, has_previous_page=page.has_previous, start_cursor=page.start_cursor,
            end_cursor=page.end_cursor))

    @strawberry.field(description="One workload by identity (group \"\" or \"core\" for the core group); null "
                                  "when it does not exist, no definition covers its kind, or the caller may not "
                                  "list its kind in its namespace. Omit namespace (or give null) only for "
                                  "cluster-scoped kinds: a namespaced workload asked for without its namespace "
                                  "is not found (null). cluster: the cluster (context) holding it; omitted, "
                                  "the first cluster that has it.")
    async def workload(self, info: Info[Context, None], namespace: str | None = None, *, group: str, kind: str,
                       name: str, cluster: str | None = None) -> Workload | None:
        """One workload or null (``namespace`` None or "" addresses a cluster-scoped object)."""
        ctx = info.context
        ctx.require_ready()
        namespace = namespace or None
        matches, only = _cluster_filter(ctx, cluster)
        if not matches:
            return None
        allow = await ctx.review(workload_scope(ctx.guard, ctx.service, namespace, _core(group), kind))
        try:
            view = ctx.service.workload(namespace, _core(group), kind, name, allow=allow, cluster=only)
        except WorkloadNotFound:
            return None
        await ctx.learn_pod_access([view.namespace])
        return _workload(view, ctx)

    @strawberry.field(description="The scheduler view of one pod: its top-level workload, component, instance, "
                                  "replica key and gangs with their minimum sizes, read from the materialized "
                                  "views. Null when the pod belongs to no workload or the caller may not list "
                                  "its workload's kind in the namespace. cluster: the pod's cluster (context); "
                                  "omitted, the first cluster that has the pod.")
    async def pod_workload(self, info: Info[Context, None], namespace: str, name: str,
                           cluster: str | None = None) -> PodWorkload | None:
        """One pod's placement or null."""
        ctx = info.context
        ctx.require_ready()
        matches, only = _cluster_filter(ctx, cluster)
        placement = ctx.service.pod_placement(namespace, name, cluster=only) if matches else None
        if placement is None or not await ctx.review(may_see(ctx.guard, ctx.service.reader, placement.view)):
            return None
        await ctx.learn_pod_access([namespace])
        return PodWorkload(placement=placement, cluster_name=placement.view.cluster or ctx.cluster)

    @strawberry.field(description="The cluster this server reads and how current its cache is (answers even "
                                  "before the caches are synced). With several clusters: the first one's name "
                                  "and the freshness of all of them together (stale when any is); see clusters.")
    def cluster(self, info: Info[Context, None]) -> Cluster:
        """Name, synced, stale, since, error."""
        return Cluster(name=info.context.cluster, freshness=freshness_of(info.context))

    @strawberry.field(description="Every cluster served (kubeconfig contexts, command-line order) and how current "
                                  "each one's cache is: an unreachable cluster is listed with its error and, after "
                                  "--stale-after, stale; the others are served as usual.")
    def clusters(self, info: Info[Context, None]) -> list[Cluster]:
        """One entry per cluster."""
        return clusters_of(info.context)

    @strawberry.field(description="Definitions in force (one per root GVK, sorted by name); with "
                                  "includeShadowed also registered definitions another one shadows.")
    def definitions(self, info: Info[Context, None], origin: str | None = None,
                    include_shadowed: bool = False) -> list[Definition]:
        """Definitions."""
        entries = definitions_in_force(info.context.registry, include_shadowed=include_shadowed, origin=origin)
        return [Definition(entry=e) for e in entries]

    @strawberry.field(description="The definition in force for a root group/kind (version optional: any "
                                  "version of the group/kind when omitted); null when none.")
    def definition(self, info: Info[Context, None], group: str, kind: str,
                   version: str | None = None) -> Definition | None:
        """One definition or null."""
        entry = definition_for(info.context.registry, _core(group), kind, version)
        return Definition(entry=entry) if entry is not None else None

    @strawberry.field(description="Stored definitions (files, Karta objects) skipped because they are invalid.")
    def skipped_definitions(self, info: Info[Context, None]) -> list[SkippedDefinition]:
        """Skipped definitions with their problems."""
        return [SkippedDefinition.of(s) for s in info.context.registrar.skipped.values()]

    @strawberry.field(description="GPU totals over top-level workloads grouped by namespace, kind, node or "
                                  "phase or cluster (sorted by key), over the workloads the caller may list. NODE "
                                  "groups pods "
                                  "by node (only pods the caller may get); its spec figure is 0 and a workload is "
                                  "counted on every node one of its pods runs on.")
    async def gpu_summary(self, info: Info[Context, None], group_by: GroupBy,
                          namespace: str | None = None) -> list[GpuSummaryBucket]:
        """GPU summary."""
        ctx = info.context
        ctx.require_ready()
        allow = await ctx.review(list_scope(ctx.guard, ctx.service, namespace=namespace))
        views = None  # everything visible: the service's incremental aggregates answer
        if allow is not None or namespace is not None or group_by == GroupBy.NODE:
            views = ctx.service.workloads(namespace=namespace, allow=allow)
        if group_by == GroupBy.NODE and views is not None:
            await ctx.learn_pod_access(v.namespace for v in views)
            views = [v for v in views if ctx.shows_pods(v.namespace)]
        return [GpuSummaryBucket(key=b.key, workloads=b.workloads,
                                 gpu=GpuAggregate(figures=GpuFigures(b.spec, b.pods, b.allocated),
                                                  policy=ctx.service.policy))
                for b in ctx.service.gpu_summary(group_by.value, views)]
