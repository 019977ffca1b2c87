"""Gang groups: which pods must be scheduled together, and the expected minimum size.

Subtree scale (docs/definition-format.md section 8): when any component has a scaleDefinition,
``own`` = sum over instances of the effective minimum (min if > 0, else replicas if > 0,
else 0); a leaf's subtree scale is ``own``; a parent's is ``own x childrenSum`` (or
whichever is non-zero). Without any scaleDefinition, subtree scale counts leaves.

Forms:
* ``podGroup`` (current): one group per workload, one subgroup per listed component with
  minMember = that component's subtree scale; without subgroups minMember = the root's.
* ``podGroups`` (deprecated): per group definition, pods are grouped by the values of
  ``groupByKeyPaths`` (single-result rule); each gang's minimum is the subtree scale of
  the member component (of the pod's instance when it has one).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from workload_map.definitions.model import Component, Definition
from workload_map.errors import JqError
from workload_map.jq import Document, compile_program
from workload_map.resolution.extract import Scale
from workload_map.resolution.pods import single_result
from workload_map.resolution.view import GangGroup, PodView


class SubtreeScale:
    """Computes subtree scales from the extracted per-instance scales.

    Args:
        definition: the definition.
        scales: component name -> instance id -> :class:`Scale`.
    """

    def __init__(self, definition: Definition, scales: Mapping[str, Mapping[str, Scale]]) -> None:
        self.definition = definition
        self.scales = scales
        self.any_scale = any(c.scale is not None for c in definition.components)

    def of(self, component: Component, instance: str | None = None) -> int:
        """Subtree scale of ``component`` (of one instance when ``instance`` is given)."""
        per = self.scales.get(component.name, {})
        chosen = [per[instance]] if instance is not None and instance in per else list(per.values())
        children = self.definition.children_of(component.name)
        if not self.any_scale:
            if not children:
                return len(chosen) if instance is None else 1
            return sum(self.of(c) for c in children)
        own = sum(s.effective_min for s in chosen)
        child_sum = sum(self.of(c) for c in children)
        if not children or child_sum == 0:
            return own
        return child_sum if own == 0 else own * child_sum


def gang_groups(definition: Definition, subtree: SubtreeScale, pods: Sequence[PodView],
                docs: Mapping[tuple[str, str], Document]) -> list[GangGroup]:
    """Expected gangs of the workload (empty without gangScheduling instructions).

    ``docs``: (namespace, name) of each of ``pods`` -> its pod's document.
    """
    gang = definition.gang
    if gang is None:
        return []
    if gang.pod_group is not None:
        spec = gang.pod_group
        subs = [(name, subtree.of(definition.component(name))) for name, _ in spec.sub_groups
                if _exists(definition, name)]
        minimum = sum(m for _, m in subs) if subs else subtree.of(definition.root)
        members = [p.name for p in pods if p.component is not None]
        return [GangGroup(spec.name, "podGroup", minimum, subs, None, members)]
    out: dict[tuple[str, tuple[str, ...]], GangGroup] = {}
    for group in gang.pod_groups:
        names = {m.component_name: m for m in group.members}
        for pod in pods:
            member = _member_for(definition, pod.component, names)
            if member is None:
                continue
            doc = docs[pod.namespace, pod.name]
            if not all(_filter_passes(f, doc) for f in member.filters):
                continue
            try:
                key = tuple(single_result(k, doc) for k in member.group_by_key_paths)
            except (ValueError, JqError):
                continue
            component = definition.component(member.component_name)
            instance = pod.instance if pod.component == member.component_name and pod.instance else None
            entry = out.setdefault((group.name, key), GangGroup(
                "-".join((group.name, *key)), "podGroups", subtree.of(component, instance), [], list(key), []))
            entry.pods.append(pod.name)
    return list(out.values())


def _exists(definition: Definition, name: str) -> bool:
    return any(c.name == name for c in definition.components)


def _member_for(definition: Definition, component: str | None, members: Mapping[str, object]):  # type: ignore[no-untyped-def]
    current = definition.component(component) if component else None
    while current is not None:
        if current.name in members:
            return members[current.name]
        current = definition.component(current.owner_ref) if current.owner_ref else None
    return None


def _filter_passes(expression: str, doc: Document) -> bool:
    try:
        outputs = compile_program(expression).all(doc)
    except JqError:
        return False
    return len(outputs) == 1 and outputs[0] is True
