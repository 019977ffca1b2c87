"""The scheduler view: which workload, component, instance and gang one pod belongs to.

A scheduler's pod grouper (KAI Scheduler's, issue 15 item 3) asks, for one pod, for its
top-level workload and the gang it must be scheduled with. The answer is read from the
materialized views only: :class:`~workload_map.materialization.views.ViewStore` keeps an index of
(namespace, pod name) and pod uid -> workload uid with the views, so a lookup is two dict
reads and a walk over that workload's gangs; nothing is resolved and no jq runs.

Gang forms (docs/definition-format.md section 8): with ``podGroup`` the pod's gang is the
workload's one group and its subgroup is the listed component the pod's component is (or
descends from); with ``podGroups`` the pod is in every gang whose ``pods`` name it.
"""

from __future__ import annotations

from typing import Any

from msgspec import Struct

from workload_map.definitions.model import Component, Definition
from workload_map.resolution.view import GangGroup, PodView, WorkloadView
from workload_map.materialization.views import Record, ViewStore


class PodGang(Struct, frozen=True):
    """One gang the pod is a member of.

    Attributes:
        group: the gang as resolved (name, form, minMember, subgroups with theirs).
        sub_group: (name, minMember) of the subgroup holding the pod (``podGroup`` form), or None.
    """

    group: GangGroup
    sub_group: tuple[str, int] | None


class PodPlacement(Struct, frozen=True):
    """Where one pod sits in its top-level workload.

    Attributes:
        record: the workload's materialized record (definition entry and view).
        pod: the pod's row in that view.
        gangs: the gangs naming the pod (empty without gangScheduling instructions).
    """

    record: Record
    pod: PodView
    gangs: list[PodGang]

    @property
    def view(self) -> WorkloadView:
        """The workload's view."""
        return self.record.view

    def to_dict(self, *, pod_details: bool = True) -> dict[str, Any]:
        """JSON shape ``{pod, workload, component, instance, replicaKey, gangGroups}``.

        Args:
            pod_details: False hides the pod's phase and node (the caller may not get pods
                in the namespace); identities, component and gang sizes stay.
        """
        view, pod = self.view, self.pod
        row: dict[str, Any] = {"namespace": pod.namespace, "name": pod.name, "uid": pod.uid}
        if pod_details:
            row.update(phase=pod.phase, node=pod.node)
        return {
            "pod": row,
            "workload": {"group": view.group, "kind": view.kind, "apiVersion": view.api_version,
                         "namespace": view.namespace, "name": view.name, "uid": view.uid,
                         "definition": view.definition, "phase": view.phase.value,
                         **({"cluster": view.cluster} if view.cluster else {})},
            "component": pod.component, "instance": pod.instance, "replicaKey": pod.replica_key,
            "gangGroups": [_gang_dict(g) for g in self.gangs],
        }


def _gang_dict(gang: PodGang) -> dict[str, Any]:
    g = gang.group
    out: dict[str, Any] = {"name": g.name, "form": g.form, "minMember": g.min_member,
                           "subGroups": [{"name": n, "minMember": m} for n, m in g.sub_groups],
                           "subGroup": ({"name": gang.sub_group[0], "minMember": gang.sub_group[1]}
                                        if gang.sub_group is not None else None)}
    if g.key is not None:
        out["key"] = list(g.key)
    return out


def pod_placement(store: ViewStore, namespace: str, name: str) -> PodPlacement | None:
    """The placement of pod ``namespace/name``, or None when no materialized view holds it.

    Args:
        store: the materialized views.
        namespace: the pod's namespace.
        name: the pod's ``metadata.name``.
    """
    record = store.owner_of_pod(namespace, name)
    if record is None:
        return None
    pod = next((p for p in record.view.all_pods() if p.namespace == namespace and p.name == name), None)
    if pod is None:  # the index and the view disagree only if a view was mutated in place
        return None
    return PodPlacement(record, pod, pod_gangs(record.entry.definition, record.view, pod))


def pod_gangs(definition: Definition, view: WorkloadView, pod: PodView) -> list[PodGang]:
    """The gangs of ``view`` that name ``pod``, each with the pod's subgroup (``podGroup`` form)."""
    out: list[PodGang] = []
    for gang in view.gangs:
        if pod.name not in gang.pods:
            continue
        sub = _sub_group(definition, gang, pod.component) if gang.form == "podGroup" else None
        out.append(PodGang(gang, sub))
    return out


def _sub_group(definition: Definition, gang: GangGroup, component: str | None) -> tuple[str, int] | None:
    """The listed subgroup that is ``component`` or its nearest ancestor."""
    subs = dict(gang.sub_groups)
    seen: set[str] = set()
    current = _component(definition, component)
    while current is not None and current.name not in seen:
        if current.name in subs:
            return current.name, subs[current.name]
        seen.add(current.name)
        current = _component(definition, current.owner_ref)
    return None


def _component(definition: Definition, name: str | None) -> Component | None:
    try:
        return definition.component(name) if name else None
    except KeyError:
        return None
