"""Behaviour unchanged by the restructuring of issue 26: the same answers over the bundled sample.

``tests/fixtures/sample_answers.json`` holds the GraphQL and REST answers of the code before
the restructuring (commit 26af59e) to the questions of ``tests/api/sample_answers.py``: every
field of every workload page by page, filtered pages, ``workload(...)``, ``gpuSummary`` for
every ``groupBy``, ``definitions``/``definition``, ``podWorkload`` and the REST pod lookup for
a few pods, ``cluster``, and the REST workload lists (summary and ``view=full``), a workload by
name, its phase, the definitions and workload-types listings and four error answers. The
current code, over the same sample in process, must give the same answers after the same
normalization: only the server-clock times ``lastSuccess``, ``since`` and ``registeredAt``
are replaced by a marker (``sample_answers.VOLATILE``). Regenerate (from the old code, or
from the current code for a deliberate change) as ``sample_answers``' docstring says.
"""

from __future__ import annotations

import json
from typing import Any

import pytest

from tests.api import sample_answers


def differences(old: Any, new: Any, path: str = "$") -> list[str]:
    """Paths where ``new`` differs from ``old`` (at most one line per differing leaf or shape)."""
    if isinstance(old, dict) and isinstance(new, dict):
        out = [f"{path}.{k}: missing" for k in old.keys() - new.keys()]
        out += [f"{path}.{k}: added" for k in new.keys() - old.keys()]
        for key in sorted(old.keys() & new.keys()):
            out += differences(old[key], new[key], f"{path}.{key}")
        return out
    if isinstance(old, list) and isinstance(new, list):
        if len(old) != len(new):
            return [f"{path}: {len(old)} items, now {len(new)}"]
        return [d for i, (a, b) in enumerate(zip(old, new)) for d in differences(a, b, f"{path}[{i}]")]
    return [] if old == new and type(old) is type(new) else [f"{path}: {old!r} -> {new!r}"]


@pytest.fixture(scope="module")
def recorded() -> dict[str, Any]:
    """The committed answers of commit 26af59e."""
    answers: dict[str, Any] = json.loads(sample_answers.FIXTURE.read_text())
    return answers


@pytest.fixture(scope="module")
async def current() -> dict[str, Any]:
    """The current code's answers to the same questions (one app over the sample)."""
    return await sample_answers.record()


def test_the_fixture_holds_real_answers(recorded: dict[str, Any]) -> None:
    # The sample (server/workload_map/sample) holds 141 top-level workloads: 3 pages of 50.
    pages = recorded["workloads-all"]
    assert [len(p["data"]["workloads"]["nodes"]) for p in pages] == [50, 50, 41]
    assert {p["data"]["workloads"]["totalCount"] for p in pages} == {141}
    # llm-pretrain: a JobSet with a leader (1 pod) and a worker job of 2 pods, each pod
    # requesting 4 nvidia.com/gpu and bound: 3 x 4 = 12 GPUs by spec, by pods and allocated.
    llm = recorded["workload-llm"]["data"]["workload"]
    assert (llm["phase"], llm["gpu"]["requestedBySpec"], llm["gpu"]["allocated"]) == ("RUNNING", 12.0, 12.0)
    assert [(r["name"], r["replicas"]["ready"]) for r in llm["roles"]] == [("leader", 1), ("worker", 2)]
    assert recorded["rest-phase-llm"] == {"status": 200, "body": {"phase": "Running", "phases": ["Running"]}}
    # The error answers are errors, the others are not.
    assert recorded["rest-workload-missing"]["status"] == 404
    assert recorded["rest-bad-view"]["status"] == 400
    assert recorded["workload-missing"] == {"data": {"workload": None}}
    assert [name for name, answer in recorded.items() if isinstance(answer, dict) and "errors" in answer] == []
    assert len(sample_answers.FIXTURE.read_bytes()) < 2_000_000


def test_every_question_is_in_the_fixture(recorded: dict[str, Any], current: dict[str, Any]) -> None:
    assert sorted(current) == sorted(recorded)


# Deliberate changes of answers since 26af59e, each by an issue other than the restructuring
# (the restructuring itself changed none): the differences these rules allow are the only ones.
CHANGED_DEFINITIONS = {"jobset-x-k8s-io-jobset-v1alpha2", "agents-x-k8s-io-sandbox-v1beta1", "ray-io-raycluster-v1",
                       "ray-io-rayjob-v1", "ray-io-rayservice-v1", "serving-kserve-io-inferenceservice-v1beta1",
                       "trainer-kubeflow-org-trainjob-v1alpha1"}
"""Catalog entries issue 28 changed (failing children, stale conditions, Ray without a head group spec,
KServe's failed newest revision, TrainJob's missing runtime): their manifests differ."""


def _deliberate(name: str, value: Any) -> Any:
    """``value`` with what the deliberate changes touch made comparable.

    - Issue 28 (conditions ordered by ``lastTransitionTime``): a workload's conditions are
      compared as a set (sorted by type), so only their order may change.
    - Issue 29 (``gpuSummary(groupBy: NODE)`` counts each workload on every node its pods run
      on; it reported 0 everywhere): the NODE bucket's ``workloads`` is left out here and
      checked on its own below.
    - Issue 28's catalog changes: the manifests of ``CHANGED_DEFINITIONS`` are left out.
    """
    if isinstance(value, list):
        return [_deliberate(name, v) for v in value]
    if not isinstance(value, dict):
        return value
    out = {}
    for key, item in value.items():
        if key == "conditions" and isinstance(item, list) and all(isinstance(c, dict) for c in item):
            item = sorted(item, key=lambda c: json.dumps(c, sort_keys=True))
        elif key == "workloads" and name == "gpu-summary-node" and isinstance(item, int):
            continue
        elif key in ("manifest", "spec") and _names_changed(value):
            continue
        out[key] = _deliberate(name, item)
    return out


def _names_changed(record: dict[str, Any]) -> bool:
    """A definition record (REST ``/definitions`` item, a workload type's interface) of a changed entry."""
    return bool({record.get("name"), record.get("definition")} & CHANGED_DEFINITIONS)


def test_the_answers_are_those_of_26af59e(recorded: dict[str, Any], current: dict[str, Any]) -> None:
    changed = {name: differences(_deliberate(name, recorded[name]), _deliberate(name, current.get(name)))[:5]
               for name in recorded}
    assert {name: diff for name, diff in changed.items() if diff} == {}


def test_node_buckets_now_count_their_workloads(recorded: dict[str, Any], current: dict[str, Any]) -> None:
    # issue 29: 26af59e said 0 on every node; now every node bucket holding pods counts >= 1
    # workload, and no bucket counts more workloads than the 141 of the sample
    old = recorded["gpu-summary-node"]["data"]["gpuSummary"]
    new = current["gpu-summary-node"]["data"]["gpuSummary"]
    assert {b["workloads"] for b in old} == {0}
    assert [b["key"] for b in new] == [b["key"] for b in old]
    assert all(1 <= b["workloads"] <= 141 for b in new)


def test_differences_name_the_path() -> None:
    old = {"a": [{"gpu": 4.0}, {"gpu": 8.0}], "b": 1}
    assert differences(old, {"a": [{"gpu": 4.0}, {"gpu": 8}], "c": 1}) == [
        "$.b: missing", "$.c: added", "$.a[1].gpu: 8.0 -> 8"]
    assert differences([1, 2], [1]) == ["$: 2 items, now 1"]


def test_normalize_marks_only_clock_values() -> None:
    value = {"cluster": {"lastSuccess": "2026-12-01T00:00:00Z", "since": None, "name": "local"},
             "definitions": [{"registeredAt": "", "resourceVersion": "17"}]}
    assert sample_answers.normalize(value) == {
        "cluster": {"lastSuccess": "<set>", "since": None, "name": "local"},
        "definitions": [{"registeredAt": "", "resourceVersion": "17"}]}
