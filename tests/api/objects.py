"""Builders for JobSet workloads (JobSet + one Job per replica + one Pod per Job) as dicts."""

from __future__ import annotations

from typing import Any


def jobset(name: str, namespace: str, roles: dict[str, int], *, gpus: int = 4, node: str | None = "node-a",
           uid_prefix: str = "") -> list[dict[str, Any]]:
    """Objects of one JobSet: ``roles`` maps replicated-job name -> replicas (one pod each).

    Every pod requests ``gpus`` nvidia.com/gpu and is bound to ``node`` (None: unscheduled).
    """
    uid = f"{uid_prefix}{namespace}-{name}"
    container = {"name": "main", "resources": {"requests": {"nvidia.com/gpu": str(gpus)},
                                               "limits": {"nvidia.com/gpu": str(gpus)}}}
    replicated = [{"name": role, "replicas": replicas, "template": {"spec": {
        "parallelism": 1, "completions": 1, "template": {"spec": {"containers": [container]}}}}}
        for role, replicas in roles.items()]
    out: list[dict[str, Any]] = [{"apiVersion": "jobset.x-k8s.io/v1alpha2", "kind": "JobSet",
                                  "metadata": {"name": name, "namespace": namespace, "uid": uid},
                                  "spec": {"replicatedJobs": replicated}}]
    for role, replicas in roles.items():
        for index in range(replicas):
            job, labels = f"{name}-{role}-{index}", {"jobset.sigs.k8s.io/jobset-name": name,
                                                     "jobset.sigs.k8s.io/replicatedjob-name": role}
            out.append({"apiVersion": "batch/v1", "kind": "Job", "metadata": {
                "name": job, "namespace": namespace, "uid": f"{uid}-{job}", "labels": labels,
                "ownerReferences": [{"apiVersion": "jobset.x-k8s.io/v1alpha2", "kind": "JobSet", "name": name,
                                     "uid": uid, "controller": True}]}, "spec": {"parallelism": 1}})
            spec: dict[str, Any] = {"containers": [container]}
            if node:
                spec["nodeName"] = node
            out.append({"apiVersion": "v1", "kind": "Pod", "metadata": {
                "name": f"{job}-0", "namespace": namespace, "uid": f"{uid}-{job}-pod", "labels": labels,
                "ownerReferences": [{"apiVersion": "batch/v1", "kind": "Job", "name": job, "uid": f"{uid}-{job}",
                                     "controller": True}]}, "spec": spec, "status": {"phase": "Pending"}})
    return out


def running(obj: dict[str, Any]) -> dict[str, Any]:
    """A copy of a JobSet with every replicated job reporting ready pods (phase Running).

    The resourceVersion is bumped, as the API server would (the store ignores same-version updates).
    """
    jobs = [{"name": r["name"], "ready": r.get("replicas", 1), "active": r.get("replicas", 1)}
            for r in obj["spec"]["replicatedJobs"]]
    meta = dict(obj.get("metadata") or {})
    meta["resourceVersion"] = str(int(meta.get("resourceVersion") or 0) + 1000)
    return {**obj, "metadata": meta, "status": {"replicatedJobsStatus": jobs}}
