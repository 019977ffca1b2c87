"""Hand-written seed JobSet objects (leader 1 replica + worker 2 replicas, 4 GPUs per pod)."""

from __future__ import annotations

import copy
from typing import Any

NS = "ml"


def jobset(*, parallelism: int | None = None, status: dict[str, Any] | None = None,
           suspend: bool | None = None) -> dict[str, Any]:
    """The seed JobSet; ``parallelism`` None leaves it out (Kubernetes default 1)."""
    def job(gpu_in: str) -> dict[str, Any]:
        spec: dict[str, Any] = {"template": {"spec": {"restartPolicy": "Never", "containers": [
            {"name": "main", "image": "trainer:1", "resources": {gpu_in: {"nvidia.com/gpu": "4"}}}]}}}
        if parallelism is not None:
            spec["parallelism"] = parallelism
        return spec
    obj: dict[str, Any] = {
        "apiVersion": "jobset.x-k8s.io/v1alpha2", "kind": "JobSet",
        "metadata": {"name": "train", "namespace": NS, "uid": "uid-js", "resourceVersion": "7",
                     "creationTimestamp": "2026-11-29T10:00:00Z"},
        "spec": {"replicatedJobs": [{"name": "leader", "replicas": 1, "template": {"spec": job("limits")}},
                                    {"name": "worker", "replicas": 2, "template": {"spec": job("requests")}}]},
    }
    if suspend is not None:
        obj["spec"]["suspend"] = suspend
    if status is not None:
        obj["status"] = status
    return obj


def jobs_and_pods(*, phase: str = "Running", ready: bool = True, node: str | None = "gpu-node-1"
                  ) -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
    """Three Jobs owned by the JobSet and one pod per Job."""
    jobs, pods = [], []
    for rj, count in (("leader", 1), ("worker", 2)):
        for index in range(count):
            name = f"train-{rj}-{index}"
            jobs.append({"apiVersion": "batch/v1", "kind": "Job", "metadata": {
                "name": name, "namespace": NS, "uid": f"uid-job-{rj}-{index}",
                "labels": {"jobset.sigs.k8s.io/replicatedjob-name": rj, "jobset.sigs.k8s.io/jobset-name": "train"},
                "ownerReferences": [{"apiVersion": "jobset.x-k8s.io/v1alpha2", "kind": "JobSet", "name": "train",
                                     "uid": "uid-js", "controller": True}]}})
            status: dict[str, Any] = {"phase": phase, "conditions": [
                {"type": "PodScheduled", "status": "True" if node else "False",
                 **({} if node else {"reason": "Unschedulable"})},
                {"type": "Ready", "status": "True" if ready else "False"}]}
            pods.append({"apiVersion": "v1", "kind": "Pod", "metadata": {
                "name": f"{name}-0-abcde", "namespace": NS, "uid": f"uid-pod-{rj}-{index}",
                "labels": {"jobset.sigs.k8s.io/replicatedjob-name": rj, "jobset.sigs.k8s.io/jobset-name": "train",
                           "batch.kubernetes.io/job-name": name},
                "ownerReferences": [{"apiVersion": "batch/v1", "kind": "Job", "name": name,
                                     "uid": f"uid-job-{rj}-{index}", "controller": True}]},
                "spec": {**({"nodeName": node} if node else {}), "containers": [
                    {"name": "main", "resources": {"requests": {"nvidia.com/gpu": "4"},
                                                   "limits": {"nvidia.com/gpu": "4"}}}]},
                "status": status})
    return jobs, copy.deepcopy(pods)


RUNNING_STATUS = {"replicatedJobsStatus": [{"name": "leader", "active": 1, "ready": 1, "failed": 0, "succeeded": 0},
                                           {"name": "worker", "active": 2, "ready": 2, "failed": 0, "succeeded": 0}]}
