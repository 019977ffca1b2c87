"""The registration trial, run as jobs of a resolver worker, stops non-terminating expressions."""

from __future__ import annotations

import time

from workload_map.jq.trial import slow_reason, slowest_evaluation
from workload_map.materialization.trial import trial_reasons_blocking


def test_terminating_expressions_pass() -> None:
    assert trial_reasons_blocking([".spec.replicas // 1", ".items[]?"], [{"spec": {"replicas": 2}}], timeout=10) == {}


def test_non_terminating_expression_is_named_and_the_caller_is_not_blocked() -> None:
    started = time.monotonic()
    reasons = trial_reasons_blocking([".a", "def f: f; f", "last(until(false; .))"], [{"a": 1}], timeout=2)
    elapsed = time.monotonic() - started
    assert list(reasons) == ["def f: f; f", "last(until(false; .))"]
    assert reasons["def f: f; f"] == "did not finish within 2 s on a sample object"
    assert elapsed < 10  # one 2 s budget for each of the two looping expressions, then a fresh worker


def test_the_measurement_a_worker_runs_is_pure() -> None:
    # `.a` on {"a": 1} and on {} (a runtime error counts as an evaluation): microseconds each
    assert slowest_evaluation(".a", [{"a": 1}, {}, "text"]) < 0.1
    assert slow_reason(0.25, 0.1) == "one evaluation took 250 ms on a sample object (limit 100 ms)"
    assert slow_reason(0.05, 0.1) is None
