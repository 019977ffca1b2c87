"""Several clusters in one process, without a control plane: the fleet's merge, sums, filters.

Each cluster is a real ``WorkloadService`` over a real ``SnapshotReader`` (not started: reads
resolve in the shared blocking worker, through the catalog's Pod definition). The two
clusters hold a Pod of the same namespace, name **and uid** ``u1``: uids are unique per
cluster only, and nothing may be keyed by uid alone.

Seed (``nvidia.com/gpu`` per pod, all bound to a node):

* east: ``n/p`` (uid u1) 2 GPUs, ``n/q`` (uid u2) 3 GPUs -> 2 workloads, 2 + 3 = 5 GPUs;
* west: ``n/p`` (uid u1) 4 GPUs -> 1 workload, 4 GPUs.
"""

from __future__ import annotations

from decimal import Decimal
from pathlib import Path
from typing import Any

import pytest
import yaml

from workload_map.config import Settings
from workload_map.definitions.catalog import load_catalog
from workload_map.definitions.registry import DefinitionRegistry
from workload_map.errors import InvalidRequest, WorkloadNotFound
from workload_map.kube.clusters import ClusterTarget, cluster_targets
from workload_map.kube.snapshot import SnapshotReader
from workload_map.service.workloads import WorkloadService
from workload_map.materialization.feed import ChangeFeed
from workload_map.service.fleet import Fleet, route_write
from workload_map.service.pagination import paginate

GPU = "nvidia.com/gpu"


def pod(name: str, uid: str, gpus: int) -> dict[str, Any]:
    """A bound Pod asking for ``gpus`` whole GPUs."""
    resources = {"requests": {GPU: str(gpus)}, "limits": {GPU: str(gpus)}}
    return {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": name, "namespace": "n", "uid": uid},
            "spec": {"nodeName": "node-1", "containers": [{"name": "c", "image": "x", "resources": resources}]},
            "status": {"phase": "Running"}}


@pytest.fixture(scope="module")
def fleet() -> Fleet:
    feed = ChangeFeed()
    seeds = {"east": [pod("p", "u1", 2), pod("q", "u2", 3)], "west": [pod("p", "u1", 4)]}
    catalog = Settings().catalog_dir
    members = {name: WorkloadService(DefinitionRegistry(load_catalog(catalog)), SnapshotReader(objects),
                                     cluster=name, feed=feed) for name, objects in seeds.items()}
    out = Fleet(members, feed)
    out.writers = {"east": "east-writer", "west": "west-writer"}
    return out


def test_the_same_uid_in_two_clusters_is_two_workloads_in_cluster_order(fleet: Fleet) -> None:
    rows = [(v.cluster, v.name, v.uid, v.gpu.spec.get(GPU)) for v in fleet.workloads(namespace="n")]
    # namespace, kind, group, name, then cluster: n/p of east, n/p of west, then n/q
    assert rows == [("east", "p", "u1", Decimal(2)), ("west", "p", "u1", Decimal(4)), ("east", "q", "u2", Decimal(3))]
    assert [v.name for v in fleet.workloads(cluster="west")] == ["p"]
    assert fleet.workloads(cluster="north") == []


def test_gpu_summary_by_cluster_and_merged_by_namespace(fleet: Fleet) -> None:
    by_cluster = {b.key: (b.workloads, b.spec.get(GPU), b.allocated.get(GPU)) for b in fleet.gpu_summary("CLUSTER")}
    assert by_cluster == {"east": (2, Decimal(5), Decimal(5)), "west": (1, Decimal(4), Decimal(4))}  # 2+3; 4
    (namespace,) = fleet.gpu_summary("NAMESPACE")
    assert (namespace.key, namespace.workloads, namespace.spec[GPU]) == ("n", 3, Decimal(9))  # 5 + 4


def test_lookups_by_cluster_and_the_first_cluster_by_default(fleet: Fleet) -> None:
    assert fleet.workload("n", "", "Pod", "p", cluster="west").gpu.spec[GPU] == Decimal(4)
    assert fleet.workload("n", "", "Pod", "p").cluster == "east"
    with pytest.raises(WorkloadNotFound, match="in cluster west"):
        fleet.workload("n", "", "Pod", "q", cluster="west")
    placement = fleet.pod_placement("n", "p", cluster="west")
    assert placement is not None and placement.view.cluster == "west"


def test_writes_are_routed_to_the_workloads_cluster(fleet: Fleet) -> None:
    service, writer = route_write(fleet, None, ("n", "", "Pod", "p"), "west")
    assert (service.cluster, writer) == ("west", "west-writer")
    service, writer = route_write(fleet, None, ("n", "", "Pod", "q"), None)  # only east has q
    assert (service.cluster, writer) == ("east", "east-writer")
    with pytest.raises(InvalidRequest, match="cluster must be one of east, west"):
        route_write(fleet, None, ("n", "", "Pod", "p"), "north")


def test_pages_of_one_walk_both_same_named_workloads(fleet: Fleet) -> None:
    views, after, seen = fleet.workloads(), None, []
    for _ in range(5):  # 3 workloads: at most 3 pages
        page = paginate(views, first=1, after=after)
        seen += [(v.cluster, v.name) for v in page.items]
        if not page.has_next:
            break
        after = page.end_cursor
    assert seen == [("east", "p"), ("west", "p"), ("east", "q")]


def _kubeconfig(path: Path, context: str) -> str:
    path.write_text(yaml.safe_dump({"apiVersion": "v1", "kind": "Config", "current-context": context,
                                    "contexts": [{"name": context, "context": {"cluster": "c", "user": "u"}}]}))
    return str(path)


def test_cluster_targets_follow_the_kubeconfig_merging_rules(tmp_path: Path) -> None:
    a, b = _kubeconfig(tmp_path / "a", "prod"), _kubeconfig(tmp_path / "b", "lab")
    assert cluster_targets([], ["x"]) == [] and cluster_targets([a], []) == []  # one cluster: unchanged path
    assert cluster_targets([a, b], ["lab", "prod"]) == [ClusterTarget("lab", f"{a}:{b}", "lab"),
                                                        ClusterTarget("prod", f"{a}:{b}", "prod")]
    assert cluster_targets([a, b], []) == [ClusterTarget("prod", a, "prod"), ClusterTarget("lab", b, "lab")]
    with pytest.raises(InvalidRequest, match="'prod' is given twice"):
        cluster_targets([a, a], [])
    with pytest.raises(InvalidRequest, match="current-context is not set"):
        (tmp_path / "c").write_text("apiVersion: v1\n")
        cluster_targets([a, str(tmp_path / "c")], [])


def test_wide_output_names_each_workloads_cluster(fleet: Fleet) -> None:
    from workload_map.cli.render import render_list

    lines = render_list(fleet.workloads(), "wide").splitlines()
    assert lines[0].split() == ["NAME", "NAMESPACE", "PHASE", "GPUS", "AGE", "DEFINITION", "PODS", "NODES", "CLUSTER"]
    assert [line.split()[0] + "@" + line.split()[-1] for line in lines[1:]] == ["p@east", "p@west", "q@east"]


def test_the_cli_names_the_context_it_reads(tmp_path: Path) -> None:
    from workload_map.cli.kubectl import context_name

    a = _kubeconfig(tmp_path / "a", "prod")
    assert context_name(a) == "prod" and context_name(a, "lab") == "lab"
    assert context_name(None, environ={}, sa_dir=tmp_path) == ""  # nothing configured
