"""Render views for the terminal: JSON, YAML or an ASCII tree; ``get`` lists.

The tree shows workload -> components -> instances -> pods with ready/desired counts,
GPUs, CPU and memory requests and nodes, then the phase and the three GPU figures. With a
pod limit, each component or instance shows at most that many pods, unhealthy ones (not
ready and not Succeeded) first, and a line ``... and N more (K unhealthy shown)``. ``render_list`` prints the rows
of ``wmap get`` as kubectl's ``-o`` formats (table, wide, name, json, yaml).
"""

from __future__ import annotations

import json
import sys
from datetime import datetime, timezone
from typing import Any, Iterable

import yaml

from workload_map.logs import printable
from workload_map.cli.quantities import cpu_memory
from workload_map.resolution import ComponentView, WorkloadView
from workload_map.resolution.view import InstanceView, PodView
from workload_map.service.rows import summary

LIST_FORMATS = ("table", "wide", "name", "json", "yaml")


def _gpu(value: Any) -> str:
    return f"gpu: {value}" if value else ""


def _row(*parts: str) -> str:
    return "   ".join(p for p in parts if p)


def _pod_line(pod: PodView, policy: Any) -> str:
    phase = f"{pod.phase} ({pod.reason})" if pod.reason else pod.phase
    gpus = policy.total(pod.requests)
    return _row(pod.name, phase, _gpu(gpus), cpu_memory(pod.requests), pod.node or "<none>")


def _unhealthy(pod: PodView) -> bool:
    return not pod.ready and pod.phase != "Succeeded"


def _pods(pods: list[PodView], limit: int) -> list[tuple[str, Any]]:
    """Pod rows, at most ``limit`` (0: all), unhealthy first, and a ``more`` row for the rest."""
    if limit <= 0 or len(pods) <= limit:
        return [("pod", p) for p in pods]
    ordered = sorted(pods, key=lambda p: not _unhealthy(p))  # stable: unhealthy first, in order
    shown = ordered[:limit]
    bad, bad_shown = sum(map(_unhealthy, pods)), sum(map(_unhealthy, shown))
    note = f"{bad_shown} unhealthy shown" if bad_shown == bad else f"{bad_shown} of {bad} unhealthy shown"
    return [*(("pod", p) for p in shown), ("more", f"... and {len(pods) - limit} more ({note})")]


def _children(node: Any, view: WorkloadView, limit: int = 0) -> list[tuple[str, Any]]:
    if isinstance(node, ComponentView):
        out: list[tuple[str, Any]] = []
        named = [i for i in node.instances if i.id]
        if named:
            out += [("instance", i) for i in named]
        else:
            out += _pods(node.pods, limit)
        out += [("component", c) for c in node.children]
        return out
    if isinstance(node, InstanceView):
        return _pods(node.pods, limit)
    return []


def _label(kind: str, node: Any, view: WorkloadView) -> str:
    policy = view.policy
    if kind == "component":
        r = node.replicas
        gpus = policy.total(node.gpu.spec)
        what = f"{node.name} ({node.kind})" if node.kind else f"{node.name} (logical)"
        return _row(what, f"{r.ready}/{r.desired} ready", _gpu(gpus), cpu_memory(node.requests), ",".join(node.nodes))
    if kind == "instance":
        r = node.replicas
        gpus = policy.total(node.pod_requests) * r.desired
        nodes = ",".join(sorted({p.node for p in node.pods if p.node}))
        scaled = {k: v * r.desired for k, v in node.pod_requests.items()}
        return _row(node.id, f"{r.ready}/{r.desired} ready", _gpu(gpus), cpu_memory(scaled), nodes)
    if kind == "more":
        return str(node)
    return _pod_line(node, policy)


def _walk(kind: str, node: Any, view: WorkloadView, prefix: str, last: bool, lines: list[str], limit: int) -> None:
    lines.append(f"{prefix}{'`-- ' if last else '|-- '}{_label(kind, node, view)}")
    kids = _children(node, view, limit)
    for index, (k, child) in enumerate(kids):
        _walk(k, child, view, prefix + ("    " if last else "|   "), index == len(kids) - 1, lines, limit)


def render_tree(view: WorkloadView, pod_limit: int = 0) -> str:
    """The human-readable tree of one workload (``pod_limit``: pods per component, 0 all)."""
    lines = [_row(f"{view.kind}/{view.name}", f"namespace: {view.namespace or '<none>'}",
                  f"definition: {view.definition} ({view.origin})")]
    for index, component in enumerate(view.components):
        _walk("component", component, view, "", index == len(view.components) - 1, lines, pod_limit)
    for pod in view.unattributed:
        lines.append(f"unattributed: {_pod_line(pod, view.policy)}   reason: {pod.unattributed_reason}")
    gpu = view.gpu.to_dict(view.policy)
    lines.append(f"Phase: {','.join(p.value for p in view.phases)}   (headline: {view.phase.value})")
    r = view.replicas
    lines.append(f"Pods: desired {r.desired}, current {r.current}, ready {r.ready}")
    lines.append(f"GPUs: requested by spec {gpu['requestedBySpec']}, requested by pods {gpu['requestedByPods']}, "
                 f"allocated {gpu['allocated']}")
    for gang in view.gangs:
        lines.append(f"Gang {gang.name}: minMember {gang.min_member}, {len(gang.pods)} pod(s)")
    for error in [*view.errors, *(e for c in view.all_components() for e in c.errors)]:
        lines.append(f"warning: {error.component + ': ' if error.component else ''}{error.message}")
    return "\n".join(printable(line) for line in lines)


def render(views: Iterable[WorkloadView], output: str, *, pod_limit: int = 0) -> str:
    """Render views as ``json``, ``yaml`` or ``tree`` (``pod_limit`` applies to the tree).

    One view is a bare object, several are the envelope ``{items, count}`` (as upstream
    ``kli``).
    """
    views = list(views)
    if output == "tree":
        return "\n\n".join(render_tree(v, pod_limit) for v in views)
    data: Any = views[0].to_dict() if len(views) == 1 else {"items": [v.to_dict() for v in views],
                                                            "count": len(views)}
    if output == "yaml":
        return yaml.safe_dump(data, sort_keys=False).rstrip()
    return json.dumps(data, indent=2)


class Printer:
    """Writes views to stdout as they come, the same bytes as ``print(render(views, output))``.

    ``tree`` and ``json`` are written as views are added (the JSON envelope ``{items,
    count}`` item by item, one view alone a bare object); ``yaml`` keeps the views and
    renders them at :meth:`close` (PyYAML may share anchors across items).

    Args:
        output: ``tree``, ``json`` or ``yaml``.
        pod_limit: as :func:`render`.
    """

    def __init__(self, output: str, *, pod_limit: int = 0) -> None:
        self.output, self.pod_limit = output, pod_limit
        self.count = 0
        self._held: list[WorkloadView] = []  # yaml: every view; json: the first, until a second comes

    def add(self, view: WorkloadView) -> None:
        """Write ``view`` (or hold it: see the class docstring)."""
        write = sys.stdout.write
        if self.output == "tree":
            write(("\n\n" if self.count else "") + render_tree(view, self.pod_limit))
        elif self.output == "json" and self.count:
            if self._held:
                write('{\n  "items": [\n' + _item(self._held.pop()))
            write(",\n" + _item(view))
        else:
            self._held.append(view)
        self.count += 1

    def close(self) -> int:
        """Finish the output (newline-terminated, as ``print``); returns 0 (the exit code)."""
        if self.output == "tree" or (self.output == "json" and self.count > 1):
            sys.stdout.write("\n" if self.output == "tree" else f'\n  ],\n  "count": {self.count}\n}}\n')
        else:
            print(render(self._held, self.output, pod_limit=self.pod_limit))
        self._held = []
        return 0


def _item(view: WorkloadView) -> str:
    """``view`` as an element of the ``items`` array of ``json.dumps(envelope, indent=2)``."""
    return "\n".join("    " + line for line in json.dumps(view.to_dict(), indent=2).split("\n"))


def age(created: str | None, now: datetime | None = None) -> str:
    """The kubectl AGE of an RFC 3339 ``creationTimestamp`` (``<unknown>`` when absent or unparsable)."""
    from workload_map.cli.kubectl import human_duration

    if not created:
        return "<unknown>"
    try:
        then = datetime.strptime(created, "%Y-%m-%dT%H:%M:%SZ").replace(tzinfo=timezone.utc)
    except ValueError:
        return "<unknown>"
    return human_duration(((now or datetime.now(timezone.utc)) - then).total_seconds())


def resource_name(view: WorkloadView) -> str:
    """``kind.group/name`` as ``kubectl get -o name`` prints it (``kind/name`` in the core group)."""
    kind = view.kind.lower()
    return f"{kind}.{view.group}/{view.name}" if view.group else f"{kind}/{view.name}"


def _list_row(view: WorkloadView, wide: bool, now: datetime | None, clusters: bool = False) -> tuple[str, ...]:
    gpu = view.gpu.to_dict(view.policy)
    row: tuple[str, ...] = (view.name, view.namespace or "", ",".join(p.value for p in view.phases),
                            f"{gpu['allocated']}/{gpu['requestedBySpec']}", age(view.created_at, now))
    if wide:
        nodes = sorted({n for c in view.all_components() for n in c.nodes})
        row += (view.definition, f"{view.replicas.ready}/{view.replicas.desired}", ",".join(nodes) or "<none>")
        if clusters:
            row += (view.cluster or "<none>",)
    return row


def render_list(views: list[WorkloadView], output: str, now: datetime | None = None) -> str:
    """The ``wmap get`` output of ``views`` in one of ``LIST_FORMATS``.

    ``table``: NAME, NAMESPACE, PHASE, GPUS (allocated/requested by spec), AGE; ``wide``
    adds DEFINITION, PODS (ready/desired) and NODES, and CLUSTER when the views carry one
    (read from a cluster: the kubeconfig context); ``name``: one ``kind.group/name`` a
    line; ``json``/``yaml``: ``{items: [summary rows], count}``.
    """
    if output in ("json", "yaml"):
        data = {"items": [summary(v) for v in views], "count": len(views)}
        return json.dumps(data, indent=2) if output == "json" else yaml.safe_dump(data, sort_keys=False).rstrip()
    if output == "name":
        return "\n".join(printable(resource_name(v)) for v in views)
    header: tuple[str, ...] = ("NAME", "NAMESPACE", "PHASE", "GPUS", "AGE")
    clusters = output == "wide" and any(v.cluster for v in views)
    if output == "wide":
        header += ("DEFINITION", "PODS", "NODES") + (("CLUSTER",) if clusters else ())
    rows = [header, *(tuple(map(printable, _list_row(v, output == "wide", now, clusters))) for v in views)]
    widths = [max(len(r[i]) for r in rows) for i in range(len(header))]
    return "\n".join("   ".join(c.ljust(w) for c, w in zip(r, widths)).rstrip() for r in rows)
