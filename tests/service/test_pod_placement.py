"""The scheduler view (workload_map.service.pods) over the seed JobSet, in both gang forms."""

from __future__ import annotations

from pathlib import Path

import yaml

from workload_map.paths import default_catalog_dir
from workload_map.definitions.catalog import load_catalog
from workload_map.definitions.registry import DefinitionRegistry
from workload_map.kube.snapshot import SnapshotReader
from workload_map.service.workloads import WorkloadService
from tests.resolution.jobset_objects import NS, RUNNING_STATUS, jobs_and_pods, jobset

JOBSET_FILE = "jobset-x-k8s-io-jobset-v1alpha2.yaml"
# The deprecated form: one gang per replicated job, keyed by the pod's replicatedjob-name label.
POD_GROUPS = {"podGroups": [{"name": "rj", "members": [{
    "componentName": "replicatedjob",
    "groupByKeyPaths": ['.metadata.labels["jobset.sigs.k8s.io/replicatedjob-name"]']}]}]}


def _service(catalog: Path | None = None) -> WorkloadService:
    jobs, pods = jobs_and_pods()
    registry = DefinitionRegistry(load_catalog(catalog or default_catalog_dir()))
    return WorkloadService(registry, SnapshotReader([jobset(status=RUNNING_STATUS), *jobs, *pods]))


def test_pod_group_form_gives_the_jobset_gang_and_its_subgroup() -> None:
    placement = _service().pod_placement(NS, "train-worker-1-0-abcde")
    assert placement is not None
    doc = placement.to_dict()
    assert doc["workload"] == {"group": "jobset.x-k8s.io", "kind": "JobSet", "apiVersion": "jobset.x-k8s.io/v1alpha2",
                                    "namespace": NS, "name": "train", "uid": "uid-js",
                                    "definition": "jobset-x-k8s-io-jobset-v1alpha2", "phase": "Running"}
    assert (doc["component"], doc["instance"]) == ("replicatedjob", "worker")
    assert doc["pod"] == {"namespace": NS, "name": "train-worker-1-0-abcde", "uid": "uid-pod-worker-1",
                          "phase": "Running", "node": "gpu-node-1"}
    # catalog podGroup "jobset" with subgroup replicatedjob; the subtree scale of replicatedjob
    # sums its instances' effective minimum (no minReplicas: replicas): leader 1 + worker 2 = 3,
    # and the group's minMember is the sum of its subgroups: 3.
    (gang,) = doc["gangGroups"]
    assert gang == {"name": "jobset", "form": "podGroup", "minMember": 3,
                    "subGroups": [{"name": "replicatedjob", "minMember": 3}],
                    "subGroup": {"name": "replicatedjob", "minMember": 3}}
    assert doc["pod"] == placement.to_dict(pod_details=True)["pod"]
    assert "phase" not in placement.to_dict(pod_details=False)["pod"]


def test_pod_groups_form_gives_one_gang_per_replicated_job(tmp_path: Path) -> None:
    doc = yaml.safe_load((default_catalog_dir() / JOBSET_FILE).read_text(encoding="utf-8"))
    doc["spec"]["optimizationInstructions"]["gangScheduling"] = POD_GROUPS
    (tmp_path / JOBSET_FILE).write_text(yaml.safe_dump(doc), encoding="utf-8")
    service = _service(tmp_path)
    leader = service.pod_placement(NS, "train-leader-0-0-abcde")
    worker = service.pod_placement(NS, "train-worker-0-0-abcde")
    assert leader is not None and worker is not None
    # key = the label value; minMember = subtree scale of the pod's instance: leader 1, worker 2
    assert [(g["name"], g["form"], g["minMember"], g["key"], g["subGroup"]) for g in leader.to_dict()["gangGroups"]] \
        == [("rj-leader", "podGroups", 1, ["leader"], None)]
    assert [(g["name"], g["minMember"], g["key"]) for g in worker.to_dict()["gangGroups"]] \
        == [("rj-worker", 2, ["worker"])]


def test_pod_index_follows_puts_and_removals() -> None:
    service = _service()
    assert service.pod_placement(NS, "no-such-pod") is None
    assert service.pod_placement("other", "train-worker-1-0-abcde") is None
    store = service.store
    record = store.owner_of_pod_uid("uid-pod-leader-0")
    assert record is not None and record.view.uid == "uid-js"
    store.remove("uid-js")
    assert store.owner_of_pod(NS, "train-leader-0-0-abcde") is None
    assert store.owner_of_pod_uid("uid-pod-leader-0") is None
    store.put(record.entry, record.view)
    again = store.owner_of_pod(NS, "train-leader-0-0-abcde")
    assert again is not None and again.view is record.view
