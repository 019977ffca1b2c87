"""Nested workloads: a child object of a type with its own definition, folded into the parent.

Opt-in through the ``workload-map.run.ai/nested`` extension (``workload_map.definitions.extensions``;
docs/definition-format.md, "Extensions"). Rules:

1. The nested children of a workload are its descendants (controller chain reaches the
   root) of a listed (group, kind) whose definition is given in ``nested``; only the
   outermost ones (a RayCluster under a nested RayJob is the RayJob's business).
2. While at least one nested child exists the outer ``nested-standin`` components are left
   out of the outer resolution (their pods and demand become the inner definition's).
3. The other outer components claim pods first. An inner instance whose pods an outer
   component claims, or, without pods, whose would-be pod an outer component claims, is
   overridden: it is left out of the inner view with its demand. The would-be pod is the
   instance's pod template metadata plus the labels the inner component's own type selector
   requires (``spark-role: driver``), which the operator sets on every such pod.
4. Each child is resolved through its own definition (recursively) on the pods the outer
   components left; its components join the outer view (``definition`` on each says
   whose they are), its desired pods and spec-side figures are added to the outer
   totals. The pods are the outer workload's already: requested-by-pods and allocated are
   not added again, so every pod and every demand is counted once.
5. Gang groups are the outer definition's; while stand-ins are left out they are the nested
   children's instead (the outer gang named the stand-ins).
"""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping, Sequence
from typing import Any

import msgspec.structs

from workload_map.definitions.extensions import extensions_of
from workload_map.definitions.model import Component, Definition
from workload_map.errors import JqError
from workload_map.gvk import GVK
from workload_map.jq import Document, compile_program
from workload_map.owners import owner_chain, uid_of
from workload_map.resolution import extract
from workload_map.resolution.figures import SPEC
from workload_map.resolution.pods import Attributor, pod_view, reaches_root, workload_pods
from workload_map.resolution.resources import add_into
from workload_map.resolution.view import ComponentView, ResolutionError, WorkloadView

_TEMPLATES_FIELD = 'metadata.annotations["workload-map.run.ai/nested-templates"]'

#: Nested definitions keyed by the child object's GVK.
Nested = Mapping[GVK, Definition]
Skip = frozenset[tuple[str, str]]


def _gvk(obj: Mapping[str, Any]) -> GVK | None:
    try:
        return GVK.of(obj)
    except ValueError:
        return None


def nested_definitions(definition: Definition, objects: Sequence[Mapping[str, Any]],
                       lookup: Callable[[Mapping[str, Any]], Definition | None]) -> dict[GVK, Definition]:
    """The definitions ``resolve(nested=...)`` needs for ``definition``'s workload.

    Args:
        definition: the outer definition.
        objects: the workload's descendants.
        lookup: the definition in force for an object, or None.

    Returns:
        GVK of each nested child present (also of nested children of nested children) ->
        its definition; empty when the outer definition does not use the extension. With
        ``nested-templates`` and no child present: every nested kind's definition in force
        (``lookup`` falls back across versions of a group/kind), for the would-be children.
    """
    wanted = set(extensions_of(definition).nested)
    out: dict[GVK, Definition] = {}
    while wanted:
        found: set[tuple[str, str]] = set()
        for obj in objects:
            gvk = _gvk(obj)
            if gvk is None or gvk in out or gvk.group_kind not in wanted:
                continue
            inner = lookup(obj)
            if inner is not None and inner.gvk.group_kind == gvk.group_kind:
                out[gvk] = inner
                found |= set(extensions_of(inner).nested)
        wanted = found - {g.group_kind for g in out}
    if not out and extensions_of(definition).templates:  # would-be children: every nested kind, any version
        for group, kind in extensions_of(definition).nested:
            inner = lookup({"apiVersion": f"{group}/v1" if group else "v1", "kind": kind})
            if inner is not None and inner.gvk.group_kind == (group, kind):
                out[inner.gvk] = inner
    return out


def nested_children(definition: Definition, root: Mapping[str, Any], objects: Sequence[Mapping[str, Any]],
                    nested: Nested) -> list[Mapping[str, Any]]:
    """The outermost nested children of ``root`` (rule 1), sorted by kind and name."""
    if not nested:
        return []
    kinds = set(extensions_of(definition).nested)
    root_uid = uid_of(root)
    if not kinds or not root_uid:
        return []
    by_uid = {uid_of(o): o for o in objects}
    by_uid[root_uid] = root
    found = [o for o in objects if (g := _gvk(o)) is not None and g in nested and g.group_kind in kinds
             and reaches_root(o, root_uid, by_uid)]
    uids = {uid_of(o) for o in found}
    outermost = [o for o in found if not uids & set(owner_chain(o, by_uid.get).uids())]
    return sorted(outermost, key=lambda o: (str(o.get("kind")), str(o.get("metadata", {}).get("name"))))


def template_children(definition: Definition, root: Mapping[str, Any], nested: Nested,
                      errors: list[ResolutionError]) -> list[dict[str, Any]]:
    """Would-be children from ``workload-map.run.ai/nested-templates`` (used while none exists).

    Each object the expression gives whose group/kind is nested and has a definition in
    ``nested`` becomes a child named as its template says (else ``<root>-<index>``), in the
    root's namespace, controller-owned by the root, with a uid derived from the root's. A
    failing expression is reported in ``errors`` and gives none.
    """
    expression = extensions_of(definition).templates
    root_uid = uid_of(root)
    if not expression or not root_uid or not nested:
        return []
    try:
        outs = compile_program(expression).all(Document(root))
    except JqError as exc:
        errors.append(ResolutionError(f"nested-templates: {exc}", field=_TEMPLATES_FIELD))
        return []
    kinds = set(extensions_of(definition).nested)
    meta = root.get("metadata") or {}
    owner = {"apiVersion": root.get("apiVersion"), "kind": root.get("kind"), "name": meta.get("name"),
             "uid": root_uid, "controller": True}
    children = []
    for index, template in enumerate(outs):
        gvk = _gvk(template) if isinstance(template, Mapping) else None
        if gvk is None or gvk.group_kind not in kinds or lookup_nested(nested, gvk) is None:
            continue
        tmeta = template.get("metadata") if isinstance(template.get("metadata"), Mapping) else {}
        name = str(tmeta.get("name") or f"{meta.get('name')}-{index}")
        children.append({**template, "metadata": {**tmeta, "name": name, "namespace": meta.get("namespace"),
                                                   "uid": f"{root_uid}-template-{index}", "ownerReferences": [owner]}})
    return children


def lookup_nested(nested: Nested, gvk: GVK) -> Definition | None:
    """The nested definition for ``gvk``: its own, else one of the same group/kind."""
    found = nested.get(gvk)
    if found is not None:
        return found
    return next((d for g, d in nested.items() if g.group_kind == gvk.group_kind), None)


def without(definition: Definition, names: set[str]) -> Definition:
    """``definition`` without the child components ``names`` that own no other component."""
    drop = {n for n in names if not definition.children_of(n)}
    if not drop:
        return definition
    return msgspec.structs.replace(definition, children=tuple(c for c in definition.children if c.name not in drop))


def outer_definition(definition: Definition, children: Sequence[Mapping[str, Any]]) -> Definition:
    """The outer definition in use: stand-ins left out while a nested child exists (rule 2)."""
    standin = set(extensions_of(definition).standin)
    return without(definition, standin) if children and standin else definition


def _instance_ids(definition: Definition, doc: Document) -> dict[str, list[str]]:
    ids: dict[str, list[str]] = {}
    for component in definition.components:
        try:
            ids[component.name] = extract.instance_ids(component, doc)
        except (extract.ExtractionError, JqError):
            ids[component.name] = [""]
    return ids


_LABEL_PATH = re.compile(r'^\.metadata\.labels(?:\["([^"]+)"\]|\.([A-Za-z_][A-Za-z0-9_]*))$')


def _implied_labels(component: Component) -> dict[str, str]:
    """Labels every pod of ``component`` carries by its own type selector.

    Those are its ``matchLabels`` and a ``.metadata.labels["k"]`` keyPath with a value.
    """
    selector = component.pod_selector.type_selector if component.pod_selector else None
    if selector is None:
        return {}
    labels = dict(selector.match_labels or ())
    match = _LABEL_PATH.match(selector.key_path or "")
    if match and selector.value is not None:
        labels[match.group(1) or match.group(2)] = selector.value
    return labels


def _metadata(component: Component, ids: list[str], doc: Document) -> list[dict[str, Any]]:
    """The pod template ``metadata`` of each instance ({} where none can be read)."""
    spec = component.spec
    path = (spec.pod_template_spec_path or spec.metadata_path) if spec is not None else None
    try:
        outs = compile_program(path).all(doc) if path else []
    except JqError:
        outs = []
    if spec is not None and spec.pod_template_spec_path:
        outs = [o.get("metadata") if isinstance(o, dict) else None for o in outs]
    return [o if isinstance(o, dict) else {} for o in outs] if len(outs) == len(ids) else [{} for _ in ids]


def _pseudo_pods(component: Component, ids: list[str], doc: Document) -> list[dict[str, Any]]:
    """A pod-like ``{metadata}`` per instance: its template's metadata plus the implied labels."""
    implied = _implied_labels(component)
    out = []
    for meta in _metadata(component, ids, doc):
        found = meta.get("labels")
        labels: dict[str, Any] = found if isinstance(found, dict) else {}
        out.append({"metadata": {**meta, "labels": {**labels, **implied}}})
    return out


def overridden(outer: Definition, inner: Definition, child: Mapping[str, Any],
               child_pods: Sequence[Mapping[str, Any]], claimed: set[str]) -> Skip:
    """(component, instance) of ``inner`` that outer components override (rule 3)."""
    doc = Document(child)
    ids = _instance_ids(inner, doc)
    inner_claims = Attributor(inner, ids, [])
    outer_claims = Attributor(outer, {}, [])
    out: set[tuple[str, str]] = set()
    with_pods: set[tuple[str, str]] = set()
    for raw in child_pods:
        row = pod_view(raw, [])
        inner_claims.attribute(row, Document(raw))
        if row.component is not None:
            key = (row.component, row.instance or "")
            with_pods.add(key)
            if row.uid in claimed:
                out.add(key)
    for component in inner_claims.leaves:
        for instance, pseudo in zip(ids[component.name], _pseudo_pods(component, ids[component.name], doc)):
            key = (component.name, instance)
            if key not in with_pods and outer_claims.claimant(Document(pseudo)) is not None:
                out.add(key)
    return frozenset(out)


def inner_definition(inner: Definition, skip: Skip, child: Mapping[str, Any]) -> tuple[Definition, Skip]:
    """``inner`` without the components all of whose instances are overridden, and the rest of ``skip``."""
    ids = _instance_ids(inner, Document(child))
    whole = {name for name, instances in ids.items() if all((name, i) in skip for i in instances)}
    used = without(inner, whole)
    dropped = {c.name for c in inner.children} - {c.name for c in used.children}
    return used, frozenset(k for k in skip if k[0] not in dropped)


def _mark(components: Sequence[ComponentView], name: str) -> None:
    for component in components:
        component.definition = component.definition or name
        _mark(component.children, name)


def _emptied(component: ComponentView) -> bool:
    """A pod-bearing component all of whose instances were overridden (rule 3)."""
    return component.has_pod_definition and not component.instances and not component.children


def insertion_index(definition: Definition, used: Definition, view: WorkloadView) -> int:
    """Where nested roles go among ``view.components``: in place of the stand-ins, else last."""
    order = [c.name for c in definition.components]
    gone = [n for n in order if n not in {c.name for c in used.components}]
    if not gone:
        return len(view.components)
    first = order.index(gone[0])
    return sum(1 for c in view.components if c.name in order and order.index(c.name) < first)


def fold(view: WorkloadView, inner: WorkloadView, at: int, *, gangs: bool) -> int:
    """Fold the inner view of a nested child into ``view`` at component index ``at`` (rule 4).

    ``gangs``: take the child's gang groups (the stand-ins the outer gang named are left out,
    so the child's pod group is the one its pods are scheduled in).

    Returns:
        The index after the folded components (where the next nested child goes).
    """
    kept = [c for c in inner.components if not _emptied(c)]
    _mark(kept, inner.definition)
    view.components[at:at] = kept
    attributed = {p.uid or p.name for c in inner.all_components() for p in c.pods}
    view.unattributed = [p for p in view.unattributed if (p.uid or p.name) not in attributed]
    view.replicas = msgspec.structs.replace(view.replicas, desired=view.replicas.desired + inner.replicas.desired)
    add_into(view.requests, inner.requests)
    add_into(view.gpu.spec, inner.gpu.spec)
    view.gpu.unknown.setdefault(SPEC, set()).update(inner.gpu.unknown.get(SPEC, set()))
    view.gangs.extend(inner.gangs if gangs else ())
    label = f"{inner.kind}/{inner.name}"
    view.errors.extend(ResolutionError(f"{label}: {e.message}", e.component, e.field, e.expression)
                       for e in inner.errors)
    return at + len(kept)


def child_pods(child: Mapping[str, Any], objects: Sequence[Mapping[str, Any]],
               pods: Sequence[Mapping[str, Any]]) -> list[Mapping[str, Any]]:
    """Pods among ``pods`` whose controller chain reaches ``child``."""
    return workload_pods(child, objects, pods)


__all__ = ["Nested", "Skip", "child_pods", "fold", "inner_definition", "insertion_index", "nested_children", "nested_definitions",
           "outer_definition", "overridden", "without"]
