"""Volcano Job (batch.volcano.sh/v1alpha1): expected views of the fixture states, worked out by hand.

Rules used (Volcano v1.12): pods = the sum of the tasks' replicas, one role per task (task name);
a task's gang minimum is its minAvailable, else its replicas. Every fixture has task master
(1 replica, CPU only, minAvailable unset -> 1) and task worker (4 replicas x 4 GPUs, minAvailable
2): desired 5 pods, 4 x 4 = 16 GPUs, gang 1 + 2 = 3.
"""

from __future__ import annotations

import pytest

from tests.catalog.support import Case, assert_case, resolve_fixture

SLUG = "batch-volcano-sh-job-v1alpha1"
IDS = {"task": ["master", "worker"]}

CASES = [
    Case("running", "Running", ("Running",), {"master": (1, 1, 1), "worker": (4, 4, 4)}, IDS, (5, 5, 5), (16, 16, 16)),
    # state Pending, all 5 pods unschedulable: current 5 (16 GPUs requested by pods), none on a node.
    Case("pending", "Initializing", ("Initializing",), {"master": (1, 1, 0), "worker": (4, 4, 0)}, IDS, (5, 5, 0),
         (16, 16, 0)),
    # Aborted: no pods, the demand stays (issue 13).
    Case("aborted", "Suspended", ("Suspended",), {"master": (1, 0, 0), "worker": (4, 0, 0)}, IDS, (5, 0, 0),
         (16, 0, 0)),
    # Completed: the 5 kept pods Succeeded.
    Case("completed", "Completed", ("Completed",), {"master": (1, 0, 0), "worker": (4, 0, 0)}, IDS, (5, 0, 0),
         (16, 0, 0)),
    # Restarting -> Degraded: the replacement worker is on a node, not ready (ready 4 of 5).
    Case("restarting", "Degraded", ("Degraded",), {"master": (1, 1, 1), "worker": (4, 4, 3)}, IDS, (5, 5, 4),
         (16, 16, 16)),
    # Failed: only the master pod is left, Failed.
    Case("failed", "Failed", ("Failed",), {"master": (1, 0, 0), "worker": (4, 0, 0)}, IDS, (5, 0, 0), (16, 0, 0)),
]


@pytest.mark.parametrize("case", CASES, ids=lambda c: c.state)
def test_view(case: Case) -> None:
    assert_case(SLUG, case)


def test_gang_minimum_is_the_tasks_min_available() -> None:
    # master: minAvailable unset -> replicas 1; worker: minAvailable 2 -> 3 (the job's default minAvailable).
    (gang,) = resolve_fixture(SLUG, "running").gangs
    assert (gang.min_member, gang.sub_groups) == (3, [("task", 3)])
    worker = next(r for r in resolve_fixture(SLUG, "running").roles() if r.name == "worker")
    assert (worker.replicas.desired, worker.replicas.min) == (4, 2)
