"""Nested workloads: a child of a catalog type read through its own definition (docs section 12).

Every pair of issue 14 on the catalog fixtures, offline (``resolve_objects``, which passes the
nested definitions as ``WorkloadService.inputs`` does) and through the service over the
fixture file (the offline CLI's path); the live path on the real API server is
``test_live.py``, which compares every fixture state's live view with this offline one.

Two ways a pair reads:
* stand-in (TrainJob, AppWrapper, RayJob's head/worker): the outer components named in
  ``nested-standin`` give way once the child exists; the roles are the inner definition's;
* override (NIMService, LLMInferenceService, CronJob, ScheduledSparkApplication, and the
  stand-in kinds with the annotation removed): the outer components claim the child's pods,
  so the inner roles they cover are left out and only what is left shows.
In both, the GPU total is the one of the pods and templates counted once.
"""

from __future__ import annotations

import copy
from pathlib import Path
from typing import Any

import pytest

from workload_map.definitions.load import load_definition
from workload_map.definitions.model import Definition
from workload_map.definitions.registry import DefinitionRegistry
from workload_map.kube.snapshot import SnapshotReader
from workload_map.resolution.nesting import nested_children, nested_definitions
from workload_map.service.workloads import WorkloadService
from tests.catalog.support import (
    FIXTURES,
    catalog,
    catalog_definition,
    definition,
    is_pod,
    load,
    resolve_objects,
    summary,
)

TRAINJOB = "trainer-kubeflow-org-trainjob-v1alpha1"
JOBSET = "jobset-x-k8s-io-jobset-v1alpha2"
APPWRAPPER = "workload-codeflare-dev-appwrapper-v1beta2"
PYTORCHJOB = "kubeflow-org-pytorchjob-v1"
JOB = "batch-job-v1"
RAYJOB = "ray-io-rayjob-v1"
RAYCLUSTER = "ray-io-raycluster-v1"
NIMSERVICE = "apps-nvidia-com-nimservice-v1alpha1"
LWS = "leaderworkerset-x-k8s-io-leaderworkerset-v1"
DEPLOYMENT = "apps-deployment-v1"
LLMISVC = "serving-kserve-io-llminferenceservice-v1alpha1"
CRONJOB = "batch-cronjob-v1"
SCHEDULED_SPARK = "sparkoperator-k8s-io-scheduledsparkapplication-v1beta2"
SPARK = "sparkoperator-k8s-io-sparkapplication-v1beta2"
STANDIN = "workload-map.run.ai/nested-standin"


def variant(slug: str, *, drop_standin: bool = False, drop_components: tuple[str, ...] = (),
            root_without_pods: bool = False) -> Definition:
    """A test copy of a catalog definition with an override removed or the stand-ins turned off."""
    manifest = copy.deepcopy(definition(slug).manifest)
    if drop_standin:
        manifest["metadata"]["annotations"].pop(STANDIN)
    structure = manifest["spec"]["structureDefinition"]
    if drop_components:
        structure["childComponents"] = [c for c in structure["childComponents"] if c["name"] not in drop_components]
        # the live-scale entries name the dropped components: without them they would be errors
        manifest["metadata"]["annotations"].pop("workload-map.run.ai/live-scale", None)
        manifest["spec"].pop("optimizationInstructions", None)
    if root_without_pods:
        for key in ("specDefinition", "scaleDefinition", "podSelector"):
            structure["rootComponent"].pop(key, None)
        manifest["spec"].pop("optimizationInstructions", None)
    return load_definition(manifest)


def roles(defn: Definition, slug: str, state: str) -> dict[str, tuple[str, int, int, int, int]]:
    """role -> (definition, desired, current, ready, requestedBySpec GPUs)."""
    view = resolve_objects(defn, load(slug, state))
    return {r.name: (r.component.definition, r.replicas.desired, r.replicas.current, r.replicas.ready,
                     r.gpu.to_dict()["requestedBySpec"]) for r in view.roles()}


def figures(defn: Definition, slug: str, state: str) -> tuple[tuple[int, int, int], tuple[Any, ...]]:
    got = summary(resolve_objects(defn, load(slug, state)))
    assert got["errors"] == [] and got["unattributed"] == []
    return got["pods"], got["gpu"]


def children_of(defn: Definition, slug: str, state: str) -> list[str]:
    docs = load(slug, state)
    root, others = docs[0], docs[1:]
    nested = nested_definitions(defn, others, catalog_definition)
    return [f"{c['kind']}/{c['metadata']['name']}" for c in nested_children(defn, root, others, nested)]


# --- stand-in pairs: the roles are the inner definition's --------------------------------------

STANDIN_CASES = [
    # TrainJob llama-sft -> JobSet llama-sft: replicated job node, parallelism 2 x 8 GPUs = 16 spec;
    # 2 pods running x 8 = 16 by pods and allocated.
    pytest.param(TRAINJOB, "running", JOBSET, {"node": (JOBSET, 2, 2, 2, 16)}, (2, 2, 2), (16, 16, 16),
                 id="trainjob-jobset"),
    # AppWrapper fms-tune -> PyTorchJob fms-tune-ptj: Master 1 x 2 GPUs + Worker 2 x 2 GPUs = 6 spec
    # (0 before nesting: the pods carry no podSet marker); 3 pods x 2 = 6 by pods and allocated.
    pytest.param(APPWRAPPER, "running", PYTORCHJOB,
                 {"master": (PYTORCHJOB, 1, 1, 1, 2), "worker": (PYTORCHJOB, 2, 2, 2, 4)}, (3, 3, 3), (6, 6, 6),
                 id="appwrapper-pytorchjob"),
    # AppWrapper eval-batch -> Job eval-batch-job: parallelism 2 x 1 GPU = 2 spec; both pods Succeeded.
    pytest.param(APPWRAPPER, "succeeded", JOB, {"job": (JOB, 2, 0, 0, 2)}, (2, 0, 0), (2, 0, 0),
                 id="appwrapper-job"),
    # RayJob ppo-cartpole -> RayCluster: head 1 (0 GPU) + small-group 2 x 1 GPU = 2 spec, from the
    # RayCluster; the submitter Job (1 pod, no GPU) stays the RayJob's own role: 4 pods in all.
    pytest.param(RAYJOB, "running", RAYCLUSTER,
                 {"head": (RAYCLUSTER, 1, 1, 1, 0), "small-group": (RAYCLUSTER, 2, 2, 2, 2),
                  "submitter": (RAYJOB, 1, 1, 1, 0)}, (4, 4, 4), (2, 2, 2), id="rayjob-raycluster"),
]


@pytest.mark.parametrize(("slug", "state", "inner", "want_roles", "pods", "gpu"), STANDIN_CASES)
def test_standin_pair_reads_the_inner_definition(slug: str, state: str, inner: str, want_roles: dict[str, Any],
                                                 pods: tuple[int, int, int], gpu: tuple[int, int, int]) -> None:
    outer = definition(slug)
    assert len(children_of(outer, slug, state)) == 1
    assert roles(outer, slug, state) == want_roles
    assert list(roles(outer, slug, state)) == list(want_roles), "inner roles take the stand-ins' place"
    assert figures(outer, slug, state) == (pods, gpu)
    # no double counting: the GPU figures are the inner workload's own (the outer adds only
    # its own roles, which hold no GPU here)
    assert figures(definition(inner), slug, state)[1] == gpu


@pytest.mark.parametrize(("slug", "state", "want_roles", "gpu"), [
    # The stand-ins kept (annotation removed): trainer claims both pods, the JobSet's node role is
    # overridden: trainer 2 x 8 = 16 spec, not 32.
    pytest.param(TRAINJOB, "running", {"trainer": (TRAINJOB, 2, 2, 2, 16)}, (16, 16, 16), id="trainjob"),
    # numNodes 3 without resourcesPerNode: the TrainJob's own reading (spec 0) wins over the JobSet's 12.
    pytest.param(TRAINJOB, "initializing-runtime-resources", {"trainer": (TRAINJOB, 3, 3, 0, 0)}, (0, 12, 8),
                 id="trainjob-runtime"),
    # pods claims all 3 pods: the PyTorchJob's roles are overridden, spec 0 as before nesting.
    pytest.param(APPWRAPPER, "running", {"pods": (APPWRAPPER, 3, 3, 3, 0)}, (0, 6, 6), id="appwrapper"),
    # head/worker of the RayJob claim the RayCluster's 3 pods: 2 GPUs, once.
    pytest.param(RAYJOB, "running", {"head": (RAYJOB, 1, 1, 1, 0), "small-group": (RAYJOB, 2, 2, 2, 2),
                                     "submitter": (RAYJOB, 1, 1, 1, 0)}, (2, 2, 2), id="rayjob"),
])
def test_outer_components_override_the_inner_roles(slug: str, state: str, want_roles: dict[str, Any],
                                                   gpu: tuple[int, int, int]) -> None:
    outer = variant(slug, drop_standin=True)
    assert len(children_of(outer, slug, state)) == 1
    assert roles(outer, slug, state) == want_roles
    assert figures(outer, slug, state)[1] == gpu


# --- override pairs: the outer restates the child, what is left shows -----------------------------

OVERRIDE_CASES = [
    # NIMService llama3-405b-nim -> LeaderWorkerSet (1 group of 2 pods x 8 GPUs = 16): the NIMService
    # component claims both pods; the LWS's leader/worker roles are overridden.
    pytest.param(NIMSERVICE, "running-multinode", {"nimservice": (NIMSERVICE, 2, 2, 2, 16)}, (16, 16, 16),
                 id="nimservice-lws"),
    # NIMService llama3-70b-nim -> Deployment (2 replicas x 4 GPUs = 8).
    pytest.param(NIMSERVICE, "running", {"nimservice": (NIMSERVICE, 2, 2, 2, 8)}, (8, 8, 8),
                 id="nimservice-deployment"),
    # LLMInferenceService qwen3-pd-a1 -> 3 Deployments: decode main 2 x 1 GPU, prefill 1 x 2 GPUs,
    # scheduler 1 (no GPU) = 4; each Deployment's role overridden by the service's component.
    pytest.param(LLMISVC, "running", {"main": (LLMISVC, 2, 2, 2, 2), "worker": (LLMISVC, 0, 0, 0, 0),
                                      "prefill": (LLMISVC, 1, 1, 1, 2), "prefill-worker": (LLMISVC, 0, 0, 0, 0),
                                      "router-scheduler": (LLMISVC, 1, 1, 1, 0)}, (4, 4, 4),
                 id="llminferenceservice-deployment"),
    # CronJob nightly-eval -> Job nightly-eval-29393400: 2 pods x 2 GPUs = 4, the CronJob's job role.
    pytest.param(CRONJOB, "running", {"job": (CRONJOB, 2, 2, 2, 4)}, (4, 4, 4), id="cronjob-job"),
    # ScheduledSparkApplication hourly-features -> SparkApplication: driver (no GPU) + 2 executors x 1 GPU.
    pytest.param(SCHEDULED_SPARK, "running", {"driver": (SCHEDULED_SPARK, 1, 1, 1, 0),
                                              "executor": (SCHEDULED_SPARK, 2, 2, 2, 2)}, (2, 2, 2),
                 id="scheduledspark-sparkapplication"),
]


@pytest.mark.parametrize(("slug", "state", "want_roles", "gpu"), OVERRIDE_CASES)
def test_override_pair_keeps_the_outer_reading(slug: str, state: str, want_roles: dict[str, Any],
                                               gpu: tuple[int, int, int]) -> None:
    assert len(children_of(definition(slug), slug, state)) >= 1
    assert roles(definition(slug), slug, state) == want_roles
    assert figures(definition(slug), slug, state)[1] == gpu


@pytest.mark.parametrize(("defn", "slug", "state", "inner_roles", "gpu"), [
    # Without the NIMService's own pod reading, the LWS's roles show: leader 1 + worker 1 (group
    # size 2), 8 GPUs each = 16, the same total.
    pytest.param(lambda: variant(NIMSERVICE, root_without_pods=True), NIMSERVICE, "running-multinode",
                 {"leader": (LWS, 1, 1, 1, 8), "worker": (LWS, 1, 1, 1, 8)}, (16, 16, 16), id="nimservice-lws"),
    pytest.param(lambda: variant(NIMSERVICE, root_without_pods=True), NIMSERVICE, "running",
                 {"deployment": (DEPLOYMENT, 2, 2, 2, 8)}, (8, 8, 8), id="nimservice-deployment"),
    # Without main, the decode Deployment's own role shows (2 x 1 GPU); prefill and the scheduler
    # stay the service's: 2 + 2 + 0 = 4, the same total.
    pytest.param(lambda: variant(LLMISVC, drop_components=("main",)), LLMISVC, "running",
                 {"deployment": (DEPLOYMENT, 2, 2, 2, 2)}, (4, 4, 4), id="llminferenceservice-deployment"),
    # Without worker, the LWS's worker role shows (1 x 8 GPUs); main still claims the leader: 16.
    pytest.param(lambda: variant(LLMISVC, drop_components=("worker",)), LLMISVC, "running-multinode",
                 {"worker": (LWS, 1, 1, 1, 8)}, (16, 16, 16), id="llminferenceservice-lws"),
    pytest.param(lambda: variant(CRONJOB, drop_components=("job",)), CRONJOB, "running",
                 {"job": (JOB, 2, 2, 2, 4)}, (4, 4, 4), id="cronjob-job"),
    pytest.param(lambda: variant(SCHEDULED_SPARK, drop_components=("driver", "executor")), SCHEDULED_SPARK,
                 "running", {"driver": (SPARK, 1, 1, 1, 0), "executor": (SPARK, 2, 2, 2, 2)}, (2, 2, 2),
                 id="scheduledspark-sparkapplication"),
])
def test_without_the_override_the_inner_roles_show(defn: Any, slug: str, state: str, inner_roles: dict[str, Any],
                                                   gpu: tuple[int, int, int]) -> None:
    outer = defn()
    got = roles(outer, slug, state)
    assert {name: r for name, r in got.items() if r[0] != outer.name} == inner_roles
    assert figures(outer, slug, state)[1] == gpu == figures(definition(slug), slug, state)[1]


# --- the child is not a workload of its own; the service (offline CLI path) agrees ----------------

PAIR_STATES = [(TRAINJOB, "running"), (APPWRAPPER, "running"), (APPWRAPPER, "succeeded"), (RAYJOB, "running"),
               (NIMSERVICE, "running-multinode"), (NIMSERVICE, "running"), (LLMISVC, "running"),
               (LLMISVC, "running-multinode"), (CRONJOB, "running"), (SCHEDULED_SPARK, "running")]


@pytest.mark.parametrize(("slug", "state"), PAIR_STATES, ids=lambda v: v)
def test_service_lists_the_outer_workload_alone_with_the_nested_view(slug: str, state: str) -> None:
    reader = SnapshotReader.from_paths(Path(FIXTURES / slug / f"{state}.yaml"))
    views = WorkloadService(DefinitionRegistry(catalog()), reader).workloads()
    root = load(slug, state)[0]
    assert [(v.kind, v.name) for v in views] == [(root["kind"], root["metadata"]["name"])]
    assert views[0].to_dict()["roles"] == resolve_objects(definition(slug), load(slug, state)).to_dict()["roles"]


def test_roles_in_the_json_view_name_their_definition() -> None:
    view = resolve_objects(definition(APPWRAPPER), load(APPWRAPPER, "running")).to_dict()
    assert [(r["name"], r["definition"]) for r in view["roles"]] == [("master", PYTORCHJOB), ("worker", PYTORCHJOB)]
    assert view["gpu"]["requestedBySpec"] == 6
    # a workload without nesting: every role is its own definition's
    plain = resolve_objects(definition(JOBSET), load(TRAINJOB, "running")).to_dict()
    assert {r["definition"] for r in plain["roles"]} == {JOBSET}


def test_without_the_nested_definitions_the_stand_ins_read() -> None:
    # resolve() without nested= (a caller that has no inner definitions): the pre-nesting reading
    docs = load(APPWRAPPER, "running")
    from workload_map.resolution import resolve
    view = resolve(definition(APPWRAPPER), docs[0], objects=docs[1:], pods=[d for d in docs if is_pod(d)])
    assert [r.name for r in view.roles()] == ["pods"]
    assert view.to_dict()["gpu"]["requestedBySpec"] == 0


@pytest.mark.parametrize(("slug", "state", "gpu"), [
    # The same states with every pod removed (the child exists, its pods not yet): the inner
    # instances have no pod to be claimed, so the outer components claim their would-be pods
    # (template labels + the labels the inner selector requires). Spec side as above, nothing by pods.
    pytest.param(NIMSERVICE, "running-multinode", 16, id="nimservice-lws"),
    pytest.param(NIMSERVICE, "running", 8, id="nimservice-deployment"),
    pytest.param(LLMISVC, "running", 4, id="llminferenceservice-deployment"),
    pytest.param(LLMISVC, "running-multinode", 16, id="llminferenceservice-lws"),
    pytest.param(CRONJOB, "running", 4, id="cronjob-job"),
    # spark-role is set by spark-submit, not in the SparkApplication's driver/executor labels: the
    # would-be pods carry it from the SparkApplication definition's selectors. 2, not 2 + 2.
    pytest.param(SCHEDULED_SPARK, "running", 2, id="scheduledspark-sparkapplication"),
])
def test_before_the_pods_exist_the_demand_counts_once(slug: str, state: str, gpu: int) -> None:
    docs = [d for d in load(slug, state) if not is_pod(d)]
    view = resolve_objects(definition(slug), docs)
    assert all(r.component.definition == slug for r in view.roles())
    assert summary(view)["gpu"] == (gpu, 0, 0)


def test_nesting_recurses_appwrapper_rayjob_raycluster() -> None:
    # An AppWrapper wrapping the RayJob of the ray-io-rayjob-v1 "running" fixture (the RayJob now
    # owned by the AppWrapper): AppWrapper -> RayJob -> RayCluster -> pods. The roles are the
    # RayJob's view: head + small-group from the RayCluster definition, submitter from the RayJob's;
    # GPUs: small-group 2 x 1 = 2 by spec, by pods and allocated, once (not 2 per level).
    docs = copy.deepcopy(load(RAYJOB, "running"))
    rayjob = docs[0]
    meta = rayjob["metadata"]
    wrapper = {"apiVersion": "workload.codeflare.dev/v1beta2", "kind": "AppWrapper",
               "metadata": {"name": "wrapped-ray", "namespace": meta["namespace"], "uid": "aw-0001"},
               "spec": {"components": [{"template": {"apiVersion": "ray.io/v1", "kind": "RayJob"}}]},
               "status": {"phase": "Running"}}
    meta["ownerReferences"] = [{"apiVersion": "workload.codeflare.dev/v1beta2", "kind": "AppWrapper",
                                "name": "wrapped-ray", "uid": "aw-0001", "controller": True}]
    view = resolve_objects(definition(APPWRAPPER), [wrapper, *docs])
    assert {r.name: (r.component.definition, r.replicas.desired, r.replicas.current) for r in view.roles()} == {
        "head": (RAYCLUSTER, 1, 1), "small-group": (RAYCLUSTER, 2, 2), "submitter": (RAYJOB, 1, 1)}
    got = summary(view)
    assert got["gpu"] == (2, 2, 2) and got["pods"] == (4, 4, 4) and got["unattributed"] == []
    assert [g.name for g in view.gangs] == ["raycluster"]  # the stand-ins' gang gives way at each level


def test_a_broken_nested_child_keeps_the_outer_view() -> None:
    # The wrapped PyTorchJob's replica specs are not a map: the PyTorchJob definition's paths fail
    # on it (errors on its components), the AppWrapper view is still produced and counts the pods.
    docs = copy.deepcopy(load(APPWRAPPER, "running"))
    ptj = next(d for d in docs if d["kind"] == "PyTorchJob")
    ptj["spec"]["pytorchReplicaSpecs"] = "broken"
    view = resolve_objects(definition(APPWRAPPER), docs)
    got = summary(view)
    assert got["errors"], "the broken child is reported"
    assert got["gpu"][1:] == (6, 6)  # 3 pods x 2 GPUs by pods and allocated, once
    assert view.name == "fms-tune" and view.phase.value == "Running"


def test_an_owner_reference_cycle_does_not_nest_forever() -> None:
    # CronJob -> Job -> CronJob (the CronJob's controller reference names its own Job): the Job
    # is resolved once inside the CronJob; the CronJob is not resolved again inside the Job.
    docs = copy.deepcopy(load(CRONJOB, "running"))
    cronjob, job = docs[0], next(d for d in docs if d["kind"] == "Job")
    cronjob["metadata"]["ownerReferences"] = [{"apiVersion": "batch/v1", "kind": "Job", "controller": True,
                                               "name": job["metadata"]["name"], "uid": job["metadata"]["uid"]}]
    view = resolve_objects(definition(CRONJOB), docs)
    assert summary(view)["gpu"] == (4, 4, 4)  # 2 pods x 2 GPUs, once
    assert any("ownerReference" in e.message or "cycle" in e.message for e in view.errors)
