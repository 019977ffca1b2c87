"""Backoff: 0.8 s doubling to 30 s with jitter, reset after 2 min without failures."""

from __future__ import annotations

import random

from workload_map.kube.backoff import Backoff


class Clock:
    def __init__(self) -> None:
        self.now = 0.0

    def __call__(self) -> float:
        return self.now


def test_doubles_to_cap_within_jitter_bounds() -> None:
    clock = Clock()
    backoff = Backoff(rng=random.Random(1), clock=clock)
    delays = []
    for _ in range(12):
        delays.append(backoff.next_delay())
        clock.now += delays[-1]
    steps = [0.8, 1.6, 3.2, 6.4, 12.8, 25.6, 30, 30, 30, 30, 30, 30]
    for delay, step in zip(delays, steps, strict=True):
        assert step <= delay < step * 1.2
    assert max(delays) < backoff.max_delay == 36.0


def test_jitter_spreads_delays() -> None:
    firsts = {round(Backoff(rng=random.Random(seed)).next_delay(), 6) for seed in range(20)}
    assert len(firsts) > 10 and min(firsts) >= 0.8 and max(firsts) < 0.96


def test_resets_after_quiet_period_only() -> None:
    clock = Clock()
    backoff = Backoff(jitter=0, clock=clock)
    assert [backoff.next_delay() for _ in range(3)] == [0.8, 1.6, 3.2]
    clock.now += 119
    assert backoff.next_delay() == 6.4, "119 s since the last failure: no reset"
    clock.now += 121
    assert backoff.next_delay() == 0.8
    backoff.next_delay()
    backoff.reset()
    assert backoff.next_delay() == 0.8
