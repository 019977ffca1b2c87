"""GPU and resource figures of a resolved view, and their JSON shapes.

Part of the view model (:mod:`workload_map.resolution.view` re-exports both names).
Units: ``cpuMillis`` millicores, ``memoryBytes`` bytes, ``gpus`` whole devices;
``byResource`` maps every resource name to a decimal string.
"""

from __future__ import annotations

from decimal import Decimal
from typing import Any

from msgspec import Struct, field

from workload_map.resolution.quantity import format_quantity
from workload_map.resolution.resources import DEFAULT_GPU_POLICY, GpuPolicy, Requests


def resources_dict(requests: Requests, policy: GpuPolicy = DEFAULT_GPU_POLICY) -> dict[str, Any]:
    """``{gpus, cpuMillis, memoryBytes, byResource}`` for a requests map."""
    gpus = policy.total(requests)
    return {
        "gpus": _number(gpus),
        "cpuMillis": _number(requests.get("cpu", Decimal(0)) * 1000),
        "memoryBytes": _number(requests.get("memory", Decimal(0))),
        "byResource": {k: format_quantity(v) for k, v in sorted(requests.items())},
    }


def _number(value: Decimal) -> int | float:
    return int(value) if value == value.to_integral_value() else float(value)


class GpuFigures(Struct):
    """The three GPU figures platforms need, kept apart because they diverge.

    Attributes:
        requested_by_spec: whole GPUs the definition's pod specs ask for x desired replicas.
        requested_by_pods: whole GPUs asked for by existing, non-terminated pods.
        allocated: whole GPUs of pods bound to a node and not terminated.
        by_resource: per GPU-class resource name (MIG profiles kept apart):
            ``{name: {requestedBySpec, requestedByPods, allocated}}``.
    """

    spec: Requests = field(default_factory=dict)
    pods: Requests = field(default_factory=dict)
    allocated: Requests = field(default_factory=dict)
    #: figure (``requestedBySpec``/``requestedByPods``) -> resource names whose count is
    #: unknown (a DRA ``allocationMode: All`` request before allocation).
    unknown: dict[str, set[str]] = field(default_factory=dict)

    def merge(self, other: "GpuFigures") -> None:
        """Add ``other``'s three figures and unknown marks into these, in place."""
        for mine, theirs in ((self.spec, other.spec), (self.pods, other.pods), (self.allocated, other.allocated)):
            for k, v in theirs.items():
                mine[k] = mine.get(k, Decimal(0)) + v
        for figure, names in other.unknown.items():
            self.unknown.setdefault(figure, set()).update(names)

    def to_dict(self, policy: GpuPolicy = DEFAULT_GPU_POLICY) -> dict[str, Any]:
        """JSON shape ``{requestedBySpec, requestedByPods, allocated, byResource, unknown?}``.

        A figure of a resource whose count is unknown is ``null`` in ``byResource``; the
        totals then hold the known part and ``unknown`` lists the figures concerned.
        """
        unknown = {f: n for f, n in self.unknown.items() if n}
        names = sorted({n for part in (self.spec, self.pods, self.allocated) for n in part if policy.is_gpu(n)}
                       | {n for names in unknown.values() for n in names})

        def value(figure: str, part: Requests, name: str) -> int | float | None:
            return None if name in unknown.get(figure, ()) else _number(part.get(name, Decimal(0)))
        out: dict[str, Any] = {
            "requestedBySpec": _number(policy.total(self.spec)),
            "requestedByPods": _number(policy.total(self.pods)),
            "allocated": _number(policy.total(self.allocated)),
            "byResource": {n: {"requestedBySpec": value("requestedBySpec", self.spec, n),
                               "requestedByPods": value("requestedByPods", self.pods, n),
                               "allocated": value("allocated", self.allocated, n)} for n in names},
        }
        if unknown:
            out["unknown"] = sorted(unknown)
        return out
