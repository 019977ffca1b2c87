"""SparkApplication and ScheduledSparkApplication (sparkoperator.k8s.io/v1beta2): expected views.

Rules used (Spark Operator v2.2, Spark 3.5 on Kubernetes): 1 driver pod (owned by the app) +
executors (owned by the driver pod): executor.instances, else 2; with dynamic allocation
max(minExecutors, initialExecutors, instances). GPUs per pod: executor.gpu.quantity, else the
executor template's container resources. Every driver has no GPU.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from workload_map.definitions.registry import DefinitionRegistry
from workload_map.kube.snapshot import SnapshotReader
from workload_map.service.workloads import WorkloadService
from tests.catalog.support import FIXTURES, Case, assert_case, catalog, resolve_fixture

APP = "sparkoperator-k8s-io-sparkapplication-v1beta2"
SSA = "sparkoperator-k8s-io-scheduledsparkapplication-v1beta2"
IDS = {"driver": [""], "executor": [""]}

CASES = [
    # 1 driver + 3 executors x 1 GPU (executor.gpu): 4 pods, 3 GPUs; all ready.
    (APP, Case("running", "Running", ("Running",), {"driver": (1, 1, 1), "executor": (3, 3, 3)}, IDS, (4, 4, 4),
               (3, 3, 3))),
    # SUBMITTED: only the driver pod exists (starting, no GPU): GPUs requested by pods 0.
    (APP, Case("submitted", "Initializing", ("Initializing",), {"driver": (1, 1, 0), "executor": (3, 0, 0)}, IDS,
               (4, 1, 0), (3, 0, 0))),
    (APP, Case("completed", "Completed", ("Completed",), {"driver": (1, 0, 0), "executor": (3, 0, 0)}, IDS,
               (4, 0, 0), (3, 0, 0))),
    (APP, Case("failed", "Failed", ("Failed",), {"driver": (1, 0, 0), "executor": (3, 0, 0)}, IDS, (4, 0, 0),
               (3, 0, 0))),
    # suspended keeps the demand (issue 13): 4 pods, 3 GPUs.
    (APP, Case("suspended", "Suspended", ("Suspended",), {"driver": (1, 0, 0), "executor": (3, 0, 0)}, IDS,
               (4, 0, 0), (3, 0, 0))),
    # dynamic allocation: max(min 1, initial 2, instances unset 0) = 2 executors x 2 GPUs (from the
    # template) = 4 by spec; 3 executors live (scaled up): 6 GPUs by pods, all 3 on nodes -> 6.
    (APP, Case("running-dynamic", "Running", ("Running",), {"driver": (1, 1, 1), "executor": (2, 3, 2)}, IDS,
               (3, 4, 3), (4, 6, 6))),
    # one run's pods: 1 driver + 2 executors x 1 GPU; the live run's pods are counted.
    (SSA, Case("running", "Running", ("Running",), {"driver": (1, 1, 1), "executor": (2, 2, 2)}, IDS, (3, 3, 3),
               (2, 2, 2))),
    (SSA, Case("idle", "Running", ("Running",), {"driver": (1, 0, 0), "executor": (2, 0, 0)}, IDS, (3, 0, 0),
               (2, 0, 0))),
    (SSA, Case("suspended", "Suspended", ("Suspended",), {"driver": (1, 0, 0), "executor": (2, 0, 0)}, IDS,
               (3, 0, 0), (2, 0, 0))),
    (SSA, Case("failed-validation", "Failed", ("Failed",), {"driver": (1, 0, 0), "executor": (2, 0, 0)}, IDS,
               (3, 0, 0), (2, 0, 0))),
    (SSA, Case("last-run-failed", "Degraded", ("Degraded",), {"driver": (1, 0, 0), "executor": (2, 0, 0)}, IDS,
               (3, 0, 0), (2, 0, 0))),
]


@pytest.mark.parametrize(("slug", "case"), CASES, ids=lambda v: v if isinstance(v, str) else v.state)
def test_view(slug: str, case: Case) -> None:
    assert_case(slug, case)


def test_executors_owned_by_the_driver_pod_are_the_apps() -> None:
    view = resolve_fixture(APP, "running")
    executors = [p for p in view.all_pods() if p.component == "executor"]
    assert len(executors) == 3 and view.unattributed == []


def test_dynamic_allocation_bounds() -> None:
    executor = next(r for r in resolve_fixture(APP, "running-dynamic").roles() if r.name == "executor")
    assert (executor.replicas.desired, executor.replicas.min, executor.replicas.max) == (2, 1, 6)


def test_a_scheduled_run_is_not_a_workload_of_its_own() -> None:
    reader = SnapshotReader.from_paths(Path(FIXTURES / SSA / "running.yaml"))
    views = WorkloadService(DefinitionRegistry(catalog()), reader).workloads()
    assert [(v.kind, v.name) for v in views] == [("ScheduledSparkApplication", "hourly-features")]
