"""JobSet (jobset.x-k8s.io/v1alpha2): expected views of the fixture states, worked out by hand.

Rules used (JobSet v0.12 CRD docs + Kubernetes Job docs): pods of a replicated job =
replicas (default 1) x min(parallelism, completions) (parallelism defaults to 1); one role per
replicated job, named as in the spec. The fixtures run leader (replicas 1) + worker (replicas
2), 1 pod per Job, 4 GPUs per pod: 1x1 + 2x1 = 3 pods, 3 x 4 = 12 GPUs.
"""

from __future__ import annotations

import copy

import pytest

from tests.catalog.support import Case, assert_case, resolve_fixture

SLUG = "jobset-x-k8s-io-jobset-v1alpha2"
RJ = {"replicatedjob": ["leader", "worker"]}

FAILING_JOB_WARNINGS = (
    "Job llm-pretrain-worker-1 is failing (FailureTarget=True, reason BackoffLimitExceeded)",
    # worker: max(ready 1, active 1) + succeeded 0 + failed 0 + suspended 0 = 1 of 2 replicas
    "replicatedJobsStatus worker: the buckets account for 1 of 2 Jobs (ready 1, active 1, succeeded 0, failed 0, "
    "suspended 0): the counts do not add up")

CASES = [
    # Jobs created, no replicated job has ready pods -> Initializing only (the exclusive rule).
    # Pods: 3 live (2 ContainerCreating on nodes, 1 Unschedulable): requestedByPods 3 x 4 = 12,
    # allocated = 2 scheduled x 4 = 8.
    Case("initializing", "Initializing", ("Initializing",), {"leader": (1, 1, 0), "worker": (2, 2, 0)}, RJ,
         (3, 3, 0), (12, 12, 8)),
    # The seed scenario: leader 1 + worker 2, parallelism 1, 4 GPUs per pod -> 12 GPUs; the Jobs
    # report ready pods -> Running.
    Case("running", "Running", ("Running",), {"leader": (1, 1, 1), "worker": (2, 2, 2)}, RJ, (3, 3, 3),
         (12, 12, 12)),
    # Same with parallelism/completions omitted: the Job API defaults parallelism to 1 ->
    # still (1 + 2) x 1 pods x 4 GPUs = 12.
    Case("running-no-parallelism", "Running", ("Running",), {"leader": (1, 1, 1), "worker": (2, 2, 2)}, RJ,
         (3, 3, 3), (12, 12, 12)),
    # Completed=True; the 3 pods Succeeded are terminated: current 0, no pod or allocated GPUs;
    # the spec still asks for 12.
    Case("completed", "Completed", ("Completed",), {"leader": (1, 0, 0), "worker": (2, 0, 0)}, RJ, (3, 0, 0),
         (12, 0, 0)),
    # Failed=True; the leader pod Failed (terminated), the worker Jobs were deleted.
    Case("failed", "Failed", ("Failed",), {"leader": (1, 0, 0), "worker": (2, 0, 0)}, RJ, (3, 0, 0), (12, 0, 0)),
    # spec.suspend true + Suspended=True -> Suspended; the controller keeps no pods of a suspended
    # JobSet (its Jobs are suspended), but queued work keeps its demand: (1 + 2) x 1 = 3 pods
    # desired, 3 x 4 = 12 GPUs by spec; no pods, so 0 by pods and 0 allocated.
    Case("suspended", "Suspended", ("Suspended",), {"leader": (1, 0, 0), "worker": (2, 0, 0)}, RJ, (3, 0, 0),
         (12, 0, 0)),
    # Issue 28: worker-1 Job FailureTarget=True, its pod Failed (restarts remain: 0 of 3):
    # Degraded, not Running. Pods: 3 listed, the Failed one is terminated: current 2 = ready 2;
    # spec 3 x 4 = 12 GPUs, requestedByPods = allocated = 2 live pods x 4 = 8.
    Case("failing-job", "Degraded", ("Degraded",), {"leader": (1, 1, 1), "worker": (2, 1, 1)}, RJ, (3, 2, 2),
         (12, 8, 8), warnings=FAILING_JOB_WARNINGS),
]


@pytest.mark.parametrize("case", CASES, ids=lambda c: c.state)
def test_view(case: Case) -> None:
    assert_case(SLUG, case)


def test_seed_scenario_roles_and_gang() -> None:
    view = resolve_fixture(SLUG, "running")
    assert [r.name for r in view.roles()] == ["leader", "worker"]
    assert view.to_dict()["gpu"]["requestedBySpec"] == 12
    # podGroup "jobset", one subgroup: the replicatedjob subtree = 1 + 2 pods.
    (gang,) = view.gangs
    assert (gang.name, gang.form, gang.min_member, gang.sub_groups) == ("jobset", "podGroup", 3, [("replicatedjob", 3)])
    assert len(gang.pods) == 3


def test_failing_job_and_buckets_that_do_not_add_up_are_listed() -> None:
    view = resolve_fixture(SLUG, "failing-job")
    assert [(e.field, e.message) for e in view.errors] == [("status", m) for m in FAILING_JOB_WARNINGS]


def test_buckets_alone_make_it_degraded_and_a_fresh_jobset_is_not() -> None:
    from tests.catalog.support import definition, load
    from workload_map.resolution import resolve

    root = copy.deepcopy(load(SLUG, "failing-job")[0])  # no Job objects: only the root's buckets speak
    view = resolve(definition(SLUG), root)
    assert view.phase.value == "Degraded" and len(view.errors) == 1
    # Jobs not created yet: every bucket 0 and no restart -> nothing is missing yet (Initializing)
    for entry in root["status"]["replicatedJobsStatus"]:
        entry.update(active=0, ready=0)
    assert resolve(definition(SLUG), root).phase.value == "Initializing"


def test_a_failing_degraded_when_expression_is_an_error_naming_the_annotation() -> None:
    from msgspec.structs import replace

    from tests.catalog.support import definition, load
    from workload_map.resolution import resolve

    defn = definition(SLUG)
    manifest = copy.deepcopy(defn.manifest)
    manifest["metadata"]["annotations"]["workload-map.run.ai/degraded-when"] = 'error("boom")'
    view = resolve(replace(defn, manifest=manifest), load(SLUG, "running")[0])
    assert [e.field for e in view.errors] == ['metadata.annotations["workload-map.run.ai/degraded-when"]']
    assert view.phase.value == "Running"  # no evidence: the status mappings' word stands
