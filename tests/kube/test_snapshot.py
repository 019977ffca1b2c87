"""SnapshotReader: loading files (multi-doc YAML, List dumps, JSON, directories) and reads."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from workload_map.gvk import GVK
from workload_map.kube.reader import Reader
from workload_map.kube.snapshot import SnapshotError, SnapshotReader, load_objects, snapshot_uid

JOBSET = GVK("jobset.x-k8s.io", "v1alpha2", "JobSet")
JOB = GVK("batch", "v1", "Job")
POD = GVK("", "v1", "Pod")

MULTI_DOC = """
apiVersion: jobset.x-k8s.io/v1alpha2
kind: JobSet
metadata: {name: js, namespace: team, uid: js-uid}
---
apiVersion: batch/v1
kind: Job
metadata:
  name: js-w-0
  namespace: team
  uid: job-uid
  ownerReferences: [{apiVersion: jobset.x-k8s.io/v1alpha2, kind: JobSet, name: js, uid: js-uid, controller: true}]
---
# an empty document is skipped
"""

LIST_DUMP = """
apiVersion: v1
kind: List
items:
- apiVersion: v1
  kind: Pod
  metadata:
    name: js-w-0-0
    namespace: team
    uid: pod-uid
    labels: {jobset.sigs.k8s.io/jobset-name: js}
    managedFields: [{manager: x}]
    ownerReferences: [{apiVersion: batch/v1, kind: Job, name: js-w-0, uid: job-uid, controller: true}]
  spec: {containers: [{name: c, image: i, resources: {limits: {nvidia.com/gpu: "8"}}}]}
  status: {phase: Running, podIP: 1.2.3.4}
metadata: {resourceVersion: ""}
"""


def write(tmp_path: Path, name: str, text: str) -> Path:
    path = tmp_path / name
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text)
    return path


def test_loads_multidoc_and_list_dump_into_one_owner_graph(tmp_path: Path) -> None:
    write(tmp_path, "a/jobset.yaml", MULTI_DOC)
    write(tmp_path, "b/pods.yml", LIST_DUMP)
    write(tmp_path, "README.md", "not: loaded")
    reader = SnapshotReader.from_paths(tmp_path)
    assert isinstance(reader, Reader)
    assert [o["metadata"]["uid"] for o in reader.descendants("js-uid")] == ["job-uid", "pod-uid"]
    pod = reader.get(POD, "team", "js-w-0-0")
    assert pod["status"] == {"phase": "Running"} and "managedFields" not in pod["metadata"]
    assert pod["spec"]["containers"] == [{"name": "c", "resources": {"limits": {"nvidia.com/gpu": "8"}}}]
    assert reader.root_of(pod)["kind"] == "JobSet"
    assert reader.list(POD, labels={"jobset.sigs.k8s.io/jobset-name": "js"}) == [pod]
    assert reader.is_synced()
    assert reader.state(POD).state == "synced" and reader.state(POD).count == 1
    assert reader.state(GVK("x", "v1", "Nothing")).count == 0


def test_typed_list_and_json(tmp_path: Path) -> None:
    raw = {"kind": "PodList", "apiVersion": "v1", "metadata": {"resourceVersion": "9"},
           "items": [{"metadata": {"name": "p1", "namespace": "n", "uid": "u1"}}]}
    write(tmp_path, "pods.json", json.dumps(raw))
    write(tmp_path, "job.json", json.dumps({"apiVersion": "batch/v1", "kind": "Job",
                                            "metadata": {"name": "j", "namespace": "n"}}))
    reader = SnapshotReader.from_paths(tmp_path / "pods.json", tmp_path / "job.json")
    assert reader.get(POD, "n", "p1")["kind"] == "Pod"
    job = reader.get(JOB, "n", "j")
    assert job["metadata"]["uid"] == snapshot_uid(JOB, "n", "j") and reader.by_uid(job["metadata"]["uid"]) == job


@pytest.mark.parametrize("text, message", [
    ("a: [", "while parsing"),
    ("- 1\n- 2\n", "expected a Kubernetes object"),
    ("apiVersion: v1\nkind: List\nitems: [3]\n", r"items\[0\]"),
])
def test_bad_files_name_the_file(tmp_path: Path, text: str, message: str) -> None:
    path = write(tmp_path, "bad.yaml", text)
    with pytest.raises(SnapshotError, match=message) as info:
        load_objects(path)
    assert "bad.yaml" in str(info.value)


def test_missing_file_and_bad_objects(tmp_path: Path) -> None:
    with pytest.raises(SnapshotError):
        load_objects(tmp_path / "nope.yaml")
    reader = SnapshotReader()
    with pytest.raises(SnapshotError, match="apiVersion"):
        reader.add({"metadata": {"name": "x"}})
    with pytest.raises(SnapshotError, match="metadata.name"):
        reader.add({"apiVersion": "v1", "kind": "Pod", "metadata": {}})


async def test_add_remove_and_events() -> None:
    reader = SnapshotReader()
    queue = reader.subscribe()
    stored = reader.add({"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "p", "namespace": "n", "uid": "u"}})
    assert stored["metadata"]["uid"] == "u" and queue.get_nowait().type == "ADDED"
    assert reader.remove(POD, "n", "p") == stored and queue.get_nowait().type == "DELETED"
    assert reader.remove(POD, "n", "p") is None
    assert reader.states() == {POD: reader.state(POD)}


def test_a_built_reader_indexes_every_object_and_changes_after_it_bump_the_whole_chain(tmp_path: Path) -> None:
    # while a SnapshotReader is filled nobody observes it, so an added object only gets its own
    # version and enters the uid index (no owner-chain walk per object); once built, a change
    # of the pod bumps pod, Job and JobSet, and a subscriber's event names all three
    write(tmp_path, "jobset.yaml", MULTI_DOC)
    write(tmp_path, "pods.yaml", LIST_DUMP)
    reader = SnapshotReader.from_paths(tmp_path)
    assert {uid: reader.by_uid(uid)["kind"] for uid in ("js-uid", "job-uid", "pod-uid")} == {
        "js-uid": "JobSet", "job-uid": "Job", "pod-uid": "Pod"}
    built = {uid: reader.version(uid) for uid in ("js-uid", "job-uid", "pod-uid")}
    assert sorted(built.values()) == [1, 2, 3]  # one version each, in file order
    events: list[tuple[str, tuple[str, ...]]] = []
    reader.add_listener(lambda event: events.append((event.type, event.root_uids)))
    pod = json.loads(json.dumps(reader.get(POD, "team", "js-w-0-0")))
    pod["status"] = {"phase": "Succeeded"}
    reader.add(pod)
    assert events == [("MODIFIED", ("pod-uid", "job-uid", "js-uid"))]
    after = {uid: reader.version(uid) for uid in built}
    assert all(after[uid] > max(built.values()) for uid in built)
    # and an object added later takes the full path too: its Job's and JobSet's versions grow
    second = json.loads(json.dumps(pod))
    second["metadata"].update(name="js-w-0-1", uid="pod-2")
    reader.add(second)
    assert events[-1] == ("ADDED", ("pod-2", "job-uid", "js-uid"))
    assert reader.version("js-uid") > after["js-uid"]
