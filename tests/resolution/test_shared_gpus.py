"""Shared GPUs (issue 13 item 2): KAI / Run:ai fractions, GPU memory, time-sliced replicas."""

from __future__ import annotations

from decimal import Decimal
from typing import Any

import pytest

from workload_map.paths import REPO_ROOT
from workload_map.definitions import load_definition
from workload_map.definitions.model import Definition
from workload_map.resolution import resolve
from workload_map.resolution.pods import pod_template_requests
from workload_map.resolution.resources import gpu_policy
from workload_map.resolution.sharing import shared_gpu_requests

NS = "team-a"


@pytest.fixture(scope="module")
def deployment_definition() -> Definition:
    return load_definition((REPO_ROOT / "catalog" / "apps-deployment-v1.yaml").read_text())


def _container(resources: dict[str, Any] | None = None) -> dict[str, Any]:
    return {"name": "main", "resources": {"requests": {"cpu": "1", **(resources or {})}}}


def _deployment(replicas: int, annotations: dict[str, str], resources: dict[str, Any] | None = None
                ) -> dict[str, Any]:
    return {"apiVersion": "apps/v1", "kind": "Deployment",
            "metadata": {"name": "infer", "namespace": NS, "uid": "uid-deploy", "resourceVersion": "1"},
            "spec": {"replicas": replicas, "template": {"metadata": {"annotations": annotations},
                                                        "spec": {"containers": [_container(resources)]}}}}


def _replicaset() -> dict[str, Any]:
    return {"apiVersion": "apps/v1", "kind": "ReplicaSet",
            "metadata": {"name": "infer-1", "namespace": NS, "uid": "uid-rs",
                         "ownerReferences": [{"uid": "uid-deploy", "controller": True, "kind": "Deployment"}]}}


def _pod(name: str, annotations: dict[str, str], node: str | None, resources: dict[str, Any] | None = None
         ) -> dict[str, Any]:
    return {"apiVersion": "v1", "kind": "Pod",
            "metadata": {"name": name, "namespace": NS, "uid": f"uid-{name}", "annotations": annotations,
                         "ownerReferences": [{"uid": "uid-rs", "controller": True, "kind": "ReplicaSet"}]},
            "spec": {**({"nodeName": node} if node else {}), "containers": [_container(resources)]},
            "status": {"phase": "Running" if node else "Pending"}}


def test_fractions_times_devices_count_as_nvidia_gpus_in_all_three_figures(deployment_definition: Definition
                                                                           ) -> None:
    fraction = {"gpu-fraction": "0.5", "gpu-fraction-num-devices": "2"}
    view = resolve(deployment_definition, _deployment(3, fraction), objects=[_replicaset()],
                   pods=[_pod("infer-a", fraction, "node-1"), _pod("infer-b", fraction, None)])
    # per pod 0.5 x 2 devices = 1 GPU. spec: 3 replicas x 1 = 3; pods: 2 x 1 = 2; allocated: 1 bound pod = 1
    gpu = view.gpu.to_dict()
    assert (gpu["requestedBySpec"], gpu["requestedByPods"], gpu["allocated"]) == (3, 2, 1)
    assert gpu["byResource"] == {"nvidia.com/gpu": {"requestedBySpec": 3, "requestedByPods": 2, "allocated": 1}}
    assert view.errors == []


def test_a_single_fraction_is_a_fractional_gpu(deployment_definition: Definition) -> None:
    fraction = {"gpu-fraction": "0.25"}
    view = resolve(deployment_definition, _deployment(2, fraction), objects=[_replicaset()],
                   pods=[_pod("infer-a", fraction, "node-1")])
    # spec 2 x 0.25 = 0.5; one bound pod 0.25
    gpu = view.gpu.to_dict()
    assert (gpu["requestedBySpec"], gpu["requestedByPods"], gpu["allocated"]) == (0.5, 0.25, 0.25)
    assert view.to_dict()["resources"]["byResource"]["nvidia.com/gpu"] == "0.5"


def test_gpu_memory_is_memory_not_a_device_count(deployment_definition: Definition) -> None:
    memory = {"gpu-memory": "4096"}
    view = resolve(deployment_definition, _deployment(2, memory), objects=[_replicaset()],
                   pods=[_pod("infer-a", memory, "node-1")])
    # 4096 MiB = 4096 x 1048576 = 4294967296 bytes per pod; spec 2 pods = 8589934592; 0 whole GPUs
    gpu = view.gpu.to_dict()
    assert (gpu["requestedBySpec"], gpu["requestedByPods"], gpu["allocated"]) == (0, 0, 0)
    assert gpu["byResource"] == {"gpu-memory": {"requestedBySpec": 8589934592, "requestedByPods": 4294967296,
                                                "allocated": 4294967296}}


def test_time_sliced_replicas_keep_their_own_name_and_are_not_whole_gpus(deployment_definition: Definition
                                                                        ) -> None:
    shared = {"nvidia.com/gpu.shared": "1"}
    view = resolve(deployment_definition, _deployment(4, {}, shared), objects=[_replicaset()],
                   pods=[_pod("infer-a", {}, "node-1", shared), _pod("infer-b", {}, "node-1", shared)])
    # 4 replicas x 1 shared replica by spec, 2 by pods, both bound; whole GPUs 0
    gpu = view.gpu.to_dict()
    assert (gpu["requestedBySpec"], gpu["requestedByPods"], gpu["allocated"]) == (0, 0, 0)
    assert gpu["byResource"] == {"nvidia.com/gpu.shared": {"requestedBySpec": 4, "requestedByPods": 2,
                                                           "allocated": 2}}


def test_renamed_shared_resources_are_configurable(deployment_definition: Definition) -> None:
    renamed = {"nvidia.com/gpu-ts": "2"}
    policy = gpu_policy(shared=["nvidia.com/gpu-ts"])
    view = resolve(deployment_definition, _deployment(1, {}, renamed), objects=[_replicaset()],
                   pods=[_pod("infer-a", {}, "node-1", renamed)], policy=policy)
    gpu = view.gpu.to_dict(policy)
    # 1 pod x 2 time-slices; listed by name, whole total 0; the default policy does not list it at all
    assert gpu["requestedByPods"] == 0
    assert gpu["byResource"]["nvidia.com/gpu-ts"] == {"requestedBySpec": 2, "requestedByPods": 2, "allocated": 2}
    assert view.gpu.to_dict()["byResource"] == {}


@pytest.mark.parametrize(("annotations", "message"), [
    ({"gpu-fraction": "1.5"}, "gpu-fraction: '1.5' must be a number above 0 and below 1"),
    ({"gpu-fraction": "0"}, "gpu-fraction: '0' must be a number above 0 and below 1"),
    ({"gpu-fraction": "half"}, "gpu-fraction: 'half' must be a number above 0 and below 1"),
    ({"gpu-fraction": "0.5", "gpu-fraction-num-devices": "1.5"}, "gpu-fraction-num-devices: '1.5' must be a positive"),
    ({"gpu-memory": "-1"}, "gpu-memory: '-1' must be a positive whole number of MiB"),
])
def test_bad_annotations_are_errors_naming_the_annotation_and_add_nothing(annotations: dict[str, str],
                                                                          message: str) -> None:
    extra, errors = shared_gpu_requests(annotations, {})
    assert extra == {} and len(errors) == 1 and message in errors[0]


def test_a_fraction_next_to_a_whole_gpu_request_keeps_the_whole_request() -> None:
    # KAI rejects this combination; the 2 whole GPUs stay, the fraction is reported
    result = pod_template_requests({"containers": [_container({"nvidia.com/gpu": "2"})]}, {"gpu-fraction": "0.5"})
    assert result.requests["nvidia.com/gpu"] == Decimal(2)
    assert result.errors == ["annotation gpu-fraction: ignored, the pod also requests whole nvidia.com/gpu"]


def test_a_bad_pod_annotation_is_a_view_error_and_the_rest_resolves(deployment_definition: Definition) -> None:
    view = resolve(deployment_definition, _deployment(1, {}), objects=[_replicaset()],
                   pods=[_pod("infer-a", {"gpu-fraction": "2"}, "node-1")])
    assert [e.message for e in view.errors] == ["pod infer-a: annotation gpu-fraction: '2' must be a number above 0 "
                                                "and below 1"]
    assert view.replicas.current == 1 and view.gpu.to_dict()["requestedByPods"] == 0


def test_shared_resources_and_dra_classes_come_from_the_environment() -> None:
    from workload_map.api.runtime import _policy
    from workload_map.config import Settings, environment_defaults
    env = environment_defaults({"WMAP_SHARED_GPU_RESOURCES": "nvidia.com/gpu-ts, x.com/mps",
                                "WMAP_DRA_GPU_CLASSES": "gpu.example.com"})
    assert env["shared_gpu_resources"] == ("nvidia.com/gpu-ts", "x.com/mps")
    policy = _policy(Settings(shared_gpu_resources=env["shared_gpu_resources"],  # type: ignore[arg-type]
                              dra_gpu_classes=env["dra_gpu_classes"]))  # type: ignore[arg-type]
    assert policy.shared == {"nvidia.com/gpu.shared", "nvidia.com/gpu-ts", "x.com/mps"}
    assert policy.dra_classes == {"gpu.example.com"} and policy.is_whole("dra/gpu.example.com")
    assert not policy.is_whole("dra/gpu.nvidia.com") and not policy.is_whole("x.com/mps")
