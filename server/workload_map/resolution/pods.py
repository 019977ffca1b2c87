"""Pod rows and pod attribution: which component, instance and replica a pod belongs to.

Attribution (docs/definition-format.md section 8, the upstream CLI model, plus an explicit
unattributed bucket):

1. A pod belongs to the workload when its **controller** ownerReference chain reaches the
   root object within 6 hops (``workload_map.owners.owner_chain``): through any object given,
   a component or not, pods included (Spark executors owned by the driver pod); never
   across namespaces (a pod in namespace b whose reference carries the uid of a JobSet in
   namespace a is not that JobSet's); an ownerReference cycle is cut at its representative.
   Core ``Pod`` workloads are their own pod.
2. Pod-bearing components are tried root first, then children in definition order. A
   component with a ``componentTypeSelector`` claims the pods it matches (``keyPath``
   equals ``value``, or is non-null without a value; AND every ``matchLabels`` entry); a
   component without one claims every pod only when it is the **sole** pod-bearing
   component. The first claim wins.
3. The instance is the pod's ``componentInstanceSelector.idPath`` value, which must be
   one of the component's instance ids; the replica key is the nearest
   ``replicaSelector.keyPath`` on the component or its ancestors. Both follow the
   single-result rule: exactly one output, neither null nor "".
4. Pods of the workload that no component claims are listed as unattributed with the
   reason.

Pod fields: ``ready`` is the ``Ready`` condition; the not-ready reason takes
``PodScheduled=False`` reason, then ``status.reason``, then ``Ready=False`` reason.
``terminated`` is phase Succeeded or Failed (the pod holds nothing); ``terminating`` is a
pod with ``metadata.deletionTimestamp`` that has not terminated yet: it is no longer a
current replica, but its resources are not free until it is gone (kubernetes.io "Pod
Lifecycle", "Termination of Pods").
"""

from __future__ import annotations

import reprlib
from collections.abc import Mapping, Sequence
from typing import Any

from workload_map.definitions.model import Component, Definition, TypeSelector
from workload_map.errors import JqError
from workload_map.jq import Document, compile_program, stringify
from workload_map.owners import MAX_OWNER_DEPTH, owner_chain
from workload_map.resolution.resources import RequestResult, add_into, effective_pod_requests
from workload_map.resolution.sharing import shared_gpu_requests
from workload_map.resolution.view import PodView, ResolutionError

TERMINAL_PHASES = frozenset({"Succeeded", "Failed"})


def reaches_root(obj: Mapping[str, Any], root_uid: str, by_uid: Mapping[str, Mapping[str, Any]]) -> bool:
    """True when ``obj``'s controller chain (``workload_map.owners.owner_chain``) reaches ``root_uid``.

    Put the root itself in ``by_uid`` so the namespace rule applies to its dependents; a
    chain that ends at an unknown uid equal to ``root_uid`` is accepted unchecked.
    """
    if not root_uid:
        return False
    chain = owner_chain(obj, by_uid.get, MAX_OWNER_DEPTH)
    return root_uid in chain.uids() or chain.dangling == root_uid


def pod_template_requests(spec: Any, annotations: Any) -> RequestResult:
    """Effective requests of a pod (or template): the Kubernetes rule plus shared-GPU annotations.

    Args:
        spec: a PodSpec dict.
        annotations: the pod's or template's ``metadata.annotations`` (KAI / Run:ai
            ``gpu-fraction``, ``gpu-fraction-num-devices``, ``gpu-memory``).

    Returns:
        Requests and errors (quantities and annotations, each naming the field).
    """
    result = effective_pod_requests(spec)
    extra, errors = shared_gpu_requests(annotations, result.requests)
    add_into(result.requests, extra)
    result.errors.extend(errors)
    return result


def pod_view(pod: Mapping[str, Any], errors: list[ResolutionError]) -> PodView:
    """The row of one pod; quantity problems are appended to ``errors``."""
    meta = pod.get("metadata", {})
    status = pod.get("status") or {}
    spec = pod.get("spec") or {}
    conditions = {c.get("type"): c for c in status.get("conditions") or [] if isinstance(c, Mapping)}
    ready = conditions.get("Ready", {}).get("status") == "True"
    name = str(meta.get("name", ""))
    phase = _phase(status.get("phase"), name, errors)
    reason = None
    if not ready:
        scheduled = conditions.get("PodScheduled", {})
        reason = (scheduled.get("reason") if scheduled.get("status") == "False" else None) or status.get(
            "reason") or conditions.get("Ready", {}).get("reason")
        reason = reason if isinstance(reason, str) else None  # a file's {} or 5 is no reason
    result = pod_template_requests(spec, meta.get("annotations"))
    errors.extend(ResolutionError(f"pod {name}: {e}", field="pod") for e in result.errors)
    terminated = phase in TERMINAL_PHASES
    node = spec.get("nodeName")  # a string in the API; anything else (a file's 5) is no node
    return PodView(name=name, namespace=str(meta.get("namespace", "")), uid=str(meta.get("uid", "")),
                   phase=phase, ready=ready, node=node if isinstance(node, str) and node else None, reason=reason,
                   requests=result.requests, terminated=terminated,
                   terminating=not terminated and bool(meta.get("deletionTimestamp")))


def _phase(value: Any, name: str, errors: list[ResolutionError]) -> str:
    """A pod's ``status.phase``: ``Pending`` when absent or empty (a pod not yet scheduled).

    A value that is not a string (a hand-written file's ``true`` or ``{}``; the API server
    serves only the strings of Kubernetes' ``PodPhase``) is ``Unknown`` ("the state of the
    pod could not be obtained"), with an error naming the field, so the pod is counted
    neither running nor finished and no reader of the view meets a non-string phase.
    """
    if isinstance(value, str):
        return value or "Pending"
    if value is None:
        return "Pending"
    errors.append(ResolutionError(f"pod {name}: status.phase {reprlib.repr(value)} is not a string "
                                  f"({type(value).__name__}): read as Unknown", field="pod"))
    return "Unknown"


def single_result(expression: str, doc: Document) -> str:
    """The single-result rule for pod queries (instance id, replica key, group key).

    Raises:
        ValueError: not exactly one output, or it is null or "".
        JqError: evaluation failed.
    """
    outputs = compile_program(expression).all(doc)
    if len(outputs) != 1:
        raise ValueError(f"expected single query result, got {len(outputs)}")
    if outputs[0] is None or outputs[0] == "":
        raise ValueError(f"query result is empty {outputs[0]!r}")
    return stringify(outputs[0])


def type_selector_matches(selector: TypeSelector, doc: Document) -> bool:
    """Does a pod (``doc``) match a componentTypeSelector.

    Raises:
        JqError: the keyPath failed on this pod.
    """
    if selector.match_labels:
        labels = (doc.value.get("metadata") or {}).get("labels") or {}
        if any(labels.get(k) != v for k, v in selector.match_labels):
            return False
    if selector.key_path:
        outputs = compile_program(selector.key_path).all(doc)
        if selector.value is not None:
            return any(o == selector.value for o in outputs)
        return any(o is not None for o in outputs)
    return True


class Attributor:
    """Assigns pods to (component, instance, replica key) for one workload.

    Args:
        definition: the workload's definition.
        instance_ids: component name -> its instance ids (from the workload object).
        errors: receives jq failures of pod selectors (once per field).
    """

    def __init__(self, definition: Definition, instance_ids: Mapping[str, list[str]],
                 errors: list[ResolutionError]) -> None:
        self.definition = definition
        self.instance_ids = instance_ids
        self.errors = errors
        self.leaves = [c for c in definition.components if c.has_pod_definition]
        self._reported: set[str] = set()

    def attribute(self, pod: PodView, doc: Document) -> None:
        """Fill ``pod.component``/``instance``/``replica_key`` or ``unattributed_reason``."""
        component = self._claim(doc)
        if component is None:
            pod.unattributed_reason = "no component selector matched the pod"
            return
        ids = self.instance_ids.get(component.name, [""])
        instance = ""
        selector = component.pod_selector
        if component.instance_id_path and selector is not None and selector.instance_id_path:
            try:
                instance = single_result(selector.instance_id_path, doc)
            except (ValueError, JqError) as exc:
                self._report(component, "podSelector.componentInstanceSelector.idPath", exc)
                pod.unattributed_reason = f"component {component.name}: instance id: {exc}"
                return
            if instance not in ids:
                pod.unattributed_reason = (f"component {component.name}: could not match instance id "
                                           f'"{instance}". existing instance ids {ids}')
                return
        pod.component, pod.instance = component.name, instance
        pod.replica_key = self._replica_key(component, doc)

    def claimant(self, doc: Document) -> Component | None:
        """The pod-bearing component whose type selector claims ``doc`` (rule 2), or None."""
        return self._claim(doc)

    def place(self, doc: Document) -> tuple[str, str] | None:
        """``(component, instance)`` a pod manifest would be attributed to, or None.

        Used for stand-in pods of live children (``workload_map.resolution.livescale``).
        """
        row = PodView(name="", namespace="", uid="", phase="Pending", ready=False, node=None, reason=None,
                      requests={}, terminated=False)
        self.attribute(row, doc)
        return (row.component, row.instance or "") if row.component is not None else None

    def _claim(self, doc: Document) -> Component | None:
        for component in self.leaves:
            selector = component.pod_selector.type_selector if component.pod_selector else None
            if selector is None:
                if len(self.leaves) == 1:
                    return component
                continue
            try:
                if type_selector_matches(selector, doc):
                    return component
            except JqError as exc:
                self._report(component, "podSelector.componentTypeSelector.keyPath", exc)
        return None

    def _replica_key(self, component: Component, doc: Document) -> str | None:
        current: Component | None = component
        while current is not None:
            selector = current.pod_selector
            if selector is not None and selector.replica_key_path:
                try:
                    return single_result(selector.replica_key_path, doc)
                except (ValueError, JqError):
                    return None
            current = self.definition.component(current.owner_ref) if current.owner_ref else None
        return None

    def _report(self, component: Component, field: str, exc: Exception) -> None:
        key = f"{component.name}.{field}"
        if key in self._reported or not isinstance(exc, JqError):
            return
        self._reported.add(key)
        self.errors.append(ResolutionError(exc.reason, component=component.name, field=f"{component.path}.{field}",
                                           expression=exc.expression))


def workload_pods(root: Mapping[str, Any], objects: Sequence[Mapping[str, Any]],
                  pods: Sequence[Mapping[str, Any]]) -> list[Mapping[str, Any]]:
    """Pods among ``pods`` whose controller chain reaches ``root`` (via ``objects`` and ``pods``)."""
    root_uid = str(root.get("metadata", {}).get("uid", ""))
    if root.get("kind") == "Pod" and root.get("apiVersion") == "v1":
        return [root]
    # pods can own objects too (an LWS worker StatefulSet is owned by its leader pod)
    by_uid = {str(o.get("metadata", {}).get("uid", "")): o for o in (*objects, *pods)}
    by_uid[root_uid] = root  # the namespace rule needs the root itself
    return [p for p in pods if root_uid and reaches_root(p, root_uid, by_uid)]
