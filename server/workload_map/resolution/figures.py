"""The three GPU figures over pods, and the DRA inputs of one resolution.

``pod_figures`` sums requested-by-pods and allocated over pods that are not terminated
(terminating ones included, ``workload_map.resolution.pods``), adding each shared ResourceClaim
once however many pods name it (``workload_map.resolution.dra``). ``DraContext`` carries the claims
and templates of one ``resolve()`` call and fills the DRA part of pod rows and pod templates.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from msgspec import Struct, field

from workload_map.resolution.dra import ClaimSources, Demand, PodClaims, pod_claims, template_claims
from workload_map.resolution.resources import GpuPolicy, Requests, add_into
from workload_map.resolution.view import PodClaimFigures, PodView, ResolutionError

SPEC, PODS = "requestedBySpec", "requestedByPods"


def pod_figures(pods: Sequence[PodView]) -> tuple[Requests, Requests, set[str]]:
    """``(requested by pods, allocated, unknown resource names)`` over ``pods``.

    Requested: every pod not terminated; allocated: those bound to a node (what they hold,
    ``PodView.held``). A shared claim counts once: requested when any such pod names it,
    allocated when one of them is bound and the claim is allocated.
    """
    requested: Requests = {}
    allocated: Requests = {}
    unknown: set[str] = set()
    shared: dict[tuple[str, str], list[Any]] = {}
    for pod in pods:
        if pod.terminated:
            continue
        add_into(requested, pod.requests)
        unknown |= pod.unknown
        if pod.node:
            add_into(allocated, pod.held())
        for key, (demand, devices) in pod.shared_claims.items():
            entry = shared.setdefault(key, [demand, devices, False])
            entry[2] = entry[2] or bool(pod.node)
    for demand, devices, bound in shared.values():
        add_into(requested, demand.devices)
        unknown |= demand.unknown
        if bound and devices:
            add_into(allocated, devices)
    return requested, allocated, unknown


class DraContext(Struct):
    """DRA inputs of one resolution (inactive, and free, when no claim or template is given).

    Attributes:
        sources: claims and templates by (namespace, name).
        namespace: the workload's namespace (templates' claims live there).
        policy: GPU policy (which device classes are GPUs).
        errors: messages of missing claims/templates and invalid requests (each once).
    """

    sources: ClaimSources
    namespace: str
    policy: GpuPolicy
    errors: list[str] = field(default_factory=list)

    @property
    def active(self) -> bool:
        """True when any claim or template was given."""
        return bool(self.sources.claims or self.sources.templates)

    def template(self, spec: Mapping[str, Any] | None) -> PodClaims:
        """DRA demand of one pod template (empty when inactive)."""
        if not self.active or spec is None:
            return PodClaims()
        return template_claims(spec, self.namespace, self.sources, self.policy, self.errors)

    def fill(self, row: PodView, pod: Mapping[str, Any]) -> None:
        """Add a live pod's per-pod claims to its row and record its shared claims."""
        if not self.active:
            return
        claims = pod_claims(pod, self.sources, self.policy, self.errors)
        if not (claims.own.devices or claims.own.unknown or claims.shared or claims.own_allocated):
            return
        held = dict(row.requests)
        add_into(held, claims.own_allocated)
        add_into(row.requests, claims.own.devices)
        row.claims = PodClaimFigures(held, frozenset(claims.own.unknown), claims.shared)

    def report(self, errors: list[ResolutionError]) -> None:
        """Append the collected messages (deduplicated, in order) as workload errors."""
        for message in dict.fromkeys(self.errors):
            errors.append(ResolutionError(message, field="spec.resourceClaims"))


def shared_spec(claims: dict[tuple[str, str], tuple[Demand, Any]], target: Requests, unknown: set[str]) -> None:
    """Add shared claims' spec demand (once each) into ``target`` and ``unknown``."""
    for demand, _ in claims.values():
        add_into(target, demand.devices)
        unknown |= demand.unknown
