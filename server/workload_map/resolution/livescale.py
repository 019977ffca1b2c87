"""Live scale of children: the replicas an autoscaler wrote on a child object win over the template.

An HPA (or KEDA, the Knative autoscaler, the Ray autoscaler) writes the replica count of the
object its ``scaleTargetRef`` names, through that kind's scale subresource
(``specReplicasPath``; kubernetes.io "Horizontal Pod Autoscaling", "Scale subresource").
When that object is a child the workload's operator created (the Deployment of a KServe
predictor, a Grove PodClique, the LeaderWorkerSet of an LLMInferenceService, the RayCluster of
a RayService), the parent's template no longer says how many pods are wanted: the child does.

Rule: for a component named in the definition's ``workload-map.run.ai/live-scale``
annotation, the desired pods of an instance are the sum over the live children placed in it;
an instance with no live child (not created yet, or deleted while the workload is stopped)
keeps the template count. Children being deleted (``deletionTimestamp``) are not counted.
Minimum and maximum stay the template's (the autoscaler's bounds).

Annotation grammar: entries separated by commas, each ``component`` (the children are
objects of the component's own kind) or ``component=Kind.group|Kind.group`` (the kinds of
the children, e.g. ``nimservice=Deployment.apps``; the core group is ``Kind``).

Placement: each live child is turned into stand-in pods, one per pod template it stamps out,
with the labels the operator gives its pods, and each stand-in is attributed with the
definition's own pod selectors (``workload_map.resolution.pods.Attributor``). A stand-in counts
only when it lands in a component that lists the child's kind.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Mapping, Sequence
from typing import Any

from msgspec import Struct

from workload_map.definitions.extensions import LIVE_SCALE_ANNOTATION, LIVE_SCALE_KINDS, GroupKind, live_scale_entries
from workload_map.definitions.model import Definition
from workload_map.jq import Document
from workload_map.resolution.extract import MAX_REPLICAS
from workload_map.resolution.pods import Attributor
from workload_map.resolution.view import ResolutionError

_FIELD = f'metadata.annotations["{LIVE_SCALE_ANNOTATION}"]'

#: (stand-in pod manifest, pods the child wants from that template)
StandIn = tuple[dict[str, Any], int]


def _count(obj: Mapping[str, Any], path: str, default: int) -> int:
    """An int32 replica count at dotted ``path`` under ``spec`` (``default`` when absent).

    Raises:
        ValueError: not a non-negative integer within int32.
    """
    value: Any = obj.get("spec") or {}
    for key in path.split("."):
        value = value.get(key) if isinstance(value, Mapping) else None
    if value is None:
        return default
    if isinstance(value, bool) or not isinstance(value, int) or not 0 <= value <= MAX_REPLICAS:
        raise ValueError(f"spec.{path} is {value!r}, not a replica count 0..{MAX_REPLICAS}")
    return value


def _pod(child: Mapping[str, Any], template: Any, extra_labels: Mapping[str, str]) -> dict[str, Any]:
    """A pod manifest as the child's controller would stamp it from ``template``."""
    template = template if isinstance(template, Mapping) else {}
    raw_meta = template.get("metadata")
    meta: Mapping[str, Any] = raw_meta if isinstance(raw_meta, Mapping) else {}
    raw_labels = meta.get("labels")
    labels: Mapping[str, Any] = raw_labels if isinstance(raw_labels, Mapping) else {}
    child_meta = child.get("metadata") or {}
    return {"apiVersion": "v1", "kind": "Pod",
            "metadata": {**meta, "name": str(child_meta.get("name", "")), "namespace": child_meta.get("namespace"),
                         "labels": {**labels, **extra_labels}},
            "spec": template.get("spec") if isinstance(template.get("spec"), Mapping) else {}}


def _replicated(child: Mapping[str, Any]) -> list[StandIn]:
    """Deployment, StatefulSet, ReplicaSet: ``spec.replicas`` (API default 1) pods of ``spec.template``."""
    return [(_pod(child, (child.get("spec") or {}).get("template"), {}), _count(child, "replicas", 1))]


def _leader_worker_set(child: Mapping[str, Any]) -> list[StandIn]:
    """LeaderWorkerSet: ``replicas`` groups (default 1) of ``leaderWorkerTemplate.size`` pods (default 1).

    Per group one leader (``leaderTemplate``, else the worker template) and size - 1 workers;
    pods carry ``leaderworkerset.sigs.k8s.io/name`` and ``worker-index`` (0 = leader).
    """
    groups, size = _count(child, "replicas", 1), _count(child, "leaderWorkerTemplate.size", 1)
    lwt = (child.get("spec") or {}).get("leaderWorkerTemplate") or {}
    name = str((child.get("metadata") or {}).get("name", ""))
    label = "leaderworkerset.sigs.k8s.io/"
    leader = _pod(child, lwt.get("leaderTemplate") or lwt.get("workerTemplate"),
                  {f"{label}name": name, f"{label}worker-index": "0"})
    worker = _pod(child, lwt.get("workerTemplate"), {f"{label}name": name, f"{label}worker-index": "1"})
    return [(leader, groups)] + ([(worker, groups * (size - 1))] if size > 1 else [])


def _pod_clique(child: Mapping[str, Any]) -> list[StandIn]:
    """Grove PodClique: ``spec.replicas`` pods of ``spec.podSpec``.

    Labelled with the clique's labels plus ``grove.io/podclique=<PodClique name>``, as the
    Grove operator labels them.
    """
    meta = child.get("metadata") or {}
    labels = meta.get("labels") if isinstance(meta.get("labels"), Mapping) else {}
    template = {"metadata": {"labels": labels}, "spec": (child.get("spec") or {}).get("podSpec")}
    return [(_pod(child, template, {"grove.io/podclique": str(meta.get("name", ""))}), _count(child, "replicas", 1))]


def _ray_cluster(child: Mapping[str, Any]) -> list[StandIn]:
    """RayCluster: one head pod, and per worker group its clamped replicas x ``numOfHosts``.

    A worker group wants ``replicas`` clamped to [minReplicas, maxReplicas] (unset:
    minReplicas), 0 when suspended (KubeRay's rule; the autoscaler writes ``replicas``); pods
    carry ray.io/node-type and ray.io/group.
    """
    name = str((child.get("metadata") or {}).get("name", ""))
    spec = child.get("spec") or {}
    head = (spec.get("headGroupSpec") or {}).get("template")
    out: list[StandIn] = [(_pod(child, head, {"ray.io/node-type": "head", "ray.io/group": "headgroup",
                                              "ray.io/cluster": name}), 1)]
    for group in spec.get("workerGroupSpecs") or []:
        if not isinstance(group, Mapping):
            continue
        wrapped = {"spec": group}
        low, high = _count(wrapped, "minReplicas", 0), _count(wrapped, "maxReplicas", MAX_REPLICAS)
        wanted = min(max(_count(wrapped, "replicas", low), low), high) * _count(wrapped, "numOfHosts", 1)
        labels = {"ray.io/node-type": "worker", "ray.io/group": str(group.get("groupName", "")), "ray.io/cluster": name}
        out.append((_pod(child, group.get("template"), labels), 0 if group.get("suspend") is True else wanted))
    return out


#: Kinds whose live replica count is read, with the scale subresource field an HPA writes.
READERS: dict[GroupKind, Callable[[Mapping[str, Any]], list[StandIn]]] = {
    ("apps", "Deployment"): _replicated,
    ("apps", "StatefulSet"): _replicated,
    ("apps", "ReplicaSet"): _replicated,
    ("leaderworkerset.x-k8s.io", "LeaderWorkerSet"): _leader_worker_set,
    ("grove.io", "PodClique"): _pod_clique,
    ("ray.io", "RayCluster"): _ray_cluster,
}
assert READERS.keys() == LIVE_SCALE_KINDS, "a live-scale kind without a reader (or the reverse)"


class LiveRules(Struct, frozen=True):
    """Parsed ``live-scale`` annotation: component name -> the child kinds read for it."""

    kinds: dict[str, frozenset[GroupKind]]

    @property
    def wanted(self) -> frozenset[GroupKind]:
        """Every child kind read for some component."""
        return frozenset().union(*self.kinds.values()) if self.kinds else frozenset()


def live_rules(definition: Definition, errors: list[ResolutionError]) -> LiveRules:
    """The definition's live-scale rules; bad entries are reported in ``errors`` and skipped.

    Parsing and the entry rules are ``workload_map.definitions.extensions.live_scale_entries``
    (validation refuses the same entries, so a definition in force reports none).
    """
    kinds, problems = live_scale_entries(definition)
    errors.extend(ResolutionError(message, field=_FIELD) for message in problems)
    return LiveRules(kinds)


def _group_kind(obj: Mapping[str, Any]) -> GroupKind:
    api_version = str(obj.get("apiVersion", ""))
    return (api_version.rpartition("/")[0] if "/" in api_version else "", str(obj.get("kind", "")))


def _live_children(rules: LiveRules, objects: Sequence[Mapping[str, Any]]) -> Iterator[Mapping[str, Any]]:
    wanted = rules.wanted
    for obj in objects:
        meta = obj.get("metadata")
        if _group_kind(obj) in wanted and not (isinstance(meta, Mapping) and meta.get("deletionTimestamp")):
            yield obj


def live_desired(definition: Definition, objects: Sequence[Mapping[str, Any]], attributor: Attributor,
                 errors: list[ResolutionError]) -> dict[str, dict[str, int]]:
    """Desired pods from live children: component name -> instance id -> pods.

    Args:
        definition: the workload's definition (its ``live-scale`` annotation).
        objects: the workload's descendants (the children are among them).
        attributor: the workload's pod attributor (places the stand-in pods).
        errors: receives bad annotation entries and unreadable child replica counts.

    Returns:
        Only instances with at least one live child placed in them appear.
    """
    rules = live_rules(definition, errors)
    out: dict[str, dict[str, int]] = {}
    if not rules.kinds:
        return out
    for child in _live_children(rules, objects):
        kind = _group_kind(child)
        try:
            stand_ins = READERS[kind](child)
        except ValueError as exc:
            meta = child.get("metadata") or {}
            errors.append(ResolutionError(f"{kind[1]} {meta.get('namespace')}/{meta.get('name')}: {exc}",
                                          field=_FIELD))
            continue
        for pod, pods in stand_ins:
            placed = attributor.place(Document(pod))
            if placed is not None and kind in rules.kinds.get(placed[0], ()):
                instances = out.setdefault(placed[0], {})
                instances[placed[1]] = instances.get(placed[1], 0) + pods
    return out


__all__ = ["LIVE_SCALE_ANNOTATION", "LiveRules", "READERS", "live_desired", "live_rules"]
