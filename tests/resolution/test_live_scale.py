"""Live scale of children (workload_map.resolution.livescale): an autoscaled child's replicas win.

Each case starts from a catalog fixture, changes what an HPA (or the Ray autoscaler, or the
Grove operator after a PodCliqueScalingGroup scale) writes on a child object, and checks the
desired pods and the requested-by-spec GPUs worked out by hand. Pods are left as they are:
current and ready only change when the child's controller acts.
"""

from __future__ import annotations

import copy
import msgspec.structs
from typing import Any

from workload_map.resolution import WorkloadView
from workload_map.resolution.livescale import LIVE_SCALE_ANNOTATION
from tests.catalog.support import definition, load, resolve_objects, summary

ISVC = "serving-kserve-io-inferenceservice-v1beta1"
GROVE = "grove-io-podcliqueset-v1alpha1"
LLMISVC = "serving-kserve-io-llminferenceservice-v1alpha2"
RAYSERVICE = "ray-io-rayservice-v1"
MILVUS = "milvus-io-milvus-v1beta1"
FIELD = f'metadata.annotations["{LIVE_SCALE_ANNOTATION}"]'


def _find(docs: list[dict[str, Any]], kind: str, name: str) -> dict[str, Any]:
    return next(d for d in docs if d["kind"] == kind and d["metadata"]["name"] == name)


def _roles(view: WorkloadView) -> dict[str, tuple[int, int, int]]:
    return {k: (v.desired, v.current, v.ready) for k, v in summary(view)["roles"].items()}


def _isvc(replicas: int | None) -> list[dict[str, Any]]:
    """The running InferenceService fixture (predictor minReplicas 2, 1 GPU per pod; transformer
    1 pod, no GPU) with the predictor Deployment scaled to ``replicas`` (None: the fixture's 2)."""
    docs = copy.deepcopy(load(ISVC, "running"))
    if replicas is not None:
        _find(docs, "Deployment", "llama3-8b-predictor")["spec"]["replicas"] = replicas
    return docs


def test_hpa_scaled_predictor_deployment_is_the_desired_count() -> None:
    view = resolve_objects(definition(ISVC), _isvc(5))
    # the HPA wrote 5 on the predictor Deployment; the template says minReplicas 2 -> desired 5;
    # 2 pods exist so far. Spec GPUs: 5 x 1 = 5; pods hold 2 x 1, both on nodes.
    assert _roles(view)["predictor"] == (5, 2, 2)
    assert view.replicas.desired == 5 + 1  # + transformer 1
    gpu = view.to_dict()["gpu"]
    assert (gpu["requestedBySpec"], gpu["requestedByPods"], gpu["allocated"]) == (5, 2, 2)
    predictor = next(c for c in view.all_components() if c.name == "predictor")
    # min / max stay the HPA bounds from the template: minReplicas 2, maxReplicas 4
    assert (predictor.replicas.min, predictor.replicas.max) == (2, 4)
    assert view.errors == []


def test_hpa_scaled_down_below_the_template() -> None:
    # an HPA with minReplicas 1 set by hand: the live 1 wins over the template's 2 -> spec 1 GPU
    view = resolve_objects(definition(ISVC), _isvc(1))
    assert _roles(view)["predictor"] == (1, 2, 2)
    assert view.to_dict()["gpu"]["requestedBySpec"] == 1


def test_child_absent_keeps_the_template_count() -> None:
    docs = _isvc(None)
    # the predictor Deployment is not created yet: remove it with its ReplicaSet and pods
    docs = [d for d in docs if "predictor" not in d["metadata"]["name"]]
    view = resolve_objects(definition(ISVC), docs)
    # template: minReplicas 2 -> desired 2 x 1 GPU = 2 by spec; no pod, nothing held
    assert _roles(view)["predictor"] == (2, 0, 0)
    gpu = view.to_dict()["gpu"]
    assert (gpu["requestedBySpec"], gpu["requestedByPods"], gpu["allocated"]) == (2, 0, 0)


def test_child_being_deleted_is_not_counted() -> None:
    docs = _isvc(5)
    _find(docs, "Deployment", "llama3-8b-predictor")["metadata"]["deletionTimestamp"] = "2026-11-20T00:00:00Z"
    view = resolve_objects(definition(ISVC), docs)
    # the only predictor Deployment is going away: back to the template's 2
    assert _roles(view)["predictor"][0] == 2


def test_without_the_annotation_the_template_count_stays() -> None:
    base = definition(ISVC)
    meta = {**base.manifest["metadata"], "annotations": {
        k: v for k, v in base.manifest["metadata"]["annotations"].items() if k != LIVE_SCALE_ANNOTATION}}
    plain = msgspec.structs.replace(base, manifest={**base.manifest, "metadata": meta})
    # the same live Deployment at 5, but the definition does not opt in: minReplicas 2
    assert _roles(resolve_objects(plain, _isvc(5)))["predictor"][0] == 2


def test_grove_podclique_scaled_by_its_hpa() -> None:
    docs = copy.deepcopy(load(GROVE, "running"))
    _find(docs, "PodClique", "disagg-llm-0-decode")["spec"]["replicas"] = 5
    view = resolve_objects(definition(GROVE), docs)
    # decode: template 1 pcs replica x 2 = 2; its HPA set the PodClique to 5 -> desired 5.
    # GPUs: the fixture's 56 - decode 2 x 4 + 5 x 4 = 56 - 8 + 20 = 68.
    assert _roles(view)["decode"] == (5, 2, 2)
    assert view.to_dict()["gpu"]["requestedBySpec"] == 68
    assert view.replicas.desired == 10 - 2 + 5


def test_grove_scaling_group_scaled_out_counts_the_new_podcliques() -> None:
    docs = copy.deepcopy(load(GROVE, "running"))
    _find(docs, "PodCliqueScalingGroup", "disagg-llm-0-prefill")["spec"]["replicas"] = 3
    # the operator created group replica 2: its leader (1 pod) and worker (2 pods) PodCliques
    for role in ("prefill-leader", "prefill-worker"):
        clique = copy.deepcopy(_find(docs, "PodClique", f"disagg-llm-0-prefill-1-{role}"))
        clique["metadata"]["name"] = f"disagg-llm-0-prefill-2-{role}"
        clique["metadata"]["uid"] = f"uid-prefill-2-{role}"
        clique["metadata"]["labels"]["grove.io/podcliquescalinggroup-replica-index"] = "2"
        clique["metadata"]["labels"]["app.kubernetes.io/name"] = clique["metadata"]["name"]
        docs.append(clique)
    view = resolve_objects(definition(GROVE), docs)
    # prefill-leader: 3 PodCliques x 1 = 3 (template 2 x 1 = 2); prefill-worker 3 x 2 = 6 (template 4).
    # GPUs: 56 + 1 leader x 8 + 2 workers x 8 = 80.
    roles = _roles(view)
    assert (roles["prefill-leader"][0], roles["prefill-worker"][0]) == (3, 6)
    assert view.to_dict()["gpu"]["requestedBySpec"] == 80


def test_leaderworkerset_child_splits_leaders_and_workers() -> None:
    docs = copy.deepcopy(load(LLMISVC, "running-multinode"))
    _find(docs, "LeaderWorkerSet", "qwen3-235b-kserve-mn")["spec"]["replicas"] = 3
    view = resolve_objects(definition(LLMISVC), docs)
    # the HPA set the LWS to 3 groups of size 2 (template 1 group): 3 leaders are main pods and
    # 3 x (2 - 1) = 3 are workers; 8 GPUs each: (3 + 3) x 8 = 48 by spec.
    roles = _roles(view)
    assert (roles["main"][0], roles["worker"][0]) == (3, 3)
    assert view.to_dict()["gpu"]["requestedBySpec"] == 48


def test_rayservice_worker_group_scaled_by_the_ray_autoscaler() -> None:
    docs = copy.deepcopy(load(RAYSERVICE, "running"))
    cluster = next(d for d in docs if d["kind"] == "RayCluster")
    group = cluster["spec"]["workerGroupSpecs"][0]
    group["replicas"] = 3
    view = resolve_objects(definition(RAYSERVICE), docs)
    # gpu-group: template replicas 2 (min 1, max 3); the autoscaler wrote 3 on the live
    # RayCluster -> desired 3 x 1 GPU = 3 by spec; the head stays 1 (CPU only).
    roles = _roles(view)
    assert (roles["head"][0], roles["gpu-group"][0]) == (1, 3)
    assert view.to_dict()["gpu"]["requestedBySpec"] == 3
    group["replicas"] = 7  # beyond maxReplicas 3: KubeRay clamps to 3
    assert _roles(resolve_objects(definition(RAYSERVICE), docs))["gpu-group"][0] == 3


def test_milvus_component_deployment_scaled_by_an_hpa() -> None:
    docs = copy.deepcopy(load(MILVUS, "running"))
    _find(docs, "Deployment", "rag-store-milvus-querynode")["spec"]["replicas"] = 6
    view = resolve_objects(definition(MILVUS), docs)
    # querynode 3 -> 6 (1 GPU each): desired 8 - 3 + 6 = 11 pods; GPUs 4 - 3 + 6 = 7 by spec
    assert _roles(view)["querynode"] == (6, 3, 3)
    assert view.replicas.desired == 11
    assert view.to_dict()["gpu"]["requestedBySpec"] == 7


def test_unreadable_child_replicas_is_an_error_and_keeps_the_template() -> None:
    docs = _isvc(None)
    _find(docs, "Deployment", "llama3-8b-predictor")["spec"]["replicas"] = "five"
    view = resolve_objects(definition(ISVC), docs)
    assert _roles(view)["predictor"][0] == 2
    assert [(e.field, e.message) for e in view.errors] == [
        (FIELD, "Deployment llm-serving/llama3-8b-predictor: spec.replicas is 'five', not a replica count "
                "0..2147483647")]


def test_bad_annotation_entries_are_reported_by_name() -> None:
    base = definition(ISVC)
    annotations = {**base.manifest["metadata"]["annotations"],
                   LIVE_SCALE_ANNOTATION: "predictor, nosuch, inferenceservice, transformer=Job.batch"}
    broken = msgspec.structs.replace(base, manifest={**base.manifest, "metadata": {
        **base.manifest["metadata"], "annotations": annotations}})
    view = resolve_objects(broken, _isvc(5))
    messages = [e.message for e in view.errors]
    assert all(e.field == FIELD for e in view.errors)
    assert messages[0] == "live-scale entry 'nosuch': no component named nosuch"
    assert messages[1].startswith("live-scale entry 'inferenceservice': the root or a logical component needs")
    assert messages[2].startswith("live-scale entry 'transformer=Job.batch': the replicas of Job.batch are not read")
    assert len(messages) == 3
    # the good entry still applies: predictor 5
    assert _roles(view)["predictor"][0] == 5


def test_rayjob_cluster_scaled_up_and_gone() -> None:
    docs = copy.deepcopy(load("ray-io-rayjob-v1", "running"))
    cluster = next(d for d in docs if d["kind"] == "RayCluster")
    cluster["spec"]["workerGroupSpecs"][0]["replicas"] = 4
    view = resolve_objects(definition("ray-io-rayjob-v1"), docs)
    # small-group: template 2 (min 1, max 4); the autoscaler wrote 4 on the RayJob's cluster ->
    # desired 4 x 1 GPU = 4 by spec; head 1 and submitter 1 unchanged: 6 pods wanted
    assert _roles(view)["small-group"] == (4, 2, 2)
    assert view.replicas.desired == 6 and view.to_dict()["gpu"]["requestedBySpec"] == 4
    without = [d for d in docs if d["kind"] != "RayCluster"]
    # no RayCluster (its pods no longer reach the RayJob): the template's 2 again
    assert _roles(resolve_objects(definition("ray-io-rayjob-v1"), without))["small-group"][0] == 2


def test_nimservice_multinode_leaderworkerset_counts_every_pod_of_a_group() -> None:
    docs = copy.deepcopy(load("apps-nvidia-com-nimservice-v1alpha1", "running-multinode"))
    _find(docs, "LeaderWorkerSet", "llama3-405b-nim-lws")["spec"]["replicas"] = 2
    view = resolve_objects(definition("apps-nvidia-com-nimservice-v1alpha1"), docs)
    # the HPA scaled the LWS to 2 groups of size 2 (template 1 replica x pipeline 2 = 2 pods):
    # leaders 2 + workers 2 x (2 - 1) = 4 pods, all the one role; 8 GPUs each = 32 by spec
    assert _roles(view)["nimservice"][0] == 4
    assert view.to_dict()["gpu"]["requestedBySpec"] == 32
