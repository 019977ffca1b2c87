"""The studio's evaluation (workload_map.resolution.studio), without a server or a browser.

Inputs: the catalog JobSet definition and the bundled sample's JobSet file (JobSet
llm-pretrain: leader 1 pod + worker 2 pods, 4 nvidia.com/gpu each, all Running and ready;
three more JobSets with their Jobs and pods in the same file).
"""

from __future__ import annotations

import json

import yaml

from workload_map.paths import REPO_ROOT
from workload_map.resolution.studio import OUTPUT_CAP, evaluate

DEFINITION = (REPO_ROOT / "catalog" / "jobset-x-k8s-io-jobset-v1alpha2.yaml").read_text(encoding="utf-8")
OBJECTS = [d for d in yaml.safe_load_all((REPO_ROOT / "server" / "workload_map" / "sample" /
                                          "jobset-x-k8s-io-jobset-v1alpha2.yaml").read_text(encoding="utf-8")) if d]
CONDITIONS = "spec.structureDefinition.rootComponent.statusDefinition.conditionsDefinition.path"
TYPE_KEY = "spec.structureDefinition.childComponents[0].podSelector.componentTypeSelector.keyPath"
INSTANCES = "spec.structureDefinition.childComponents[0].instanceIdPath"


def test_a_valid_definition_resolves_the_named_root() -> None:
    answer = evaluate(DEFINITION, OBJECTS, root_name="llm-pretrain")
    assert answer["valid"] and answer["problems"] == []
    assert answer["root"] == {"kind": "JobSet", "namespace": "ml-training", "name": "llm-pretrain"}
    assert (answer["phase"], answer["phases"]) == ("Running", ["Running"])
    view = answer["view"]
    assert [r["name"] for r in view["roles"]] == ["leader", "worker"]
    assert view["gpu"]["requestedBySpec"] == 12  # (1 + 2) pods x 4 GPUs
    paths = {p["path"]: p for p in answer["paths"]}
    assert paths[INSTANCES]["output"] == '["leader", "worker"]'  # read on the JobSet
    assert paths[CONDITIONS]["output"] == "null"  # llm-pretrain's status has no conditions
    lines = paths[TYPE_KEY]["output"].splitlines()  # a pod selector: one line per given pod
    # the file holds 7 pods: llm-pretrain's 3, llm-pretrain-starting's 3, llm-pretrain-crashed's leader
    assert 'llm-pretrain-leader-0-0-wpjmg: "leader"' in lines and len(lines) == 7
    assert json.dumps(answer)  # the answer is JSON as it is


def test_findings_carry_their_field_paths_and_stop_the_evaluation() -> None:
    broken = DEFINITION.replace("path: .status.conditions\n", "path: '.status.conditions[] |'\n")
    answer = evaluate(broken, OBJECTS)
    assert not answer["valid"] and answer["view"] is None and answer["paths"] == []
    assert [p["path"] for p in answer["problems"]] == [CONDITIONS]
    assert "failed to parse" in answer["problems"][0]["message"]


def test_a_runtime_error_is_shown_on_its_path_and_the_rest_still_evaluates() -> None:
    changed = DEFINITION.replace("instanceIdPath: .spec.replicatedJobs[].name",
                                 "instanceIdPath: .spec.replicatedJobs[].name | tonumber")
    assert changed != DEFINITION
    answer = evaluate(changed, OBJECTS, root_name="llm-pretrain")
    paths = {p["path"]: p for p in answer["paths"]}
    assert 'string ("leader") cannot be parsed as a number' in paths[INSTANCES]["error"]
    assert paths[CONDITIONS]["output"] == "null" and answer["view"] is not None


def test_without_a_root_object_the_note_says_so() -> None:
    pods = [o for o in OBJECTS if o["kind"] == "Pod"]
    answer = evaluate(DEFINITION, pods)
    assert answer["valid"] and answer["view"] is None
    assert answer["note"] == "no given object is a JobSet (jobset.x-k8s.io); give one to resolve"


def test_not_yaml_is_one_finding_at_the_document() -> None:
    answer = evaluate("spec: [", [])
    assert not answer["valid"] and answer["problems"][0]["path"] == ""
    assert "not valid YAML or JSON" in answer["problems"][0]["message"]


def test_long_outputs_are_cut() -> None:
    changed = DEFINITION.replace("path: .status.conditions\n", "path: '\"x\" * 9000'\n")
    answer = evaluate(changed, OBJECTS, root_name="llm-pretrain")
    assert answer["valid"], answer["problems"]
    row = next(p for p in answer["paths"] if p["path"] == CONDITIONS)
    assert len(row["output"]) == OUTPUT_CAP + 1 and row["output"].endswith("…")  # 9,002 characters of JSON


def test_the_studio_job_answers_from_a_resolver_worker() -> None:
    # the server runs the evaluation as a StudioJob on the resolver workers; the answer is
    # pickled back: llm-pretrain's 3 pods x 4 GPUs = 12 allocated
    from workload_map.materialization.sandbox import Sandbox, job_id
    from workload_map.materialization.worker import StudioJob

    job = StudioJob(job_id("studio"), DEFINITION, tuple(OBJECTS), "llm-pretrain")
    (outcome,) = Sandbox(30).run_blocking([job])
    assert outcome.status == "ok", outcome.error
    assert outcome.view["view"]["gpu"]["allocated"] == 12
