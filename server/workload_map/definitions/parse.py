"""Turn a Karta (or older ResourceInterface) document into a :class:`Definition`.

Accepted documents (docs/definition-format.md sections 1-3):

* ``apiVersion: run.ai/v1alpha1``, ``kind: Karta`` -- the current format;
* ``apiVersion: optimization.nvidia.com/v1alpha1``, ``kind: ResourceInterface`` -- the
  older form, same spec shape, mapped onto the same model;
* a bare ``spec`` (``{"structureDefinition": ...}``), as Run:ai's workload-types body
  carries it in ``resourceInterfaces[].spec``.

CRD defaults are applied (condition field names ``type``/``status``/``message``/
``reason``). Parsing never raises: problems are collected with their field paths, and
:func:`parse_definition` returns the model only when it could be built.
"""

from __future__ import annotations

import copy
from typing import Any

from workload_map.definitions.fields import Fields
from workload_map.definitions.model import (
    FRAGMENT_FIELDS,
    Component,
    ConditionMatch,
    ConditionsDefinition,
    Definition,
    GangScheduling,
    PodGroupAlpha,
    PodGroupMember,
    PodGroupSpec,
    PodSelector,
    ScaleDefinition,
    SpecDefinition,
    StatusDefinition,
    StatusMatcher,
    SuspendAction,
    SuspendDefinition,
    Topology,
    TypeSelector,
)
from workload_map.definitions.phases import MAPPING_KEYS
from workload_map.errors import Problem
from workload_map.gvk import GVK

KARTA_API_VERSION = "run.ai/v1alpha1"
LEGACY_API_VERSION = "optimization.nvidia.com/v1alpha1"
FORMATS = {(KARTA_API_VERSION, "Karta"): "Karta", (LEGACY_API_VERSION, "ResourceInterface"): "ResourceInterface"}

_COMPONENT_FIELDS = ("name", "kind", "ownerRef", "specDefinition", "scaleDefinition", "statusDefinition",
                     "suspendDefinition", "instanceIdPath", "podSelector")


def parse_definition(doc: Any, problems: list[Problem]) -> Definition | None:
    """Parse a definition document, appending every finding to ``problems``.

    Args:
        doc: the decoded YAML/JSON document (a Karta / ResourceInterface manifest or a
            bare spec).
        problems: receives one :class:`Problem` per finding.

    Returns:
        The model, or ``None`` when the structure is too broken to build one (the
        reasons are in ``problems``).
    """
    if not isinstance(doc, dict):
        problems.append(Problem("", f"a definition must be a mapping, got {type(doc).__name__}"))
        return None
    if "structureDefinition" in doc and "spec" not in doc:
        doc = {"apiVersion": KARTA_API_VERSION, "kind": "Karta", "metadata": {}, "spec": doc}
    key = (doc.get("apiVersion"), doc.get("kind"))
    source_format = FORMATS.get(key) if all(isinstance(k, str) for k in key) else None
    if source_format is None:
        problems.append(Problem("kind", f"expected apiVersion {KARTA_API_VERSION} kind Karta (or {LEGACY_API_VERSION} "
                                        f"ResourceInterface), got apiVersion {key[0]!r} kind {key[1]!r}"))
        return None
    top = Fields(doc, "", problems, ("apiVersion", "kind", "metadata", "spec", "status"))
    spec = top.child("spec", ("structureDefinition", "optimizationInstructions"), required=True)
    structure = spec.child("structureDefinition", ("rootComponent", "childComponents", "additionalChildKinds"),
                           required=True) if spec else None
    if structure is None:
        return None
    root_fields = structure.child("rootComponent", _COMPONENT_FIELDS, required=True)
    if root_fields is None:
        return None
    root = _component(root_fields)
    children = tuple(_component(Fields(item, path, problems, _COMPONENT_FIELDS))
                     for path, item in structure.items("childComponents"))
    extra = tuple(g for path, item in structure.items("additionalChildKinds")
                  if (g := _gvk(Fields(item, path, problems, ("group", "version", "kind")), require_all=True)))
    gang = _gang(spec.child("optimizationInstructions", ("gangScheduling",))) if spec else None
    metadata = doc.get("metadata") if isinstance(doc.get("metadata"), dict) else {}
    given = metadata.get("name")
    if given is not None and not isinstance(given, str):  # a name 5 is a mistake, not "no name"
        problems.append(Problem("metadata.name", f"must be a string, got {type(given).__name__}"))
        return None
    name = given if isinstance(given, str) else ""
    if not name and root.kind is not None:
        name = root.kind.slug
    manifest = {"apiVersion": KARTA_API_VERSION, "kind": "Karta",
                "metadata": {"name": name, **{k: copy.deepcopy(v) for k, v in metadata.items()
                                              if k in ("labels", "annotations")}},
                "spec": copy.deepcopy(doc["spec"])}
    return Definition(name=name, source_format=source_format, root=root, children=children,
                      additional_child_kinds=extra, gang=gang, manifest=manifest)


def _gvk(f: Fields, *, require_all: bool = False) -> GVK | None:
    group = f.string("group", required=require_all, empty_ok=True)
    version = f.string("version", required=require_all)
    kind = f.string("kind", required=require_all)
    if "group" not in f.data and not require_all:
        group = None
    if version is None or kind is None:
        return None if require_all else GVK(group or "", version or "", kind or "")
    return GVK(group or "", version, kind)


def _component(f: Fields) -> Component:
    kind_fields = f.child("kind", ("group", "version", "kind"))
    selector = f.child("podSelector", ("componentTypeSelector", "componentInstanceSelector", "replicaSelector"))
    return Component(
        name=f.string("name", required=True) or "",
        path=f.path,
        kind=_gvk(kind_fields) if kind_fields else None,
        owner_ref=f.string("ownerRef", empty_ok=True),
        spec=_spec(f.child("specDefinition", ("podTemplateSpecPath", "podSpecPath", "metadataPath",
                                              "fragmentedPodSpecDefinition"))),
        scale=_scale(f.child("scaleDefinition", ("replicasPath", "minReplicasPath", "maxReplicasPath"))),
        status=_status(f.child("statusDefinition", ("conditionsDefinition", "phaseDefinition", "statusMappings"))),
        suspend=_suspend(f.child("suspendDefinition", ("suspendActions", "resumeActions"))),
        instance_id_path=f.string("instanceIdPath"),
        pod_selector=_pod_selector(selector) if selector else None,
    )


def _spec(f: Fields | None) -> SpecDefinition | None:
    if f is None:
        return None
    fragments = None
    frag = f.child("fragmentedPodSpecDefinition", FRAGMENT_FIELDS)
    if frag is not None:
        fragments = tuple((name, path) for name in FRAGMENT_FIELDS if (path := frag.string(name)))
    return SpecDefinition(f.string("podTemplateSpecPath"), f.string("podSpecPath"), f.string("metadataPath"), fragments)


def _scale(f: Fields | None) -> ScaleDefinition | None:
    if f is None:
        return None
    return ScaleDefinition(f.string("replicasPath"), f.string("minReplicasPath"), f.string("maxReplicasPath"))


def _status(f: Fields | None) -> StatusDefinition | None:
    if f is None:
        return None
    phase = f.child("phaseDefinition", ("path",))
    cond = f.child("conditionsDefinition", ("path", "typeFieldName", "statusFieldName", "messageFieldName",
                                            "reasonFieldName"))
    conditions = None
    if cond is not None:
        conditions = ConditionsDefinition(
            cond.string("path", required=True) or "",
            cond.string("typeFieldName") or "type", cond.string("statusFieldName") or "status",
            cond.string("messageFieldName") or "message", cond.string("reasonFieldName") or "reason")
    mappings = []
    table = f.child("statusMappings", tuple(MAPPING_KEYS), required=True)
    for key in MAPPING_KEYS:
        if table is None or key not in table.data:
            continue
        matchers = tuple(_matcher(Fields(item, path, f.problems, ("byPhase", "byConditions", "byExpression")))
                         for path, item in table.items(key))
        mappings.append((MAPPING_KEYS[key], matchers))
    merged: dict[Any, tuple[StatusMatcher, ...]] = {}
    for phase_key, matchers in mappings:
        merged[phase_key] = merged.get(phase_key, ()) + matchers
    return StatusDefinition(phase.string("path", required=True) if phase else None, conditions, tuple(merged.items()))


def _matcher(f: Fields) -> StatusMatcher:
    conditions = tuple(
        ConditionMatch(c.string("type", required=True) or "", c.string("status"), c.string("reason"))
        for path, item in f.items("byConditions")
        if (c := Fields(item, path, f.problems, ("type", "status", "reason")))
    )
    expression = f.child("byExpression", ("expression", "expectedResult"))
    return StatusMatcher(
        by_phase=f.string("byPhase"),
        by_conditions=conditions,
        by_expression=expression.string("expression", required=True) if expression else None,
        expected_result=expression.string("expectedResult", required=True, empty_ok=True) if expression else None,
    )


def _suspend(f: Fields | None) -> SuspendDefinition | None:
    if f is None:
        return None

    def actions(key: str) -> tuple[SuspendAction, ...]:
        out = []
        for path, item in f.items(key):
            a = Fields(item, path, f.problems, ("path", "value"))
            out.append(SuspendAction(a.string("path", required=True) or "", a.string("value", required=True,
                                                                                     empty_ok=True) or ""))
        return tuple(out)

    return SuspendDefinition(actions("suspendActions"), actions("resumeActions"))


def _pod_selector(f: Fields) -> PodSelector:
    type_fields = f.child("componentTypeSelector", ("keyPath", "value", "matchLabels"))
    instance = f.child("componentInstanceSelector", ("idPath",))
    replica = f.child("replicaSelector", ("keyPath",))
    type_selector = None
    if type_fields is not None:
        type_selector = TypeSelector(type_fields.string("keyPath"), type_fields.string("value", empty_ok=True),
                                     type_fields.string_map("matchLabels"))
    return PodSelector(
        type_selector=type_selector,
        instance_id_path=instance.string("idPath", required=True) if instance else None,
        replica_key_path=replica.string("keyPath", required=True) if replica else None,
    )


def _topology(f: Fields | None) -> Topology | None:
    if f is None:
        return None
    return Topology(f.string("topologyName", required=True) or "", f.string("preferredTopologyLevel",
                    required=True) or "", f.string("requiredTopologyLevel", required=True) or "")


_TOPOLOGY_FIELDS = ("topologyName", "preferredTopologyLevel", "requiredTopologyLevel")


def _gang(f: Fields | None) -> GangScheduling | None:
    gang = f.child("gangScheduling", ("podGroups", "podGroup")) if f else None
    if gang is None:
        return None
    groups = []
    for path, item in gang.items("podGroups"):
        g = Fields(item, path, gang.problems, ("name", "members"))
        members = tuple(
            PodGroupMember(m.string("componentName", required=True) or "", m.strings("groupByKeyPaths"),
                           m.strings("filters"))
            for mpath, mitem in g.items("members")
            if (m := Fields(mitem, mpath, gang.problems, ("componentName", "groupByKeyPaths", "filters"))))
        groups.append(PodGroupAlpha(g.string("name", required=True) or "", members))
    spec = None
    pg = gang.child("podGroup", ("name", "subGroups", "topology"))
    if pg is not None:
        subs = tuple(
            (s.string("componentName", required=True) or "", _topology(s.child("topology", _TOPOLOGY_FIELDS)))
            for spath, sitem in pg.items("subGroups")
            if (s := Fields(sitem, spath, gang.problems, ("componentName", "topology"))))
        spec = PodGroupSpec(pg.string("name", required=True) or "", subs, _topology(pg.child("topology",
                                                                                             _TOPOLOGY_FIELDS)))
    return GangScheduling(tuple(groups), spec)
