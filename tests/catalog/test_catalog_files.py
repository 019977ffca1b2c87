"""The catalog files themselves: one valid definition per workload type, documented and annotated."""

from __future__ import annotations

import json
import re

import pytest
import yaml

from workload_map.cli.main import main
from workload_map.definitions.catalog import ALIASES_ANNOTATION, SOURCE_VERSION_ANNOTATION, load_catalog
from workload_map.definitions.load import check_definition
from workload_map.gvk import GVK
from tests.catalog.support import CATALOG_DIR

EXPECTED = {
    "jobset-x-k8s-io-jobset-v1alpha2": GVK("jobset.x-k8s.io", "v1alpha2", "JobSet"),
    "kubeflow-org-pytorchjob-v1": GVK("kubeflow.org", "v1", "PyTorchJob"),
    "kubeflow-org-mpijob-v2beta1": GVK("kubeflow.org", "v2beta1", "MPIJob"),
    "ray-io-raycluster-v1": GVK("ray.io", "v1", "RayCluster"),
    "ray-io-rayjob-v1": GVK("ray.io", "v1", "RayJob"),
    "ray-io-rayservice-v1": GVK("ray.io", "v1", "RayService"),
    "serving-kserve-io-inferenceservice-v1beta1": GVK("serving.kserve.io", "v1beta1", "InferenceService"),
    "serving-knative-dev-service-v1": GVK("serving.knative.dev", "v1", "Service"),
    "apps-nvidia-com-nimservice-v1alpha1": GVK("apps.nvidia.com", "v1alpha1", "NIMService"),
    "apps-nvidia-com-nimcache-v1alpha1": GVK("apps.nvidia.com", "v1alpha1", "NIMCache"),
    "leaderworkerset-x-k8s-io-leaderworkerset-v1": GVK("leaderworkerset.x-k8s.io", "v1", "LeaderWorkerSet"),
    "milvus-io-milvus-v1beta1": GVK("milvus.io", "v1beta1", "Milvus"),
    "grove-io-podcliqueset-v1alpha1": GVK("grove.io", "v1alpha1", "PodCliqueSet"),
    "nvidia-com-dynamographdeployment-v1alpha1": GVK("nvidia.com", "v1alpha1", "DynamoGraphDeployment"),
    "apps-deployment-v1": GVK("apps", "v1", "Deployment"),
    "apps-statefulset-v1": GVK("apps", "v1", "StatefulSet"),
    "apps-replicaset-v1": GVK("apps", "v1", "ReplicaSet"),
    "batch-job-v1": GVK("batch", "v1", "Job"),
    "batch-cronjob-v1": GVK("batch", "v1", "CronJob"),
    "core-pod-v1": GVK("", "v1", "Pod"),
    # issue 14: the types teams run beside the upstream ones
    "kubeflow-org-tfjob-v1": GVK("kubeflow.org", "v1", "TFJob"),
    "kubeflow-org-xgboostjob-v1": GVK("kubeflow.org", "v1", "XGBoostJob"),
    "kubeflow-org-paddlejob-v1": GVK("kubeflow.org", "v1", "PaddleJob"),
    "kubeflow-org-jaxjob-v1": GVK("kubeflow.org", "v1", "JAXJob"),
    "batch-volcano-sh-job-v1alpha1": GVK("batch.volcano.sh", "v1alpha1", "Job"),
    "trainer-kubeflow-org-trainjob-v1alpha1": GVK("trainer.kubeflow.org", "v1alpha1", "TrainJob"),
    "sparkoperator-k8s-io-sparkapplication-v1beta2": GVK("sparkoperator.k8s.io", "v1beta2", "SparkApplication"),
    "sparkoperator-k8s-io-scheduledsparkapplication-v1beta2": GVK("sparkoperator.k8s.io", "v1beta2",
                                                                   "ScheduledSparkApplication"),
    "argoproj-io-workflow-v1alpha1": GVK("argoproj.io", "v1alpha1", "Workflow"),
    "workload-codeflare-dev-appwrapper-v1beta2": GVK("workload.codeflare.dev", "v1beta2", "AppWrapper"),
    # issue 14: the upstream types we lacked
    "nvidia-com-dynamographdeployment-v1beta1": GVK("nvidia.com", "v1beta1", "DynamoGraphDeployment"),
    "serving-kserve-io-llminferenceservice-v1alpha2": GVK("serving.kserve.io", "v1alpha2", "LLMInferenceService"),
    "serving-kserve-io-llminferenceservice-v1alpha1": GVK("serving.kserve.io", "v1alpha1", "LLMInferenceService"),
    "agents-x-k8s-io-sandbox-v1beta1": GVK("agents.x-k8s.io", "v1beta1", "Sandbox"),
    "agents-x-k8s-io-sandbox-v1alpha1": GVK("agents.x-k8s.io", "v1alpha1", "Sandbox"),
}

#: Short names users type, as the issue lists them (each must resolve to its type).
ALIASES = {
    "jobset": "jobset-x-k8s-io-jobset-v1alpha2", "pytorch": "kubeflow-org-pytorchjob-v1",
    "pytorchjob": "kubeflow-org-pytorchjob-v1", "mpijob": "kubeflow-org-mpijob-v2beta1",
    "raycluster": "ray-io-raycluster-v1", "rayjob": "ray-io-rayjob-v1", "rayservice": "ray-io-rayservice-v1",
    "kserve": "serving-kserve-io-inferenceservice-v1beta1",
    "inferenceservice": "serving-kserve-io-inferenceservice-v1beta1",
    "knative": "serving-knative-dev-service-v1", "knative-service": "serving-knative-dev-service-v1",
    "ksvc": "serving-knative-dev-service-v1", "nim": "apps-nvidia-com-nimservice-v1alpha1",
    "nimservice": "apps-nvidia-com-nimservice-v1alpha1", "nimcache": "apps-nvidia-com-nimcache-v1alpha1",
    "lws": "leaderworkerset-x-k8s-io-leaderworkerset-v1", "leaderworkerset": "leaderworkerset-x-k8s-io-leaderworkerset-v1",
    "milvus": "milvus-io-milvus-v1beta1", "grove": "grove-io-podcliqueset-v1alpha1",
    "podcliqueset": "grove-io-podcliqueset-v1alpha1", "dynamo": "nvidia-com-dynamographdeployment-v1alpha1",
    "dynamographdeployment": "nvidia-com-dynamographdeployment-v1alpha1", "deployment": "apps-deployment-v1",
    "statefulset": "apps-statefulset-v1", "replicaset": "apps-replicaset-v1", "job": "batch-job-v1",
    "cronjob": "batch-cronjob-v1", "pod": "core-pod-v1",
    "tfjob": "kubeflow-org-tfjob-v1", "xgboostjob": "kubeflow-org-xgboostjob-v1",
    "paddlejob": "kubeflow-org-paddlejob-v1", "jaxjob": "kubeflow-org-jaxjob-v1",
    "vcjob": "batch-volcano-sh-job-v1alpha1", "volcanojob": "batch-volcano-sh-job-v1alpha1",
    "trainjob": "trainer-kubeflow-org-trainjob-v1alpha1",
    "llmisvc": "serving-kserve-io-llminferenceservice-v1alpha2",
    "llminferenceservice": "serving-kserve-io-llminferenceservice-v1alpha2",
    "dynamo-v1beta1": "nvidia-com-dynamographdeployment-v1beta1",
    "sandbox": "agents-x-k8s-io-sandbox-v1beta1",
    "spark": "sparkoperator-k8s-io-sparkapplication-v1beta2",
    "sparkapp": "sparkoperator-k8s-io-sparkapplication-v1beta2",
    "scheduledsparkapp": "sparkoperator-k8s-io-scheduledsparkapplication-v1beta2",
    "workflow": "argoproj-io-workflow-v1alpha1", "argo": "argoproj-io-workflow-v1alpha1",
    "appwrapper": "workload-codeflare-dev-appwrapper-v1beta2",
}

FILES = sorted(CATALOG_DIR.glob("*.yaml"))


def test_one_file_per_expected_type() -> None:
    assert sorted(p.stem for p in FILES) == sorted(EXPECTED)


@pytest.mark.parametrize("path", FILES, ids=lambda p: p.stem)
def test_file_validates(path) -> None:  # type: ignore[no-untyped-def]
    (doc,) = [d for d in yaml.safe_load_all(path.read_text()) if d]
    definition, problems = check_definition(doc)
    assert problems == []
    assert definition is not None
    # the file, metadata.name and the root GVK slug agree
    assert definition.name == path.stem == definition.gvk.slug
    assert definition.gvk == EXPECTED[path.stem]


@pytest.mark.parametrize("path", FILES, ids=lambda p: p.stem)
def test_file_header_and_annotations(path) -> None:  # type: ignore[no-untyped-def]
    text = path.read_text()
    header = text.split("\napiVersion:", 1)[0]
    assert all(line.startswith("#") for line in header.splitlines()), "the file starts with its header comment"
    assert re.search(r"written against .+ v?\d", header), "operator version written against"
    assert "Follows:" in header, "the documentation it follows"
    assert "upstream catalog" in header, "where and why it differs from the upstream catalog"
    assert "Roles:" in header
    (doc,) = [d for d in yaml.safe_load_all(text) if d]
    annotations = doc["metadata"]["annotations"]
    assert annotations[ALIASES_ANNOTATION].strip()
    assert re.search(r"\d+\.\d+", annotations[SOURCE_VERSION_ANNOTATION])


def test_catalog_loads_every_type_with_unique_gvks_and_aliases() -> None:
    catalog = load_catalog(CATALOG_DIR)
    entries = list(catalog)
    assert len(entries) == len(EXPECTED) == 35
    assert {e.definition.name: e.gvk for e in entries} == EXPECTED
    assert len({e.gvk for e in entries}) == len(entries)
    aliases = [a for e in entries for a in e.aliases]
    assert len(aliases) == len(set(aliases)), "an alias names one type only"
    for alias, slug in ALIASES.items():
        assert catalog.find(alias).definition.name == slug, alias
    assert catalog.get(GVK("jobset.x-k8s.io", "v1alpha2", "JobSet")).source_version == "JobSet v0.12.0"  # type: ignore[union-attr]


def test_wmap_catalog_lists_all_types(capsys) -> None:  # type: ignore[no-untyped-def]
    assert main(["--catalog-dir", str(CATALOG_DIR), "catalog", "-o", "json"]) == 0
    out = json.loads(capsys.readouterr().out)
    assert out["count"] == len(EXPECTED) == 35
    rows = {r["name"]: r for r in out["items"]}
    assert set(rows) == set(EXPECTED)
    for name, gvk in EXPECTED.items():
        assert (rows[name]["group"], rows[name]["version"], rows[name]["kind"]) == (gvk.group, gvk.version, gvk.kind)
        assert rows[name]["sourceVersion"] and rows[name]["aliases"]
    assert main(["--catalog-dir", str(CATALOG_DIR), "catalog"]) == 0
    table = capsys.readouterr().out
    assert all(name in table for name in EXPECTED)


@pytest.mark.parametrize("path", FILES, ids=lambda p: p.stem)
def test_wmap_validate_accepts_the_file(path, capsys) -> None:  # type: ignore[no-untyped-def]
    assert main(["validate", str(path)]) == 0
    assert capsys.readouterr().out.startswith(f"OK: {path.stem} is a valid Karta definition")
