"""Workload actions over REST and GraphQL in snapshot mode (the in-memory objects change)."""

from __future__ import annotations

import json

import httpx
import pytest
from starlette.applications import Starlette

from workload_map.gvk import GVK
from workload_map.kube.snapshot import SnapshotReader
from tests.api.conftest import gql

TRAIN = "/api/v1/namespaces/ml/workloads/jobset.x-k8s.io/JobSet/train"
JOBSET = GVK("jobset.x-k8s.io", "v1alpha2", "JobSet")
WORKER = "/spec/replicatedJobs/1/template/spec/template"


def _template(reader: SnapshotReader, index: int) -> dict:
    obj = reader.get(JOBSET, "ml", "train")
    assert obj is not None
    return obj["spec"]["replicatedJobs"][index]["template"]["spec"]["template"]


async def test_pod_template_patch_dry_run_then_applied_to_the_snapshot(client: httpx.AsyncClient,
                                                                       reader: SnapshotReader) -> None:
    body = {"instances": ["worker"], "labels": {"team": "a"}, "nodeSelector": {"pool": "h100"}}
    dry = await client.patch(TRAIN + "/pod-template?dryRun=true", json=body)
    assert dry.status_code == 200, dry.text
    # fixture resourceVersion "100"; worker is replicatedJobs[1]; its template has only a spec, so
    # the existing spec gets nodeSelector first, then metadata (absent) is added whole
    assert dry.json()["patch"] == [
        {"op": "replace", "path": "/metadata/resourceVersion", "value": "100"},
        {"op": "add", "path": f"{WORKER}/spec/nodeSelector", "value": {"pool": "h100"}},
        {"op": "add", "path": f"{WORKER}/metadata", "value": {"labels": {"team": "a"}}}]
    assert dry.json()["dryRun"] is True and "metadata" not in _template(reader, 1)  # nothing written

    applied = await client.patch(TRAIN + "/pod-template", json=body)
    assert applied.status_code == 200, applied.text
    assert applied.json()["appliedTo"] == "snapshot" and applied.json()["resourceVersion"] == "101"
    assert _template(reader, 1)["metadata"]["labels"] == {"team": "a"}
    assert _template(reader, 1)["spec"]["nodeSelector"] == {"pool": "h100"}
    assert "metadata" not in _template(reader, 0) and "nodeSelector" not in _template(reader, 0)  # leader untouched

    stale = await client.patch(TRAIN + "/pod-template", json={**body, "labels": {"x": "y"}, "resourceVersion": "100"})
    assert stale.status_code == 409 and stale.json()["error"] == "conflict"
    assert _template(reader, 1)["metadata"]["labels"] == {"team": "a"}


async def test_errors_name_the_field(client: httpx.AsyncClient) -> None:
    bad = await client.patch(TRAIN + "/pod-template", json={"instances": ["nope"], "labels": {"a": "b"}})
    assert bad.status_code == 400 and "no instance 'nope'" in bad.json()["message"]
    missing = await client.patch(TRAIN.replace("/train", "/gone") + "/pod-template", json={"labels": {"a": "b"}})
    assert missing.status_code == 404


async def test_suspend_and_resume_flip_spec_suspend_and_the_phase_follows(app: Starlette, client: httpx.AsyncClient,
                                                                          reader: SnapshotReader) -> None:
    suspended = await client.post(TRAIN + "/suspend", json={})  # a body (or content-type) is required: cross-site guard
    assert suspended.status_code == 200, suspended.text
    assert suspended.json()["patch"][1:] == [{"op": "add", "path": "/spec/suspend", "value": True}]
    assert reader.get(JOBSET, "ml", "train")["spec"]["suspend"] is True  # type: ignore[index]
    await app.state.runtime.service.settled(10)
    # spec.suspend true and no Suspended condition yet: the catalog maps that to Suspending
    phase = (await client.get(TRAIN + "/phase")).json()
    assert "Suspending" in phase["phases"], phase
    again = await client.post(TRAIN + "/suspend", json={"resourceVersion": "101"})
    assert again.json()["changed"] is False  # already suspended: nothing sent

    resumed = await gql(client, """mutation { resumeWorkload(namespace: "ml", group: "jobset.x-k8s.io",
        kind: "JobSet", name: "train") { appliedTo changed patch } }""")
    assert resumed["data"]["resumeWorkload"]["appliedTo"] == "snapshot"
    assert resumed["data"]["resumeWorkload"]["patch"][1:] == [{"op": "replace", "path": "/spec/suspend",
                                                              "value": False}]
    assert reader.get(JOBSET, "ml", "train")["spec"]["suspend"] is False  # type: ignore[index]


async def test_graphql_update_dry_run_and_bad_change(client: httpx.AsyncClient) -> None:
    query = """mutation($change: String!) { updatePodTemplate(namespace: "ml", group: "jobset.x-k8s.io", kind: "JobSet",
        name: "train", change: $change, dryRun: true) { dryRun changed targets } }"""
    answer = await gql(client, query, change=json.dumps({"components": ["replicatedjob"], "schedulerName": "kai"}))
    result = answer["data"]["updatePodTemplate"]
    # both replicated jobs are instances of component replicatedjob: leader (0) and worker (1)
    assert result["dryRun"] is True and [t["instance"] for t in result["targets"]] == ["leader", "worker"]
    for bad in ('{"labels": {"a": 1}}', "not json", "[]"):
        refused = await gql(client, query, change=bad)
        assert refused["errors"][0]["extensions"] == {"code": "BAD_USER_INPUT", "error": "bad_request"}, bad


NAME_RULE = "name part must be 1-63 alphanumerics, '-', '_' or '.', starting and ending alphanumeric"
VALUE_RULE = "not a valid label value (at most 63 alphanumerics, '-', '_' or '.', starting and ending alphanumeric)"


@pytest.mark.parametrize(("body", "message"), [
    ({"labels": {"bad key": "a"}}, f"labels: key 'bad key' is not a valid label key: {NAME_RULE}"),
    ({"labels": {"x" * 64: "a"}}, f"labels: key '{'x' * 64}' is not a valid label key: {NAME_RULE}"),
    ({"labels": {"Example.com/team": "a"}},
     "labels: key 'Example.com/team' is not a valid label key: prefix part must be a lowercase DNS subdomain"),
    ({"labels": {"/team": "a"}}, "labels: key '/team' is not a valid label key: prefix part must be a lowercase "
                                 "DNS subdomain"),
    ({"labels": {"team": "a b"}}, f"labels.team: value 'a b': {VALUE_RULE}"),
    ({"labels": {"team": "v" * 64}}, f"labels.team: value '{'v' * 64}': {VALUE_RULE}"),
    ({"labels": {"team": "-a"}}, f"labels.team: value '-a': {VALUE_RULE}"),
    ({"nodeSelector": {"pool": "h100/x"}}, f"nodeSelector.pool: value 'h100/x': {VALUE_RULE}"),
    ({"annotations": {"note!": "free text is fine"}},
     f"annotations: key 'note!' is not a valid annotation key: {NAME_RULE}"),
    ({"annotations": {"a": "x" * (256 * 1024)}},
     "annotations of component 'replicatedjob': must total at most 262144 bytes (256 KiB) of keys and values, "
     "got 262145"),
])
async def test_snapshot_patches_follow_the_kubernetes_label_rules(client: httpx.AsyncClient, reader: SnapshotReader,
                                                                  body: dict, message: str) -> None:
    # an API server refuses these; the snapshot path took them (found by review)
    answer = await client.patch(TRAIN + "/pod-template", json={"instances": ["worker"], **body})
    assert answer.status_code == 400 and answer.json()["error"] == "bad_request", answer.text
    assert answer.json()["message"] == message
    assert "metadata" not in _template(reader, 1) and "nodeSelector" not in _template(reader, 1)["spec"]


async def test_valid_label_forms_are_accepted(client: httpx.AsyncClient, reader: SnapshotReader) -> None:
    # prefixed keys, an empty value, 63-character parts, an upper-case annotation prefix (checked lower-cased),
    # free-text annotation values; removing a key (null) is not checked
    body = {"instances": ["worker"], "labels": {"example.com/team": "", "t" * 63: "v" * 63, "old": None},
            "annotations": {"Example.COM/note": "free text: any value!"}}
    answer = await client.patch(TRAIN + "/pod-template", json=body)
    assert answer.status_code == 200, answer.text
    assert _template(reader, 1)["metadata"] == {"labels": {"example.com/team": "", "t" * 63: "v" * 63},
                                                "annotations": {"Example.COM/note": "free text: any value!"}}


@pytest.mark.parametrize(("body", "said"), [
    ('{"annotations": {"x": "\\ud800"}}', "value at 'annotations.x' holds a lone UTF-16 surrogate"),
    ('{"tolerations": [{"key": "a\\udc00", "operator": "Exists"}]}',
     "value at 'tolerations[0].key' holds a lone UTF-16 surrogate"),
    ('{"labels": ' + "[" * 100_000 + "]" * 100_000 + "}", "nested too deeply"),
    ('{"labels": {"a": ' + "9" * 5_000 + "}}", "not readable JSON"),
])
async def test_unreadable_bodies_are_refused_before_anything_is_written(client: httpx.AsyncClient,
                                                                        reader: SnapshotReader, body: str,
                                                                        said: str) -> None:
    before = json.dumps(reader.get(JOBSET, "ml", "train"), sort_keys=True)
    answer = await client.patch(TRAIN + "/pod-template", content=body.encode(),
                                headers={"content-type": "application/json"})
    assert answer.status_code == 400, answer.text
    assert said in answer.json()["message"]
    assert json.dumps(reader.get(JOBSET, "ml", "train"), sort_keys=True) == before  # nothing written


async def test_a_surrogate_pair_is_text_and_accepted(client: httpx.AsyncClient, reader: SnapshotReader) -> None:
    body = '{"instances": ["worker"], "annotations": {"note": "\\ud83d\\ude00"}}'  # one code point, U+1F600
    answer = await client.patch(TRAIN + "/pod-template?dryRun=true", content=body.encode(),
                                headers={"content-type": "application/json"})
    assert answer.status_code == 200, answer.text
    assert answer.json()["patch"][-1]["value"] == {"annotations": {"note": "\U0001f600"}}
