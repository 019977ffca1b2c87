"""`wmap describe -f` of a big input, namespace group by namespace group (issue 23 item 6).

Working (Kubernetes "Jobs": a Job with parallelism P runs P pods at once; a pod's GPUs count
as allocated once it is bound to a node and running): four Jobs in three namespaces, every
pod asking the Job's GPUs per pod —

=========  =====  ====  ============  =======  ==========================  =========
namespace  Job    pods  GPUs per pod  running  requested by spec (P x G)  allocated
=========  =====  ====  ============  =======  ==========================  =========
team-a     big    2     8             2        16                          16
team-a     prep   3     1             1        3                           1
team-b     train  2     4             2        8                           8
team-c     eval   1     2             0        2                           0
=========  =====  ====  ============  =======  ==========================  =========

Listed by namespace, kind, name: team-a/big, team-a/prep, team-b/train, team-c/eval. team-a
holds 1 + 2 + 1 + 3 = 7 objects, team-b 3, team-c 2: with groups of at most 4 objects the
groups are {team-a} (alone, bigger than a group) and {team-b} then {team-c} (3 + 2 > 4).
"""

from __future__ import annotations

import io
import json
import subprocess
import sys
import tempfile
from contextlib import redirect_stdout
from pathlib import Path
from typing import Any

import pytest

from workload_map.kube.snapshot import SnapshotError
from hypothesis import given, settings
from hypothesis import strategies as st

from workload_map.cli import describe
from workload_map.cli.inputs import build_registry, offline_service, snapshot_reader
from workload_map.cli.main import main
from workload_map.cli.render import Printer, render
from workload_map.kube import documents
from workload_map.kube.documents import iter_documents

Obj = dict[str, Any]
EXPECTED = [("team-a", "big", 2, 16, 16), ("team-a", "prep", 3, 3, 1), ("team-b", "train", 2, 8, 8),
            ("team-c", "eval", 1, 2, 0)]


def job(namespace: str, name: str, pods: int, gpus: int, running: int) -> list[Obj]:
    """A Job and its pods (owner reference and the Job controller's labels), ``running`` of them bound."""
    uid = f"uid-{namespace}-{name}"
    labels = {"batch.kubernetes.io/controller-uid": uid, "batch.kubernetes.io/job-name": name,
              "controller-uid": uid, "job-name": name}
    resources = {"requests": {"nvidia.com/gpu": str(gpus)}, "limits": {"nvidia.com/gpu": str(gpus)}}
    root: Obj = {"apiVersion": "batch/v1", "kind": "Job",
                 "metadata": {"name": name, "namespace": namespace, "uid": uid},
                 "spec": {"parallelism": pods, "completions": pods,
                          "selector": {"matchLabels": {"batch.kubernetes.io/controller-uid": uid}},
                          "template": {"metadata": {"labels": labels},
                                       "spec": {"containers": [{"name": "c", "image": "i", "resources": resources}]}}},
                 "status": {"active": pods, "ready": running}}
    out = [root]
    for i in range(pods):
        up = i < running
        out.append({"apiVersion": "v1", "kind": "Pod",
                    "metadata": {"name": f"{name}-{i}", "namespace": namespace, "uid": f"{uid}-{i}", "labels": labels,
                                 "ownerReferences": [{"apiVersion": "batch/v1", "kind": "Job", "name": name,
                                                      "uid": uid, "controller": True}]},
                    "spec": {"nodeName": f"node-{i}" if up else None,
                             "containers": [{"name": "c", "image": "i", "resources": resources}]},
                    "status": {"phase": "Running" if up else "Pending",
                               "conditions": [{"type": "Ready", "status": "True" if up else "False"}]}})
    return out


def node(name: str) -> Obj:
    return {"apiVersion": "v1", "kind": "Node", "metadata": {"name": name, "uid": f"node-{name}"},
            "status": {"allocatable": {"nvidia.com/gpu": "8"}}}


def jobs_file(tmp_path: Path, extra: list[Obj] | None = None, first: list[Obj] | None = None) -> Path:
    items = (list(first or []) + job("team-b", "train", 2, 4, 2) + job("team-a", "prep", 3, 1, 1) + job("team-c", "eval", 1, 2, 0)
             + job("team-a", "big", 2, 8, 2) + (extra or []))
    path = tmp_path / "jobs.json"
    path.write_text(json.dumps({"apiVersion": "v1", "kind": "List", "items": items}))
    return path


def run(*argv: str) -> tuple[int, str]:
    out = io.StringIO()
    with redirect_stdout(out):
        code = main(list(argv))
    return code, out.getvalue()


@pytest.mark.parametrize("group", [4, 1, describe.GROUP_OBJECTS])
def test_groups_give_each_workload_its_pods_and_gpus(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                                     group: int) -> None:
    monkeypatch.setattr(describe, "GROUP_OBJECTS", group)
    code, out = run("describe", "-f", str(jobs_file(tmp_path)), "-o", "json")
    assert code == 0
    data = json.loads(out)
    assert data["count"] == 4
    got = [(v["namespace"], v["name"], v["replicas"]["current"], v["gpu"]["requestedBySpec"], v["gpu"]["allocated"])
           for v in data["items"]]
    assert got == EXPECTED


@pytest.mark.parametrize("output", ["tree", "json", "yaml"])
def test_grouped_output_is_the_whole_output(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, output: str) -> None:
    path = str(jobs_file(tmp_path, [node("late")], [node("early")]))  # cluster-scoped, before and after the spill
    whole, one = run("describe", "-f", path, "-o", output), run("describe", "-f", path, "job/prep", "-o", output)
    monkeypatch.setattr(describe, "GROUP_OBJECTS", 4)
    assert run("describe", "-f", path, "-o", output) == whole
    assert run("describe", "-f", path, "job/prep", "-o", output) == one


def test_namespace_flag_reads_one_group(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(describe, "GROUP_OBJECTS", 4)
    code, out = run("describe", "-f", str(jobs_file(tmp_path)), "-n", "team-b", "-o", "json")
    assert code == 0
    view = json.loads(out)  # one workload: a bare object
    assert (view["namespace"], view["name"], view["gpu"]["allocated"]) == ("team-b", "train", 8)


def test_plan_cuts_namespace_groups_in_order(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(describe, "GROUP_OBJECTS", 4)
    plan = describe.Plan()
    for obj in iter_documents(jobs_file(tmp_path), []):
        plan.note(obj)
    assert plan.counts == {"team-a": 7, "team-b": 3, "team-c": 2}
    assert plan.groups() == [{"team-a"}, {"team-b"}, {"team-c"}]
    assert plan.kinds == {("batch", "Job"), ("", "Pod")}


def test_cluster_scoped_owner_or_shared_uid_keeps_the_input_whole(tmp_path: Path,
                                                                   monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(describe, "GROUP_OBJECTS", 4)
    node = {"apiVersion": "v1", "kind": "Node", "metadata": {"name": "n", "uid": "node-uid"}}
    owned = {"apiVersion": "v1", "kind": "ConfigMap",
             "metadata": {"name": "c", "namespace": "team-b", "ownerReferences": [{"uid": "node-uid"}]}}
    twin = {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "t", "namespace": "team-c",
                                                                   "uid": "uid-team-a-big"}}
    for extra in ([node, owned], [twin]):
        plan = describe.Plan()
        for obj in iter_documents(jobs_file(tmp_path, extra), []):
            plan.note(obj)
        assert plan.groups() == [{"team-a", "team-b", "team-c"}]


def test_broken_documents_are_reported_once(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                            capsys: pytest.CaptureFixture[str]) -> None:
    monkeypatch.setattr(describe, "GROUP_OBJECTS", 4)
    code = main(["describe", "-f", str(jobs_file(tmp_path, [{"kind": "Pod", "metadata": {"name": "x"}}])),
                 "-o", "json"])
    captured = capsys.readouterr()
    assert code == 0
    assert captured.err.count("warning:") == 1
    assert "(object 13)" in captured.err  # the 13th kept position: 12 good objects before it
    assert json.loads(captured.out)["count"] == 4


def test_nothing_covered_or_not_found(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(describe, "GROUP_OBJECTS", 4)
    path = str(jobs_file(tmp_path))
    assert run("describe", "-f", path, "job/nope")[0] == 3
    cm = tmp_path / "cm.json"
    cm.write_text(json.dumps({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "c", "namespace": "a"}}))
    assert run("describe", "-f", str(cm))[0] == 4


@pytest.mark.parametrize("count", [0, 1, 2, 3])
@pytest.mark.parametrize("output", ["tree", "json", "yaml"])
def test_printer_writes_what_render_prints(tmp_path: Path, output: str, count: int) -> None:
    views = offline_service(build_registry(), snapshot_reader([str(jobs_file(tmp_path))])).workloads()[:count]
    out = io.StringIO()
    with redirect_stdout(out):
        printer = Printer(output)
        for view in views:
            printer.add(view)
        printer.close()
    expected = io.StringIO()
    with redirect_stdout(expected):
        print(render(views, output))
    assert out.getvalue() == expected.getvalue()


@settings(max_examples=300, deadline=None)
@given(st.text(alphabet="-.\n \t{a\u00e9", max_size=40), st.integers(min_value=1, max_value=9))
def test_sniff_is_the_whole_text_answer(text: str, block: int) -> None:
    path = Path(tempfile.gettempdir()) / f"wmap-sniff-{block}.txt"
    path.write_text(text, encoding="utf-8")
    original = documents._BLOCK
    documents._BLOCK = block
    try:
        assert documents._sniff(path, json_suffix=True) == (text.lstrip()[:1], bool(documents._MARKER.search(text)))
    finally:
        documents._BLOCK = original


def test_sniff_reads_past_bytes_that_are_not_utf8(tmp_path: Path) -> None:
    # the readers report such bytes where they are (a YAML document, a JSON value); the
    # sniff only answers its two questions
    path = tmp_path / "bad.json"
    path.write_bytes(b'{"a": "' + b"x" * 10 + b'\xff"}\n---\n')
    assert documents._sniff(path, json_suffix=True) == ("{", True)


def test_a_document_that_is_not_utf8_is_reported_and_the_others_kept(tmp_path: Path) -> None:
    path = tmp_path / "pods.yaml"
    path.write_bytes(b"apiVersion: v1\nkind: Pod\nmetadata: {name: good, namespace: d}\n---\n"
                     b"apiVersion: v1\nkind: Pod\nmetadata: {name: caf\xe9, namespace: d}\n---\n"
                     b"apiVersion: v1\nkind: Pod\nmetadata: {name: last, namespace: d}\n")
    objects, problems = documents.read_documents(path)
    assert [o["metadata"]["name"] for o in objects] == ["good", "last"]
    assert problems == [f"{path} (document 2, line 4): not UTF-8 text: byte 0xe9 at line 7"]
    # a file with no UTF-8 document fails as a whole, naming the first such byte
    (tmp_path / "latin1.yaml").write_bytes(b"apiVersion: v1\nkind: Pod\nmetadata: {name: caf\xe9}\n")
    with pytest.raises(SnapshotError, match=r"latin1.yaml: not UTF-8 text \(byte 0xe9 at line 3\)"):
        documents.read_documents(tmp_path / "latin1.yaml")




def test_memory_module_import_runs_no_ldconfig() -> None:
    """Importing ``kube.memory`` looks nothing up: ``ctypes.util.find_library`` (which runs
    ``ldconfig -p`` in a subprocess) waits for the first trim."""
    probe = ("import sys; import workload_map.kube.memory as m; assert 'ctypes.util' not in sys.modules; "
             "print(m.release_free_memory(collect=False), 'ctypes.util' in sys.modules)")
    done = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, timeout=60, check=True)
    assert done.stdout.split() == ["True", "True"]  # glibc has malloc_trim
