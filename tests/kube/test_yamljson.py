"""``workload_map.kube.yamljson``: YAML manifests read into JSON's types only."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import yaml

from workload_map.cli.main import main
from workload_map.kube.documents import read_documents
from workload_map.kube.snapshot import SnapshotError, load_objects
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


def _bomb(levels: int) -> str:
    """Nine anchors of nine aliases each: 9 ** levels strings from a few hundred bytes."""
    lines = ["apiVersion: v1", "kind: ConfigMap", "metadata: {name: bomb, namespace: team-a}", "data:",
             "  a0: &a0 [" + ", ".join(["lol"] * 9) + "]"]
    lines += [f"  a{i}: &a{i} [" + ", ".join([f"*a{i - 1}"] * 9) + "]" for i in range(1, levels)]
    return "\n".join(lines) + "\n"


def test_a_few_aliases_and_merge_keys_are_read() -> None:
    assert _load("a: &x [1, 2]\nb: *x\nc: {<<: {k: v}, d: 1}\n") == {"a": [1, 2], "b": [1, 2], "c": {"k": "v", "d": 1}}
    # 9 ** 5 = 59,049 strings: under the bound
    doc = _load(_bomb(6))
    assert len(doc["data"]["a5"]) == 9 and len(doc["data"]["a5"][0][0][0][0]) == 9


def test_an_alias_bomb_is_refused_naming_the_line() -> None:
    with pytest.raises(yaml.YAMLError, match=r"aliases expand it by more than 1,000,000 values or") as caught:
        _load(_bomb(9))
    assert caught.value.problem_mark.line == 10 - 1  # type: ignore[attr-defined]  # the alias that went over


@pytest.mark.parametrize("text", ["a: &x [1, *x]\n", "a: &x {k: *x}\n"])
def test_an_alias_inside_its_own_anchor_is_refused(text: str) -> None:
    with pytest.raises(yaml.YAMLError, match="alias inside its own anchor"):
        _load(text)


def test_describe_keeps_the_good_document_and_the_snapshot_names_the_bad_one(tmp_path: Path,
                                                                            capsys: pytest.CaptureFixture[str]) -> None:
    path = tmp_path / "mixed.yaml"
    path.write_text(_bomb(9) + "---\n" + MANIFEST)
    assert main(["describe", "-f", str(path), "-o", "json"]) == 0
    captured = capsys.readouterr()
    assert json.loads(captured.out)["name"] == "train"
    assert "(document 1, line 1): its aliases expand it by more than 1,000,000 values or" in captured.err
    with pytest.raises(SnapshotError, match=r"mixed.yaml: .*aliases expand it by more than 1,000,000 values"):
        load_objects(path)


def test_binary_that_is_not_base64_is_refused_as_the_safe_loader_does() -> None:
    text = "data: !!binary |\n  aGVsbG8\n"  # 7 characters: incorrect padding
    with pytest.raises(yaml.YAMLError, match="failed to decode base64 data"):
        yaml.safe_load(text)
    with pytest.raises(yaml.YAMLError, match="failed to decode base64 data") as caught:
        _load(text)
    assert caught.value.problem_mark.line == 0  # type: ignore[attr-defined]


def test_a_long_string_aliased_hundreds_of_times_is_refused() -> None:
    """729 aliases of a 100,000-character string: few values, 73 MB once expanded."""
    text = ("s: &s " + "x" * 100_000 + "\na0: &a0 [" + ", ".join(["*s"] * 9) + "]\n"
            + "".join(f"a{i}: &a{i} [" + ", ".join([f"*a{i - 1}"] * 9) + "]\n" for i in range(1, 3)))
    with pytest.raises(yaml.YAMLError, match="characters"):
        _load(text)


def test_keys_that_are_not_strings_are_the_text_kubectl_sends() -> None:
    # kubectl's YAML-to-JSON conversion (sigs.k8s.io/yaml) writes an integer key in decimal,
    # a boolean as true/false and a float in its shortest float32 form ('g', exponent from 1e6)
    doc = _load("labels: {5: six, true: yes, 1.5: x, 3.0: y, 16777217.0: z, 0.00001: w, .inf: v, .nan: u}\n"
                "members: !!set {7, false}\n")
    assert doc == {"labels": {"5": "six", "true": True, "1.5": "x", "3": "y", "1.6777216e+07": "z", "1e-05": "w",
                              ".inf": "v", ".nan": "u"},
                   "members": {"7": None, "false": None}}
    with pytest.raises(yaml.constructor.ConstructorError, match="a mapping key that is not a string, number or "
                                                                "boolean"):
        _load("metadata:\n  labels:\n    ~: orphan\n")


def test_a_pod_with_an_integer_label_key_resolves_with_its_gpus(tmp_path: Path,
                                                                 capsys: pytest.CaptureFixture[str]) -> None:
    # before: "resolution failed: AttributeError: 'int' object has no attribute 'isascii'", 0 GPUs
    path = tmp_path / "pod.yaml"
    path.write_text("apiVersion: v1\nkind: Pod\nmetadata:\n  name: p\n  namespace: n\n  labels: {5: six}\n"
                    "spec:\n  containers: [{name: c, resources: {limits: {nvidia.com/gpu: 2}}}]\n")
    assert main(["describe", "-f", str(path), "-o", "json"]) == 0
    view = json.loads(capsys.readouterr().out)
    assert (view["gpu"]["requestedBySpec"], view["gpu"]["requestedByPods"], view["errors"]) == (2, 2, [])
