"""Objects of the wrong shape and text a cluster cannot hold, found by the adversarial check.

Before: a Pod with ``spec: "x"`` (or ``spec.resourceClaims: 5``, ``ownerReferences: 5``, a
namespace ``5``) raised inside a reader: ``describe -f`` lost every object of the file with
a traceback, and ``serve --snapshot`` stayed not ready with nothing in its log (a namespace
``5`` failed the sort of the view store in a callback). A lone surrogate in a name broke
the UTF-8 encoding of every REST answer and ``/metrics``. Now the shape is checked where
objects enter (``kube.store.shape_problem``) and a lone surrogate reads as U+FFFD, as the
API server's decoder reads it.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from workload_map.gvk import GVK
from workload_map.kube.documents import read_documents
from workload_map.kube.graph import ObjectGraph
from workload_map.kube.snapshot import SnapshotError, SnapshotReader
from workload_map.kube.store import shape_problem
from workload_map.resolution.pods import pod_view

POD = GVK("", "v1", "Pod")


def pod(name: str, **fields: Any) -> dict[str, Any]:
    meta = {"name": name, "namespace": "team", "uid": f"uid-{name}"}
    meta.update(fields.pop("metadata", {}))
    return {"apiVersion": "v1", "kind": "Pod", "metadata": meta, **fields}


@pytest.mark.parametrize(("bad", "problem"), [
    (pod("bad", spec="x"), "spec is str, not an object"),
    (pod("bad", spec=[1]), "spec is list, not an object"),
    (pod("bad", status=True), "status is bool, not an object"),
    (pod("bad", metadata={"namespace": 5}), "metadata.namespace is int, not a string"),
    (pod("bad", metadata={"uid": ["u"]}), "metadata.uid is list, not a string"),
    (pod("bad", metadata={"ownerReferences": 5}), "metadata.ownerReferences is int, not a list"),
    ({"apiVersion": "v1", "kind": "Pod", "metadata": {"name": 12}}, "metadata.name is int, not a string"),
    ({"apiVersion": "v1", "kind": "Pod", "metadata": "m"}, "metadata is str, not an object"),
])
def test_each_shape_is_named_reported_and_the_other_objects_kept(tmp_path: Path, bad: dict[str, Any],
                                                                   problem: str) -> None:
    assert shape_problem(bad) == problem
    path = tmp_path / "pods.json"
    path.write_text("\n".join(json.dumps(o) for o in (pod("first"), bad, pod("last"))))
    objects, problems = read_documents(path)
    assert [o["metadata"]["name"] for o in objects] == ["first", "last"]
    assert len(problems) == 1 and problems[0].startswith(f"{path} (object 2): Pod") and problems[0].endswith(problem)
    # the strict reader of `serve --snapshot` fails naming it
    with pytest.raises(SnapshotError, match=problem):
        SnapshotReader([pod("first"), bad])


def test_the_live_store_skips_a_malformed_object_keeps_its_last_version_and_warns_once(
        caplog: pytest.LogCaptureFixture) -> None:
    graph = ObjectGraph()
    graph.apply(POD, "ADDED", pod("p", spec={"nodeName": "n1"}))
    for _ in range(3):
        graph.apply(POD, "MODIFIED", pod("p", spec="broken", metadata={"resourceVersion": "2"}))
    kept = graph.get(POD, "team", "p")
    assert kept is not None and kept["spec"] == {"nodeName": "n1"}
    warned = [r.getMessage() for r in caplog.records if "not cached" in r.getMessage()]
    assert warned == ["Pod team/p not cached: spec is str, not an object"]


def test_good_shapes_pass() -> None:
    assert shape_problem(pod("ok", spec={}, status=None, metadata={"ownerReferences": [], "namespace": None})) is None
    assert shape_problem({"apiVersion": "v1", "kind": "Node", "metadata": {"name": "n"}}) is None


def test_a_lone_surrogate_reads_as_the_replacement_character(tmp_path: Path) -> None:
    # Go's encoding/json (the API server's decoder) replaces an unpaired surrogate escape with
    # U+FFFD; a valid pair stays the character it encodes
    text = ('{"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "p\\ud800", "namespace": "team", '
            '"labels": {"k\\udc00": "\\ud83d\\ude00"}}}')
    for name, content in (("a.json", text), ("b.yaml", "---\n" + text + "\n---\n")):
        path = tmp_path / name
        path.write_text(content)
        (obj,), problems = read_documents(path)
        assert problems == []
        assert obj["metadata"]["name"] == "p\ufffd", name
        assert obj["metadata"]["labels"] == {"k\ufffd": "\U0001F600"}, name
        json.dumps(obj, ensure_ascii=False).encode("utf-8")  # valid UTF-8 now
    # a YAML double-quoted escape of one: libyaml refuses it, reported for that document
    (tmp_path / "c.yaml").write_text('apiVersion: v1\nkind: Pod\nmetadata: {name: "p\\ud800", namespace: team}\n'
                                     "---\napiVersion: v1\nkind: Pod\nmetadata: {name: kept, namespace: team}\n")
    objects, problems = read_documents(tmp_path / "c.yaml")
    assert [o["metadata"]["name"] for o in objects] == ["kept"]
    assert len(problems) == 1 and "invalid Unicode character escape code" in problems[0]
    # the streaming JSON reader of `serve --snapshot` too (libyaml itself refuses such escapes:
    # a YAML error naming the line)
    reader = SnapshotReader.from_paths(tmp_path / "a.json")
    assert reader.get(POD, "team", "p\ufffd") is not None


def test_a_node_name_that_is_not_a_string_is_no_node() -> None:
    # before: one pod with nodeName 5 failed the sort of a role's node names (TypeError)
    assert pod_view(pod("p", spec={"nodeName": 5}), []).node is None
    assert pod_view(pod("p", spec={"nodeName": "gpu-1"}), []).node == "gpu-1"


@pytest.mark.parametrize(("phase", "shown"), [(True, "True is not a string (bool)"), ({}, "{} is not a string (dict)"),
                                              (5, "5 is not a string (int)")])
def test_a_pod_phase_that_is_not_a_string_is_unknown_with_an_error_naming_it(phase: Any, shown: str) -> None:
    # before: `describe -f -o tree` failed with a TypeError joining the row of a pod with
    # `status.phase: true`; a `{}` failed the terminal-phase test (unhashable)
    errors: list[Any] = []
    view = pod_view(pod("p", status={"phase": phase, "reason": {"x": 1}}), errors)
    assert (view.phase, view.reason, view.terminated) == ("Unknown", None, False)
    assert [(e.field, e.message) for e in errors] == [
        ("pod", f"pod p: status.phase {shown}: read as Unknown")]
    assert pod_view(pod("p", status={"phase": ""}), []).phase == pod_view(pod("p"), []).phase == "Pending"
    assert pod_view(pod("p", status={"phase": "Succeeded"}), []).terminated


def test_describe_tree_of_a_jobset_whose_pod_phase_is_not_a_string(tmp_path: Path) -> None:
    # a JobSet with one Job and its pod, the pod's phase `true`: the tree names the pod Unknown;
    # its GPU (1, asked by the pod; the template asks none) stays allocated, as for any pod
    # bound to a node (gpu-1) and not terminated: the node holds it whatever the phase says
    jobset = {"apiVersion": "jobset.x-k8s.io/v1alpha2", "kind": "JobSet",
              "metadata": {"name": "train", "namespace": "team", "uid": "js"},
              "spec": {"replicatedJobs": [{"name": "workers", "replicas": 1, "template": {"spec": {
                  "parallelism": 1, "template": {"spec": {"containers": [{"name": "c", "image": "x"}]}}}}}]}}
    job = {"apiVersion": "batch/v1", "kind": "Job",
           "metadata": {"name": "train-workers-0", "namespace": "team", "uid": "job",
                        "labels": {"jobset.sigs.k8s.io/jobset-name": "train",
                                   "jobset.sigs.k8s.io/replicatedjob-name": "workers",
                                   "jobset.sigs.k8s.io/job-index": "0"},
                        "ownerReferences": [{"apiVersion": "jobset.x-k8s.io/v1alpha2", "kind": "JobSet", "name": "train",
                                             "uid": "js", "controller": True}]},
           "spec": {"parallelism": 1, "template": {"spec": {"containers": [{"name": "c", "image": "x"}]}}}}
    worker = pod("train-workers-0-0-abcde", metadata={
        "labels": {"jobset.sigs.k8s.io/jobset-name": "train", "jobset.sigs.k8s.io/replicatedjob-name": "workers",
                   "jobset.sigs.k8s.io/job-index": "0"},
        "ownerReferences": [{"apiVersion": "batch/v1", "kind": "Job", "name": "train-workers-0", "uid": "job",
                             "controller": True}]},
        spec={"nodeName": "gpu-1", "containers": [{"name": "c", "image": "x",
                                                    "resources": {"requests": {"nvidia.com/gpu": "1"}}}]},
        status={"phase": True})
    path = tmp_path / "jobset.json"
    path.write_text(json.dumps({"apiVersion": "v1", "kind": "List", "items": [jobset, job, worker]}))
    wmap = Path(sys.executable).parent / "wmap"
    done = subprocess.run([str(wmap), "describe", "-f", str(path), "jobset/train", "-o", "tree"], capture_output=True,
                          text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    assert "train-workers-0-0-abcde   Unknown   gpu: 1   gpu-1" in done.stdout
    assert "GPUs: requested by spec 0, requested by pods 1, allocated 1" in done.stdout
    assert "warning: pod train-workers-0-0-abcde: status.phase True is not a string (bool): read as Unknown" in done.stdout


def test_a_json_file_with_a_byte_order_mark_is_read(tmp_path: Path) -> None:
    path = tmp_path / "bom.json"
    path.write_bytes(b"\xef\xbb\xbf" + json.dumps({"apiVersion": "v1", "kind": "List", "items": [pod("p")]}).encode())
    objects, problems = read_documents(path)
    assert [o["metadata"]["name"] for o in objects] == ["p"] and problems == []


def test_describe_with_standard_input_closed_is_one_line_and_exit_2() -> None:
    wmap = Path(sys.executable).parent / "wmap"
    done = subprocess.run(f"exec {wmap} describe -f - <&-", shell=True, capture_output=True, text=True, timeout=60,
                          check=False)
    assert done.returncode == 2, done.stderr
    assert done.stderr == "error: cannot read <stdin>: standard input is closed\n"


def test_a_device_is_refused_and_a_pipe_is_read_once(tmp_path: Path) -> None:
    wmap = Path(sys.executable).parent / "wmap"
    # before: /dev/zero was read without end (4 GB in 10 s)
    zero = subprocess.run([str(wmap), "describe", "-f", "/dev/zero"], capture_output=True, text=True, timeout=60,
                          check=False)
    assert zero.returncode == 2 and zero.stderr == "error: /dev/zero: not a regular file or a pipe\n"
    # before: the sniff consumed a process substitution's pipe and nothing was left to read
    path = tmp_path / "pod.json"
    path.write_text(json.dumps(pod("from-a-pipe")))
    piped = subprocess.run(["bash", "-c", f'exec "{wmap}" describe -f <(cat "{path}") -o json'], capture_output=True,
                           text=True, timeout=60, check=False)
    assert piped.returncode == 0, piped.stderr
    assert json.loads(piped.stdout)["name"] == "from-a-pipe"
