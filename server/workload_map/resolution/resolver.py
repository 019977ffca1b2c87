"""Resolve one live workload through its definition into a :class:`WorkloadView`.

``resolve(definition, root, objects=..., pods=...)`` is pure: no I/O, no logging. One bad
path or malformed object yields an error entry on the component or workload and the rest
of the view is still produced.

Counting rules (documented in docs/api.md, "JSON view reference"):

* desired pods of an instance: ``replicas``, else ``minReplicas``, else 1, unless live children
  scaled on their own say otherwise (``workload_map.resolution.livescale``); of a component:
  the sum over its instances; of the workload: the sum over pod-bearing components
  (child replicas paths give totals; children are not multiplied by parent instances);
* current / ready: attributed pods that are neither terminated (phase Succeeded or Failed)
  nor terminating (``deletionTimestamp`` set) / of those, the ones with ``Ready=True``;
  terminated and terminating pods are still listed;
* spec requests: effective pod request of each instance's pod spec (plus the shared-GPU
  annotations of its template, ``workload_map.resolution.sharing``) x its desired pods;
* GPU figures: requested by spec (above), requested by existing non-terminated pods
  (terminating ones included: their devices are not free yet), and allocated
  (non-terminated pods bound to a node); workload pod figures include
  unattributed pods, which still belong to the workload;
* components without pods, children, replicas or resources are dropped (a Deployment's
  ReplicaSet component); pod-bearing components stay even at zero.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import msgspec.structs

from workload_map.definitions.model import Component, Definition
from workload_map.definitions.phases import Phase, primary_phase
from workload_map.errors import JqError
from workload_map.jq import Document
from workload_map.gvk import GVK
from workload_map.owners import controller_uid, cycle_message, owner_chain, uid_of
from workload_map.resolution import extract, freshness, nesting
from workload_map.resolution.counts import check_counts, check_total
from workload_map.resolution.degraded import apply_degraded, degraded_messages, unknown_messages
from workload_map.resolution.dra import ClaimSources
from workload_map.resolution.figures import PODS, SPEC, DraContext, pod_figures, shared_spec
from workload_map.resolution.gangs import SubtreeScale, gang_groups
from workload_map.resolution.livescale import live_desired
from workload_map.resolution.pods import Attributor, pod_template_requests, pod_view, workload_pods
from workload_map.resolution.resources import (
    DEFAULT_GPU_POLICY,
    GpuPolicy,
    Requests,
    add_into,
    scale,
)
from workload_map.resolution.status import StatusResult, StatusShapeError, evaluate_status, status_expressions
from workload_map.resolution.view import (
    ComponentView,
    GpuFigures,
    InstanceView,
    PodView,
    Replicas,
    ResolutionError,
    WorkloadView,
)


class _Extracted:
    """What the workload object says about one component."""

    __slots__ = ("annotations", "ids", "scales", "specs")

    def __init__(self, ids: list[str], scales: list[extract.Scale],
                 templates: list[tuple[dict[str, Any] | None, dict[str, Any]]]) -> None:
        self.ids, self.scales = ids, scales
        self.specs = [spec for spec, _ in templates]
        self.annotations = [annotations for _, annotations in templates]


def _extract(component: Component, doc: Document, errors: list[ResolutionError],
             bad_counts: list[ResolutionError]) -> _Extracted:
    try:
        ids = extract.instance_ids(component, doc)
        return _Extracted(ids, extract.scales(component, ids, doc), extract.pod_templates(component, ids, doc))
    except extract.ExtractionError as exc:
        errors.append(ResolutionError(str(exc), component.name, exc.field, exc.expression))
        if isinstance(exc, extract.CountError):
            bad_counts.append(errors[-1])
    except JqError as exc:
        errors.append(ResolutionError(exc.reason, component.name, exc.field, exc.expression))
    return _Extracted([""], [extract.Scale(replicas=0)], [(None, {})])


def _status(definition: Definition, root: Mapping[str, Any], doc: Document,
            errors: list[ResolutionError]) -> StatusResult:
    """Status of ``root`` (``freshness`` rules: shape first, then fresh conditions in order)."""
    status = definition.root.status
    if status is None:
        return StatusResult([Phase.UNDEFINED])
    shape = freshness.shape_errors(root, status.conditions.type_field if status.conditions else "type")
    if shape:
        errors.extend(shape)
        return StatusResult([Phase.UNDEFINED])
    seen, stale = freshness.fresh_view(root)
    try:
        result = evaluate_status(status, doc if seen is root else Document(seen))
    except StatusShapeError as exc:
        errors.append(ResolutionError(f"status cannot be interpreted: {exc}", definition.root.name,
                                      f"{definition.root.path}.statusDefinition.{exc.field}", status.phase_path or ""))
        return StatusResult([Phase.UNDEFINED])
    except JqError as exc:
        errors.append(ResolutionError(f"status evaluation failed: {exc.reason}", definition.root.name,
                                      f"{definition.root.path}.statusDefinition", exc.expression))
        return StatusResult([Phase.UNDEFINED])
    result.stale = freshness.listed_stale(stale)
    return result


def _live(pods: Sequence[PodView]) -> list[PodView]:
    """Current replicas: neither terminated nor terminating."""
    return [p for p in pods if not p.terminated and not p.terminating]


def _component_view(component: Component, ex: _Extracted, pods: list[PodView], errors: list[ResolutionError],
                    quantity_errors: list[ResolutionError], dra: DraContext,
                    scaled: Mapping[str, int] | None = None) -> ComponentView:
    instances: list[InstanceView] = []
    spec_total: Requests = {}
    spec_unknown: set[str] = set()
    shared: dict[tuple[str, str], Any] = {}
    for instance_id, sc, spec, template_annotations in zip(ex.ids, ex.scales, ex.specs, ex.annotations):
        result = pod_template_requests(spec, template_annotations) if spec is not None else None
        if result is not None:
            quantity_errors.extend(ResolutionError(f"instance {instance_id or '-'}: {e}", component.name,
                                                   f"{component.path}.specDefinition") for e in result.errors)
        per_pod = result.requests if result is not None else {}
        desired = sc.desired if component.has_pod_definition else (sc.replicas or 0)
        desired = scaled[instance_id] if scaled and component.has_pod_definition and instance_id in scaled else desired
        claims = dra.template(spec)
        add_into(per_pod, claims.own.devices)  # one claim per pod from a template
        spec_unknown |= claims.own.unknown if desired else set()
        shared.update(claims.shared if desired else {})
        mine = [p for p in pods if p.instance == instance_id]
        live = _live(mine)
        instances.append(InstanceView(instance_id, Replicas(desired, len(live), sum(p.ready for p in live), sc.min,
                                                            sc.max), per_pod, mine, spec is not None))
        add_into(spec_total, scale(per_pod, desired))
    shared_spec(shared, spec_total, spec_unknown)  # a shared claim once, not per pod
    requested, allocated, unknown = pod_figures(pods)
    live = _live(pods)
    mins = [i.replicas.min for i in instances if i.replicas.min is not None]
    maxs = [i.replicas.max for i in instances if i.replicas.max is not None]
    replicas = Replicas(sum(i.replicas.desired for i in instances), len(live), sum(p.ready for p in live),
                        sum(mins) if mins else None, sum(maxs) if maxs else None)
    kind = component.kind
    return ComponentView(
        name=component.name, kind=kind.kind if kind else "", api_version=kind.api_version if kind else "",
        parent=component.owner_ref, logical=kind is None, has_pod_definition=component.has_pod_definition,
        replicas=replicas, instances=instances, requests=spec_total,
        gpu=GpuFigures(dict(spec_total), requested, allocated, {SPEC: spec_unknown, PODS: unknown}), pods=pods,
        errors=errors, shared_claims=shared)


def _aggregate(view: ComponentView) -> None:
    """Fold children into a non-pod component (logical groups, owner-only kinds)."""
    if view.has_pod_definition or not view.children:
        return
    for child in view.children:
        view.gpu.merge(child.gpu)
    kids = [c.replicas for c in view.children]
    view.replicas = Replicas(sum(r.desired for r in kids), sum(r.current for r in kids), sum(r.ready for r in kids),
                             view.replicas.min, view.replicas.max)


def _is_empty(view: ComponentView) -> bool:
    return (not view.has_pod_definition and not view.children and not view.pods and view.replicas.desired == 0
            and not view.requests and not view.errors)


def resolve(definition: Definition, root: Mapping[str, Any], *, objects: Sequence[Mapping[str, Any]] = (),
            pods: Sequence[Mapping[str, Any]] = (), origin: str = "catalog",
            policy: GpuPolicy = DEFAULT_GPU_POLICY, claims: Sequence[Mapping[str, Any]] = (),
            claim_templates: Sequence[Mapping[str, Any]] = (), nested: nesting.Nested | None = None,
            skip: nesting.Skip = frozenset(), uid_conflicts: Sequence[str] = (),
            dependent_conflicts: Sequence[tuple[str, Sequence[str]]] = ()) -> WorkloadView:
    """Resolve ``root`` into its view.

    Args:
        definition: the definition registered for the root's GVK.
        root: the workload object (dict as the API server returns it).
        objects: descendants that may sit in pods' owner chains (Jobs of a JobSet, ...).
        pods: candidate pods (e.g. all pods of the namespace); only those whose controller
            chain reaches ``root`` are used.
        origin: where the definition came from (``catalog``, ``cluster``, ``file``, ...).
        policy: which resource names are GPUs.
        claims: ResourceClaims (``resource.k8s.io/v1``) of the workload's namespace that
            its pods may name (``workload_map.resolution.dra.claim_inputs`` gathers them).
        claim_templates: ResourceClaimTemplates of that namespace.
        nested: definitions of the nested children's GVKs (``nesting.nested_definitions``);
            used only when ``definition`` opts in (``workload-map.run.ai/nested``).
        skip: (component, instance) left out (instances an outer workload overrides).
        uid_conflicts: the objects (``group/Kind ns/name``) that hold the root's uid when two
            or more distinct ones do (``ObjectGraph.uid_conflicts``): the view then carries
            the conflict as an error and phase Undefined (its pods cannot be told apart).
        dependent_conflicts: ``(uid, holders)`` for each uid of a descendant that two or more
            distinct objects hold (two pods, a pod and its Job, a pod of another workload): one
            error each (field ``dependents``) naming every holder; the phase is the workload's.

    Returns:
        The :class:`WorkloadView`; problems are in ``errors`` of the view or a component.
    """
    inputs: dict[str, Any] = {"objects": objects, "origin": origin, "policy": policy, "claims": claims,
                              "claim_templates": claim_templates}
    children: list[Mapping[str, Any]] = list(nesting.nested_children(definition, root, objects, nested or {}))
    template_errors: list[ResolutionError] = []
    if not children:  # nothing created yet: what the root's templates will create (nested-templates)
        children = list(nesting.template_children(definition, root, nested or {}, template_errors))
    used = nesting.outer_definition(definition, children)
    view = _resolve_one(used, root, pods=pods, skip=skip, **inputs)
    view.errors.extend(template_errors)
    claimed = {p.uid for c in view.all_components() for p in c.pods}
    at = nesting.insertion_index(definition, used, view)
    if used is not definition:
        view.gangs = []
    if children:  # the root is no descendant of its children (bounds nesting through an ownerReference cycle)
        root_uid = uid_of(root)
        inputs["objects"] = [o for o in objects if uid_of(o) != root_uid]
    for child in children:
        inner = nesting.lookup_nested(nested or {}, GVK.of(child))
        if inner is None:
            continue
        mine = nesting.child_pods(child, objects, pods)
        try:
            inner_used, inner_skip = nesting.inner_definition(
                inner, nesting.overridden(used, inner, child, mine, claimed), child)
            inner_view = resolve(inner_used, child, pods=[p for p in mine if uid_of(p) not in claimed],
                                 nested=nested, skip=inner_skip, **inputs)
        except Exception as exc:  # noqa: BLE001 - a broken nested child must not lose the outer view
            view.errors.append(ResolutionError(f"{child.get('kind')}/{child.get('metadata', {}).get('name')}: "
                                               f"nested resolution failed: {type(exc).__name__}: {exc}"))
            continue
        at = nesting.fold(view, inner_view, at, gangs=used is not definition)
    if uid_conflicts:
        view.errors.append(ResolutionError(
            f"identity conflict: uid {view.uid} is held by {len(uid_conflicts)} distinct objects "
            f"({', '.join(uid_conflicts)}); the objects that name it as their owner are attached to none",
            field="metadata.uid"))
        view.phase, view.phases = Phase.UNDEFINED, [Phase.UNDEFINED]
    for uid, holders in dependent_conflicts:
        view.errors.append(ResolutionError(
            f"identity conflict: uid {uid} is held by {len(holders)} distinct objects ({', '.join(holders)}); "
            "each holder found below the workload is counted, but what they own cannot be told apart by uid "
            "(it may be missing here) and a lookup by uid finds one of them", field="dependents"))
    return view


def _resolve_one(definition: Definition, root: Mapping[str, Any], *, objects: Sequence[Mapping[str, Any]],
                 pods: Sequence[Mapping[str, Any]], origin: str, policy: GpuPolicy,
                 claims: Sequence[Mapping[str, Any]], claim_templates: Sequence[Mapping[str, Any]],
                 skip: nesting.Skip) -> WorkloadView:
    """One workload through one definition (no nesting); arguments as :func:`resolve`."""
    errors: list[ResolutionError] = []
    _owner_cycle(root, objects, pods, errors)
    doc = Document(root)
    bad_counts = check_counts(root)
    errors.extend(bad_counts)
    # one jq pass over the root for every C-jq expression read from it (issue 23 item 2)
    doc.prefetch([*status_expressions(definition.root.status),
                  *(e for c in definition.components for e in extract.component_expressions(c))])
    status = _status(definition, root, doc, errors)
    component_errors: dict[str, list[ResolutionError]] = {c.name: [] for c in definition.components}
    extracted = {c.name: _extract(c, doc, component_errors[c.name], bad_counts) for c in definition.components}
    if skip:
        extracted = {n: _without_instances(n, e, skip) for n, e in extracted.items()}
    pod_docs: dict[tuple[str, str], Document] = {}  # by (namespace, name): two pods may share a uid
    attributor = Attributor(definition, {n: e.ids for n, e in extracted.items()}, errors)
    rows: list[PodView] = []
    meta = root.get("metadata", {})
    dra = DraContext(ClaimSources.of(claims, claim_templates), str(meta.get("namespace") or ""), policy)
    for raw in workload_pods(root, objects, pods):
        row = pod_view(raw, errors)
        dra.fill(row, raw)
        pod_doc = pod_docs[row.namespace, row.name] = pod_docs.get((row.namespace, row.name)) or Document(raw)
        attributor.attribute(row, pod_doc)
        row.component = row.component if row.unattributed_reason is None else None
        rows.append(row)
    rows.sort(key=lambda p: p.name)  # the same order whatever order the cache or file gave
    scaled = live_desired(definition, objects, attributor, errors)  # HPA-scaled children win over templates
    views: dict[str, ComponentView] = {}
    for component in definition.components:
        mine = [p for p in rows if p.component == component.name]
        views[component.name] = _component_view(component, extracted[component.name], mine,
                                                component_errors[component.name], errors, dra,
                                                scaled.get(component.name))
        views[component.name].definition = definition.name
    dra.report(errors)
    for component in reversed(definition.children):
        view = views[component.name]
        _aggregate(view)
        parent = views.get(component.owner_ref or "")
        if parent is not None and not _is_empty(view):
            parent.children.insert(0, view)
    root_view = views[definition.root.name]
    top = ([msgspec.structs.replace(root_view, children=[])] if definition.root.has_pod_definition else [])
    top += root_view.children
    pod_bearing = [v for v in views.values() if v.has_pod_definition]
    spec_total: Requests = {}
    spec_unknown: set[str] = set()
    shared: dict[tuple[str, str], Any] = {}
    for v in pod_bearing:
        own = {k: q for k, q in v.requests.items()}
        for demand, _ in v.shared_claims.values():  # taken out, added once per workload below
            add_into(own, {k: -q for k, q in demand.devices.items()})
        add_into(spec_total, own)
        spec_unknown |= v.gpu.unknown.get(SPEC, set())
        shared.update(v.shared_claims)
    shared_spec(shared, spec_total, spec_unknown)
    requested, allocated, unknown = pod_figures(rows)
    live = _live(rows)
    replicas = Replicas(sum(v.replicas.desired for v in pod_bearing), len(live), sum(p.ready for p in live))
    total_error = check_total(replicas.desired, "replicas.desired")
    bad_counts += [total_error] if total_error else []
    errors.extend([total_error] if total_error else [])
    status.phases = apply_degraded(status.phases, degraded_messages(definition, root, doc, objects, errors), errors)
    unreadable = unknown_messages(definition, doc, errors)
    errors.extend(ResolutionError(m, field="status") for m in unreadable)
    if bad_counts or unreadable:  # figures from a number that is not a count, structure unreadable: never Running
        status.phases = [Phase.UNDEFINED]
    subtree = SubtreeScale(definition, {n: dict(zip(e.ids, e.scales)) for n, e in extracted.items()})
    return WorkloadView(
        name=str(meta.get("name", "")), namespace=meta.get("namespace"), kind=str(root.get("kind", "")),
        api_version=str(root.get("apiVersion", "")), uid=str(meta.get("uid", "")),
        resource_version=str(meta.get("resourceVersion", "")), created_at=meta.get("creationTimestamp"),
        definition=definition.name, origin=origin, phase=primary_phase(status.phases), phases=status.phases,
        raw_phase=status.raw_phase, conditions=status.listed(), components=top,
        unattributed=[p for p in rows if p.component is None], replicas=replicas, requests=spec_total,
        gpu=GpuFigures(dict(spec_total), requested, allocated, {SPEC: spec_unknown, PODS: unknown}),
        gangs=gang_groups(definition, subtree, rows, pod_docs), errors=errors, policy=policy)


def _without_instances(name: str, ex: _Extracted, skip: nesting.Skip) -> _Extracted:
    """``ex`` without the instances of component ``name`` listed in ``skip``."""
    keep = [i for i, instance_id in enumerate(ex.ids) if (name, instance_id) not in skip]
    if len(keep) == len(ex.ids):
        return ex
    out = _Extracted([ex.ids[i] for i in keep], [ex.scales[i] for i in keep], [])
    out.specs, out.annotations = [ex.specs[i] for i in keep], [ex.annotations[i] for i in keep]
    return out


def _owner_cycle(root: Mapping[str, Any], objects: Sequence[Mapping[str, Any]], pods: Sequence[Mapping[str, Any]],
                 errors: list[ResolutionError]) -> None:
    """Report an ownerReference cycle through ``root`` (its owners are among its descendants, pods too)."""
    if controller_uid(root) is None:
        return
    by_uid = {uid_of(o): o for o in (*objects, *pods)}
    chain = owner_chain(root, by_uid.get)
    if chain.cycle:
        errors.append(ResolutionError(cycle_message(chain.cycle), field="metadata.ownerReferences"))


def failed_view(definition: Definition, root: Mapping[str, Any], message: str, *, origin: str = "catalog",
                policy: GpuPolicy = DEFAULT_GPU_POLICY) -> WorkloadView:
    """A view that carries only identity and one error.

    Used when resolution itself failed unexpectedly, so one malformed object never fails a
    whole list.
    """
    raw_meta = root.get("metadata")
    meta: Mapping[str, Any] = raw_meta if isinstance(raw_meta, Mapping) else {}
    return WorkloadView(
        name=str(meta.get("name", "")), namespace=meta.get("namespace"), kind=str(root.get("kind", "")),
        api_version=str(root.get("apiVersion", "")), uid=str(meta.get("uid", "")),
        resource_version=str(meta.get("resourceVersion", "")), created_at=meta.get("creationTimestamp"),
        definition=definition.name, origin=origin, phase=Phase.UNDEFINED, phases=[Phase.UNDEFINED], raw_phase=None,
        conditions=[], components=[], unattributed=[], replicas=Replicas(), requests={}, gpu=GpuFigures(),
        gangs=[], errors=[ResolutionError(message)], policy=policy)
