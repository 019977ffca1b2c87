"""Synthetic clusters: N workloads spread over the catalog types, with their objects and pods.

Every workload is built the way its operator builds it (the shapes of
``tests/fixtures/objects``): the root object with spec and status, the intermediate
objects its controller creates (Jobs, ReplicaSets, StatefulSets, RayClusters, PodCliques,
...) and pods carrying the ownerReferences and labels each catalog definition's pod
selectors read, so every generated pod is attributed to its component and instance.

Pods look like pods read from an API server: full spec (containers with image, command,
env, resources, ports, volume mounts; tolerations; defaults), full status (conditions,
container statuses, IPs), GPUs per pod (``nvidia.com/gpu``, now and then a MIG profile),
bound to a node or unscheduled, in a mix of phases that follows the workload's state
(running, pending, degraded, completed, failed, suspended).

A :class:`Cluster` holds only a small recipe per workload; objects are built on demand
(:meth:`Cluster.build`, :meth:`Cluster.iter_objects`) and are deterministic for a seed,
so a 20,000-workload cluster can be streamed into a ``SnapshotReader`` or a real API
server without keeping 200,000 raw pods in memory.

Usage::

    cluster = generate(5000, seed=1)
    reader = cluster.reader()                 # SnapshotReader over every object
    for wl in cluster.workloads(): ...        # GeneratedWorkload: root, objects, pods

The average is about 10 pods per workload (suspended workloads have none).
"""

from __future__ import annotations

import json
import math
import random
import uuid
from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import Any, Callable

Obj = dict[str, Any]

RUNNING, PENDING, DEGRADED, COMPLETED, FAILED, SUSPENDED = (
    "running", "pending", "degraded", "completed", "failed", "suspended")

TRAINING_STATES = ((RUNNING, 55), (PENDING, 12), (DEGRADED, 4), (COMPLETED, 15), (FAILED, 6), (SUSPENDED, 8))
SERVING_STATES = ((RUNNING, 78), (PENDING, 10), (DEGRADED, 12))
SERVING_SUSPENDABLE = ((RUNNING, 74), (PENDING, 10), (DEGRADED, 10), (SUSPENDED, 6))

TS = "2026-11-19T08:00:00Z"
TS_START = "2026-11-19T08:02:00Z"
TS_END = "2026-11-19T09:40:00Z"

IMAGES = ("nvcr.io/nvidia/pytorch:25.01-py3", "ghcr.io/research/llm-train:2.3", "rayproject/ray-ml:2.41.0-gpu",
          "nvcr.io/nim/meta/llama-3.1-8b-instruct:1.3.3", "vllm/vllm-openai:v0.8.2", "docker.io/milvusdb/milvus:v2.5.4")
GPU_CHOICES = (1, 1, 2, 4, 4, 8, 8)
TEAMS = ("llm", "vision", "speech", "recsys", "research", "platform", "search", "ads")


def _pods_target(rng: random.Random) -> int:
    """Pods of one workload: log-normal around 10 (mean ~11 before suspensions), 1..64."""
    return max(1, min(64, round(rng.lognormvariate(math.log(8.5), 0.7))))


@dataclass(frozen=True, slots=True)
class WorkloadSpec:
    """The recipe of one workload (objects are built from it deterministically)."""

    index: int
    type: str
    namespace: str
    name: str
    state: str
    pods: int
    seed: int


@dataclass(slots=True)
class GeneratedWorkload:
    """One built workload.

    Attributes:
        spec: its recipe.
        root: the root object (the workload as listed).
        objects: every object, parents before children (root first, pods included).
        pods: the pods among ``objects``.
    """

    spec: WorkloadSpec
    root: Obj
    objects: list[Obj] = field(default_factory=list)
    pods: list[Obj] = field(default_factory=list)

    @property
    def identity(self) -> tuple[str | None, str, str, str]:
        """``(namespace, group, kind, name)`` as the GraphQL ``workload`` query takes it."""
        group = self.root["apiVersion"].rpartition("/")[0]
        return (self.root["metadata"].get("namespace"), group, self.root["kind"], self.root["metadata"]["name"])


@dataclass(frozen=True, slots=True)
class WorkloadType:
    """A catalog type the generator can build: definition slug, weight, states, builder."""

    key: str
    definition: str
    weight: float
    states: tuple[tuple[str, int], ...]
    build: Callable[["_Builder"], None]


class _Builder:
    """Builds the objects of one workload (one instance per workload, seeded)."""

    def __init__(self, spec: WorkloadSpec, nodes: int) -> None:
        self.spec = spec
        self.rng = random.Random(spec.seed)
        self.ns = spec.namespace
        self.name = spec.name
        self.state = spec.state
        self.nodes = max(1, nodes)
        self.rv = 1000 + spec.index * 97
        self.objects: list[Obj] = []
        self.pods: list[Obj] = []
        self.gpus = self.rng.choice(GPU_CHOICES)
        self.gpu_resource = "nvidia.com/mig-3g.40gb" if self.rng.random() < 0.04 else "nvidia.com/gpu"
        self.image = self.rng.choice(IMAGES)
        self.team = self.rng.choice(TEAMS)
        self.image_id = f"sha256:{self.rng.getrandbits(256):064x}"
        self._templates: dict[int, str] = {}
        self._keep: list[Obj] = []

    # identity helpers -------------------------------------------------------------------------
    def uid(self) -> str:
        return str(uuid.UUID(int=self.rng.getrandbits(128), version=4))

    def suffix(self, n: int = 5) -> str:
        return "".join(self.rng.choice("bcdfghjklmnpqrstvwxz2456789") for _ in range(n))

    def meta(self, name: str, *, labels: dict[str, str] | None = None, annotations: dict[str, str] | None = None,
             owner: Obj | None = None, generation: bool = True) -> Obj:
        self.rv += 1
        meta: Obj = {"name": name, "namespace": self.ns, "uid": self.uid(), "resourceVersion": str(self.rv)}
        if generation:
            meta["generation"] = 1
        meta["creationTimestamp"] = TS
        if labels:
            meta["labels"] = dict(labels)
        if annotations:
            meta["annotations"] = dict(annotations)
        if owner is not None:
            meta["ownerReferences"] = [owner_ref(owner)]
        return meta

    def add(self, obj: Obj) -> Obj:
        self.objects.append(obj)
        return obj

    # containers and templates -----------------------------------------------------------------
    def resources(self, gpus: int, cpu: int | None = None, memory_gi: int | None = None) -> Obj:
        cpu = cpu if cpu is not None else max(2, gpus * 8)
        memory_gi = memory_gi if memory_gi is not None else max(4, gpus * 64)
        amounts: Obj = {"cpu": str(cpu), "memory": f"{memory_gi}Gi"}
        if gpus:
            amounts[self.gpu_resource] = str(gpus if self.gpu_resource == "nvidia.com/gpu" else 1)
        return {"limits": dict(amounts), "requests": dict(amounts)}

    def container(self, name: str, gpus: int, *, cpu: int | None = None, memory_gi: int | None = None,
                  command: list[str] | None = None, port: int | None = 8080) -> Obj:
        c: Obj = {"name": name, "image": self.image, "command": command or ["python", "-m", "app"],
                  "args": ["--config", f"/etc/{self.name}/config.yaml", f"--role={name}"],
                  "env": [{"name": "NCCL_DEBUG", "value": "WARN"}, {"name": "WORKLOAD", "value": self.name},
                          {"name": "POD_NAME", "valueFrom": {"fieldRef": {"fieldPath": "metadata.name"}}}],
                  "resources": self.resources(gpus, cpu, memory_gi),
                  "volumeMounts": [{"name": "dshm", "mountPath": "/dev/shm"},
                                   {"name": "config", "mountPath": f"/etc/{self.name}"}]}
        if port:
            c["ports"] = [{"name": "http", "containerPort": port, "protocol": "TCP"}]
        return c

    def pod_spec(self, containers: list[Obj], restart: str = "Never") -> Obj:
        return {"containers": containers, "restartPolicy": restart,
                "volumes": [{"name": "dshm", "emptyDir": {"medium": "Memory"}},
                            {"name": "config", "configMap": {"name": f"{self.name}-config"}}],
                "tolerations": [{"key": "nvidia.com/gpu", "operator": "Exists", "effect": "NoSchedule"}]}

    def template(self, containers: list[Obj], labels: dict[str, str] | None = None, restart: str = "Never") -> Obj:
        return {"metadata": {"labels": dict(labels)} if labels else {}, "spec": self.pod_spec(containers, restart)}

    # pods --------------------------------------------------------------------------------------
    def pod_states(self, n: int) -> list[str]:
        """Per-pod states for ``n`` pods of this workload's state."""
        rng, s = self.rng, self.state
        if s == RUNNING:
            return ["running"] * n
        if s == PENDING:
            return [rng.choice(("unscheduled", "unscheduled", "creating", "running")) for _ in range(n)]
        if s == DEGRADED:
            out = ["running"] * n
            for i in rng.sample(range(n), max(1, n // 3)):
                out[i] = rng.choice(("crashloop", "unscheduled", "failed"))
            return out
        if s == COMPLETED:
            return ["succeeded"] * n
        if s == FAILED:
            out = [rng.choice(("succeeded", "failed")) for _ in range(n)]
            out[0] = "failed"
            return out
        return []

    def pod(self, name: str, template: Obj, owner: Obj | None, labels: dict[str, str], state: str, *,
            annotations: dict[str, str] | None = None, generate_name: str | None = None) -> Obj:
        """A pod as the API server returns it, from a template and a state."""
        rng = self.rng
        key = id(template)
        text = self._templates.get(key)
        if text is None:
            text = self._templates[key] = json.dumps(template.get("spec") or {})
            self._keep.append(template)  # keeps id(template) unique while cached
        spec = json.loads(text)  # a fresh tree per pod, as decoding an API response gives
        for c in spec.get("containers", []):
            c.update(imagePullPolicy="IfNotPresent", terminationMessagePath="/dev/termination-log",
                     terminationMessagePolicy="File")
        spec.setdefault("restartPolicy", "Always")
        spec.update(schedulerName="default-scheduler", serviceAccountName="default", serviceAccount="default",
                    terminationGracePeriodSeconds=30, dnsPolicy="ClusterFirst", securityContext={},
                    enableServiceLinks=True, priority=0, preemptionPolicy="PreemptLowerPriority")
        spec["tolerations"] = list(spec.get("tolerations", [])) + [
            {"key": "node.kubernetes.io/not-ready", "operator": "Exists", "effect": "NoExecute",
             "tolerationSeconds": 300},
            {"key": "node.kubernetes.io/unreachable", "operator": "Exists", "effect": "NoExecute",
             "tolerationSeconds": 300}]
        gpu = any(self.gpu_resource in (c.get("resources") or {}).get("requests", {}) for c in spec["containers"])
        meta = self.meta(name, labels=labels, annotations=annotations, owner=owner, generation=False)
        if generate_name:
            meta = {"name": name, "generateName": generate_name, **{k: v for k, v in meta.items() if k != "name"}}
        scheduled = state != "unscheduled"
        if scheduled:
            spec["nodeName"] = (f"gpu-node-{rng.randrange(self.nodes):04d}" if gpu
                                else f"cpu-node-{rng.randrange(max(1, self.nodes // 4)):03d}")
        status = self.pod_status(spec, state)
        pod = {"apiVersion": "v1", "kind": "Pod", "metadata": meta, "spec": spec, "status": status}
        self.objects.append(pod)
        self.pods.append(pod)
        return pod

    def pod_status(self, spec: Obj, state: str) -> Obj:
        rng = self.rng
        names = [c["name"] for c in spec["containers"]]
        if state == "unscheduled":
            return {"phase": "Pending", "qosClass": "Guaranteed", "conditions": [
                {"type": "PodScheduled", "status": "False", "lastProbeTime": None, "lastTransitionTime": TS,
                 "reason": "Unschedulable",
                 "message": f"0/{self.nodes} nodes are available: {self.nodes} Insufficient {self.gpu_resource}. "
                            "preemption: 0/64 nodes are available: 64 No preemption victims found."}]}
        host = f"172.20.{rng.randrange(256)}.{rng.randrange(1, 255)}"
        ip = f"10.{rng.randrange(128, 192)}.{rng.randrange(256)}.{rng.randrange(1, 255)}"
        ready = state == "running"
        phase = {"running": "Running", "crashloop": "Running", "creating": "Pending", "succeeded": "Succeeded",
                 "failed": "Failed"}[state]

        def cond(kind: str, ok: bool, reason: str | None = None) -> Obj:
            c: Obj = {"type": kind, "status": "True" if ok else "False", "lastProbeTime": None,
                      "lastTransitionTime": TS_START}
            if reason and not ok:
                c["reason"] = reason
            return c

        not_ready_reason = {"crashloop": "ContainersNotReady", "creating": "ContainersNotReady",
                            "succeeded": "PodCompleted", "failed": "PodFailed"}.get(state)
        conditions = [cond("PodReadyToStartContainers", state != "creating"), cond("Initialized", True),
                      cond("Ready", ready, not_ready_reason), cond("ContainersReady", ready, not_ready_reason),
                      cond("PodScheduled", True)]
        statuses = []
        for n in names:
            cs: Obj = {"name": n, "image": self.image, "ready": ready, "restartCount": 0, "started": ready,
                       "imageID": self.image_id,
                       "containerID": f"containerd://{rng.getrandbits(256):064x}"}
            if state == "running":
                cs["state"] = {"running": {"startedAt": TS_START}}
            elif state == "crashloop":
                cs.update(restartCount=rng.randrange(3, 40), state={"waiting": {
                    "reason": "CrashLoopBackOff", "message": "back-off 5m0s restarting failed container"}})
            elif state == "creating":
                cs.pop("containerID")
                cs["state"] = {"waiting": {"reason": "ContainerCreating"}}
            else:
                code = 0 if state == "succeeded" else 1
                cs["state"] = {"terminated": {"exitCode": code, "reason": "Completed" if code == 0 else "Error",
                                              "startedAt": TS_START, "finishedAt": TS_END}}
            statuses.append(cs)
        return {"phase": phase, "qosClass": "Guaranteed", "hostIP": host, "hostIPs": [{"ip": host}], "podIP": ip,
                "podIPs": [{"ip": ip}], "startTime": TS_START, "conditions": conditions,
                "containerStatuses": statuses}

    # shared controller shapes -----------------------------------------------------------------
    def counts(self, states: list[str]) -> dict[str, int]:
        return {"ready": sum(s == "running" for s in states),
                "active": sum(s in ("running", "crashloop", "creating", "unscheduled") for s in states),
                "succeeded": sum(s == "succeeded" for s in states), "failed": sum(s == "failed" for s in states)}

    def job(self, name: str, template: Obj, n_pods: int, *, owner: Obj | None, labels: dict[str, str],
            pod_labels: dict[str, str] | None = None, annotations: dict[str, str] | None = None,
            indexed: bool = False, pod_states: list[str] | None = None, root: bool = False,
            suspended: bool = False) -> Obj:
        """A batch/v1 Job and its pods (labels as the Job controller stamps them)."""
        job: Obj = {"apiVersion": "batch/v1", "kind": "Job",
                    "metadata": self.meta(name, labels=labels, annotations=annotations, owner=owner), "spec": {}}
        uid = job["metadata"]["uid"]
        ctl = {"batch.kubernetes.io/controller-uid": uid, "batch.kubernetes.io/job-name": name,
               "controller-uid": uid, "job-name": name}
        tpl_labels = {**(template.get("metadata") or {}).get("labels", {}), **labels, **(pod_labels or {}), **ctl}
        tpl = {"metadata": {"labels": tpl_labels}, "spec": template["spec"]}
        job["spec"] = {"backoffLimit": 0 if indexed else 6, "completionMode": "Indexed" if indexed else "NonIndexed",
                       "parallelism": max(1, n_pods), "completions": max(1, n_pods), "suspend": suspended,
                       "selector": {"matchLabels": {"batch.kubernetes.io/controller-uid": uid}}, "template": tpl}
        self.add(job)
        states = pod_states if pod_states is not None else self.pod_states(n_pods)
        for i, st in enumerate(states):
            extra = {"batch.kubernetes.io/job-completion-index": str(i)} if indexed else {}
            gen = f"{name}-{i}-" if indexed else f"{name}-"
            self.pod(f"{gen}{self.suffix()}", tpl, job, {**tpl_labels, **extra}, st, annotations=extra or None,
                     generate_name=gen)
        c = self.counts(states)
        status: Obj = {"active": c["active"], "ready": c["ready"], "succeeded": c["succeeded"], "failed": c["failed"],
                       "terminating": 0, "uncountedTerminatedPods": {}}
        if states:
            status["startTime"] = TS_START
        conds = []
        if suspended:
            conds.append({"type": "Suspended", "status": "True", "reason": "JobSuspended", "message": "Job suspended",
                          "lastProbeTime": TS, "lastTransitionTime": TS})
        elif states and c["failed"] and self.state == FAILED:
            conds += [{"type": "FailureTarget", "status": "True", "reason": "BackoffLimitExceeded",
                       "message": "Job has reached the specified backoff limit", "lastProbeTime": TS_END,
                       "lastTransitionTime": TS_END},
                      {"type": "Failed", "status": "True", "reason": "BackoffLimitExceeded",
                       "message": "Job has reached the specified backoff limit", "lastProbeTime": TS_END,
                       "lastTransitionTime": TS_END}]
        elif states and c["succeeded"] == len(states):
            conds += [{"type": "SuccessCriteriaMet", "status": "True", "reason": "CompletionsReached",
                       "message": "Reached expected number of succeeded pods", "lastProbeTime": TS_END,
                       "lastTransitionTime": TS_END},
                      {"type": "Complete", "status": "True", "reason": "CompletionsReached",
                       "message": "Reached expected number of succeeded pods", "lastProbeTime": TS_END,
                       "lastTransitionTime": TS_END}]
            status["completionTime"] = TS_END
        if conds:
            status["conditions"] = conds
        job["status"] = status
        return job

    def replicaset(self, name: str, template: Obj, states: list[str], *, owner: Obj | None,
                   labels: dict[str, str], standalone: bool = False) -> Obj:
        """An apps/v1 ReplicaSet (``<name>-<hash>`` under a Deployment, else ``name``) and its pods."""
        h = self.suffix(10)
        sel = {**labels, "pod-template-hash": h}
        tpl = {"metadata": {"labels": {**(template.get("metadata") or {}).get("labels", {}), **sel}},
               "spec": template["spec"]}
        rs_name = name if standalone else f"{name}-{h}"
        rs = self.add({"apiVersion": "apps/v1", "kind": "ReplicaSet",
                       "metadata": self.meta(rs_name, labels=sel, owner=owner,
                                             annotations={"deployment.kubernetes.io/revision": "1"}),
                       "spec": {"replicas": len(states), "selector": {"matchLabels": sel}, "template": tpl}})
        for st in states:
            self.pod(f"{rs_name}-{self.suffix()}", tpl, rs, tpl["metadata"]["labels"], st,
                     generate_name=f"{rs_name}-")
        c = self.counts(states)
        rs["status"] = {"replicas": len(states), "fullyLabeledReplicas": len(states), "readyReplicas": c["ready"],
                        "availableReplicas": c["ready"], "observedGeneration": 1}
        return rs

    def deployment(self, name: str, template: Obj, states: list[str], *, owner: Obj | None,
                   labels: dict[str, str], extra_labels: dict[str, str] | None = None) -> Obj:
        """An apps/v1 Deployment, its ReplicaSet and pods."""
        sel = dict(labels)
        tpl = {"metadata": {"labels": {**(template.get("metadata") or {}).get("labels", {}), **sel}},
               "spec": template["spec"]}
        dep = self.add({"apiVersion": "apps/v1", "kind": "Deployment",
                        "metadata": self.meta(name, labels={**sel, **(extra_labels or {})}, owner=owner,
                                              annotations={"deployment.kubernetes.io/revision": "1"}),
                        "spec": {"replicas": len(states), "selector": {"matchLabels": sel}, "template": tpl,
                                 "strategy": {"type": "RollingUpdate", "rollingUpdate": {
                                     "maxUnavailable": "25%", "maxSurge": "25%"}},
                                 "revisionHistoryLimit": 10, "progressDeadlineSeconds": 600}})
        self.replicaset(name, tpl, states, owner=dep, labels=sel)
        c = self.counts(states)
        ok = c["ready"] >= len(states)
        dep["status"] = {
            "observedGeneration": 1, "replicas": len(states), "updatedReplicas": len(states),
            "readyReplicas": c["ready"], "availableReplicas": c["ready"],
            "unavailableReplicas": len(states) - c["ready"],
            "conditions": [
                {"type": "Available", "status": "True" if c["ready"] else "False",
                 "reason": "MinimumReplicasAvailable" if c["ready"] else "MinimumReplicasUnavailable",
                 "message": "Deployment has minimum availability.", "lastUpdateTime": TS_START,
                 "lastTransitionTime": TS_START},
                {"type": "Progressing", "status": "True",
                 "reason": "NewReplicaSetAvailable" if ok else "ReplicaSetUpdated",
                 "message": f'ReplicaSet "{name}" has successfully progressed.', "lastUpdateTime": TS_START,
                 "lastTransitionTime": TS}]}
        return dep

    def statefulset(self, name: str, template: Obj, states: list[str], *, owner: Obj | None,
                    labels: dict[str, str], pod_labels: Callable[[int], dict[str, str]] | None = None,
                    annotations: dict[str, str] | None = None, pod_owner_hook: Callable[[Obj, int], None] | None = None
                    ) -> Obj:
        """An apps/v1 StatefulSet and its ordinal pods."""
        rev = f"{name}-{self.suffix(10)}"
        tpl = {"metadata": {"labels": {**(template.get("metadata") or {}).get("labels", {}), **labels}},
               "spec": template["spec"]}
        sts = self.add({"apiVersion": "apps/v1", "kind": "StatefulSet",
                        "metadata": self.meta(name, labels=labels, owner=owner, annotations=annotations),
                        "spec": {"replicas": len(states), "serviceName": name, "podManagementPolicy": "Parallel",
                                 "selector": {"matchLabels": labels}, "template": tpl,
                                 "updateStrategy": {"type": "RollingUpdate"}}})
        for i, st in enumerate(states):
            pl = {**tpl["metadata"]["labels"], "apps.kubernetes.io/pod-index": str(i),
                  "controller-revision-hash": rev, "statefulset.kubernetes.io/pod-name": f"{name}-{i}",
                  **(pod_labels(i) if pod_labels else {})}
            pod = self.pod(f"{name}-{i}", tpl, sts, pl, st)
            if pod_owner_hook:
                pod_owner_hook(pod, i)
        c = self.counts(states)
        sts["status"] = {"observedGeneration": 1, "replicas": len(states), "readyReplicas": c["ready"],
                         "currentReplicas": len(states), "updatedReplicas": len(states),
                         "availableReplicas": c["ready"], "currentRevision": rev, "updateRevision": rev,
                         "collisionCount": 0}
        return sts

    def root(self, api_version: str, kind: str, spec: Obj, *, labels: dict[str, str] | None = None,
             annotations: dict[str, str] | None = None) -> Obj:
        return self.add({"apiVersion": api_version, "kind": kind,
                         "metadata": self.meta(self.name, labels={"team": self.team, **(labels or {})},
                                               annotations=annotations), "spec": spec})

    def split(self, total: int, parts: int) -> list[int]:
        """``total`` pods over ``parts`` groups (each at least 1)."""
        parts = max(1, min(parts, total))
        base = [total // parts] * parts
        for i in range(total - sum(base)):
            base[i] += 1
        return base


def condition(kind: str, ok: bool = True, reason: str = "", message: str = "") -> Obj:
    """A status condition in the common shape."""
    return {"type": kind, "status": "True" if ok else "False", "reason": reason or kind,
            "message": message or f"{kind} is {'true' if ok else 'false'}", "lastUpdateTime": TS_START,
            "lastTransitionTime": TS_START}


def owner_ref(owner: Obj) -> Obj:
    """The controller ownerReference pointing at ``owner``."""
    return {"apiVersion": owner["apiVersion"], "kind": owner["kind"], "name": owner["metadata"]["name"],
            "uid": owner["metadata"]["uid"], "controller": True, "blockOwnerDeletion": True}


# ---------------------------------------------------------------------------------------------
# one builder per catalog type


def _jobset(b: _Builder) -> None:
    n = b.spec.pods
    suspended = b.state == SUSPENDED
    workers = max(1, n - 1)
    parallelism = 2 if workers >= 8 and workers % 2 == 0 and b.rng.random() < 0.5 else 1
    rj = [("leader", 1, 1), ("worker", workers // parallelism, parallelism)]
    lead = b.container("leader", b.gpus, command=["torchrun"])
    work = b.container("worker", b.gpus, command=["torchrun"])
    spec_rj = [{"name": name, "groupName": "default", "replicas": replicas, "template": {"spec": {
        "backoffLimit": 0, "completionMode": "Indexed", "parallelism": par, "completions": par,
        "template": b.template([c], restart="Never")}}} for (name, replicas, par), c in zip(rj, (lead, work))]
    js = b.root("jobset.x-k8s.io/v1alpha2", "JobSet", {
        "suspend": suspended, "network": {"enableDNSHostnames": True, "publishNotReadyAddresses": True},
        "replicatedJobs": spec_rj, "startupPolicy": {"startupPolicyOrder": "AnyOrder"},
        "successPolicy": {"operator": "All"}, "failurePolicy": {"maxRestarts": 0, "restartStrategy": "Recreate"}})
    total = sum(r * p for _, r, p in rj)
    states = b.pod_states(total)
    statuses, pos, global_index = [], 0, 0
    for (rj_name, replicas, par), tpl_src in zip(rj, spec_rj):
        ready = 0
        for i in range(replicas):
            labels = {"jobset.sigs.k8s.io/jobset-name": b.name, "jobset.sigs.k8s.io/replicatedjob-name": rj_name,
                      "jobset.sigs.k8s.io/replicatedjob-replicas": str(replicas),
                      "jobset.sigs.k8s.io/job-index": str(i), "jobset.sigs.k8s.io/job-global-index": str(global_index),
                      "jobset.sigs.k8s.io/global-replicas": str(len(rj)),
                      "jobset.sigs.k8s.io/jobset-uid": js["metadata"]["uid"]}
            global_index += 1
            mine = [] if suspended else states[pos:pos + par]
            pos += par
            b.job(f"{b.name}-{rj_name}-{i}", tpl_src["template"]["spec"]["template"], par, owner=js, labels=labels,
                  annotations=labels, indexed=True, pod_states=mine, suspended=suspended)
            ready += sum(s == "running" for s in mine)
        statuses.append({"name": rj_name, "active": 0 if suspended else replicas, "ready": ready, "succeeded": 0,
                         "failed": 0, "suspended": replicas if suspended else 0})
    conds = []
    if suspended:
        conds.append(condition("Suspended", True, "SuspendedJobs", "jobset is suspended"))
    elif b.state == COMPLETED:
        conds.append(condition("Completed", True, "AllJobsCompleted", "jobset completed successfully"))
    elif b.state == FAILED:
        conds.append(condition("Failed", True, "FailedJobs", "jobset failed due to a failed job"))
    js["status"] = {"replicatedJobsStatus": statuses, "restarts": 0, **({"conditions": conds} if conds else {})}


def _kubeflow_conditions(b: _Builder, kind: str) -> list[Obj]:
    ns_name = f"{b.ns}/{b.name}"
    out = [condition("Created", True, f"{kind}Created", f"{kind} {ns_name} is created.")]
    if b.state == SUSPENDED:
        out.append(condition("Suspended", True, f"{kind}Suspended", f"{kind} {ns_name} is suspended."))
    elif b.state in (RUNNING, DEGRADED):
        out.append(condition("Running", True, f"{kind}Running", f"{kind} {ns_name} is running."))
    elif b.state == COMPLETED:
        out += [condition("Running", False, f"{kind}Running"),
                condition("Succeeded", True, f"{kind}Succeeded", f"{kind} {ns_name} successfully completed.")]
    elif b.state == FAILED:
        out += [condition("Running", False, f"{kind}Running"),
                condition("Failed", True, f"{kind}Failed", f"{kind} {ns_name} is failed because 1 Worker replica(s) "
                                                          "failed.")]
    return out


def _pytorchjob(b: _Builder) -> None:
    n = b.spec.pods
    workers = max(0, n - 1)
    suspended = b.state == SUSPENDED
    specs = {"Master": {"replicas": 1, "restartPolicy": "OnFailure",
                        "template": b.template([b.container("pytorch", b.gpus, port=23456)], restart="OnFailure")}}
    if workers:
        specs["Worker"] = {"replicas": workers, "restartPolicy": "OnFailure",
                           "template": b.template([b.container("pytorch", b.gpus, port=23456)], restart="OnFailure")}
    spec: Obj = {"nprocPerNode": "auto", "pytorchReplicaSpecs": specs,
                 "runPolicy": {"cleanPodPolicy": "None", "suspend": suspended}}
    if workers >= 4 and b.rng.random() < 0.15:
        spec["elasticPolicy"] = {"minReplicas": max(1, workers // 2), "maxReplicas": workers, "rdzvBackend": "c10d"}
    job = b.root("kubeflow.org/v1", "PyTorchJob", spec)
    states = [] if suspended else b.pod_states(1 + workers)
    for i, st in enumerate(states):
        role, index = ("master", 0) if i == 0 else ("worker", i - 1)
        labels = {"training.kubeflow.org/job-name": b.name, "training.kubeflow.org/operator-name":
                  "pytorchjob-controller", "training.kubeflow.org/replica-type": role,
                  "training.kubeflow.org/replica-index": str(index)}
        if role == "master":
            labels["training.kubeflow.org/job-role"] = "master"
        b.pod(f"{b.name}-{role}-{index}", specs["Master" if role == "master" else "Worker"]["template"], job, labels,
              st)
    job["status"] = {"conditions": _kubeflow_conditions(b, "PyTorchJob"), "replicaStatuses": {
        "Master": {"active": int(bool(states)), "selector": f"training.kubeflow.org/job-name={b.name},"
                   "training.kubeflow.org/replica-type=master"},
        **({"Worker": {"active": max(0, len(states) - 1)}} if workers else {})},
        "lastReconcileTime": TS, "startTime": TS_START}


def _mpijob(b: _Builder) -> None:
    n = b.spec.pods
    workers = max(1, n - 1)
    suspended = b.state == SUSPENDED
    launcher_tpl = b.template([b.container("launcher", 0, cpu=1, memory_gi=2, command=["mpirun"], port=None)],
                              restart="OnFailure")
    worker_tpl = b.template([b.container("worker", b.gpus, port=None, command=["/usr/sbin/sshd", "-De"])])
    job = b.root("kubeflow.org/v2beta1", "MPIJob", {
        "slotsPerWorker": b.gpus, "mpiImplementation": "OpenMPI", "sshAuthMountPath": "/root/.ssh",
        "launcherCreationPolicy": "AtStartup", "runLauncherAsWorker": False,
        "runPolicy": {"cleanPodPolicy": "Running", "suspend": suspended},
        "mpiReplicaSpecs": {"Launcher": {"replicas": 1, "restartPolicy": "OnFailure", "template": launcher_tpl},
                            "Worker": {"replicas": workers, "restartPolicy": "Never", "template": worker_tpl}}})
    states = [] if suspended else b.pod_states(1 + workers)
    base = {"training.kubeflow.org/job-name": b.name, "training.kubeflow.org/operator-name": "mpi-operator"}
    b.job(f"{b.name}-launcher", launcher_tpl, 1, owner=job,
          labels={**base, "training.kubeflow.org/job-role": "launcher"}, pod_states=states[:1], suspended=suspended)
    for i, st in enumerate(states[1:]):
        b.pod(f"{b.name}-worker-{i}", worker_tpl, job, {**base, "training.kubeflow.org/job-role": "worker",
                                                         "training.kubeflow.org/replica-index": str(i)}, st)
    job["status"] = {"conditions": _kubeflow_conditions(b, "MPIJob"),
                     "replicaStatuses": {"Launcher": {"active": int(bool(states))},
                                         "Worker": {"active": max(0, len(states) - 1)}}, "startTime": TS_START}


def _ray_cluster_spec(b: _Builder, workers: int) -> tuple[Obj, list[tuple[str, int]]]:
    groups = b.split(workers, 2 if workers >= 4 else 1) if workers else []
    names = ["gpu-group", "cpu-group"][:len(groups)]
    head = b.template([b.container("ray-head", 0, cpu=4, memory_gi=16, command=["ray", "start", "--head"],
                                   port=6379)], {}, restart="Always")
    spec = {"rayVersion": "2.41.0", "enableInTreeAutoscaling": False,
            "headGroupSpec": {"rayStartParams": {"dashboard-host": "0.0.0.0"}, "serviceType": "ClusterIP",
                              "template": head},
            "workerGroupSpecs": [{"groupName": g, "replicas": r, "minReplicas": 0 if i else min(1, r),
                                  "maxReplicas": max(r, 8), "numOfHosts": 1,
                                  "rayStartParams": {}, "template": b.template(
                                      [b.container("ray-worker", b.gpus if i == 0 else 0, port=None,
                                                   command=["ray", "start"])], restart="Always")}
                                 for i, (g, r) in enumerate(zip(names, groups))]}
    return spec, list(zip(names, groups))


def _ray_pods(b: _Builder, owner: Obj, spec: Obj, groups: list[tuple[str, int]], cluster_name: str,
              extra: dict[str, str] | None = None) -> list[str]:
    total = 1 + sum(r for _, r in groups)
    states = b.pod_states(total)
    base = {"ray.io/cluster": cluster_name, "ray.io/is-ray-node": "yes", "app.kubernetes.io/created-by":
            "kuberay-operator", "app.kubernetes.io/name": "kuberay", **(extra or {})}
    if states:
        b.pod(f"{cluster_name}-head-{b.suffix()}", spec["headGroupSpec"]["template"], owner,
              {**base, "ray.io/node-type": "head", "ray.io/group": "headgroup", "ray.io/identifier":
               f"{cluster_name}-head"}, states[0], generate_name=f"{cluster_name}-head-")
    pos = 1
    for (group, r), wg in zip(groups, spec["workerGroupSpecs"]):
        for st in states[pos:pos + r]:
            gen = f"{cluster_name}-{group}-worker-"
            b.pod(f"{gen}{b.suffix()}", wg["template"], owner, {**base, "ray.io/node-type": "worker",
                                                                "ray.io/group": group}, st, generate_name=gen)
        pos += r
    return states


def _ray_status(b: _Builder, states: list[str]) -> Obj:
    ready = sum(s == "running" for s in states)
    state = {RUNNING: "ready", DEGRADED: "ready", SUSPENDED: "suspended", FAILED: "failed"}.get(b.state)
    status: Obj = {"desiredWorkerReplicas": max(0, len(states) - 1), "availableWorkerReplicas": max(0, ready - 1),
                   "readyWorkerReplicas": max(0, ready - 1), "observedGeneration": 1,
                   "conditions": [condition("HeadPodReady", bool(states) and states[0] == "running", "HeadPodRunningAndReady"),
                                  condition("RayClusterProvisioned", b.state in (RUNNING, DEGRADED),
                                            "AllPodRunningAndReadyFirstTime")]}
    if state:
        status["state"] = state
    return status


def _raycluster(b: _Builder) -> None:
    suspended = b.state == SUSPENDED
    spec, groups = _ray_cluster_spec(b, max(1, b.spec.pods - 1))
    spec["suspend"] = suspended
    rc = b.root("ray.io/v1", "RayCluster", spec)
    states = [] if suspended else _ray_pods(b, rc, spec, groups, b.name)
    rc["status"] = _ray_status(b, states)


def _rayjob(b: _Builder) -> None:
    suspended = b.state == SUSPENDED
    spec, groups = _ray_cluster_spec(b, max(1, b.spec.pods - 2))
    submitter = b.template([b.container("ray-job-submitter", 0, cpu=1, memory_gi=1, port=None,
                                        command=["ray", "job", "submit"])], restart="Never")
    rj = b.root("ray.io/v1", "RayJob", {"entrypoint": "python /home/ray/train.py", "shutdownAfterJobFinishes": True,
                                        "ttlSecondsAfterFinished": 600, "submissionMode": "K8sJobMode",
                                        "suspend": suspended, "rayClusterSpec": spec,
                                        "submitterPodTemplate": submitter})
    cluster_name = f"{b.name}-raycluster-{b.suffix()}"
    states: list[str] = []
    if not suspended:
        rc = b.add({"apiVersion": "ray.io/v1", "kind": "RayCluster",
                    "metadata": b.meta(cluster_name, owner=rj, labels={"ray.io/originated-from-crd": "RayJob",
                                                                       "ray.io/originated-from-cr-name": b.name}),
                    "spec": spec})
        states = _ray_pods(b, rc, spec, groups, cluster_name)
        rc["status"] = _ray_status(b, states)
        sub_states = {COMPLETED: ["succeeded"], FAILED: ["failed"], PENDING: ["creating"]}.get(b.state, ["running"])
        b.job(b.name, submitter, 1, owner=rj, labels={"ray.io/originated-from-crd": "RayJob",
                                                       "ray.io/originated-from-cr-name": b.name},
              pod_states=sub_states)
    deploy = {RUNNING: "Running", DEGRADED: "Running", PENDING: "Initializing", COMPLETED: "Complete",
              FAILED: "Failed", SUSPENDED: "Suspended"}[b.state]
    job_status = {RUNNING: "RUNNING", DEGRADED: "RUNNING", PENDING: "PENDING", COMPLETED: "SUCCEEDED",
                  FAILED: "FAILED", SUSPENDED: ""}[b.state]
    rj["status"] = {"jobDeploymentStatus": deploy, "jobStatus": job_status, "jobId": f"{b.name}-{b.suffix(6)}",
                    "rayClusterName": cluster_name, "startTime": TS_START, "observedGeneration": 1,
                    "rayClusterStatus": _ray_status(b, states)}


def _rayservice(b: _Builder) -> None:
    spec, groups = _ray_cluster_spec(b, max(1, b.spec.pods - 1))
    rs = b.root("ray.io/v1", "RayService", {"serveConfigV2": "applications:\n- name: llm\n  import_path: serve:app\n",
                                            "rayClusterConfig": spec})
    cluster_name = f"{b.name}-raycluster-{b.suffix()}"
    rc = b.add({"apiVersion": "ray.io/v1", "kind": "RayCluster",
                "metadata": b.meta(cluster_name, owner=rs, labels={"ray.io/originated-from-crd": "RayService",
                                                                   "ray.io/originated-from-cr-name": b.name}),
                "spec": spec})
    states = _ray_pods(b, rc, spec, groups, cluster_name, {"ray.io/serve": "true"})
    rc["status"] = _ray_status(b, states)
    ready = b.state == RUNNING
    rs["status"] = {"conditions": [condition("Ready", ready, "NonZeroServeEndpoints" if ready else "Initializing"),
                                   condition("UpgradeInProgress", False, "NoPendingCluster")],
                    "activeServiceStatus": {"rayClusterName": cluster_name}, "observedGeneration": 1,
                    "numServeEndpoints": sum(s == "running" for s in states)}


def _leaderworkerset(b: _Builder) -> None:
    n = b.spec.pods
    size = b.rng.choice((2, 2, 4, 4, 8))
    size = max(1, min(size, n))
    groups = max(1, n // size)
    lws_labels = {"leaderworkerset.sigs.k8s.io/name": b.name}
    leader_tpl = b.template([b.container("leader", b.gpus, command=["vllm", "serve"])], restart="Always")
    worker_tpl = b.template([b.container("worker", b.gpus, command=["ray", "start"], port=None)], restart="Always")
    lws = b.root("leaderworkerset.x-k8s.io/v1", "LeaderWorkerSet", {
        "replicas": groups, "startupPolicy": "LeaderCreated",
        "leaderWorkerTemplate": {"size": size, "restartPolicy": "RecreateGroupOnPodRestart",
                                 "leaderTemplate": leader_tpl, "workerTemplate": worker_tpl},
        "rolloutStrategy": {"type": "RollingUpdate", "rollingUpdateConfiguration": {"maxUnavailable": 1,
                                                                                    "maxSurge": 0}}})
    states = b.pod_states(groups * size)
    leader_states = states[:groups]
    worker_states = states[groups:]
    h = b.suffix(10)

    def leader_labels(i: int) -> dict[str, str]:
        return {**lws_labels, "leaderworkerset.sigs.k8s.io/group-index": str(i),
                "leaderworkerset.sigs.k8s.io/worker-index": "0", "leaderworkerset.sigs.k8s.io/template-revision-hash": h,
                "leaderworkerset.sigs.k8s.io/group-key": f"{b.rng.getrandbits(160):040x}"}

    def worker_sts(leader: Obj, i: int) -> None:
        if size <= 1:
            return
        mine = worker_states[i * (size - 1):(i + 1) * (size - 1)]
        labels = {**lws_labels, "leaderworkerset.sigs.k8s.io/group-index": str(i)}
        b.statefulset(f"{b.name}-{i}", worker_tpl, mine, owner=leader, labels=labels,
                      pod_labels=lambda j, i=i: {"leaderworkerset.sigs.k8s.io/worker-index": str(j + 1),
                                                 "leaderworkerset.sigs.k8s.io/template-revision-hash": h})

    b.statefulset(b.name, leader_tpl, leader_states, owner=lws, labels={**lws_labels,
                  "leaderworkerset.sigs.k8s.io/worker-index": "0"}, pod_labels=leader_labels,
                  annotations={"leaderworkerset.sigs.k8s.io/size": str(size)}, pod_owner_hook=worker_sts)
    # Pods of worker StatefulSets must follow their StatefulSet (parents before children).
    ready_groups = sum(1 for i in range(groups) if leader_states[i] == "running" and all(
        s == "running" for s in worker_states[i * (size - 1):(i + 1) * (size - 1)]))
    lws["status"] = {"replicas": groups, "readyReplicas": ready_groups, "updatedReplicas": groups,
                     "hpaPodSelector": f"leaderworkerset.sigs.k8s.io/name={b.name},"
                                       "leaderworkerset.sigs.k8s.io/worker-index=0",
                     "conditions": [condition("Available", ready_groups == groups, "AllGroupsReady"),
                                    condition("Progressing", ready_groups < groups, "GroupsProgressing")]}


def _deployment(b: _Builder) -> None:
    n = b.spec.pods
    labels = {"app": b.name, "app.kubernetes.io/name": b.name, "app.kubernetes.io/part-of": b.team}
    tpl = b.template([b.container("server", b.gpus if b.rng.random() < 0.6 else 0)], labels, restart="Always")
    states = b.pod_states(n)
    b.deployment(b.name, tpl, states, owner=None, labels=labels, extra_labels={"team": b.team})


def _statefulset(b: _Builder) -> None:
    labels = {"app": b.name, "app.kubernetes.io/name": b.name}
    tpl = b.template([b.container("server", b.gpus if b.rng.random() < 0.5 else 0)], labels, restart="Always")
    sts = b.statefulset(b.name, tpl, b.pod_states(b.spec.pods), owner=None, labels=labels)
    sts["metadata"].setdefault("labels", {})["team"] = b.team


def _replicaset(b: _Builder) -> None:
    labels = {"app": b.name, "team": b.team}
    tpl = b.template([b.container("server", b.gpus if b.rng.random() < 0.5 else 0)], labels, restart="Always")
    b.replicaset(b.name, tpl, b.pod_states(b.spec.pods), owner=None, labels=labels, standalone=True)


def _job(b: _Builder) -> None:
    n = b.spec.pods
    tpl = b.template([b.container("train", b.gpus, port=None)], restart="Never")
    suspended = b.state == SUSPENDED
    b.job(b.name, tpl, n, owner=None, labels={"team": b.team}, indexed=b.rng.random() < 0.5,
          pod_states=[] if suspended else None, suspended=suspended)


def _cronjob(b: _Builder) -> None:
    n = b.spec.pods
    suspended = b.state == SUSPENDED
    tpl = b.template([b.container("eval", b.gpus, port=None)], restart="OnFailure")
    cj = b.root("batch/v1", "CronJob", {"schedule": "0 */6 * * *", "concurrencyPolicy": "Forbid",
                                        "suspend": suspended, "successfulJobsHistoryLimit": 3,
                                        "failedJobsHistoryLimit": 1,
                                        "jobTemplate": {"spec": {"parallelism": n, "completions": n,
                                                                 "template": tpl}}})
    status: Obj = {"lastScheduleTime": TS}
    if b.state in (RUNNING, PENDING, DEGRADED):
        job = b.job(f"{b.name}-29512340", tpl, n, owner=cj, labels={"team": b.team})
        status["active"] = [{"kind": "Job", "namespace": b.ns, "name": job["metadata"]["name"],
                             "uid": job["metadata"]["uid"], "apiVersion": "batch/v1",
                             "resourceVersion": job["metadata"]["resourceVersion"]}]
    elif b.state in (COMPLETED, FAILED):
        b.job(f"{b.name}-29512340", tpl, n, owner=cj, labels={"team": b.team})
        if b.state == COMPLETED:
            status["lastSuccessfulTime"] = TS_END
    cj["status"] = status


def _pod(b: _Builder) -> None:
    tpl = b.template([b.container("notebook", b.rng.choice((0, 1, 1, 2)), command=["jupyter", "lab"])],
                     restart="Always")
    state = {RUNNING: "running", PENDING: "unscheduled", DEGRADED: "crashloop", COMPLETED: "succeeded",
             FAILED: "failed"}.get(b.state, "running")
    b.pod(b.name, tpl, None, {"app": "notebook", "team": b.team, "notebook-name": b.name}, state)


def _inferenceservice(b: _Builder) -> None:
    n = b.spec.pods
    with_transformer = n >= 4 and b.rng.random() < 0.3
    predictors = n - 1 if with_transformer else n
    res = b.resources(b.gpus, memory_gi=max(16, b.gpus * 48))
    isvc = b.root("serving.kserve.io/v1beta1", "InferenceService", {
        "predictor": {"minReplicas": predictors, "maxReplicas": predictors * 2, "model": {
            "modelFormat": {"name": "huggingface"}, "protocolVersion": "v2",
            "storageUri": f"hf://meta-llama/{b.name}", "resources": res}},
        **({"transformer": {"minReplicas": 1, "containers": [b.container("transformer", 0, cpu=2, memory_gi=4)]}}
           if with_transformer else {})},
        annotations={"serving.kserve.io/deploymentMode": "RawDeployment"})
    states = b.pod_states(n)
    container = b.container("kserve-container", b.gpus)
    container["resources"] = res
    parts = [("predictor", predictors, b.template([container], restart="Always"))]
    if with_transformer:
        parts.append(("transformer", 1, b.template([b.container("transformer", 0, cpu=2, memory_gi=4)],
                                                   restart="Always")))
    pos = 0
    for component, count, tpl in parts:
        labels = {"app": f"isvc.{b.name}-{component}", "component": component,
                  "serving.kserve.io/inferenceservice": b.name}
        b.deployment(f"{b.name}-{component}", tpl, states[pos:pos + count], owner=isvc, labels=labels)
        pos += count
    ready = b.state == RUNNING
    isvc["status"] = {"conditions": [condition("IngressReady", True), condition("PredictorReady", ready),
                                     condition("Ready", ready)],
                      "deploymentMode": "RawDeployment", "url": f"http://{b.name}.{b.ns}.svc.cluster.local",
                      "modelStatus": {"states": {"activeModelState": "Loaded" if ready else "Pending",
                                                 "targetModelState": "Loaded"},
                                      "transitionStatus": "UpToDate" if ready else "InProgress"}}


def _knative(b: _Builder) -> None:
    n = b.spec.pods
    rev_name = f"{b.name}-00001"
    annotations = {"autoscaling.knative.dev/min-scale": str(n), "autoscaling.knative.dev/max-scale": str(n * 2)}
    tpl = {"metadata": {"annotations": annotations}, "spec": {"containers": [b.container("user-container", b.gpus)],
                                                             "containerConcurrency": 0, "timeoutSeconds": 300}}
    svc = b.root("serving.knative.dev/v1", "Service", {"template": tpl, "traffic": [
        {"latestRevision": True, "percent": 100}]})
    cfg = b.add({"apiVersion": "serving.knative.dev/v1", "kind": "Configuration",
                 "metadata": b.meta(b.name, owner=svc, labels={"serving.knative.dev/service": b.name}),
                 "spec": {"template": tpl}})
    rev_labels = {"serving.knative.dev/configuration": b.name, "serving.knative.dev/service": b.name,
                  "serving.knative.dev/configurationGeneration": "1"}
    rev = b.add({"apiVersion": "serving.knative.dev/v1", "kind": "Revision",
                 "metadata": b.meta(rev_name, owner=cfg, labels=rev_labels, annotations=annotations),
                 "spec": tpl["spec"]})
    labels = {**rev_labels, "serving.knative.dev/revision": rev_name, "app": rev_name}
    states = b.pod_states(n)
    b.deployment(f"{rev_name}-deployment", {"metadata": {}, "spec": b.pod_spec([b.container("user-container", b.gpus),
                                                                               b.container("queue-proxy", 0, cpu=1,
                                                                                           memory_gi=1, port=8012)],
                                                                              restart="Always")},
                 states, owner=rev, labels=labels)
    for obj in (svc, cfg, rev):
        if b.state == PENDING:
            obj["status"] = {"conditions": [{**condition("Ready"), "status": "Unknown", "reason": "RevisionMissing"}],
                             "latestCreatedRevisionName": rev_name, "observedGeneration": 1}
        else:
            obj["status"] = {"conditions": [condition("Ready", b.state == RUNNING, "RevisionFailed")],
                             "latestCreatedRevisionName": rev_name, "latestReadyRevisionName": rev_name,
                             "observedGeneration": 1}


def _nimservice(b: _Builder) -> None:
    n = b.spec.pods
    res = b.resources(b.gpus, memory_gi=max(32, b.gpus * 64))
    nim = b.root("apps.nvidia.com/v1alpha1", "NIMService", {
        "image": {"repository": "nvcr.io/nim/meta/llama-3.1-8b-instruct", "tag": "1.3.3", "pullPolicy": "IfNotPresent"},
        "authSecret": "ngc-api-secret", "storage": {"nimCache": {"name": f"{b.name}-cache", "profile": ""}},
        "replicas": n, "resources": res, "expose": {"service": {"type": "ClusterIP", "port": 8000}}})
    container = b.container(f"{b.name}-ctr", b.gpus, port=8000)
    container["resources"] = res
    labels = {"app": b.name, "app.kubernetes.io/name": b.name, "app.kubernetes.io/managed-by": "k8s-nim-operator"}
    b.deployment(b.name, b.template([container], restart="Always"), b.pod_states(n), owner=nim, labels=labels)
    state = {RUNNING: "Ready", PENDING: "NotReady", DEGRADED: "NotReady"}.get(b.state, "Ready")
    nim["status"] = {"state": state, "availableReplicas": n if state == "Ready" else 0,
                     "conditions": [condition("NIM_SERVICE_READY", state == "Ready")]}


def _nimcache(b: _Builder) -> None:
    res = {"cpu": "4", "memory": "16Gi"}
    cache = b.root("apps.nvidia.com/v1alpha1", "NIMCache", {
        "source": {"ngc": {"modelPuller": "nvcr.io/nim/meta/llama-3.1-8b-instruct:1.3.3", "pullSecret": "ngc-secret",
                           "authSecret": "ngc-api-secret", "model": {"engine": "tensorrt_llm", "tensorParallelism": "1"}}},
        "storage": {"pvc": {"create": True, "storageClass": "standard", "size": "50Gi", "volumeAccessMode":
                            "ReadWriteOnce"}},
        "resources": res})
    container = b.container("nim-cache-ctr", 0, cpu=4, memory_gi=16, port=None)
    states = {COMPLETED: ["succeeded"], FAILED: ["failed"], PENDING: ["unscheduled"]}.get(b.state, ["running"])
    b.job(f"{b.name}-job", b.template([container], restart="Never"), 1, owner=cache,
          labels={"app": b.name, "app.kubernetes.io/managed-by": "k8s-nim-operator"}, pod_states=states)
    state = {COMPLETED: "Ready", FAILED: "Failed", PENDING: "Pending"}.get(b.state, "InProgress")
    cache["status"] = {"state": state, "pvc": f"{b.name}-pvc",
                       "conditions": [condition("NIM_CACHE_JOB_COMPLETED", state == "Ready")]}


def _milvus(b: _Builder) -> None:
    n = b.spec.pods
    base = {"app.kubernetes.io/name": "milvus", "app.kubernetes.io/instance": b.name,
            "app.kubernetes.io/managed-by": "milvus-operator"}
    if n < 4:
        components: Obj = {"standalone": {"replicas": 1}}
        parts = [("standalone", 1, 0)]
        mode = "standalone"
    else:
        q = max(1, n - 4)
        components = {"proxy": {"replicas": 1}, "mixCoord": {"replicas": 1}, "dataNode": {"replicas": 2},
                      "queryNode": {"replicas": q, "resources": b.resources(1, cpu=8, memory_gi=32)}}
        parts = [("proxy", 1, 0), ("mixcoord", 1, 0), ("datanode", 2, 0), ("querynode", q, 1)]
        mode = "cluster"
    mv = b.root("milvus.io/v1beta1", "Milvus", {"mode": mode, "components": {
        **components, "image": "milvusdb/milvus:v2.5.4", "resources": {"requests": {"cpu": "1", "memory": "4Gi"}}},
        "dependencies": {"etcd": {"inCluster": {"values": {"replicaCount": 1}}},
                         "storage": {"inCluster": {"values": {"mode": "standalone"}}}}})
    states = b.pod_states(sum(c for _, c, _ in parts))
    pos = 0
    for name, count, gpus in parts:
        labels = {**base, "app.kubernetes.io/component": name}
        tpl = b.template([b.container(name, gpus, cpu=8 if gpus else 1, memory_gi=32 if gpus else 4,
                                       command=["milvus", "run", name], port=19530)], restart="Always")
        b.deployment(f"{b.name}-milvus-{name}", tpl, states[pos:pos + count], owner=mv, labels=labels)
        pos += count
    status = {RUNNING: "Healthy", PENDING: "Pending", DEGRADED: "Unhealthy"}[b.state]
    mv["status"] = {"status": status, "observedGeneration": 1,
                    "conditions": [condition("MilvusReady", status == "Healthy", "ReasonMilvusHealthy")]}


def _dynamo(b: _Builder) -> None:
    n = b.spec.pods
    decode = max(1, n - 1)
    services = {"Frontend": {"componentType": "frontend", "replicas": 1,
                             "resources": {"requests": {"cpu": "2", "memory": "4Gi"}}},
                "VllmDecodeWorker": {"componentType": "worker", "replicas": decode,
                                     "resources": {"requests": {"cpu": str(b.gpus * 8), "memory": f"{b.gpus * 32}Gi",
                                                                "gpu": str(b.gpus)},
                                                   "limits": {"gpu": str(b.gpus)}},
                                     "extraPodSpec": {"mainContainer": {"image": b.image,
                                                                        "command": ["python3", "-m", "dynamo.vllm"]}}}}
    dgd = b.root("nvidia.com/v1alpha1", "DynamoGraphDeployment", {"backendFramework": "vllm", "services": services})
    states = b.pod_states(1 + decode)
    pos = 0
    for key, count, gpus in (("Frontend", 1, 0), ("VllmDecodeWorker", decode, b.gpus)):
        dcd = b.add({"apiVersion": "nvidia.com/v1alpha1", "kind": "DynamoComponentDeployment",
                     "metadata": b.meta(f"{b.name}-{key.lower()}", owner=dgd,
                                        labels={"nvidia.com/dynamo-graph-deployment-name": b.name}),
                     "spec": {"serviceName": key, **services[key]},
                     "status": {"conditions": [condition("Available", b.state == RUNNING)]}})
        labels = {"nvidia.com/dynamo-component": key, "nvidia.com/dynamo-graph-deployment-name": b.name,
                  "nvidia.com/dynamo-namespace": f"{b.ns}-{b.name}"}
        c = b.container("main", 0, cpu=2 if not gpus else gpus * 8, memory_gi=4 if not gpus else gpus * 32)
        if gpus:
            c["resources"] = {"requests": {"cpu": str(gpus * 8), "memory": f"{gpus * 32}Gi", "nvidia.com/gpu":
                                           str(gpus)}, "limits": {"nvidia.com/gpu": str(gpus)}}
        b.deployment(f"{b.name}-{key.lower()}", b.template([c], restart="Always"), states[pos:pos + count],
                     owner=dcd, labels=labels)
        pos += count
    state = {RUNNING: "successful", PENDING: "pending", DEGRADED: "pending"}[b.state]
    dgd["status"] = {"state": state, "conditions": [condition("Ready", state == "successful", "all_resources_are_ready")]}


def _podcliqueset(b: _Builder) -> None:
    n = b.spec.pods
    workers = max(1, n - 1)
    cliques = [("frontend", 1, 0), ("worker", workers, b.gpus)]
    tpl_cliques = [{"name": name, "labels": {"grove.io/role": name},
                    "spec": {"roleName": name, "replicas": count, "minAvailable": count,
                             "podSpec": b.pod_spec([b.container(name, gpus)], restart="Always")}}
                   for name, count, gpus in cliques]
    pcs = b.root("grove.io/v1alpha1", "PodCliqueSet", {"replicas": 1, "template": {
        "cliques": tpl_cliques, "cliqueStartupType": "CliqueStartupTypeAnyOrder", "terminationDelay": "4h"}})
    states = b.pod_states(1 + workers)
    pos = 0
    for name, count, _ in cliques:
        pclq_name = f"{b.name}-0-{name}"
        labels = {"app.kubernetes.io/managed-by": "grove-operator", "app.kubernetes.io/part-of": b.name,
                  "grove.io/podcliqueset-replica-index": "0", "grove.io/podclique": pclq_name,
                  "grove.io/podgang": f"{b.name}-0"}
        spec = next(c for c in tpl_cliques if c["name"] == name)["spec"]
        pclq = b.add({"apiVersion": "grove.io/v1alpha1", "kind": "PodClique",
                      "metadata": b.meta(pclq_name, owner=pcs, labels=labels), "spec": spec})
        mine = states[pos:pos + count]
        for st in mine:
            b.pod(f"{pclq_name}-{b.suffix()}", {"spec": spec["podSpec"]}, pclq, labels, st,
                  generate_name=f"{pclq_name}-")
        pos += count
        c = b.counts(mine)
        pclq["status"] = {"replicas": count, "readyReplicas": c["ready"], "scheduledReplicas": count,
                          "observedGeneration": 1}
    available = int(all(s == "running" for s in states))
    pcs["status"] = {"replicas": 1, "availableReplicas": available, "updatedReplicas": 1, "observedGeneration": 1,
                     "conditions": [condition("MinAvailableBreached", not available, "SufficientAvailablePods")]}


TYPES: tuple[WorkloadType, ...] = (
    WorkloadType("jobset", "jobset-x-k8s-io-jobset-v1alpha2", 14, TRAINING_STATES, _jobset),
    WorkloadType("pytorchjob", "kubeflow-org-pytorchjob-v1", 14, TRAINING_STATES, _pytorchjob),
    WorkloadType("mpijob", "kubeflow-org-mpijob-v2beta1", 4, TRAINING_STATES, _mpijob),
    WorkloadType("raycluster", "ray-io-raycluster-v1", 7, SERVING_SUSPENDABLE, _raycluster),
    WorkloadType("rayjob", "ray-io-rayjob-v1", 5, TRAINING_STATES, _rayjob),
    WorkloadType("rayservice", "ray-io-rayservice-v1", 3, SERVING_STATES, _rayservice),
    WorkloadType("leaderworkerset", "leaderworkerset-x-k8s-io-leaderworkerset-v1", 6, SERVING_STATES,
                 _leaderworkerset),
    WorkloadType("deployment", "apps-deployment-v1", 10, SERVING_STATES, _deployment),
    WorkloadType("statefulset", "apps-statefulset-v1", 4, SERVING_STATES, _statefulset),
    WorkloadType("replicaset", "apps-replicaset-v1", 1, SERVING_STATES, _replicaset),
    WorkloadType("job", "batch-job-v1", 9, TRAINING_STATES, _job),
    WorkloadType("cronjob", "batch-cronjob-v1", 2, ((RUNNING, 60), (COMPLETED, 25), (FAILED, 5), (SUSPENDED, 10)),
                 _cronjob),
    WorkloadType("pod", "core-pod-v1", 3, ((RUNNING, 80), (PENDING, 8), (DEGRADED, 4), (COMPLETED, 5), (FAILED, 3)),
                 _pod),
    WorkloadType("inferenceservice", "serving-kserve-io-inferenceservice-v1beta1", 5, SERVING_STATES,
                 _inferenceservice),
    WorkloadType("knative", "serving-knative-dev-service-v1", 2, SERVING_STATES, _knative),
    WorkloadType("nimservice", "apps-nvidia-com-nimservice-v1alpha1", 3, SERVING_STATES, _nimservice),
    WorkloadType("nimcache", "apps-nvidia-com-nimcache-v1alpha1", 2,
                 ((RUNNING, 30), (PENDING, 10), (COMPLETED, 55), (FAILED, 5)), _nimcache),
    WorkloadType("milvus", "milvus-io-milvus-v1beta1", 2, SERVING_STATES, _milvus),
    WorkloadType("dynamo", "nvidia-com-dynamographdeployment-v1alpha1", 2, SERVING_STATES, _dynamo),
    WorkloadType("podcliqueset", "grove-io-podcliqueset-v1alpha1", 2, SERVING_STATES, _podcliqueset),
)
TYPES_BY_KEY = {t.key: t for t in TYPES}

ROOT_KINDS: dict[str, tuple[str, str, str]] = {
    "jobset": ("jobset.x-k8s.io", "v1alpha2", "JobSet"), "pytorchjob": ("kubeflow.org", "v1", "PyTorchJob"),
    "mpijob": ("kubeflow.org", "v2beta1", "MPIJob"), "raycluster": ("ray.io", "v1", "RayCluster"),
    "rayjob": ("ray.io", "v1", "RayJob"), "rayservice": ("ray.io", "v1", "RayService"),
    "leaderworkerset": ("leaderworkerset.x-k8s.io", "v1", "LeaderWorkerSet"),
    "deployment": ("apps", "v1", "Deployment"), "statefulset": ("apps", "v1", "StatefulSet"),
    "replicaset": ("apps", "v1", "ReplicaSet"), "job": ("batch", "v1", "Job"), "cronjob": ("batch", "v1", "CronJob"),
    "pod": ("", "v1", "Pod"), "inferenceservice": ("serving.kserve.io", "v1beta1", "InferenceService"),
    "knative": ("serving.knative.dev", "v1", "Service"), "nimservice": ("apps.nvidia.com", "v1alpha1", "NIMService"),
    "nimcache": ("apps.nvidia.com", "v1alpha1", "NIMCache"), "milvus": ("milvus.io", "v1beta1", "Milvus"),
    "dynamo": ("nvidia.com", "v1alpha1", "DynamoGraphDeployment"),
    "podcliqueset": ("grove.io", "v1alpha1", "PodCliqueSet"),
}
"""Root (group, version, kind) of each type key."""

ONE_POD_TYPES = frozenset({"pod", "nimcache"})


@dataclass(slots=True)
class Cluster:
    """A synthetic cluster: recipes of ``len(specs)`` workloads (objects built on demand).

    Attributes:
        specs: one recipe per workload.
        namespaces: the namespaces used (sorted).
        nodes: number of GPU nodes pods are spread over.
        seed: the generator seed.
    """

    specs: list[WorkloadSpec]
    namespaces: list[str]
    nodes: int
    seed: int

    def __len__(self) -> int:
        return len(self.specs)

    def build(self, spec: WorkloadSpec) -> GeneratedWorkload:
        """Build the objects of one workload (deterministic for its recipe)."""
        b = _Builder(spec, self.nodes)
        TYPES_BY_KEY[spec.type].build(b)
        root = b.objects[0]
        return GeneratedWorkload(spec, root, b.objects, b.pods)

    def workloads(self) -> Iterator[GeneratedWorkload]:
        """Every workload, built one at a time."""
        for spec in self.specs:
            yield self.build(spec)

    def iter_objects(self) -> Iterator[Obj]:
        """Every object of every workload, parents before children."""
        for wl in self.workloads():
            yield from wl.objects

    def reader(self, *, full: bool = False) -> Any:
        """A ``SnapshotReader`` over every object (streamed, raw objects not kept)."""
        from workload_map.kube.snapshot import SnapshotReader

        reader = SnapshotReader(full=full)
        for obj in self.iter_objects():
            reader.add(obj)
        return reader

    def identities(self) -> list[tuple[str | None, str, str, str]]:
        """``(namespace, group, kind, name)`` of every workload (nothing is built)."""
        return [(s.namespace, ROOT_KINDS[s.type][0], ROOT_KINDS[s.type][2], s.name) for s in self.specs]

    def counts(self) -> dict[str, int]:
        """Workloads per type key."""
        out: dict[str, int] = {}
        for s in self.specs:
            out[s.type] = out.get(s.type, 0) + 1
        return dict(sorted(out.items()))


def generate(workloads: int, *, seed: int = 1, types: tuple[str, ...] | None = None,
             pods_per_workload: float | None = None) -> Cluster:
    """Recipes for ``workloads`` workloads spread over the catalog types by weight.

    Args:
        workloads: how many top-level workloads.
        seed: makes everything deterministic.
        types: restrict to these type keys (default: every type in :data:`TYPES`).
        pods_per_workload: scale the pod-count distribution to this mean (default ~10).
    """
    rng = random.Random(seed)
    chosen = [t for t in TYPES if types is None or t.key in types]
    if not chosen:
        raise ValueError(f"no known type among {types}; known: {', '.join(TYPES_BY_KEY)}")
    weights = [t.weight for t in chosen]
    n_ns = max(4, workloads // 50)
    namespaces = [f"{TEAMS[i % len(TEAMS)]}-{i:03d}" for i in range(n_ns)]
    specs = []
    factor = (pods_per_workload / 10.0) if pods_per_workload else 1.0
    # Exactly proportional type counts (largest remainder), shuffled: every type appears
    # even in small clusters, and the mix does not drift with the seed.
    total_w = sum(weights)
    quotas = [workloads * w / total_w for w in weights]
    counts = [int(q) for q in quotas]
    for i in sorted(range(len(chosen)), key=lambda i: quotas[i] - counts[i], reverse=True)[:workloads - sum(counts)]:
        counts[i] += 1
    order = [t for t, c in zip(chosen, counts) for _ in range(c)]
    rng.shuffle(order)
    for index, wtype in enumerate(order):
        states, state_w = zip(*wtype.states)
        state = rng.choices(states, state_w)[0]
        pods = 1 if wtype.key in ONE_POD_TYPES else max(1, round(_pods_target(rng) * factor))
        specs.append(WorkloadSpec(index=index, type=wtype.key, namespace=namespaces[rng.randrange(n_ns)],
                                  name=f"{wtype.key[:10]}-{index:05d}", state=state, pods=pods,
                                  seed=rng.getrandbits(63)))
    nodes = max(8, workloads * 10 // 8)
    return Cluster(specs, sorted(namespaces), nodes, seed)


__all__ = ["Cluster", "GeneratedWorkload", "TYPES", "WorkloadSpec", "generate", "owner_ref"]
