"""Snapshot files read through a JSON parser, streamed, and YAML through libyaml.

The JSON dumps are built here the way ``kubectl get -o json`` writes them (``kind: List``,
``items`` before ``kind``, 4-space indent) from the bundled JobSet sample, so the resolved
figures can be checked against the sample's own comment: JobSet ``llm-pretrain`` has a
leader (1 replica) and a worker replicated job (2 replicas), one pod each, 4 nvidia.com/gpu
per pod, all Running on a node -> 3 pods x 4 = 12 GPUs requested by pods and 12 allocated.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
import yaml
from hypothesis import given, settings
from hypothesis import strategies as st

from workload_map.paths import default_catalog_dir
from workload_map.definitions.catalog import load_catalog
from workload_map.definitions.registry import DefinitionRegistry
from workload_map.gvk import GVK
from workload_map.kube import jsonstream, snapshot
from workload_map.kube.documents import iter_documents
from workload_map.kube.snapshot import SnapshotError, SnapshotReader, iter_objects, load_objects
from workload_map.kube.yamljson import JSONLoader
from workload_map.service.workloads import WorkloadService

SAMPLE = Path(snapshot.__file__).resolve().parents[1] / "sample" / "jobset-x-k8s-io-jobset-v1alpha2.yaml"
POD = GVK("", "v1", "Pod")


def sample_objects() -> list[dict[str, Any]]:
    return [doc for doc in yaml.safe_load_all(SAMPLE.read_text()) if doc]


def kubectl_list(items: list[dict[str, Any]]) -> str:
    """``kubectl get -o json`` shape: apiVersion, items, kind, metadata (sorted keys)."""
    return json.dumps({"apiVersion": "v1", "items": items, "kind": "List",
                       "metadata": {"resourceVersion": ""}}, indent=4)


def llm_pretrain_gpu(reader: SnapshotReader) -> dict[str, Any]:
    registry = DefinitionRegistry(load_catalog(default_catalog_dir()))
    view = WorkloadService(registry, reader).workload("ml-training", "jobset.x-k8s.io", "JobSet", "llm-pretrain")
    return {key: view.to_dict()["gpu"][key] for key in ("requestedByPods", "allocated")}


@pytest.mark.parametrize("release", [None, 1])
def test_kubectl_json_list_resolves_like_the_yaml(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                                  release: int | None) -> None:
    if release:  # consumed pages handed back to the kernel after every value
        monkeypatch.setattr(jsonstream, "RELEASE", release)
    objects = sample_objects()
    for obj in objects:  # what a live API server adds: trimmed as read, as the informers do
        obj["metadata"]["managedFields"] = [{"manager": "kube-controller-manager", "fieldsV1": {"f:x": {}}}]
    dump = tmp_path / "dump.json"
    dump.write_text(kubectl_list(objects))
    reader = SnapshotReader.from_paths(dump)
    assert sum(reader.count(g) for g in reader.gvks()) == len(objects)
    pods = reader.list(POD, "ml-training")
    assert pods and all("managedFields" not in p["metadata"] for p in pods)
    assert llm_pretrain_gpu(reader) == {"requestedByPods": 12, "allocated": 12}
    assert llm_pretrain_gpu(SnapshotReader.from_paths(SAMPLE)) == {"requestedByPods": 12, "allocated": 12}


def test_json_array_typed_list_and_concatenated_values(tmp_path: Path) -> None:
    # a typed PodList whose items lack kind, with kind written *after* the items (kept
    # pending until it is read), then a bare array, then a bare object: 2 + 1 + 1 objects
    pod_list = '{"apiVersion": "v1", "items": [{"metadata": {"name": "p1", "namespace": "n"}},' \
               ' {"metadata": {"name": "p2", "namespace": "n"}}], "kind": "PodList"}'
    array = json.dumps([{"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "c", "namespace": "n"}}])
    job = json.dumps({"apiVersion": "batch/v1", "kind": "Job", "metadata": {"name": "j", "namespace": "n"}})
    path = tmp_path / "mixed.json"
    path.write_text(f"{pod_list}\n{array}\n{job}\n")
    assert [(o["kind"], o["metadata"]["name"]) for o in load_objects(path)] == [
        ("Pod", "p1"), ("Pod", "p2"), ("ConfigMap", "c"), ("Job", "j")]


def test_yaml_multidoc_uses_the_c_loader_when_built(tmp_path: Path) -> None:
    if hasattr(yaml, "CSafeLoader"):
        assert issubclass(JSONLoader, yaml.CSafeLoader)
    path = tmp_path / "two.yaml"
    path.write_text("apiVersion: v1\nkind: Pod\nmetadata: {name: a, namespace: n}\n---\n---\n"
                    "apiVersion: v1\nkind: List\nitems:\n- {apiVersion: v1, kind: Pod, metadata: {name: b}}\n")
    assert [o["metadata"]["name"] for o in load_objects(path)] == ["a", "b"]


@pytest.mark.parametrize("text, where", [
    # lines 1-3 are 21 + 12 + 66 characters with their newlines = 99; on line 4
    # `    {"kind": "Pod" "metadata": {}}` the comma is missing at column 20 -> char 99 + 19
    ('{"apiVersion": "v1",\n "items": [\n  {"kind": "Pod", "apiVersion": "v1", "metadata": {"name": "a"}},\n'
     '    {"kind": "Pod" "metadata": {}}]}', "line 4 column 20 (char 118): Expecting ',' delimiter"),
    ('{"apiVersion": "v1", "items": [{"kind": "Pod"', "line 1 column 46 (char 45): Expecting ',' delimiter"),
    ('{"items": [] "kind": "List"}', "line 1 column 14 (char 13): expected ',' or '}', found '\"'"),
    ("[1, 2]", "expected a Kubernetes object, got int"),
])
def test_malformed_json_names_file_and_position(tmp_path: Path, text: str, where: str) -> None:
    path = tmp_path / "broken.json"
    path.write_text(text)
    with pytest.raises(SnapshotError) as info:
        load_objects(path)
    assert str(info.value).startswith(f"{path}") and where in str(info.value)


def test_items_are_streamed_before_the_rest_is_read(tmp_path: Path) -> None:
    # the first object is delivered although the file breaks later: nothing is decoded whole
    path = tmp_path / "late-error.json"
    good = {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "first", "namespace": "n"}}
    path.write_text('{"apiVersion": "v1", "items": [' + json.dumps(good) + ", {oops}]}")
    objects = iter_objects(path)
    assert next(objects)["metadata"]["name"] == "first"
    # 31 characters of list head + 84 of the pod + `, {` = 118: the `o` of oops is char 118
    with pytest.raises(SnapshotError, match=r"line 1 column 119 \(char 118\): Expecting property name"):
        next(objects)


def test_a_value_longer_than_the_bound_is_refused(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    # with a 64-byte bound: a complete 100-byte string is refused by its length, an
    # unterminated one by the diagnosis of the first 65 bytes after its start (char 15)
    monkeypatch.setattr(jsonstream, "MAX_VALUE", 64)
    long = tmp_path / "long.json"
    long.write_text('{"apiVersion": "' + "x" * 100 + '"}')
    with pytest.raises(SnapshotError, match=r"char 15\): a value longer than 64 bytes"):
        load_objects(long)
    huge = tmp_path / "huge.json"
    huge.write_text('{"apiVersion": "' + "x" * 10_000)
    with pytest.raises(SnapshotError, match=r"char 15\): Unterminated string"):
        load_objects(huge)


def test_nan_and_numbers_beyond_float64_are_read_as_json_reads_them(tmp_path: Path) -> None:
    # msgspec refuses both; the value is decoded by the standard library instead
    path = tmp_path / "odd.json"
    path.write_text('[{"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "c"}, "data": {"a": NaN}},'
                    ' {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "d"}, "x": 1e400}]')
    first, second = load_objects(path)
    assert first["data"]["a"] != first["data"]["a"] and second["x"] == float("inf")


def test_json_under_another_name_is_read_as_json_and_flow_yaml_still_as_yaml(tmp_path: Path) -> None:
    # `kubectl get -o json > dump.yaml` (or standard input, which the CLI saves as .yaml)
    saved = tmp_path / "dump.yaml"
    saved.write_text(kubectl_list([{"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "p", "namespace": "n"}}]))
    assert [o["metadata"]["name"] for o in load_objects(saved)] == ["p"]
    # a YAML flow mapping is not JSON: nothing was read as JSON yet, so it is read as YAML
    flow = tmp_path / "flow.yaml"
    flow.write_text("{apiVersion: v1, kind: Pod, metadata: {name: q, namespace: n}}\n")
    assert [o["metadata"]["name"] for o in load_objects(flow)] == ["q"]
    # malformed JSON after an object was read is an error with its position, not a YAML retry
    broken = tmp_path / "broken.yaml"
    broken.write_text('[{"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "a"}}, {oops}]')
    # `[` + the 62-character pod + `, {` = 66 characters before the `o` of oops: char 66, column 67
    # (the element is skipped by its brackets and named; strict reading refuses it)
    with pytest.raises(SnapshotError, match=r"broken.yaml \(document 1\): element 1: .*"
                                            r"invalid JSON at line 1 column 67 \(char 66\)"):
        load_objects(broken)


def test_keys_and_short_strings_are_shared_between_objects(tmp_path: Path) -> None:
    # two pods decoded separately: equal keys are one object (msgspec's key cache), and the
    # stored (trimmed) copies share equal short values (the store's shared table)
    pods = [{"apiVersion": "v1", "kind": "Pod", "metadata": {"name": f"p{i}", "namespace": "n"},
             "status": {"phase": "Running"}} for i in range(2)]
    path = tmp_path / "pods.json"
    path.write_text(kubectl_list(pods))
    first, second = load_objects(path)
    key_a = next(k for k in first if k == "metadata")
    key_b = next(k for k in second if k == "metadata")
    assert key_a is key_b
    stored = SnapshotReader.from_paths(path).list(POD, "n")
    assert stored[0]["status"]["phase"] is stored[1]["status"]["phase"]


def test_a_malformed_item_is_skipped_by_its_brackets_and_the_items_after_it_are_read(tmp_path: Path) -> None:
    # four pods of one GPU each; the second one's name holds a bad escape (\x) and the fourth
    # a stray character: read leniently, both are reported by index and the other two kept
    # (before, everything after the first bad item was lost)
    pods = [{"apiVersion": "v1", "kind": "Pod", "metadata": {"name": f"p{i}", "namespace": "n", "uid": f"u{i}"},
             "spec": {"containers": [{"name": "c", "resources": {"requests": {"nvidia.com/gpu": "1"}}}]}}
            for i in range(4)]
    text = json.dumps({"apiVersion": "v1", "kind": "List", "items": pods})
    text = text.replace('"name": "p1"', '"name": "p1\\x"').replace('"uid": "u3"', '"uid": "u3" x')
    path = tmp_path / "pods.json"
    path.write_text(text)
    problems: list[str] = []
    assert [o["metadata"]["name"] for o in iter_documents(path, problems)] == ["p0", "p2"]
    assert len(problems) == 2
    assert problems[0].startswith(f"{path} (document 1): items[1]: the value at line 1 column ")
    assert problems[0].endswith(": Invalid \\escape")
    assert problems[1].startswith(f"{path} (document 1): items[3]: ") and problems[1].endswith("Expecting ',' delimiter")
    with pytest.raises(SnapshotError, match=r"items\[1\]: .*Invalid \\escape"):
        load_objects(path)  # strict (serve --snapshot): the first bad item fails the load, named
    # a break the brackets cannot get past (an unterminated string) still ends the file there
    path.write_text(json.dumps({"apiVersion": "v1", "kind": "List", "items": pods}).replace('"p1"', '"p1'))
    problems = []
    assert [o["metadata"]["name"] for o in iter_documents(path, problems)] == ["p0"]
    assert problems and all(p.startswith(str(path)) for p in problems)


@settings(max_examples=60, deadline=None)
@given(st.text(alphabet="ab\n\u00e9\u20ac\U0001f600{}", max_size=60), st.lists(st.integers(0, 300), max_size=8))
def test_error_positions_are_those_counted_from_the_start_in_any_order(text: str, positions: list[int]) -> None:
    # error() counts from the furthest position named, forwards or back (a file of many
    # malformed items was quadratic); each answer must be the one counted from byte 0
    import tempfile

    data = text.encode()
    with tempfile.TemporaryDirectory() as folder:
        path = Path(folder) / "t.json"
        path.write_bytes(data)
        with jsonstream.JSONStream(path) as stream:
            for wanted in positions:
                at = min(wanted, len(data))
                while 0 < at < len(data) and data[at] & 0xC0 == 0x80:
                    at -= 1  # a character boundary, as every position the reader names
                before = data[:at].decode("utf-8", "replace")
                exc = stream.error("x", at)
                assert (exc.line, exc.column, exc.offset) == (before.count("\n") + 1, len(before) - before.rfind("\n"),
                                                              len(before))
