"""Durations in Go/Kubernetes syntax (issue 29 item 8): ``1m30s``, ``500ms``, as kubectl takes them."""

from __future__ import annotations

import pytest

from workload_map.api.bodies import duration
from workload_map.errors import InvalidRequest


@pytest.mark.parametrize(("text", "seconds"), [
    ("1m30s", 90.0), ("500ms", 0.5), ("90", 90.0), ("2m", 120.0), ("1h2m3s", 3723.0), (".5s", 0.5),
    ("1.5m", 90.0), ("250us", 0.00025), ("1s500ms", 1.5),
])
def test_go_durations_are_seconds(text: str, seconds: float) -> None:
    assert duration(text, name="timeout", maximum=4000) == pytest.approx(seconds)


@pytest.mark.parametrize("text", ["1x", "m", "1m 30s", "-1s", "", "1d"])
def test_malformed_durations_name_the_parameter(text: str) -> None:
    with pytest.raises(InvalidRequest, match=f"timeout must be a duration such as 60s, 500ms, 2m or 1m30s, got {text!r}"):
        duration(text, name="timeout", maximum=600)


def test_the_maximum_applies_to_the_sum() -> None:
    with pytest.raises(InvalidRequest, match=r"timeout must be at most 600s, got '10m1s'"):
        duration("10m1s", name="timeout", maximum=600)
