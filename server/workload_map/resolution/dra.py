"""DRA GPUs: ResourceClaims and ResourceClaimTemplates (``resource.k8s.io/v1``) in the figures.

Kubernetes "Dynamic Resource Allocation" (kubernetes.io/docs/concepts/scheduling-eviction/
dynamic-resource-allocation/, GA in v1.34) and the ``resource.k8s.io/v1`` API reference:

* A pod's ``spec.resourceClaims[]`` entry names either a ``resourceClaimTemplateName`` (the
  control plane creates one ResourceClaim per pod from the template, owned by the pod; its
  name is in the pod's ``status.resourceClaimStatuses[]``) or a ``resourceClaimName`` (an
  existing claim that several pods may share: counted **once per workload**, not per pod).
* A claim's ``spec.devices.requests[]`` entry is ``exactly`` (``deviceClassName``,
  ``allocationMode`` ``ExactCount`` with ``count`` default 1, or ``All``; ``adminAccess: true``
  gives monitoring access and consumes nothing) or ``firstAvailable`` (alternatives in order of
  preference; the scheduler picks the first that fits).
* ``status.allocation.devices.results[]`` lists the allocated devices, one per device, with
  ``request`` = ``<request>`` or ``<request>/<alternative>``.

Counting: a device class is a GPU class by configuration (``GpuPolicy.dra_classes``, partitions
in ``dra_partial_classes``); devices count under ``dra/<deviceClassName>``. Before allocation a
claim asks for its requests' counts (``firstAvailable``: the first alternative); ``All`` is
*unknown* (reported as such, never 0) until allocated; once allocated, the allocated devices
are the demand. Allocated figures come from ``status.allocation`` only.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from decimal import Decimal
from typing import Any

from msgspec import Struct, field

from workload_map.gvk import GVK
from workload_map.resolution.resources import DEFAULT_GPU_POLICY, GpuPolicy, Requests, add_into

RESOURCE_CLAIM = GVK("resource.k8s.io", "v1", "ResourceClaim")
RESOURCE_CLAIM_TEMPLATE = GVK("resource.k8s.io", "v1", "ResourceClaimTemplate")
DRA_KINDS = (RESOURCE_CLAIM, RESOURCE_CLAIM_TEMPLATE)
PREFIX = "dra/"


class Demand(Struct):
    """DRA GPU devices by ``dra/<class>``; ``unknown``: keys whose count is not known yet."""

    devices: Requests = field(default_factory=dict)
    unknown: set[str] = field(default_factory=set)

    def add(self, other: "Demand") -> None:
        """Add ``other`` into this demand in place."""
        add_into(self.devices, other.devices)
        self.unknown |= other.unknown


def _m(value: Any) -> Mapping[str, Any]:
    return value if isinstance(value, Mapping) else {}


def _l(value: Any) -> list[Any]:
    return value if isinstance(value, list) else []


def _count(request: Mapping[str, Any], where: str, errors: list[str]) -> int | None:
    """Device count of one exact request or alternative; None for ``allocationMode: All``."""
    mode = request.get("allocationMode") or "ExactCount"
    if mode == "All":
        return None
    raw = request.get("count", 1)
    if mode != "ExactCount" or isinstance(raw, bool) or not isinstance(raw, int) or raw < 1:
        errors.append(f"{where}: allocationMode {mode!r} with count {raw!r} is not valid (ExactCount needs count >= 1)")
        return 0
    return raw


def spec_demand(spec: Any, policy: GpuPolicy, where: str, errors: list[str]) -> Demand:
    """Demand of a ResourceClaimSpec before allocation (module docstring)."""
    demand = Demand()
    for index, request in enumerate(_l(_m(_m(spec).get("devices")).get("requests"))):
        request = _m(request)
        at = f"{where}.devices.requests[{index}]"
        exact = request.get("exactly")
        alternatives = _l(request.get("firstAvailable"))
        chosen = _m(exact) if exact is not None else (_m(alternatives[0]) if alternatives else {})
        if not chosen:
            errors.append(f"{at}: neither exactly nor firstAvailable is set")
            continue
        device_class = str(chosen.get("deviceClassName") or "")
        if chosen.get("adminAccess") is True or not policy.is_dra_gpu_class(device_class):
            continue
        count = _count(chosen, at, errors)
        key = PREFIX + device_class
        if count is None:
            demand.unknown.add(key)
        else:
            demand.devices[key] = demand.devices.get(key, Decimal(0)) + count
    return demand


def allocated_devices(claim: Mapping[str, Any], policy: GpuPolicy) -> Requests | None:
    """GPU devices of a claim's ``status.allocation`` by ``dra/<class>``; None when not allocated."""
    allocation = _m(_m(claim.get("status")).get("allocation"))
    if not allocation:
        return None
    classes: dict[str, tuple[str, bool]] = {}
    for request in _l(_m(_m(_m(claim.get("spec")).get("devices"))).get("requests")):
        request = _m(request)
        exact = _m(request.get("exactly"))
        name = str(request.get("name", ""))
        classes[name] = (str(exact.get("deviceClassName") or ""), exact.get("adminAccess") is True)
        for alt in _l(request.get("firstAvailable")):
            alt = _m(alt)
            classes[f"{name}/{alt.get('name', '')}"] = (str(alt.get("deviceClassName") or ""), False)
    out: Requests = {}
    for result in _l(_m(allocation.get("devices")).get("results")):
        result = _m(result)
        device_class, admin = classes.get(str(result.get("request", "")), ("", False))
        if admin or result.get("adminAccess") is True or not policy.is_dra_gpu_class(device_class):
            continue
        out[PREFIX + device_class] = out.get(PREFIX + device_class, Decimal(0)) + 1
    return out


def claim_demand(claim: Mapping[str, Any], policy: GpuPolicy, errors: list[str]) -> Demand:
    """What a claim asks for now: its allocated devices once allocated, else its spec's demand."""
    allocated = allocated_devices(claim, policy)
    if allocated is not None:
        return Demand(allocated)
    name = _m(claim.get("metadata")).get("name", "")
    return spec_demand(claim.get("spec"), policy, f"ResourceClaim {name}: spec", errors)


class ClaimSources(Struct):
    """The ResourceClaims and ResourceClaimTemplates a workload's pods may name, by (namespace, name)."""

    claims: dict[tuple[str, str], Mapping[str, Any]] = field(default_factory=dict)
    templates: dict[tuple[str, str], Mapping[str, Any]] = field(default_factory=dict)

    @classmethod
    def of(cls, claims: Sequence[Mapping[str, Any]], templates: Sequence[Mapping[str, Any]]) -> "ClaimSources":
        """Index claims and templates by namespace and name."""
        def key(o: Mapping[str, Any]) -> tuple[str, str]:
            meta = _m(o.get("metadata"))
            return str(meta.get("namespace") or ""), str(meta.get("name") or "")
        return cls({key(c): c for c in claims}, {key(t): t for t in templates})

    def template_demand(self, namespace: str, name: str, policy: GpuPolicy, errors: list[str]) -> Demand:
        """Demand of one pod's claim made from template ``name``; unknown when the template is missing."""
        template = self.templates.get((namespace, name))
        if template is None:
            errors.append(f"ResourceClaimTemplate {namespace}/{name} not found")
            return Demand()
        return spec_demand(_m(template.get("spec")).get("spec"), policy, f"ResourceClaimTemplate {name}: spec.spec",
                           errors)


class PodClaims(Struct):
    """DRA figures of one pod (or pod template).

    Attributes:
        own: per-pod claims (from templates): what they ask for now.
        own_allocated: per-pod claims' allocated devices.
        shared: shared claims by (namespace, name): (what it asks for now, allocated or None).
    """

    own: Demand = field(default_factory=Demand)
    own_allocated: Requests = field(default_factory=dict)
    shared: dict[tuple[str, str], tuple[Demand, Requests | None]] = field(default_factory=dict)


def template_claims(spec: Any, namespace: str, sources: ClaimSources, policy: GpuPolicy = DEFAULT_GPU_POLICY,
                    errors: list[str] | None = None) -> PodClaims:
    """DRA demand of a pod template's ``spec.resourceClaims`` (requested by spec)."""
    errors = [] if errors is None else errors
    out = PodClaims()
    for ref in _l(_m(spec).get("resourceClaims")):
        ref = _m(ref)
        if ref.get("resourceClaimTemplateName"):
            out.own.add(sources.template_demand(namespace, str(ref["resourceClaimTemplateName"]), policy, errors))
        elif ref.get("resourceClaimName"):
            key = (namespace, str(ref["resourceClaimName"]))
            claim = sources.claims.get(key)
            demand = spec_demand(claim.get("spec"), policy, f"ResourceClaim {key[1]}: spec", errors) if claim else Demand()
            out.shared[key] = (demand, None)
    return out


def pod_claims(pod: Mapping[str, Any], sources: ClaimSources, policy: GpuPolicy = DEFAULT_GPU_POLICY,
               errors: list[str] | None = None) -> PodClaims:
    """DRA figures of a live pod: its generated claims (status.resourceClaimStatuses) and shared ones."""
    errors = [] if errors is None else errors
    namespace = str(_m(pod.get("metadata")).get("namespace") or "")
    generated = {str(_m(s).get("name")): _m(s).get("resourceClaimName")
                 for s in _l(_m(pod.get("status")).get("resourceClaimStatuses"))}
    out = PodClaims()
    for ref in _l(_m(pod.get("spec")).get("resourceClaims")):
        ref = _m(ref)
        if ref.get("resourceClaimTemplateName"):
            claim = sources.claims.get((namespace, str(generated.get(str(ref.get("name"))) or "")))
            if claim is None:  # not generated yet: the template's demand, nothing allocated
                out.own.add(sources.template_demand(namespace, str(ref["resourceClaimTemplateName"]), policy, errors))
                continue
            out.own.add(claim_demand(claim, policy, errors))
            add_into(out.own_allocated, allocated_devices(claim, policy) or {})
        elif ref.get("resourceClaimName"):
            key = (namespace, str(ref["resourceClaimName"]))
            claim = sources.claims.get(key)
            if claim is None:
                errors.append(f"ResourceClaim {key[0]}/{key[1]} not found")
                continue
            out.shared[key] = (claim_demand(claim, policy, errors), allocated_devices(claim, policy))
    return out


def claim_inputs(reader: Any, namespace: str | None) -> dict[str, list[Mapping[str, Any]]]:
    """The ``claims=`` / ``claim_templates=`` keyword inputs of ``resolve()`` for a workload.

    Args:
        reader: a ``workload_map.kube.reader.Reader`` (``list(gvk, namespace)``).
        namespace: the workload's namespace (pods name claims of their own namespace only).

    Returns:
        ``{"claims": [...], "claim_templates": [...]}``; empty lists for a cluster-scoped
        workload or when the reader holds none.
    """
    if not namespace:
        return {"claims": [], "claim_templates": []}
    return {"claims": list(reader.list(RESOURCE_CLAIM, namespace)),
            "claim_templates": list(reader.list(RESOURCE_CLAIM_TEMPLATE, namespace))}
