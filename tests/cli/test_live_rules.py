"""The live CLI's owner-kind rounds and the ``--stale-after`` setting (no cluster).

``watch_owner_kinds`` runs over a real ``InformerCache`` fed by the fake API servers of
``tests/kube`` (one per GVK), with the catalog as the definitions in force.
"""

from __future__ import annotations

import pytest

from workload_map.cli import main as cli_main
from workload_map.cli.live import serve_settings
from workload_map.cli.owners import report_unreadable_owners, watch_owner_kinds
from workload_map.cli.main import build_registry
from workload_map.errors import InvalidRequest
from workload_map.gvk import GVK
from workload_map.kube.errors import KubeApiError
from workload_map.service.workloads import WorkloadService
from tests.kube.fakes import CORE_V1, JOBSET_V1A2, ScriptedListWatch, make_obj
from tests.kube.test_cache import World

POD = GVK("", "v1", "Pod")
JOB = GVK("batch", "v1", "Job")
JOBSET = GVK("jobset.x-k8s.io", "v1alpha2", "JobSet")
BATCH_V1 = {"kind": "APIResourceList", "groupVersion": "batch/v1", "resources": [
    {"name": "jobs", "namespaced": True, "kind": "Job", "verbs": ["list", "watch"]}]}
DOCS = {"/api/v1": CORE_V1, "/apis/batch/v1": BATCH_V1, "/apis/jobset.x-k8s.io/v1alpha2": JOBSET_V1A2}

pytestmark = pytest.mark.timeout(30)


def owned(obj: dict, owner: dict, api_version: str | None = None) -> dict:
    obj["metadata"]["ownerReferences"] = [{"apiVersion": api_version or owner["apiVersion"], "kind": owner["kind"],
                                           "name": owner["metadata"]["name"], "uid": owner["metadata"]["uid"],
                                           "controller": True}]
    return obj


def tree(world: World) -> None:
    """JobSet train -> Job train-0 -> pod train-0-0; Job solo -> pod solo-0; pod bare."""
    jobset = world.server(JOBSET).create(make_obj(JOBSET, "train", uid="js-train"))
    # the Job names its owner by an older served version: matched by group/kind and uid
    job = world.server(JOB).create(owned(make_obj(JOB, "train-0", uid="job-train-0"), jobset,
                                         "jobset.x-k8s.io/v1alpha1"))
    world.server(POD).create(owned(make_obj(POD, "train-0-0", uid="pod-1"), job))
    solo = world.server(JOB).create(make_obj(JOB, "solo", uid="job-solo"))
    world.server(POD).create(owned(make_obj(POD, "solo-0", uid="pod-2"), solo))
    world.server(POD).create(make_obj(POD, "bare", uid="pod-3"))


async def test_owner_rounds_watch_the_chain_and_the_rule_matches_the_server() -> None:
    world = World(DOCS)
    tree(world)
    registry = build_registry()
    cache = world.cache(watch_crds=False)
    cache.watch(POD)  # `wmap get pod` starts with the pod definition's kinds only
    await cache.start()
    try:
        assert await cache.wait_synced(5)
        # round 1: the pods name Jobs; round 2: a Job names the JobSet; round 3 adds nothing
        assert await watch_owner_kinds(cache, registry, timeout=5) == [JOB, JOBSET]
        names = [v.name for v in WorkloadService(registry, cache).workloads(kind="Pod", group="")]
        assert names == ["bare"]  # train-0-0 -> Job (covered); solo-0 -> Job solo (covered)
        jobs = [v.name for v in WorkloadService(registry, cache).workloads(kind="Job", group="batch")]
        assert jobs == ["solo"]  # train-0 -> JobSet train (exists, covered)
        assert report_unreadable_owners(cache, registry) == 0
    finally:
        await cache.stop()


async def test_unreadable_owner_kind_is_reported(capsys: pytest.CaptureFixture[str]) -> None:
    world = World(DOCS)
    tree(world)
    world.overrides[JOBSET] = ScriptedListWatch([KubeApiError(403, "Forbidden", "jobsets is forbidden")] * 1000, [])
    registry = build_registry()
    cache = world.cache(watch_crds=False)
    cache.watch(JOB)
    await cache.start()
    try:
        assert await cache.wait_synced(5)
        assert await watch_owner_kinds(cache, registry, timeout=5) == [JOBSET]
        assert cache.state(JOBSET).state == "forbidden"
        assert report_unreadable_owners(cache, registry) == 1  # Job train-0
    finally:
        await cache.stop()
    assert ("1 object(s) have a controller owner of kind JobSet.jobset.x-k8s.io that cannot be read (forbidden)"
            in capsys.readouterr().err)


def test_stale_after_flag_and_environment() -> None:
    parse = cli_main.parser().parse_args
    assert serve_settings(parse(["serve"]), {}).kube.stale_after_s == 30.0
    assert serve_settings(parse(["serve", "--stale-after", "5"]), {}).kube.stale_after_s == 5.0
    assert serve_settings(parse(["serve"]), {"WMAP_STALE_AFTER": "12.5"}).kube.stale_after_s == 12.5
    assert serve_settings(parse(["serve", "--stale-after", "7"]), {"WMAP_STALE_AFTER": "12.5"}).kube.stale_after_s == 7
    with pytest.raises(InvalidRequest, match="--stale-after"):
        serve_settings(parse(["serve", "--stale-after", "-1"]), {})
    with pytest.raises(InvalidRequest, match="WMAP_STALE_AFTER"):
        serve_settings(parse(["serve"]), {"WMAP_STALE_AFTER": "soon"})
