"""Multi-document input for `wmap describe -f` (issue 28): each document on its own.

Working: a Deployment with replicas 2 wants 2 pods; a Job with parallelism 3 and no
completions runs 3 pods at once (Kubernetes "Jobs", parallel execution); no pods exist, so
current and ready are 0.
"""

from __future__ import annotations

import json
from pathlib import Path

from tests.cli.test_offline import wmap
from workload_map.kube.documents import read_documents

DEPLOYMENT_LIST = """apiVersion: v1
kind: List
items:
- apiVersion: apps/v1
  kind: Deployment
  metadata: {name: web, namespace: default}
  spec:
    replicas: 2
    selector: {matchLabels: {app: web}}
    template:
      metadata: {labels: {app: web}}
      spec: {containers: [{name: c, image: x}]}
"""
JOB_JSON = ('{"apiVersion": "batch/v1", "kind": "Job", "metadata": {"name": "j", "namespace": "default"},\n'
            ' "spec": {"parallelism": 3, "template": {"spec": {"containers": [{"name": "c", "image": "x"}]}}}}\n')
MIXED = (DEPLOYMENT_LIST + "---\nthis: is: broken\n---\n" + JOB_JSON + "---\n- a string\n---\n"
         "apiVersion: apps/v1\nkind: StatefulSet\nmetadata: {namespace: default}\n")


def test_documents_are_read_one_by_one_with_positions(tmp_path: Path) -> None:
    path = tmp_path / "mixed.yaml"
    path.write_text(MIXED)
    objects, problems = read_documents(path)
    assert [(o["kind"], o["metadata"]["name"]) for o in objects] == [("Deployment", "web"), ("Job", "j")]
    # the List is document 1 (lines 1-12); `---` on line 13 opens the broken document 2
    assert problems[0].startswith(f"{path} (document 2, line 13): mapping values are not allowed")
    assert "at line 14, column 9" in problems[0]
    assert problems[1] == f"{path} (document 4, line 18), item 0: expected a Kubernetes object, got str"
    assert problems[2] == f"{path} (document 5, line 20): StatefulSet object without metadata.name"
    assert len(problems) == 3


def test_json_stream_error_keeps_the_objects_before_it(tmp_path: Path) -> None:
    path = tmp_path / "dump.json"
    path.write_text(JOB_JSON + '{"apiVersion": "v1", "kind": ')
    objects, problems = read_documents(path)
    assert [o["metadata"]["name"] for o in objects] == ["j"]
    assert len(problems) == 1 and problems[0].startswith(str(path))


def test_describe_prints_every_good_workload_and_warns_on_stderr(tmp_path: Path) -> None:
    path = tmp_path / "mixed.yaml"
    path.write_text(MIXED)
    result = wmap("describe", "-f", str(path), "-o", "json")
    assert result.returncode == 0, result.stderr
    views = json.loads(result.stdout)
    views = views if isinstance(views, list) else views["items"]
    assert sorted((v["kind"], v["name"], v["replicas"]["desired"]) for v in views) == [
        ("Deployment", "web", 2), ("Job", "j", 3)]
    warnings = result.stderr.splitlines()
    assert len(warnings) == 3 and all(w.startswith("warning: ") for w in warnings)
    assert "(document 2, line 13)" in warnings[0]


def test_describe_from_stdin_names_stdin(tmp_path: Path) -> None:
    result = wmap("describe", "-f", "-", stdin=MIXED)
    assert result.returncode == 0, result.stderr
    assert "warning: <stdin> (document 2, line 13)" in result.stderr
    assert "Deployment/web" in result.stdout and "Job/j" in result.stdout


def test_an_input_without_any_object_is_exit_2_not_nothing_covered(tmp_path: Path) -> None:
    # an empty file, or one of comments and separators, holds no object: a usage error (2),
    # not "no workload is covered by a definition" (4), which names a type problem
    empty, comments = tmp_path / "empty.yaml", tmp_path / "comments.yaml"
    empty.write_text("")
    comments.write_text("---\n# nothing here yet\n---\n")
    for path in (empty, comments):
        result = wmap("describe", "-f", str(path))
        assert (result.returncode, result.stdout, result.stderr) == (2, "", f"error: no Kubernetes object in {path}\n")
    piped = wmap("describe", "-f", "-", stdin="")
    assert (piped.returncode, piped.stderr) == (2, "error: no Kubernetes object in <stdin>\n")
