"""Plan a write through a definition (pure, no I/O): changed object + RFC 6902 JSON Patch.

Where a component's pods are written (docs/definition-format.md section 3.4):

* ``podTemplateSpecPath`` T: labels/annotations at ``T.metadata``, pod fields at ``T.spec``;
* ``podSpecPath`` P (+ ``metadataPath`` M): pod fields at P, labels/annotations at M (refused
  without M);
* ``fragmentedPodSpecDefinition``: each field at its own path (``labelsPath``,
  ``annotationsPath``, ``schedulerNamePath``, ``priorityClassNamePath``, ``containersPath``,
  ``containerPath``, ``resourcesPath``); a field the fragments do not place (nodeSelector,
  tolerations) is refused naming the definition field.

Paths zip with the component's instance ids by position, as resolution does. A location
whose pod template is null (the instance has none) is skipped. The patch starts with
``replace /metadata/resourceVersion``: the API server then treats the patch as an update
at that version and answers 409 when the object moved on, so a stale write changes
nothing (a failed JSON Patch ``test`` op is only a generic 422 there).
"""

from __future__ import annotations

import json
from typing import Any

from msgspec import Struct, field

from workload_map.definitions.model import Component, Definition, SuspendAction
from workload_map.definitions.names import annotations_size_problem
from workload_map.errors import DefinitionError, InvalidRequest
from workload_map.jq import Document
from workload_map.resolution.changes import ContainerChange, PodChange
from workload_map.resolution.extract import instance_ids
from workload_map.resolution.jsonpatch import diff, set_at, with_precondition
from workload_map.resolution.paths import Location, NotWritable, parse_write_path, pointer, thawed, value_at

FRAGMENT_OF = {"labels": "labelsPath", "annotations": "annotationsPath", "schedulerName": "schedulerNamePath",
               "priorityClassName": "priorityClassNamePath"}


class MissingDefinitionField(DefinitionError):
    """The definition lacks the field an action needs (422), e.g. ``suspendDefinition``."""

    code = "missing_definition_field"


class Target(Struct):
    """Where one instance of one component keeps its pod (locations in the object)."""

    component: Component
    instance: str
    spec: Location | None = None
    metadata: Location | None = None
    fragments: dict[str, Location] = field(default_factory=dict)

    def describe(self) -> dict[str, Any]:
        """JSON shape: component, instance and the JSON Pointers written."""
        where = {"spec": self.spec, "metadata": self.metadata, **self.fragments}
        return {"component": self.component.name, "instance": self.instance,
                "paths": {k: pointer(v) for k, v in where.items() if isinstance(v, tuple)}}


class Plan(Struct):
    """The outcome: ``updated`` object, ``patch`` ops (precondition first) and ``targets``."""

    updated: dict[str, Any]
    patch: list[dict[str, Any]]
    targets: list[Target]


def targets(definition: Definition, obj: dict[str, Any], change: PodChange) -> list[Target]:
    """The pod locations of the selected components and instances.

    Raises:
        InvalidRequest: an unknown component or instance, or nothing selected.
        NotWritable: a path that is not a plain path.
    """
    names = {c.name for c in definition.components}
    for name in change.components:
        if name not in names:
            raise InvalidRequest(f"components: no component {name!r} in definition {definition.name} "
                                 f"(components: {', '.join(sorted(names))})")
    doc = Document(obj)
    found: list[Target] = []
    seen_ids: set[str] = set()
    for component in definition.components:
        if not component.has_pod_definition or (change.components and component.name not in change.components):
            continue
        ids = instance_ids(component, doc)
        seen_ids.update(ids)
        for position, target in enumerate(_component_targets(component, obj, len(ids))):
            target.instance = ids[position]
            if not change.instances or target.instance in change.instances:
                found.append(target)
    missing = [i for i in change.instances if i not in seen_ids]
    if missing:
        raise InvalidRequest(f"instances: no instance {missing[0]!r} in the selected components "
                             f"(instances: {', '.join(sorted(seen_ids))})")
    live = [t for t in found if _present(obj, t)]
    if not live:
        raise InvalidRequest("the selection holds no pod template to change")
    return live


def _component_targets(component: Component, obj: dict[str, Any], count: int) -> list[Target]:
    spec = component.spec
    assert spec is not None
    base = f"{component.path}.specDefinition"
    columns: dict[str, list[Location]] = {}
    if spec.pod_template_spec_path is not None:
        columns["template"] = _locate(spec.pod_template_spec_path, f"{base}.podTemplateSpecPath", obj, count)
    elif spec.pod_spec_path is not None:
        columns["spec"] = _locate(spec.pod_spec_path, f"{base}.podSpecPath", obj, count)
        if spec.metadata_path is not None:
            columns["metadata"] = _locate(spec.metadata_path, f"{base}.metadataPath", obj, count)
    for name, expression in spec.fragments or ():
        try:
            columns[name] = _locate(expression, f"{base}.fragmentedPodSpecDefinition.{name}", obj, count)
        except NotWritable as exc:
            columns[name] = [exc] * count  # type: ignore[list-item]  # raised only when this field is written
    out = []
    for i in range(count):
        if "template" in columns:
            t = columns["template"][i]
            out.append(Target(component, "", spec=(*t, "spec"), metadata=(*t, "metadata")))
        elif "spec" in columns:
            out.append(Target(component, "", spec=columns["spec"][i], metadata=columns.get("metadata", [None] * count)[i]))
        else:
            out.append(Target(component, "", fragments={k: v[i] for k, v in columns.items()}))
    return out


def _locate(expression: str, field_path: str, obj: dict[str, Any], count: int) -> list[Location]:
    locations = parse_write_path(expression, field_path).locate(obj)
    if len(locations) != count:
        raise NotWritable(field_path, expression, f"it gives {len(locations)} location(s) for {count} instance(s)")
    return locations


def _present(obj: dict[str, Any], target: Target) -> bool:
    if target.spec is not None:
        return value_at(obj, target.spec) is not None
    return True


def plan_pod_change(definition: Definition, obj: dict[str, Any], change: PodChange) -> Plan:
    """Apply ``change`` to a copy of ``obj`` at every selected pod location.

    Raises:
        InvalidRequest: bad selection, unknown container.
        NotWritable: a needed path is not writable, or the definition has no place for a field.
    """
    chosen = targets(definition, obj, change)
    updated = thawed(obj)
    for target in chosen:
        _apply(updated, target, change)
    return Plan(updated, with_precondition(obj, diff(obj, updated)), chosen)


def _where(target: Target, name: str) -> Location:
    """The location of pod field ``name`` (a key of the PodSpec, or labels/annotations)."""
    meta = name in ("labels", "annotations")
    if target.fragments:
        fragment = FRAGMENT_OF.get(name, "")
        location = target.fragments.get(fragment)
        if isinstance(location, NotWritable):
            raise location
        if location is None:
            raise NotWritable(f"{target.component.path}.specDefinition.fragmentedPodSpecDefinition", "",
                              f"it has no {fragment or name} to write {name} to")
        return location
    base = target.metadata if meta else target.spec
    if base is None:
        raise NotWritable(f"{target.component.path}.specDefinition.metadataPath", "",
                          f"podSpecPath without metadataPath has no place for {name}")
    return (*base, name)


def _apply(obj: dict[str, Any], target: Target, change: PodChange) -> None:
    for name, entries in change.maps:
        current = dict(value_at(obj, _where(target, name)) or {})
        for key, value in entries.items():
            if value is None:
                current.pop(key, None)
            else:
                current[key] = value
        too_large = annotations_size_problem(current) if name == "annotations" else None
        if too_large:
            raise InvalidRequest(f"annotations of component {target.component.name!r}: {too_large}")
        set_at(obj, _where(target, name), current)
    for name, value in change.strings:
        set_at(obj, _where(target, name), value)
    if change.tolerations:
        where = _where(target, "tolerations")
        present = list(value_at(obj, where) or [])
        set_at(obj, where, present + [t for t in change.tolerations if t not in present])
    for container in change.containers:
        _apply_container(obj, target, container)


def _apply_container(obj: dict[str, Any], target: Target, change: ContainerChange) -> None:
    single = target.fragments.get("containerPath") if target.fragments else None
    listed = target.fragments.get("containersPath") if target.fragments else (*target.spec, "containers") \
        if target.spec else None
    for location in (listed, single):
        if isinstance(location, NotWritable):
            raise location
    candidates = [(*listed, i) for i, _ in enumerate(value_at(obj, listed) or [])] if listed else []
    candidates += [single] if single else []
    names = [value_at(obj, (*c, "name")) for c in candidates]
    if change.name not in names:
        raise InvalidRequest(f"containers: no container {change.name!r} in component {target.component.name} "
                             f"instance {target.instance!r} (containers: {', '.join(map(str, names)) or 'none'})")
    container = candidates[names.index(change.name)]
    env = list(value_at(obj, (*container, "env")) or [])
    for entry in change.env:
        same = [i for i, e in enumerate(env) if e.get("name") == entry["name"]]
        if same:
            env[same[0]] = entry
        else:
            env.append(entry)
    if change.env:
        set_at(obj, (*container, "env"), env)
    for kind, amounts in (change.resources or {}).items():
        quantities = dict(value_at(obj, (*container, "resources", kind)) or {})
        quantities.update({k: v for k, v in amounts.items() if v is not None})
        for k in [k for k, v in amounts.items() if v is None]:
            quantities.pop(k, None)
        set_at(obj, (*container, "resources", kind), quantities)


def plan_suspend(definition: Definition, obj: dict[str, Any], suspend: bool) -> Plan:
    """Apply the root's ``suspendActions`` (or ``resumeActions``) to a copy of ``obj``.

    Raises:
        MissingDefinitionField: the root component has no suspendDefinition (or no actions).
        NotWritable: an action path is not writable; DefinitionError: a value is not JSON.
    """
    field_path = f"{definition.root.path}.suspendDefinition"
    actions: tuple[SuspendAction, ...] = ()
    if definition.root.suspend is not None:
        actions = definition.root.suspend.suspend_actions if suspend else definition.root.suspend.resume_actions
    if not actions:
        which = "suspendActions" if suspend else "resumeActions"
        raise MissingDefinitionField(f"{field_path}: definition {definition.name} has no {which}, so "
                                     f"{definition.gvk.kind} cannot be {'suspended' if suspend else 'resumed'}")
    updated = thawed(obj)
    name = "suspendActions" if suspend else "resumeActions"
    for i, action in enumerate(actions):
        where = f"{field_path}.{name}[{i}]"
        try:
            value = json.loads(action.value)
        except ValueError:
            raise DefinitionError(f"{where}.value: {action.value!r} is not JSON") from None
        for location in parse_write_path(action.path, f"{where}.path").locate(updated):
            set_at(updated, location, value)
    return Plan(updated, with_precondition(obj, diff(obj, updated)), [])
