"""Exact counts (issue 28): malformed or extreme counts are errors naming the field, never figures.

Working (JobSet v0.12 semantics, catalog/jobset-x-k8s-io-jobset-v1alpha2.yaml): a replicated
job wants replicas x min(parallelism, completions) pods; the fixture `running` has leader
(replicas 1) and worker (replicas 2), parallelism 1, completions 1, 4 GPUs per pod.
"""

from __future__ import annotations

import copy
from typing import Any

from hypothesis import given, settings
from hypothesis import strategies as st

from tests.catalog.support import definition, load, resolve_objects
from workload_map.definitions.phases import Phase
from workload_map.resolution import resolve
from workload_map.resolution.counts import MAX_COUNT, check_counts, check_total

JOBSET = "jobset-x-k8s-io-jobset-v1alpha2"


def _jobset(**worker: Any) -> list[dict[str, Any]]:
    docs = copy.deepcopy(load(JOBSET, "running"))
    rj = docs[0]["spec"]["replicatedJobs"][1]
    for key, value in worker.items():
        (rj if key == "replicas" else rj["template"]["spec"])[key] = value
    return docs


def _fields(view: Any) -> list[str]:
    return [e.field for e in view.errors]


def test_the_untouched_fixture_has_no_count_error() -> None:
    view = resolve_objects(definition(JOBSET), _jobset())
    assert view.phase is Phase.RUNNING and view.replicas.desired == 3  # 1 leader + 2 workers


def test_a_product_beyond_int32_is_refused_not_wrapped() -> None:
    # 65536 replicas x parallelism 65537 (completions raised too) = 4,295,032,832 pods, beyond
    # 2^31 - 1 = 2,147,483,647: wrapped mod 2^32 it would read a plausible 65,536.
    view = resolve_objects(definition(JOBSET), _jobset(replicas=65536, parallelism=65537, completions=65537))
    worker = next(c for c in view.all_components() if c.errors)
    assert "4295032832" in worker.errors[0].message and "out of range" in worker.errors[0].message
    assert view.phase is Phase.UNDEFINED


def test_two_negative_factors_do_not_make_a_positive_count() -> None:
    # replicas -2 x parallelism -3 would be 6 pods in jq: both fields are refused by name.
    view = resolve_objects(definition(JOBSET), _jobset(replicas=-2, parallelism=-3, completions=1))
    assert "spec.replicatedJobs[1].replicas" in _fields(view)
    assert "spec.replicatedJobs[1].template.spec.parallelism" in _fields(view)
    assert view.phase is Phase.UNDEFINED


def test_non_integer_and_non_finite_counts_are_refused() -> None:
    for value, reason in ((2.5, "must be an integer"), (float("inf"), "not a finite number"),
                          (float("nan"), "not a finite number")):
        view = resolve_objects(definition(JOBSET), _jobset(replicas=value))
        error = next(e for e in view.errors if e.field == "spec.replicatedJobs[1].replicas")
        assert reason in error.message, value
        assert view.phase is Phase.UNDEFINED, value  # nan in jq is null: the default 1 would read Running


def test_a_bad_count_leaves_other_workloads_alone() -> None:
    bad = resolve_objects(definition(JOBSET), _jobset(replicas=-1))
    good = resolve_objects(definition(JOBSET), _jobset())
    assert (bad.phase, good.phase) == (Phase.UNDEFINED, Phase.RUNNING)
    assert good.errors == [] and good.gpu.to_dict()["requestedBySpec"] == 12  # 3 pods x 4 GPUs


def test_a_total_beyond_the_bound_is_an_error_with_the_exact_sum() -> None:
    # Three replicated jobs of 2^31 - 1 pods each (each count legal) total 6,442,450,941 exactly.
    docs = _jobset()
    rj = docs[0]["spec"]["replicatedJobs"]
    rj[:] = [{**copy.deepcopy(rj[1]), "name": f"w{i}", "replicas": MAX_COUNT} for i in range(3)]
    view = resolve(definition(JOBSET), docs[0])
    assert view.replicas.desired == 3 * MAX_COUNT == 6_442_450_941
    assert any("replicas.desired totals 6442450941" in e.message for e in view.errors)
    assert view.phase is Phase.UNDEFINED


def test_strings_and_non_count_numbers_are_left_to_the_paths() -> None:
    root = {"spec": {"replicas": "3", "template": {"spec": {"terminationGracePeriodSeconds": 30,
                                                            "containers": [{"ports": [{"containerPort": -1}]}]}}}}
    assert check_counts(root) == []


@settings(max_examples=150, deadline=None)
@given(st.lists(st.one_of(st.integers(min_value=-(2**70), max_value=2**70), st.integers(min_value=0, max_value=2**31),
                          st.floats(allow_nan=True, allow_infinity=True)), min_size=1, max_size=6))
def test_counts_never_overflow_or_go_negative(values: list[int | float]) -> None:
    """Property: a JobSet whose replicated jobs ask ``values`` pods (parallelism 1) either wants
    exactly their sum, computed without rounding or wrapping, or is an error with phase Undefined."""
    docs = _jobset()
    rj = docs[0]["spec"]["replicatedJobs"]
    rj[:] = [{**copy.deepcopy(rj[1]), "name": f"w{i}", "replicas": v} for i, v in enumerate(values)]
    view = resolve(definition(JOBSET), docs[0])
    legal = all(isinstance(v, int) or (v == v and abs(v) != float("inf") and v.is_integer()) for v in values) \
        and all(0 <= v <= MAX_COUNT for v in values)
    assert view.replicas.desired >= 0
    if not legal:
        assert view.phase is Phase.UNDEFINED and view.errors
        return
    exact = sum(int(v) for v in values)
    assert view.replicas.desired == exact
    assert (view.phase is Phase.UNDEFINED) == (exact > MAX_COUNT)
    assert (check_total(exact, "t") is None) == (exact <= MAX_COUNT)
