"""The nesting extensions (docs/definition-format.md section 12): parsing, validation, ``wmap validate``.

Third-party Kartas (``../shared/conformance/upstream/catalog``) use no extension and read as
before; our entries that nest say so; a malformed annotation is a validation finding naming
the annotation and the reason.
"""

from __future__ import annotations

import copy
from pathlib import Path
from typing import Any

import pytest

from workload_map.cli.main import main
from workload_map.definitions import load_documents
from workload_map.definitions.extensions import (LIVE_SCALE_ANNOTATION, NESTED_ANNOTATION, STANDIN_ANNOTATION,
                                                   TEMPLATES_ANNOTATION, extensions_of)
from workload_map.definitions.load import check_definition, load_definition
from tests.catalog.support import CATALOG_DIR, catalog, definition, shared_dir

NESTING = {  # our entries that nest -> (group, kind) of their nested children, stand-ins
    "trainer-kubeflow-org-trainjob-v1alpha1": ({("jobset.x-k8s.io", "JobSet")}, ("trainer",)),
    "ray-io-rayjob-v1": ({("ray.io", "RayCluster")}, ("head", "worker")),
    "batch-cronjob-v1": ({("batch", "Job")}, ()),
    "sparkoperator-k8s-io-scheduledsparkapplication-v1beta2": ({("sparkoperator.k8s.io", "SparkApplication")}, ()),
    "apps-nvidia-com-nimservice-v1alpha1": ({("leaderworkerset.x-k8s.io", "LeaderWorkerSet"),
                                             ("apps", "Deployment")}, ()),
    "serving-kserve-io-llminferenceservice-v1alpha1": ({("leaderworkerset.x-k8s.io", "LeaderWorkerSet"),
                                                        ("apps", "Deployment")}, ()),
    "serving-kserve-io-llminferenceservice-v1alpha2": ({("leaderworkerset.x-k8s.io", "LeaderWorkerSet"),
                                                        ("apps", "Deployment")}, ()),
}


def test_catalog_entries_declare_their_nesting() -> None:
    for entry in catalog():
        ext = extensions_of(entry.definition)
        if entry.definition.name in NESTING:
            kinds, standin = NESTING[entry.definition.name]
            assert set(ext.nested) == kinds and ext.standin == standin, entry.definition.name
    appwrapper = extensions_of(definition("workload-codeflare-dev-appwrapper-v1beta2"))
    assert ("kubeflow.org", "PyTorchJob") in appwrapper.nested and ("batch", "Job") in appwrapper.nested
    assert appwrapper.standin == ("pods",)
    # a type without nested children uses none
    assert extensions_of(definition("jobset-x-k8s-io-jobset-v1alpha2")).names() == []


def test_third_party_kartas_use_no_extension() -> None:
    shared = shared_dir()
    upstream = shared / "conformance" / "upstream" / "catalog" if shared is not None else None
    if upstream is None or not upstream.is_dir():
        pytest.skip("shared upstream catalog not present")
    files = sorted(upstream.glob("*.yaml"))
    assert files
    for path in files:
        for doc in load_documents(path.read_text(encoding="utf-8")):
            defn, problems = check_definition(doc)
            assert defn is not None and problems == [], path.name
            assert extensions_of(defn).names() == [], path.name


def _with(annotations: dict[str, str], slug: str = "batch-cronjob-v1") -> dict[str, Any]:
    manifest = copy.deepcopy(definition(slug).manifest)
    manifest["metadata"]["annotations"].pop(STANDIN_ANNOTATION, None)
    manifest["metadata"]["annotations"].update(annotations)
    return manifest


@pytest.mark.parametrize(("annotations", "slug", "message"), [
    ({NESTED_ANNOTATION: "batch/job"}, "batch-cronjob-v1", '"batch/job" is not <group>/<Kind>'),
    ({NESTED_ANNOTATION: "batch/CronJob"}, "batch-cronjob-v1", '"batch/CronJob" is the definition\'s own kind'),
    ({NESTED_ANNOTATION: "", STANDIN_ANNOTATION: "job"}, "batch-cronjob-v1", f"needs {NESTED_ANNOTATION}"),
    ({NESTED_ANNOTATION: "batch/Job", STANDIN_ANNOTATION: "jobs"}, "batch-cronjob-v1",
     'unknown child component "jobs"'),
    # the root is not a child component
    ({NESTED_ANNOTATION: "ray.io/RayCluster", STANDIN_ANNOTATION: "rayjob"}, "ray-io-rayjob-v1",
     'unknown child component "rayjob"'),
    # LeaderWorkerSet's group owns leader and worker and has no pods of its own
    ({NESTED_ANNOTATION: "apps/StatefulSet", STANDIN_ANNOTATION: "group"}, "leaderworkerset-x-k8s-io-leaderworkerset-v1",
     'component "group" must carry pods and own no other component'),
    # live-scale: an unknown component, a kind with no replica reader, the root without kinds
    ({LIVE_SCALE_ANNOTATION: "nope"}, "ray-io-rayservice-v1", "live-scale entry 'nope': no component named nope"),
    ({LIVE_SCALE_ANNOTATION: "head=Bogus.nowhere"}, "ray-io-rayservice-v1",
     "live-scale entry 'head=Bogus.nowhere': the replicas of Bogus.nowhere are not read"),
    ({LIVE_SCALE_ANNOTATION: "rayservice"}, "ray-io-rayservice-v1", "the root or a logical component needs"),
    ({LIVE_SCALE_ANNOTATION: ""}, "ray-io-rayservice-v1", "names no component"),
    # nested-templates needs nested and an expression
    ({NESTED_ANNOTATION: "", TEMPLATES_ANNOTATION: ".spec.jobTemplate"}, "batch-cronjob-v1", f"needs {NESTED_ANNOTATION}"),
    ({NESTED_ANNOTATION: "batch/Job", TEMPLATES_ANNOTATION: " "}, "batch-cronjob-v1", "is empty"),
    # issue 28: the evidence annotations must not be empty
    ({"workload-map.run.ai/failing-children": " "}, "jobset-x-k8s-io-jobset-v1alpha2", "is empty"),
    ({"workload-map.run.ai/degraded-when": ""}, "jobset-x-k8s-io-jobset-v1alpha2", "is empty"),
    ({"workload-map.run.ai/unknown-when": ""}, "trainer-kubeflow-org-trainjob-v1alpha1", "is empty"),
    # a misspelt extension key is refused, not ignored
    ({"workload-map.run.ai/nestd": "batch/Job"}, "batch-cronjob-v1", "unknown extension annotation"),
])
def test_malformed_extension_is_a_finding(annotations: dict[str, str], slug: str, message: str) -> None:
    defn, problems = check_definition(_with(annotations, slug))
    assert defn is None
    assert any(message in p.message and p.path.startswith("metadata.annotations[workload-map.run.ai/")
               for p in problems), [str(p) for p in problems]


@pytest.mark.parametrize("key", ["workload-map.run.ai/degraded-when", "workload-map.run.ai/unknown-when",
                                 TEMPLATES_ANNOTATION])
@pytest.mark.parametrize(("expression", "message"), [("(", "jq expression failed to parse"),
                                                     ("del(.spec)", "del function is not allowed")])
def test_an_extension_expression_jq_refuses_is_a_finding_naming_the_annotation(key: str, expression: str,
                                                                              message: str) -> None:
    # before: accepted by validate and registration, then every view of the kind carried
    # "unknown-when evaluation failed: jq: error: syntax error ..."
    annotations = {key: expression, **({NESTED_ANNOTATION: "batch/Job"} if key == TEMPLATES_ANNOTATION else {})}
    defn, problems = check_definition(_with(annotations))
    assert defn is None
    assert [p.path for p in problems] == [f'metadata.annotations["{key}"]'] and message in problems[0].message, \
        [str(p) for p in problems]


def test_core_group_is_written_with_or_without_the_slash() -> None:
    defn = load_definition(_with({NESTED_ANNOTATION: "Pod, /ConfigMap"}))
    assert extensions_of(defn).nested == (("", "Pod"), ("", "ConfigMap"))


def test_wmap_validate_names_the_extensions(capsys: pytest.CaptureFixture[str]) -> None:
    trainjob = str(CATALOG_DIR / "trainer-kubeflow-org-trainjob-v1alpha1.yaml")
    jobset = str(CATALOG_DIR / "jobset-x-k8s-io-jobset-v1alpha2.yaml")
    assert main(["validate", trainjob, jobset]) == 0
    lines = capsys.readouterr().out.splitlines()
    assert lines[0].startswith("OK: trainer-kubeflow-org-trainjob-v1alpha1 is a valid Karta definition")
    assert lines[1] == ("  extensions: workload-map.run.ai/nested, workload-map.run.ai/nested-standin "
                        "(docs/definition-format.md section 12)")
    assert lines[2].startswith("OK: jobset-x-k8s-io-jobset-v1alpha2")
    assert len(lines) == 3  # the JobSet uses none: no extensions line


def test_wmap_describe_file_shows_the_nested_roles(capsys: pytest.CaptureFixture[str]) -> None:
    import json
    path = Path(__file__).resolve().parents[1] / "fixtures" / "objects" / "workload-codeflare-dev-appwrapper-v1beta2"
    assert main(["describe", "-f", str(path / "running.yaml"), "-o", "json"]) == 0
    view = json.loads(capsys.readouterr().out)
    # the PyTorchJob's master 1 x 2 GPUs + worker 2 x 2 GPUs = 6 by spec, as resolve_objects says
    assert [(r["name"], r["definition"], r["gpu"]["requestedBySpec"]) for r in view["roles"]] == [
        ("master", "kubeflow-org-pytorchjob-v1", 2), ("worker", "kubeflow-org-pytorchjob-v1", 4)]
    assert view["gpu"]["requestedBySpec"] == 6 and view["kind"] == "AppWrapper"
