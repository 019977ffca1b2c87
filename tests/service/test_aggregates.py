"""Incremental aggregates: after thousands of random puts and removes, every GPU bucket, the
list order and the identity index equal a recomputation from scratch."""

from __future__ import annotations

import random
from decimal import Decimal

from workload_map.definitions import Phase
from workload_map.definitions.registry import Entry
from workload_map.resolution.resources import DEFAULT_GPU_POLICY, add_into
from workload_map.resolution.view import GpuFigures, PodView, Replicas, WorkloadView
from workload_map.materialization.views import GROUP_BY, GpuBucket, ViewStore
from tests.service.support import demo_definition

ENTRY = Entry(demo_definition(), "file", "demo")
GPU = "nvidia.com/gpu"
MIG = "nvidia.com/mig-1g.5gb"


def _amounts(rng: random.Random) -> dict[str, Decimal]:
    out: dict[str, Decimal] = {}
    for name in (GPU, MIG, "cpu"):  # cpu is not summed: the buckets hold GPU-class resources only
        if rng.random() < 0.6:
            out[name] = Decimal(rng.randint(0, 8)) / (2 if rng.random() < 0.3 else 1)  # halves: exact Decimals
    return out


def _view(rng: random.Random, uid: str, name: str, namespace: str) -> WorkloadView:
    pods = [PodView(f"{name}-{i}", namespace, f"{uid}-p{i}", "Running", True,
                    rng.choice([None, "node-a", "node-b", "node-c"]), None, _amounts(rng), rng.random() < 0.2)
            for i in range(rng.randint(0, 3))]
    phase = rng.choice(list(Phase))
    return WorkloadView(name=name, namespace=namespace, kind=rng.choice(["Demo", "Other"]),
                        api_version="example.com/v1", uid=uid, resource_version="1", created_at=None,
                        definition="demo", origin="file", phase=phase, phases=[phase], raw_phase=None, conditions=[],
                        components=[], unattributed=pods, replicas=Replicas(), requests={},
                        gpu=GpuFigures(_amounts(rng), _amounts(rng), _amounts(rng)), gangs=[], errors=[])


def _gpu(amounts: dict[str, Decimal]) -> dict[str, Decimal]:
    return {k: v for k, v in amounts.items() if DEFAULT_GPU_POLICY.is_gpu(k)}


def _from_scratch(views: list[WorkloadView], group_by: str) -> list[GpuBucket]:
    """The pre-materialization summary, written out independently of workload_map.materialization.views."""
    buckets: dict[str, GpuBucket] = {}
    for view in views:
        if group_by == "NODE":
            counted: set[str] = set()  # a workload counts once on each node holding one of its pods
            for pod in view.all_pods():
                if not pod.terminated:
                    bucket = buckets.setdefault(pod.node or "<unscheduled>", GpuBucket(pod.node or "<unscheduled>"))
                    if bucket.key not in counted:
                        bucket.workloads += 1
                        counted.add(bucket.key)
                    add_into(bucket.pods, _gpu(pod.requests))
                    if pod.node:
                        add_into(bucket.allocated, _gpu(pod.requests))
            continue
        key = {"NAMESPACE": view.namespace or "", "KIND": f"{view.kind}.{view.group}",
               "PHASE": view.phase.value, "CLUSTER": view.cluster}[group_by]
        bucket = buckets.setdefault(key, GpuBucket(key))
        bucket.workloads += 1
        add_into(bucket.spec, _gpu(view.gpu.spec))
        add_into(bucket.pods, _gpu(view.gpu.pods))
        add_into(bucket.allocated, _gpu(view.gpu.allocated))
    return [buckets[k] for k in sorted(buckets)]


def test_aggregates_order_and_index_equal_a_recomputation_after_random_changes() -> None:
    rng = random.Random(11)  # seeded: the same 3,000 changes every run
    store = ViewStore()
    live: dict[str, WorkloadView] = {}
    for step in range(3_000):
        uid = f"u{rng.randint(0, 199)}"  # 200 workloads, so most steps replace or remove one
        if uid in live and rng.random() < 0.3:
            store.remove(uid)
            del live[uid]
        else:
            old = live.get(uid)
            name, namespace = (old.name, old.namespace) if old else (f"w-{uid}", rng.choice("abcd"))
            live[uid] = _view(rng, uid, name, namespace or "")
            store.put(ENTRY, live[uid])
        if step % 500 == 499 or step == 2_999:
            views = list(live.values())
            for group_by in GROUP_BY:
                assert store.aggregates.summary(group_by) == _from_scratch(views, group_by), (step, group_by)
            expected = sorted(views, key=lambda v: (v.namespace or "", v.kind, v.name, v.uid))
            assert [r.view.uid for r in store.records()] == [v.uid for v in expected]
            assert all(store.find("example.com", v.kind.upper(), v.namespace, v.name).view is v for v in views)
            pods = [(p, v) for v in views for p in v.all_pods()]
            assert all(store.owner_of_pod(p.namespace, p.name).view is v for p, v in pods)  # type: ignore[union-attr]
            assert all(store.owner_of_pod_uid(p.uid).view is v for p, v in pods)  # type: ignore[union-attr]
            gone = [f"w-u{i}" for i in range(200) if f"u{i}" not in live]
            assert not any(store.owner_of_pod(ns, f"{name}-0") for name in gone for ns in "abcd")
    assert len(store) == len(live) > 100  # the walk kept a real population


def test_removing_the_last_contributor_drops_the_bucket_and_the_resource_name() -> None:
    rng = random.Random(3)
    store = ViewStore()
    view = _view(rng, "u1", "w", "only")
    view.gpu = GpuFigures({GPU: Decimal(4)}, {GPU: Decimal(2)}, {})
    store.put(ENTRY, view)
    namespaces = store.aggregates.summary("NAMESPACE")
    assert [(b.key, b.workloads, b.spec, b.pods, b.allocated) for b in namespaces] == [
        ("only", 1, {GPU: Decimal(4)}, {GPU: Decimal(2)}, {})]
    store.remove("u1")
    assert all(store.aggregates.summary(g) == [] for g in GROUP_BY)


def test_records_of_one_definition_share_one_entry() -> None:
    # the registry builds a new Entry (new sequence number) on every catalog lookup: equal
    # but for the sequence, so the store keeps one of them for all records
    rng = random.Random(5)
    store = ViewStore()
    definition = demo_definition()
    first, second = Entry(definition, "catalog", "demo"), Entry(definition, "catalog", "demo")
    assert first.sequence != second.sequence
    store.put(first, _view(rng, "u1", "w1", "a"))
    store.put(second, _view(rng, "u2", "w2", "a"))
    store.put(Entry(definition, "file", "demo"), _view(rng, "u3", "w3", "a"))
    assert store.get("u1").entry is store.get("u2").entry is first  # type: ignore[union-attr]
    assert store.get("u3").entry.origin == "file"  # type: ignore[union-attr]
