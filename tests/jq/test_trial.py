"""Trial evaluation in a child process stops non-terminating expressions."""

from __future__ import annotations

import time

from workload_map.jq.trial import trial_evaluate


def test_terminating_expressions_pass() -> None:
    assert trial_evaluate([".spec.replicas // 1", ".items[]?"], [{"spec": {"replicas": 2}}], timeout=10) == []


def test_non_terminating_expression_is_named_and_the_caller_is_not_blocked() -> None:
    started = time.monotonic()
    slow = trial_evaluate([".a", "def f: f; f", "last(until(false; .))"], [{"a": 1}], timeout=2)
    elapsed = time.monotonic() - started
    assert slow == ["def f: f; f", "last(until(false; .))"]
    assert elapsed < 10  # 2 s for the batch, then about 0.7 s for each of the three alone
