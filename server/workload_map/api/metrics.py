"""Prometheus metrics (``prometheus_client``), one registry per app instance.

Recorded as they happen: request latency (method, route template, status), view
resolution time and resolution errors (per definition). Read at scrape time from the
runtime: informer state, events, relists, watch restarts, cached objects, seconds since
the informer last heard from the API server and staleness (per GVK), cluster staleness,
definitions in force by origin, shadowed and skipped definitions, dropped subscriber
events (client subscriber queues of ``Reader.subscribe``), the depth of the internal queues, and
the materialized views: workloads resolved / known, dirty, resolution timeouts,
quarantined definitions, replaced resolver workers, view changes published.
Process and interpreter series as every Python exporter has them (``process_*``
from /proc, ``python_info``, ``python_gc_*``) and ``wmap_build_info{version,python}``
(the Prometheus convention for build information:
https://prometheus.io/docs/instrumenting/writing_exporters/#target-labels-not-static-scraped-labels).
Unless ``Settings.workload_metrics`` is off, the per-workload series read from the
materialized views (:func:`workload_metrics`): one ``wmap_workload_info`` per workload, one
``wmap_workload_gpus`` per workload, figure and GPU resource name, one
``wmap_pod_workload_info`` per pod a view holds (joinable with DCGM's namespace/pod labels),
the last only with ``Settings.pod_metrics`` (off by default).
They are served from text kept per view (:mod:`workload_map.api.workload_series`: only a
changed view is rendered again).

A scrape is rendered in a worker thread, never on the event loop (issue 29 item 5), and
gzip-compressed when the scraper accepts it (Prometheus does).
"""

from __future__ import annotations

import asyncio
import gzip
import platform
from collections.abc import Callable, Iterable, Iterator, Mapping
from decimal import Decimal
from typing import Any

from prometheus_client import (CONTENT_TYPE_LATEST, GC_COLLECTOR, PLATFORM_COLLECTOR, PROCESS_COLLECTOR,
                               CollectorRegistry, Counter, Histogram, Info, generate_latest)
from prometheus_client.core import CounterMetricFamily, GaugeMetricFamily, Metric
from prometheus_client.registry import Collector
from starlette.requests import Request
from starlette.responses import Response

from workload_map import __version__
from workload_map.api.workload_series import WorkloadSeries
from workload_map.kube.freshness import freshness, kind_name
from workload_map.kube.reader import Reader
from workload_map.resolution import WorkloadView
from workload_map.service.reads import WorkloadReads

LATENCY_BUCKETS = (0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60)


class Metrics:
    """The metrics of one app.

    Args:
        runtime: returns the app's ``Runtime`` (read at scrape time).
    """

    def __init__(self, runtime: Callable[[], Any]) -> None:
        self.registry = CollectorRegistry(auto_describe=True)
        self.requests = Histogram("wmap_http_request_duration_seconds", "HTTP request latency",
                                  ["method", "route", "status"], buckets=LATENCY_BUCKETS, registry=self.registry)
        self.resolution = Histogram("wmap_resolution_duration_seconds", "Time to resolve one workload view",
                                    ["definition"], buckets=LATENCY_BUCKETS, registry=self.registry)
        self.resolution_errors = Counter("wmap_resolution_errors", "Problems recorded while resolving views",
                                         ["definition"], registry=self.registry)
        self.registry.register(_StateCollector(runtime))
        register_process_collectors(self.registry)
        self._runtime = runtime
        self.series: WorkloadSeries | None = None

    def observe_request(self, method: str, route: str, status: int, seconds: float) -> None:
        """Record one HTTP request."""
        self.requests.labels(method, route, str(status)).observe(seconds)

    def observe_resolution(self, view: WorkloadView, seconds: float) -> None:
        """Record one resolution (hooked into ``WorkloadService.on_resolved``)."""
        self.resolution.labels(view.definition).observe(seconds)
        errors = len(view.errors) + sum(len(c.errors) for c in view.all_components())
        if errors:
            self.resolution_errors.labels(view.definition).inc(errors)

    async def endpoint(self, request: Request) -> Response:
        """Prometheus text exposition.

        ---
        summary: Prometheus metrics
        responses:
          '200': {description: metrics in the Prometheus text format, content: {text/plain: {schema: {type: string}}}}
        """
        compress = "gzip" in request.headers.get("accept-encoding", "").lower()
        body = await asyncio.to_thread(self.render, compress=compress)
        headers = {"Content-Encoding": "gzip", "Vary": "Accept-Encoding"} if compress else {"Vary": "Accept-Encoding"}
        return Response(body, media_type=CONTENT_TYPE_LATEST, headers=headers)

    def render(self, *, compress: bool = False) -> bytes:
        """The exposition text of every series (gzip-compressed when ``compress``); in a worker thread."""
        body = generate_latest(self.registry) + self.workload_text()
        return gzip.compress(body, compresslevel=3) if compress else body

    def workload_text(self) -> bytes:
        """The per-workload families, or nothing when ``Settings.workload_metrics`` is off.

        The per-pod family only with ``Settings.pod_metrics`` (off by default).
        """
        runtime = self._runtime()
        if runtime.service is None or not runtime.settings.workload_metrics:
            return b""
        by_cluster = bool(runtime.karta_crds)
        if self.series is None or self.series.by_cluster != by_cluster:
            self.series = WorkloadSeries(by_cluster=by_cluster)
        return self.series.text(runtime.service.workloads(), pods=runtime.settings.pod_metrics)


def register_process_collectors(registry: CollectorRegistry) -> None:
    """Add the process, platform and GC collectors and ``wmap_build_info`` to ``registry``.

    The collectors are prometheus_client's own (``process_cpu_seconds_total``,
    ``process_resident_memory_bytes``, ``process_open_fds``, ... read from ``/proc`` on
    Linux and absent elsewhere; ``python_info``; ``python_gc_*``): the process-wide instances
    are registered, so every app's registry reports the same process. ``wmap_build_info``
    is 1 with labels ``version`` (the server's) and ``python`` (e.g. ``3.11.7``).
    """
    for collector in (PROCESS_COLLECTOR, PLATFORM_COLLECTOR, GC_COLLECTOR):
        registry.register(collector)
    build = Info("wmap_build", "The server's build: version and Python version", registry=registry)
    build.info({"version": __version__, "python": platform.python_version()})


class _StateCollector(Collector):
    """Reads informer and definition state at scrape time."""

    def __init__(self, runtime: Callable[[], Any]) -> None:
        self._runtime = runtime

    def collect(self) -> Iterator[Metric]:
        runtime = self._runtime()
        several = bool(runtime.karta_crds)  # several clusters: every informer series carries `cluster`
        label = ["cluster", "gvk"] if several else ["gvk"]
        synced = GaugeMetricFamily("wmap_informer_synced", "1 when the informer has listed once", labels=label)
        state = GaugeMetricFamily("wmap_informer_state", "1 for the informer's current state",
                                  labels=[*label, "state"])
        objects = GaugeMetricFamily("wmap_cache_objects", "Objects cached per GVK", labels=label)
        events = CounterMetricFamily("wmap_informer_events", "Watch events applied", labels=label)
        relists = CounterMetricFamily("wmap_informer_relists", "Full lists done", labels=label)
        restarts = CounterMetricFamily("wmap_informer_watch_restarts", "Watch streams reopened", labels=label)
        age = GaugeMetricFamily("wmap_informer_last_event_age_seconds", "Seconds since the informer last heard "
                                "from the API server (list, accepted watch, event or bookmark)", labels=label)
        stale = GaugeMetricFamily("wmap_informer_stale", "1 while the informer's list/watch has failed for "
                                  "longer than --stale-after", labels=label)
        by_cluster = runtime.cluster_states() if several else {"": runtime.states()}
        for cluster, states in by_cluster.items():
            for gvk, status in states.items():
                name = [cluster, kind_name(gvk)] if several else [kind_name(gvk)]
                synced.add_metric(name, 1.0 if status.has_synced else 0.0)
                state.add_metric([*name, status.state], 1.0)
                objects.add_metric(name, status.count)
                events.add_metric(name, status.events)
                relists.add_metric(name, status.relists)
                restarts.add_metric(name, status.watch_restarts)
                if status.last_success_age is not None:
                    age.add_metric(name, status.last_success_age)
                stale.add_metric(name, 1.0 if status.stale else 0.0)
        yield from (synced, state, objects, events, relists, restarts, age, stale)
        cluster_stale = GaugeMetricFamily("wmap_cluster_stale", "1 while any informer is stale (answers are "
                                          "flagged)", labels=["cluster"] if several else None)
        for cluster, states in by_cluster.items():
            cluster_stale.add_metric([cluster] if several else [], 1.0 if freshness(states).stale else 0.0)
        yield cluster_stale
        definitions = GaugeMetricFamily("wmap_definitions", "Definitions in force by origin", labels=["origin"])
        counts: dict[str, int] = {}
        for entry in runtime.registry.entries():
            counts[entry.origin] = counts.get(entry.origin, 0) + 1
        for origin, count in sorted(counts.items()):
            definitions.add_metric([origin], count)
        yield definitions
        shadowed = sum(1 for e in runtime.registry.registered() if e.shadowed)
        yield GaugeMetricFamily("wmap_definitions_shadowed", "Registered definitions shadowed by an older one",
                                value=shadowed)
        skipped = len(runtime.registrar.skipped) if runtime.registrar is not None else 0
        yield GaugeMetricFamily("wmap_definitions_skipped", "Stored definitions skipped as invalid", value=skipped)
        reader = runtime.reader
        if reader is not None:
            yield CounterMetricFamily("wmap_subscriber_dropped_events", "Change events dropped for slow "
                                      "subscribers", value=reader.dropped_events)
            yield _queue_depths(reader)
        if runtime.service is not None:
            yield from _view_metrics(runtime.service)


def _view_metrics(service: WorkloadReads) -> Iterator[Metric]:
    """Series of the materialized views (``workload_map.service``)."""
    yield CounterMetricFamily("wmap_views_resolved", "Views resolved and stored", value=service.resolutions)
    resolved, known = service.progress()
    yield GaugeMetricFamily("wmap_views_materialized", "Workloads with a materialized view", value=resolved)
    yield GaugeMetricFamily("wmap_views_known", "Top-level workloads known", value=known)
    yield GaugeMetricFamily("wmap_views_ready", "1 once every workload found after sync has a view",
                            value=1.0 if service.is_ready() else 0.0)
    yield CounterMetricFamily("wmap_view_changes", "View change events published", value=service.feed.published)
    materializer = service.materializer
    if materializer is None:
        return
    yield GaugeMetricFamily("wmap_views_dirty", "Workloads waiting to be re-resolved", value=len(materializer.dirty))
    yield CounterMetricFamily("wmap_resolution_timeouts", "Resolutions ended for exceeding their budget",
                              value=materializer.pool.timeouts)
    yield CounterMetricFamily("wmap_resolver_worker_crashes", "Resolver workers that died mid-resolution",
                              value=materializer.pool.crashes)
    yield CounterMetricFamily("wmap_resolver_workers_replaced", "Resolver worker processes replaced",
                              value=materializer.pool.replaced)
    yield CounterMetricFamily("wmap_definitions_quarantined", "Definitions quarantined for repeated timeouts",
                              value=materializer.quarantines)


GPU_FIGURES = (("requested_by_spec", "spec"), ("requested_by_pods", "pods"), ("allocated", "allocated"))
"""``figure`` label value -> :class:`~workload_map.resolution.view.GpuFigures` attribute."""


def workload_metrics(views: Iterable[WorkloadView], *, by_cluster: bool = False) -> list[Metric]:
    """``wmap_workload_info``, ``wmap_workload_gpus`` and ``wmap_pod_workload_info`` over ``views``.

    Bound: one info series per workload; one GPU series per workload, figure (3) and GPU
    resource name the workload's figures hold (``GpuPolicy.is_gpu``: whole GPUs, MIG profiles,
    shared replicas, DRA classes); one pod series per pod a view holds (a pod listed twice is
    counted once). Values: info series are 1; GPU series are devices (the view's figures; a
    figure whose count is unknown, DRA ``allocationMode: All`` before allocation, is left out).

    Args:
        views: the materialized views (read only).
        by_cluster: several clusters are served: every series gets a first label
            ``cluster`` (the view's cluster), so the same workload in two clusters is two series.

    Returns:
        The three metric families, in that order.
    """
    first = ["cluster"] if by_cluster else []
    info = GaugeMetricFamily("wmap_workload_info", "1 per top-level workload: its phase and definition",
                             labels=[*first, "namespace", "group", "kind", "name", "phase", "definition"])
    gpus = GaugeMetricFamily("wmap_workload_gpus", "GPUs of one workload by figure and resource name",
                             labels=[*first, "namespace", "group", "kind", "name", "figure", "resource"])
    pods = GaugeMetricFamily("wmap_pod_workload_info", "1 per pod of a workload: the workload, component and "
                             "instance it belongs to", labels=[*first, "namespace", "pod", "group", "kind",
                                                               "workload", "component", "instance"])
    seen: set[tuple[str, str, str]] = set()
    for view in views:
        ns, group = view.namespace or "", view.group
        c = [view.cluster] if by_cluster else []
        info.add_metric([*c, ns, group, view.kind, view.name, view.phase.value, view.definition], 1.0)
        for figure, attribute in GPU_FIGURES:
            amounts: Mapping[str, Decimal] = getattr(view.gpu, attribute)
            unknown = view.gpu.unknown.get(_CAMEL[figure], set())
            for resource in sorted(r for r in amounts if view.policy.is_gpu(r) and r not in unknown):
                gpus.add_metric([*c, ns, group, view.kind, view.name, figure, resource], float(amounts[resource]))
        for pod in view.all_pods():
            if (view.cluster, pod.namespace, pod.name) in seen:
                continue
            seen.add((view.cluster, pod.namespace, pod.name))
            pods.add_metric([*c, pod.namespace, pod.name, group, view.kind, view.name, pod.component or "",
                             pod.instance or ""], 1.0)
    return [info, gpus, pods]


_CAMEL = {"requested_by_spec": "requestedBySpec", "requested_by_pods": "requestedByPods", "allocated": "allocated"}


def _queue_depths(reader: Reader) -> GaugeMetricFamily:
    """``wmap_queue_depth{queue}``: events waiting in the subscriber and reader queues.

    The subscriber queues are ``subscribers`` (all of them) and ``subscribers_max`` (the
    fullest one).
    """
    family = GaugeMetricFamily("wmap_queue_depth", "Events waiting in an internal queue", labels=["queue"])
    depths = reader.subscriber_depths()
    family.add_metric(["subscribers"], sum(depths))
    family.add_metric(["subscribers_max"], max(depths, default=0))
    return family
