"""``workload_map.kube.yamljson``: YAML manifests read into JSON's types only."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import yaml

from workload_map.cli.main import main
from workload_map.kube.documents import read_documents
from workload_map.kube.snapshot import load_objects
from workload_map.kube.yamljson import JSONLoader

MANIFEST = """\
apiVersion: batch/v1
kind: Job
metadata:
  name: train
  namespace: team-a
  creationTimestamp: 2024-05-01T10:00:00Z
  annotations:
    team.example/since: 2024-05-01
    team.example/quoted: "2024-05-01"
spec:
  template:
    spec:
      containers:
      - name: main
        image: trainer:1
        resources:
          limits: {nvidia.com/gpu: 2}
status:
  startTime: 2024-05-01 10:00:05
"""


def _load(text: str) -> object:
    return yaml.load(text, Loader=JSONLoader)


def test_timestamps_and_dates_stay_the_text_written() -> None:
    doc = _load(MANIFEST)
    assert doc["metadata"]["creationTimestamp"] == "2024-05-01T10:00:00Z"
    assert doc["metadata"]["annotations"] == {"team.example/since": "2024-05-01", "team.example/quoted": "2024-05-01"}
    assert doc["status"]["startTime"] == "2024-05-01 10:00:05"
    # what the safe loader alone gives: datetime and date objects no live object holds
    plain = yaml.safe_load(MANIFEST)
    assert type(plain["metadata"]["creationTimestamp"]).__name__ == "datetime"
    assert type(plain["metadata"]["annotations"]["team.example/since"]).__name__ == "date"


def test_explicit_tags_become_their_json() -> None:
    doc = _load("data: !!binary |\n  aGVsbG8g\n  d29ybGQ=\n"
                "members: !!set {a, b}\n"
                "ordered: !!omap [{x: 1}, {y: 2}]\n"
                "pairs: !!pairs [{k: v}, {k: w}]\n")
    assert doc == {"data": "aGVsbG8gd29ybGQ=", "members": {"a": None, "b": None},
                   "ordered": [{"x": 1}, {"y": 2}], "pairs": [{"k": "v"}, {"k": "w"}]}


def test_other_scalars_are_the_safe_loaders() -> None:
    assert _load("a: 1\nb: 1.5\nc: true\nd: null\ne: '1'\nf: [x, 2]\n") == {
        "a": 1, "b": 1.5, "c": True, "d": None, "e": "1", "f": ["x", 2]}


def test_snapshot_and_manifest_readers_give_the_text(tmp_path: Path) -> None:
    path = tmp_path / "job.yaml"
    path.write_text(MANIFEST)
    (obj,) = load_objects(path)
    assert obj["metadata"]["creationTimestamp"] == "2024-05-01T10:00:00Z"
    objects, problems = read_documents(path)
    assert problems == [] and objects[0]["metadata"]["annotations"]["team.example/since"] == "2024-05-01"


def test_describe_json_of_an_unquoted_timestamp(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """With the safe loader alone this printed a traceback: a datetime is not JSON serializable."""
    path = tmp_path / "job.yaml"
    path.write_text(MANIFEST)
    assert main(["describe", "-f", str(path), "-o", "json"]) == 0
    view = json.loads(capsys.readouterr().out)
    assert view["createdAt"] == "2024-05-01T10:00:00Z"
    assert view["resources"]["gpus"] == 2
