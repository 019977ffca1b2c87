"""Semantic validation of a parsed definition: every rule, every finding at once.

Rules follow upstream's library validator (docs/definition-format.md section 5) and extend it:

1. component names unique over root and children;
2. root: full GVK (group may be empty only for core ``Pod``... and any core kind), no
   ownerRef, a statusDefinition;
3. children: ownerRef present and naming an existing component;
4. per component: at most one pod spec variant; instanceIdPath and
   componentInstanceSelector come together; componentTypeSelector has keyPath or
   matchLabels, ``value`` needs keyPath, matchLabels keys/values are valid label syntax;
   status mappings that use ``byConditions`` need a conditionsDefinition and ``byPhase`` a
   phaseDefinition; suspend action values are JSON;
5. no ownership cycles (checked only when steps 1-4 found nothing, as upstream: the
   check needs a sound tree);
6. gang members and podGroup subgroups name existing components;
7. every jq field parses and uses no forbidden construct (:mod:`workload_map.jq.static`).

Messages are ``<field path>: <reason>``, e.g.
``spec.structureDefinition.childComponents[1].ownerRef: unknown component "wrker"``.
"""

from __future__ import annotations

import json
from typing import Iterator

from workload_map.definitions.model import Component, Definition
from workload_map.definitions.names import (
    dns_label_problem,
    dns_subdomain_problem,
    hidden_problem,
    label_key_problem,
    label_value_problem,
)
from workload_map.definitions.extensions import JQ_ANNOTATIONS, annotation, extension_problems
from workload_map.errors import Problem, expression_problem
from workload_map.jq import check_expression

__all__ = ["jq_fields", "jq_rules", "label_key_problem", "validate_definition"]


def validate_definition(definition: Definition, *, check_jq: bool = True) -> list[Problem]:
    """All findings for ``definition`` (empty list when valid).

    ``check_jq=False`` leaves out rule 7 (compiling every jq field costs about 1.5 ms an
    expression): the built-in catalog defers it until a kind is needed
    (:meth:`workload_map.definitions.catalog.Catalog.check`).
    """
    problems = _name_rules(definition)
    problems += _unique_names(definition)
    problems += _root_rules(definition.root)
    problems += _owner_rules(definition)
    for component in definition.components:
        problems += _component_rules(component)
    if not problems:
        problems += _cycles(definition)
    problems += _gang_rules(definition)
    if check_jq:
        problems += jq_rules(definition)
    problems += extension_problems(definition)
    return problems


def _name_rules(definition: Definition) -> list[Problem]:
    """Kubernetes name rules for the definition name and component names.

    The definition name is a DNS-1123 subdomain (it becomes a Karta object name and a state
    file name), component names are DNS-1123 labels.
    """
    out = []
    reason = dns_subdomain_problem(definition.name)
    if reason:
        out.append(Problem("metadata.name", f"{_shown(definition.name)} {reason}"))
    for component in definition.components:
        reason = dns_label_problem(component.name) if component.name else None
        if reason:
            out.append(Problem(f"{component.path}.name", f"component name {_shown(component.name)} {reason}"))
    for component in definition.components:
        kind = component.kind
        for field_name in ("group", "version", "kind"):
            value = getattr(kind, field_name, "") if kind is not None else ""
            reason = hidden_problem(value) if isinstance(value, str) else None
            if reason:
                out.append(Problem(f"{component.path}.kind.{field_name}", f"{_shown(value)} {reason}"))
    annotations = (definition.manifest.get("metadata") or {}).get("annotations") or {}
    aliases = annotations.get(ALIASES) if isinstance(annotations, dict) else None
    reason = hidden_problem(aliases) if isinstance(aliases, str) else None
    if reason:
        out.append(Problem(f"metadata.annotations[{ALIASES}]", f"{_shown(aliases or '')} {reason}"))
    return out


ALIASES = "workload-map.run.ai/aliases"
"""The catalog's alias annotation (``workload_map.definitions.catalog.ALIASES_ANNOTATION``)."""


def _shown(value: str, limit: int = 64) -> str:
    """``value`` in double quotes with JSON escapes, cut at ``limit`` characters.

    The escapes make newlines and bidi controls visible.
    """
    return json.dumps(value if len(value) <= limit else value[:limit] + "...")


def _unique_names(definition: Definition) -> list[Problem]:
    seen: set[str] = set()
    out = []
    for component in (*definition.children, definition.root):
        if component.name and component.name in seen:
            out.append(Problem(f"{component.path}.name", f"component name {component.name} is not unique"))
        seen.add(component.name)
    return out


def _root_rules(root: Component) -> list[Problem]:
    out = []
    kind = root.kind
    if kind is None or not kind.version or not kind.kind:
        out.append(Problem(f"{root.path}.kind", "root component must have full kind (group, version, kind)"))
    if root.owner_ref is not None:
        out.append(Problem(f"{root.path}.ownerRef", "root component cannot have owner ref"))
    if root.status is None:
        out.append(Problem(f"{root.path}.statusDefinition", "root component must have status definition"))
    return out


def _owner_rules(definition: Definition) -> list[Problem]:
    names = {c.name for c in definition.components}
    out = []
    for child in definition.children:
        if not child.owner_ref:
            out.append(Problem(f"{child.path}.ownerRef", f"child component '{child.name}' has no owner ref"))
        elif child.owner_ref not in names:
            out.append(Problem(f"{child.path}.ownerRef", f'unknown component "{child.owner_ref}"'))
    return out


def _component_rules(c: Component) -> list[Problem]:
    out = []
    if c.spec is not None and c.spec.variants > 1:
        out.append(Problem(f"{c.path}.specDefinition", f"component '{c.name}' has multiple pod spec definitions"))
    selector = c.pod_selector
    has_instance_selector = selector is not None and selector.instance_id_path is not None
    if c.instance_id_path and not has_instance_selector:
        out.append(Problem(f"{c.path}.instanceIdPath",
                           f"component '{c.name}' has instance id path but no pod component instance selector"))
    if has_instance_selector and not c.instance_id_path:
        out.append(Problem(f"{c.path}.podSelector.componentInstanceSelector",
                           f"component '{c.name}' has pod component instance selector but no instance id path"))
    if selector is not None and selector.type_selector is not None:
        out += _type_selector_rules(c, f"{c.path}.podSelector.componentTypeSelector")
    if c.status is not None:
        out += _status_rules(c)
    if c.suspend is not None:
        out += _suspend_rules(c)
    return out


def _type_selector_rules(c: Component, path: str) -> list[Problem]:
    ts = c.pod_selector.type_selector  # type: ignore[union-attr]
    assert ts is not None
    out = []
    if ts.key_path is None and ts.match_labels is None:
        out.append(Problem(path, "neither keyPath nor matchLabels is set; at least one is required"))
    if ts.match_labels is not None and not ts.match_labels:
        out.append(Problem(f"{path}.matchLabels", "empty matchLabels; give at least one label"))
    if ts.value is not None and ts.key_path is None:
        out.append(Problem(f"{path}.value", "value without keyPath"))
    for key, value in sorted(ts.match_labels or ()):
        reason = label_key_problem(key)
        if reason:
            out.append(Problem(f"{path}.matchLabels", f"Invalid value: {_shown(key)}: {reason}"))
        reason = label_value_problem(value)
        if reason:
            out.append(Problem(f"{path}.matchLabels.{key}", f"Invalid value: {_shown(value)}: {reason}"))
    return out


def _status_rules(c: Component) -> list[Problem]:
    status = c.status
    assert status is not None
    out = []
    base = f"{c.path}.statusDefinition"
    for phase, matchers in status.mappings:
        for index, matcher in enumerate(matchers):
            at = f"{base}.statusMappings.{phase.value.lower()}[{index}]"
            if matcher.by_conditions and status.conditions is None:
                out.append(Problem(f"{at}.byConditions", "byConditions needs statusDefinition.conditionsDefinition"))
            if matcher.by_phase is not None and status.phase_path is None:
                out.append(Problem(f"{at}.byPhase", "byPhase needs statusDefinition.phaseDefinition"))
    return out


def _suspend_rules(c: Component) -> list[Problem]:
    out = []
    for key, actions in (("suspendActions", c.suspend.suspend_actions), ("resumeActions", c.suspend.resume_actions)):  # type: ignore[union-attr]
        for index, action in enumerate(actions):
            try:
                json.loads(action.value)
            except ValueError:
                out.append(Problem(f"{c.path}.suspendDefinition.{key}[{index}].value",
                                   f"must be a JSON-encoded value, got {action.value!r}"))
    return out


def _cycles(definition: Definition) -> list[Problem]:
    parent = {c.name: c.owner_ref for c in definition.children}
    for start in parent:
        seen, node = set(), start
        while node in parent:
            if node in seen:
                component = next(c for c in definition.children if c.name == node)
                return [Problem(f"{component.path}.ownerRef",
                                f"ownership cycle detected involving component {node}")]
            seen.add(node)
            node = parent[node] or ""
    return []


def _gang_rules(definition: Definition) -> list[Problem]:
    gang = definition.gang
    if gang is None:
        return []
    names = {c.name for c in definition.components}
    base = "spec.optimizationInstructions.gangScheduling"
    out = []
    for gi, group in enumerate(gang.pod_groups):
        for mi, member in enumerate(group.members):
            if member.component_name not in names:
                out.append(Problem(f"{base}.podGroups[{gi}].members[{mi}].componentName",
                                   f"pod-group member component '{member.component_name}' is not defined "
                                   "(should be a root or child component)"))
    if gang.pod_group is not None:
        for si, (name, _) in enumerate(gang.pod_group.sub_groups):
            if name not in names:
                out.append(Problem(f"{base}.podGroup.subGroups[{si}].componentName", f'unknown component "{name}"'))
    return out


def jq_fields(definition: Definition) -> Iterator[tuple[str, str]]:
    """Every jq expression of ``definition`` as ``(field path, expression)``."""
    for c in definition.components:
        if c.instance_id_path:
            yield f"{c.path}.instanceIdPath", c.instance_id_path
        if c.spec is not None:
            base = f"{c.path}.specDefinition"
            for name, expr in (("podTemplateSpecPath", c.spec.pod_template_spec_path),
                               ("podSpecPath", c.spec.pod_spec_path), ("metadataPath", c.spec.metadata_path)):
                if expr:
                    yield f"{base}.{name}", expr
            for name, expr in c.spec.fragments or ():
                yield f"{base}.fragmentedPodSpecDefinition.{name}", expr
        if c.scale is not None:
            for name, expr in (("replicasPath", c.scale.replicas_path), ("minReplicasPath", c.scale.min_replicas_path),
                               ("maxReplicasPath", c.scale.max_replicas_path)):
                if expr:
                    yield f"{c.path}.scaleDefinition.{name}", expr
        yield from _selector_fields(c)
        yield from _status_fields(c)
        if c.suspend is not None:
            for key, actions in (("suspendActions", c.suspend.suspend_actions),
                                 ("resumeActions", c.suspend.resume_actions)):
                for index, action in enumerate(actions):
                    if action.path:
                        yield f"{c.path}.suspendDefinition.{key}[{index}].path", action.path
    if definition.gang is not None:
        base = "spec.optimizationInstructions.gangScheduling.podGroups"
        for gi, group in enumerate(definition.gang.pod_groups):
            for mi, member in enumerate(group.members):
                for ki, expr in enumerate(member.group_by_key_paths):
                    yield f"{base}[{gi}].members[{mi}].groupByKeyPaths[{ki}]", expr
                for fi, expr in enumerate(member.filters):
                    yield f"{base}[{gi}].members[{mi}].filters[{fi}]", expr
    for key in JQ_ANNOTATIONS:  # extensions evaluated on the root (nested-templates, degraded-when, unknown-when)
        expression = annotation(definition, key)
        if expression:
            yield f'metadata.annotations["{key}"]', expression


def _selector_fields(c: Component) -> Iterator[tuple[str, str]]:
    s = c.pod_selector
    if s is None:
        return
    base = f"{c.path}.podSelector"
    if s.type_selector is not None and s.type_selector.key_path:
        yield f"{base}.componentTypeSelector.keyPath", s.type_selector.key_path
    if s.instance_id_path:
        yield f"{base}.componentInstanceSelector.idPath", s.instance_id_path
    if s.replica_key_path:
        yield f"{base}.replicaSelector.keyPath", s.replica_key_path


def _status_fields(c: Component) -> Iterator[tuple[str, str]]:
    status = c.status
    if status is None:
        return
    base = f"{c.path}.statusDefinition"
    if status.phase_path:
        yield f"{base}.phaseDefinition.path", status.phase_path
    if status.conditions is not None and status.conditions.path:
        yield f"{base}.conditionsDefinition.path", status.conditions.path
    for phase, matchers in status.mappings:
        for index, matcher in enumerate(matchers):
            if matcher.by_expression:
                yield f"{base}.statusMappings.{phase.value.lower()}[{index}].byExpression.expression", matcher.by_expression


def jq_rules(definition: Definition) -> list[Problem]:
    """Rule 7: every jq field compiles and uses no forbidden construct."""
    out = []
    for path, expression in jq_fields(definition):
        for reason in check_expression(expression):
            out.append(expression_problem(path, expression, reason))
    return out
