"""The per-workload ``/metrics`` series, kept as exposition text per view (issue 29 item 5).

Rendering 28,000 series through ``prometheus_client``'s metric families costs about 10 us a
series on every scrape; at 20,000 workloads with per-pod series that is seconds. Here each
workload's lines (Prometheus text format 0.0.4,
https://prometheus.io/docs/instrumenting/exposition_formats/#text-based-format) are rendered
once, when its view is new or changed (a materialized view is immutable and replaced on
every change, so "changed" is "not the object rendered last time"), and a scrape joins the
stored bytes. The series are those of ``workload_map.api.metrics.workload_metrics`` (same
names, labels, values and order within a workload): one ``wmap_workload_info`` per
workload, one ``wmap_workload_gpus`` per workload, figure and GPU resource, and, when
``pods`` is on, one ``wmap_pod_workload_info`` per pod (a pod listed twice counted once).

A scrape runs in a worker thread (``workload_map.api.metrics.Metrics.endpoint``); the lock
keeps two scrapes from rendering the same table at once.
"""

from __future__ import annotations

import threading
from collections.abc import Iterable, Mapping
from decimal import Decimal

from prometheus_client.utils import floatToGoString

from workload_map.resolution import WorkloadView

FAMILIES = (
    ("wmap_workload_info", "1 per top-level workload: its phase and definition"),
    ("wmap_workload_gpus", "GPUs of one workload by figure and resource name"),
    ("wmap_pod_workload_info", "1 per pod of a workload: the workload, component and instance it belongs to"),
)
"""(name, help) of the three families, in exposition order."""

GPU_FIGURES = (("requested_by_spec", "spec", "requestedBySpec"), ("requested_by_pods", "pods", "requestedByPods"),
               ("allocated", "allocated", "allocated"))
"""``figure`` label -> ``GpuFigures`` attribute and the key of ``GpuFigures.unknown``."""

PodKey = tuple[str, str, str]
Rendered = tuple[WorkloadView, bytes, bytes, list[tuple[PodKey, bytes]]]


def escape(value: str) -> str:
    """A label value escaped for the text format (backslash, double quote, line feed)."""
    return value.replace("\\", "\\\\").replace("\n", "\\n").replace('"', '\\"')


def _line(name: str, names: tuple[str, ...], values: Iterable[str], value: float) -> str:
    labels = ",".join(f'{n}="{escape(v)}"' for n, v in sorted(zip(names, values)))  # sorted, as prometheus_client
    return f"{name}{{{labels}}} {floatToGoString(value)}\n"  # type: ignore[no-untyped-call]


class WorkloadSeries:
    """Exposition text of the per-workload families, re-rendered only for changed views.

    Args:
        by_cluster: every series gets a first label ``cluster`` (several clusters served).
    """

    def __init__(self, *, by_cluster: bool = False) -> None:
        self.by_cluster = by_cluster
        self._rendered: dict[tuple[str, str], Rendered] = {}
        self._lock = threading.Lock()
        self.renders = 0
        """Views rendered so far (a scrape of unchanged views adds none)."""

    def text(self, views: Iterable[WorkloadView], *, pods: bool = True) -> bytes:
        """The families over ``views``: the per-pod one only with ``pods``."""
        with self._lock:
            table: dict[tuple[str, str], Rendered] = {}
            for view in views:
                key = (view.cluster, view.uid)
                hit = self._rendered.get(key)
                table[key] = hit if hit is not None and hit[0] is view else self._render(view)
            self._rendered = table
            return self._join(table.values(), pods)

    def _join(self, rows: Iterable[Rendered], pods: bool) -> bytes:
        rows = list(rows)
        heads = [f"# HELP {name} {text}\n# TYPE {name} gauge\n".encode() for name, text in FAMILIES]
        parts = [heads[0], *(r[1] for r in rows), heads[1], *(r[2] for r in rows)]
        if pods:  # the family is left out entirely when off (Settings.pod_metrics)
            parts.append(heads[2])
            seen: set[PodKey] = set()
            for row in rows:
                for key, line in row[3]:
                    if key not in seen:
                        seen.add(key)
                        parts.append(line)
        return b"".join(parts)

    def _render(self, view: WorkloadView) -> Rendered:
        self.renders += 1
        first: tuple[str, ...] = ("cluster",) if self.by_cluster else ()
        c = [view.cluster] if self.by_cluster else []
        ns, group = view.namespace or "", view.group
        info = _line("wmap_workload_info", (*first, "namespace", "group", "kind", "name", "phase", "definition"),
                     [*c, ns, group, view.kind, view.name, view.phase.value, view.definition], 1.0)
        gpu_names = (*first, "namespace", "group", "kind", "name", "figure", "resource")
        gpus = []
        for figure, attribute, camel in GPU_FIGURES:
            amounts: Mapping[str, Decimal] = getattr(view.gpu, attribute)
            unknown = view.gpu.unknown.get(camel, set())
            for resource in sorted(r for r in amounts if view.policy.is_gpu(r) and r not in unknown):
                gpus.append(_line("wmap_workload_gpus", gpu_names, [*c, ns, group, view.kind, view.name, figure,
                                                                    resource], float(amounts[resource])))
        pod_names = (*first, "namespace", "pod", "group", "kind", "workload", "component", "instance")
        pod_lines: list[tuple[PodKey, bytes]] = []
        listed: set[PodKey] = set()
        for pod in view.all_pods():
            key = (view.cluster, pod.namespace, pod.name)
            if key not in listed:
                listed.add(key)
                pod_lines.append((key, _line("wmap_pod_workload_info", pod_names,
                                             [*c, pod.namespace, pod.name, group, view.kind, view.name,
                                              pod.component or "", pod.instance or ""], 1.0).encode()))
        return view, info.encode(), "".join(gpus).encode(), pod_lines
